// src/kernels/linear_q.h — the CPU kernel of hfx.linear_q (src/kernels/linear_q.cpp).
#pragma once
#include "kernels/kernels.h"

namespace hfx::kernels {

/// hfx.linear_q: {x, codes, scales[, zero_points]} with attrs bits, group_size, act_bits (0: f32
/// activations; 8: rounded to int8 per block of group_size, symmetric, as MatMulNBits' accuracy_level 4)
/// → {y f32}.
Tensors linear_q(const Tensors& in, const Attrs& a);
/// hfx.embedding_q: {codes, scales, indices[, zero_points]} with attrs bits, group_size → {rows f32}.
Tensors embedding_q(const Tensors& in, const Attrs& a);

/// The instruction set the fused decode loop of hfx.linear_q uses: the best the CPU has (AVX-512 with BW
/// and VNNI, AVX-512 with BW, else AVX2+FMA, else scalar) unless capped by linear_q_cap_isa or the
/// environment variable HFX_LINEAR_Q_ISA=scalar|avx2|avx512 (read once). Every path computes the same sums
/// in another order; VNNI only changes act_bits 8 (integer dot products instead of float loops on the
/// rounded activations).
enum class LinearQIsa { scalar, avx2, avx512, avx512_vnni };
LinearQIsa linear_q_isa();
/// Caps the ISA (tests run each path on a CPU that has the widest): the effective one is
/// min(cap, what the CPU has). Not thread-safe against concurrent hfx.linear_q calls.
void linear_q_cap_isa(LinearQIsa cap);

}  // namespace hfx::kernels
