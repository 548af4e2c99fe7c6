// ggml's q5_0, q5_1, q4_K, q5_K and q6_K blocks (gguf_kquants.cpp): one block encoded from / decoded to f32
// values.
#pragma once
#include <cstdint>

namespace hfx::gguf {

/// 32 values → 22 bytes (quantize_row_q5_0_ref).
void q5_0_block(const float* x, uint8_t* out);
/// 32 values → 24 bytes (quantize_row_q5_1_ref).
void q5_1_block(const float* x, uint8_t* out);
/// 256 values → 144 bytes (quantize_row_q4_K_ref).
void q4_k_block(const float* x, uint8_t* out);
/// 256 values → 176 bytes (quantize_row_q5_K_ref).
void q5_k_block(const float* x, uint8_t* out);
/// 256 values → 210 bytes (quantize_row_q6_K_ref).
void q6_k_block(const float* x, uint8_t* out);
/// The dequantizers (dequantize_row_*): one block → its 32 or 256 values.
void q5_0_decode(const uint8_t* p, float* y);
void q5_1_decode(const uint8_t* p, float* y);
void q4_k_decode(const uint8_t* p, float* y);
void q5_k_decode(const uint8_t* p, float* y);
void q6_k_decode(const uint8_t* p, float* y);

}  // namespace hfx::gguf
