// hfx/models/quantize_model.h — the quantized copy of a model (weights as hfx/quant/quantize.h lays them
// out).
//
// It lives in the models layer, not in quant: it rebuilds the model through its architecture, and quant is
// a layer below the ops and the models (the kernels read its layout).
#pragma once
#include <memory>

#include "hfx/models/model.h"
#include "hfx/quant/quantize.h"

namespace hfx::quant {

/// A copy of `model` whose store also holds the quantized form of every linear weight it quantizes:
/// each 2-d float `*.weight` whose name has no `embed`, `norm`, `wpe`/`wte` or `experts.` and whose K is a
/// multiple of the group size, plus `lm_head.weight` built from the tied embedding when the embeddings are
/// tied. The quantized float tensors leave the store, so a layer that still reads one as float fails naming
/// it (Model::w). Returns the number of weights quantized through `count`.
std::unique_ptr<Model> quantize_model(const Model& model, const QuantOptions& o, int* count = nullptr);

}  // namespace hfx::quant
