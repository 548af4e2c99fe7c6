// src/kernels/kernels.h — CPU kernels of the op table (one per op; see src/ops/op_table.cpp).
//
// Every kernel takes the op's inputs (any strides, any storage dtype; an absent optional input is an
// undefined Tensor) and its normalized attributes, and returns new contiguous tensors. Floating inputs
// stored as f16/bf16 are computed in f32 and the result is stored in the op's inferred dtype (the
// dtype of the first floating input, as torch's type promotion does for same-kind inputs).
#pragma once
#include <vector>

#include "hfx/core/tensor.h"
#include "hfx/ir/attrs.h"

namespace hfx::kernels {

using Tensors = std::vector<Tensor>;
#define HFX_KERNEL(fn) Tensors fn(const Tensors& in, const Attrs& a)

// elementwise binary, broadcasting
HFX_KERNEL(add);
HFX_KERNEL(sub);
HFX_KERNEL(mul);
HFX_KERNEL(div);
HFX_KERNEL(maximum);
HFX_KERNEL(minimum);
HFX_KERNEL(add_scalar);
HFX_KERNEL(mul_scalar);
HFX_KERNEL(pow_scalar);
HFX_KERNEL(eq);
HFX_KERNEL(lt);
HFX_KERNEL(le);
HFX_KERNEL(gt);
HFX_KERNEL(ge);
HFX_KERNEL(logical_and);
HFX_KERNEL(logical_or);
HFX_KERNEL(logical_not);
HFX_KERNEL(where);
// unary
HFX_KERNEL(neg);
HFX_KERNEL(exp);
HFX_KERNEL(log);
HFX_KERNEL(sqrt);
HFX_KERNEL(rsqrt);
HFX_KERNEL(tanh);
HFX_KERNEL(sigmoid);
HFX_KERNEL(silu);
HFX_KERNEL(relu);
HFX_KERNEL(gelu);
HFX_KERNEL(sin);
HFX_KERNEL(cos);
HFX_KERNEL(abs);
HFX_KERNEL(reciprocal);
HFX_KERNEL(erf);
HFX_KERNEL(floor);
// linear algebra (OpenBLAS sgemm)
HFX_KERNEL(mm);
HFX_KERNEL(bmm);
HFX_KERNEL(matmul);
HFX_KERNEL(linear);
// reductions
HFX_KERNEL(sum);
HFX_KERNEL(mean);
HFX_KERNEL(amax);
HFX_KERNEL(argmax);
HFX_KERNEL(cumsum);
HFX_KERNEL(softmax);
HFX_KERNEL(log_softmax);
HFX_KERNEL(layer_norm);
// indexing and shape
HFX_KERNEL(embedding);
HFX_KERNEL(index_select);
HFX_KERNEL(index_copy);
HFX_KERNEL(cat);
HFX_KERNEL(slice);
HFX_KERNEL(view);
HFX_KERNEL(permute);
HFX_KERNEL(expand);
HFX_KERNEL(unsqueeze);
HFX_KERNEL(squeeze);
HFX_KERNEL(to_copy);
// factories
HFX_KERNEL(arange);
HFX_KERNEL(full);
// composite (fused)
HFX_KERNEL(rms_norm);
HFX_KERNEL(rope);
HFX_KERNEL(sdpa);
HFX_KERNEL(moe);

#undef HFX_KERNEL

/// Number of threads the kernels use (default: hardware concurrency). Also sets OpenBLAS's.
void set_num_threads(int n);
int num_threads();

}  // namespace hfx::kernels
