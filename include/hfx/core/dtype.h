// hfx/core/dtype.h — element types and exact conversions between them.
//
// f16 and bf16 are stored as raw uint16 bit patterns; every conversion from f32 rounds to nearest
// even (as PyTorch does), and NaN stays NaN.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace hfx {

/// Element type of a tensor. The names follow torch (`float32`, `bfloat16`, ...).
enum class DType : uint8_t { F32, F16, BF16, I64, I32, I8, U8, Bool };

/// Bytes per element.
size_t dtype_size(DType dt);
/// torch-style name: "float32", "float16", "bfloat16", "int64", "int32", "int8", "uint8", "bool".
const char* dtype_name(DType dt);
/// Parses a torch-style name or a safetensors tag ("F32", "BF16", ...). Throws hfx::Error otherwise.
DType dtype_from_name(std::string_view name);
/// safetensors tag: "F32", "F16", "BF16", "I64", "I32", "I8", "U8", "BOOL".
const char* dtype_safetensors_tag(DType dt);
/// True for f32/f16/bf16.
bool dtype_is_float(DType dt);

/// Result type of a binary op (torch's rules for tensors of these kinds): same type → itself; two
/// different float types → float32; float with int/bool → the float type; two ints → the wider (int64
/// over int32 over int8/uint8); bool with bool → bool.
DType promote_types(DType a, DType b);

/// f32 → f16 bits, round to nearest even, overflow to inf, NaN preserved.
uint16_t f32_to_f16(float f);
/// f16 bits → f32 (exact).
float f16_to_f32(uint16_t h);
/// f32 → bf16 bits, round to nearest even, NaN preserved (quiet).
inline uint16_t f32_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}
/// bf16 bits → f32 (exact).
inline float bf16_to_f32(uint16_t b) {
  uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

/// Converts `n` elements from `src` (type `from`) to `dst` (type `to`). Float → int truncates toward
/// zero as torch does; anything → bool is `!= 0`.
void convert_elements(const void* src, DType from, void* dst, DType to, size_t n);

}  // namespace hfx
