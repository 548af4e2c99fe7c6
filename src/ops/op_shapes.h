// src/ops/op_shapes.h — shape and dtype rules the op table (op_table.cpp) declares beside their kernels
// but that live here, to keep that file readable: the gathers, and the fused and quantized ops
// (hfx.rms_norm, hfx.rope, hfx.sdpa, hfx.moe, hfx.linear_q, hfx.embedding_q); and the helpers every
// rule uses.
#pragma once
#include <vector>

#include "hfx/ir/attrs.h"
#include "hfx/ops/op_schema.h"

namespace hfx::op_shapes {

using In = std::vector<const TensorType*>;
using Out = std::vector<TensorType>;

/// Input i of op `op`; throws hfx::Error("ops", "expected input i of op, got none") when absent.
const TensorType& need(const In& in, size_t i, const char* op);
/// A dim in [-rank, rank) as [0, rank) (rank 0 counts as 1); throws hfx::Error("ops", ...) otherwise.
int64_t norm_dim(int64_t d, int64_t rank, const char* op);

// Gathers.
Out embedding(const In& in, const Attrs& a, ShapeEnv& env);
Out index_select(const In& in, const Attrs& a, ShapeEnv& env);
Out index_copy(const In& in, const Attrs& a, ShapeEnv& env);

Out linear_q(const In& in, const Attrs& a, ShapeEnv& env);
Out embedding_q(const In& in, const Attrs& a, ShapeEnv& env);
Out rms_norm(const In& in, const Attrs& a, ShapeEnv& env);
Out rope(const In& in, const Attrs& a, ShapeEnv& env);
Out sdpa(const In& in, const Attrs& a, ShapeEnv& env);
Out moe(const In& in, const Attrs& a, ShapeEnv& env);

}  // namespace hfx::op_shapes
