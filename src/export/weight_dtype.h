// src/export/weight_dtype.h — the export's weight dtype applied to a captured graph (backends that keep
// parameters as parameters: dynamo). ONNX applies it in lowering (LowerOptions::weight_dtype), ExecuTorch
// in its stage-4 fix "constant_dtype".
#pragma once
#include "hfx/export/registry.h"
#include "hfx/ir/graph.h"

namespace hfx {

/// Stores every floating parameter of `g` as `dt`: its type becomes `dt` (writers convert the bytes as
/// they stream them) and one `aten._to_copy` back to the dtype the model reads it in is inserted before
/// the first node, so the program computes what eager computes on weights rounded to `dt`. A cast of
/// that cast is folded into one cast of the parameter when one side is float32 (double rounding through
/// f32 is exact for f16/bf16 values); a cast to `dt` itself is dropped. Returns true if it changed `g`.
bool store_params_as(Graph& g, DType dt);

/// The program fix form: reads ExportContext::weight_dtype (nothing to do without it).
bool fix_weight_dtype(Graph& g, ExportContext& ctx, std::vector<std::string>& warnings);

}  // namespace hfx
