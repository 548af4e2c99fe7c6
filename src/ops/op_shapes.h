// src/ops/op_shapes.h — shape and dtype rules the op table (op_table.cpp) declares beside their kernels
// but that live here, to keep that file a table: the gathers, the fused and quantized ops (hfx.rms_norm,
// hfx.rope, hfx.sdpa, hfx.moe, hfx.linear_q, hfx.embedding_q) in op_shapes.cpp, the others in
// op_shapes_core.cpp; and the helpers every rule uses.
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

// The elementwise, reduction, linear-algebra, indexing and factory ops (op_shapes_core.cpp). `op` names the
// op in errors.
SymShape broadcast(const SymShape& a, const SymShape& b, ShapeEnv& env, const char* op);
Out binary(const In& in, const Attrs&, ShapeEnv& env, const char* op);
Out true_div(const In& in, const Attrs& a, ShapeEnv& env);
Out compare(const In& in, const Attrs&, ShapeEnv& env, const char* op);
Out same_as_first(const In& in, const Attrs&, ShapeEnv&);
Out float_unary(const In& in, const Attrs&, ShapeEnv&);
Out reduce(const In& in, const Attrs& a, ShapeEnv&, const char* op);
Out infer_matmul(const In& in, const Attrs&, ShapeEnv& env, const char* op);
Out infer_mm(const In& in, const Attrs& at, ShapeEnv& env);
Out infer_bmm(const In& in, const Attrs& at, ShapeEnv& env);
Out infer_linear(const In& in, const Attrs&, ShapeEnv& env);
Out infer_where(const In& in, const Attrs&, ShapeEnv& env);
Out infer_argmax(const In& in, const Attrs& a, ShapeEnv&);
Out infer_dim_check_same(const In& in, const Attrs& a, ShapeEnv&, const char* op);
Out infer_layer_norm(const In& in, const Attrs&, ShapeEnv&);
Out infer_cat(const In& in, const Attrs& a, ShapeEnv& env);
Out infer_slice(const In& in, const Attrs& a, ShapeEnv& env);
Out infer_view(const In& in, const Attrs& a, ShapeEnv& env);
Out infer_permute(const In& in, const Attrs& a, ShapeEnv&);
Out infer_expand(const In& in, const Attrs& a, ShapeEnv& env);
Out infer_unsqueeze(const In& in, const Attrs& a, ShapeEnv&);
Out infer_squeeze(const In& in, const Attrs& a, ShapeEnv& env);
Out infer_to_copy(const In& in, const Attrs& a, ShapeEnv&);
Out infer_arange(const In&, const Attrs& a, ShapeEnv& env);
Out infer_full(const In&, const Attrs& a, ShapeEnv&);
Out to_bool(const In& i, const Attrs&, ShapeEnv&);
Out infer_matmul2(const In& i, const Attrs& a, ShapeEnv& e);

}  // namespace hfx::op_shapes
