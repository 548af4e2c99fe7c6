// src/kernels/linear_q.h — the CPU kernel of hfx.linear_q (src/kernels/linear_q.cpp).
#pragma once
#include "kernels/kernels.h"

namespace hfx::kernels {

/// hfx.linear_q: {x, codes, scales[, zero_points]} with attrs bits, group_size → {y f32}.
Tensors linear_q(const Tensors& in, const Attrs& a);

}  // namespace hfx::kernels
