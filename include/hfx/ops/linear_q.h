// hfx/ops/linear_q.h — the functional forms of hfx.linear_q (weight-only quantized linear) and
// hfx.embedding_q (the rows of a quantized embedding table).
#pragma once
#include <cstdint>

#include "hfx/ops/builder.h"

namespace hfx::F {

/// hfx.linear_q: x[..., K] @ dequant(W)^T with W as blockwise codes in hfx/quant/quantize.h's layout
/// (codes uint8 [N, K/group, group·bits/8], scales f32 [N, K/group], zero points uint8 or absent =
/// symmetric). f32 [..., N]. `act_bits` 8: x rounded to int8 per block of group_size first (symmetric,
/// scale amax / 127; ONNX Runtime's MatMulNBits accuracy_level 4), 0: f32 activations.
Var linear_q(const Var& x, const Var& codes, const Var& scales, const Var& zero_points, int64_t bits,
             int64_t group_size, int64_t act_bits = 0);

/// hfx.embedding_q: the rows `indices` of an embedding table stored as blockwise codes in the same layout
/// (codes uint8 [V, D/group, group·bits/8], scales f32 [V, D/group], zero points uint8 [V, …] or absent =
/// symmetric), de-quantized: f32 [..., D] = (code − zero point) · scale.
Var embedding_q(const Var& codes, const Var& scales, const Var& zero_points, const Var& indices, int64_t bits,
                int64_t group_size);

}  // namespace hfx::F
