// src/export/onnx/weight_layout.h — how parameters are laid out as ONNX initializers (stage 4).
//
// ONNX Runtime constant-folds every Transpose and Cast applied to an initializer when it creates a
// session, keeping both copies meanwhile (docs/precision.md: 65 s of a 1B model's load was that fold).
// So the initializers are stored in the layout and dtype the graph consumes: a linear layer's weight
// [out, in] is written transposed, [in, out], the operand MatMul reads, and floating weights are written
// in the export's weight dtype (f32: read as they are; f16/bf16: half the bytes behind one Cast, which
// ONNX Runtime CPU must widen at load since its kernels compute in f32).
#pragma once
#include <set>
#include <string>
#include <vector>

#include "export/onnx/lowering.h"

namespace hfx::onnx_export {

/// The parameter behind `v` through aten._to_copy nodes (`v` itself if it is one; nullptr if none).
const Value* param_behind(const Value* v);

/// Parameters to store transposed: 2-D floating parameters every reader of which (through _to_copy nodes)
/// is the weight of aten.linear or the table of aten.embedding, at least one a linear. A tied embedding /
/// lm_head is one of them: its Gather reads the transposed table on axis 1 (see the embedding translation).
std::set<const Value*> params_to_transpose(const Graph& g);

/// The same rule over the programs of one export folder, by parameter name: a parameter is stored
/// transposed when, in every program that reads it, every reader is a linear's weight or an embedding's
/// table, and some program reads it as a linear's weight (LowerOptions::transpose_params).
std::set<std::string> params_to_transpose(const std::vector<const Graph*>& graphs);

/// Declares the initializers of the parameters in `read` (dims as stored, dtype as LowerOptions says),
/// with a Cast to f32 behind each f16/bf16 one, and records their sources (and which are transposed) in
/// `lm`.
void declare_params(LoweringContext& cx, const Graph& g, const std::set<const Value*>& read,
                    LoweredModel& lm);

}  // namespace hfx::onnx_export
