// hfx/models/quantize_model.h — the quantized copy of a model (weights as hfx/quant/quantize.h lays them
// out).
//
// It lives in the models layer, not in quant: it rebuilds the model through its architecture, and quant is
// a layer below the ops and the models (the kernels read its layout).
#pragma once
#include <memory>

#include "hfx/models/model.h"
#include "hfx/quant/checkpoint_formats.h"
#include "hfx/quant/quantize.h"

namespace hfx::quant {

/// A copy of `model` whose store also holds the quantized form of every linear weight it quantizes:
/// each 2-d float `*.weight` whose name has no `embed`, `norm`, `wpe`/`wte` or `experts.` and whose K is a
/// multiple of the group size, plus `lm_head.weight` built from the tied embedding when the embeddings are
/// tied. The quantized float tensors leave the store, so a layer that still reads one as float fails naming
/// it (Model::w). Returns the number of weights quantized through `count`.
/// A model read from a GPTQ / AWQ checkpoint (ModelConfig::prequantized) is already quantized: with options
/// equal to its codes' (bits, group size, symmetric) this returns a model over the same store (count = the
/// weights it holds quantized) — with QuantOptions::bf16_scales, over a store whose block scales are rounded
/// to bf16 and whose codes are the same bytes (ExecuTorch's XNNPACK export of a GPTQ checkpoint) — and
/// with other options (or per_channel) it throws hfx::Error("quant", ...).
std::unique_ptr<Model> quantize_model(const Model& model, const QuantOptions& o, int* count = nullptr);
/// What an exporter runs for its config's quantize options: null when `o` asks for none, else
/// quantize_model's copy; throws hfx::Error("quant", ...) when no weight of the model qualifies.
std::unique_ptr<Model> quantize_for_export(const Model& model, const QuantOptions& o);

/// A GPTQ / AWQ checkpoint's store (config.json's `quantization_config`, hfx/quant/checkpoint_formats.h)
/// in the layout of a quantized model: each layer's `P.qweight`, `P.qzeros`, `P.scales` and `P.g_idx`
/// become `P.weight_q`, `P.weight_scale` and (asymmetric) `P.weight_zero_point`, converted code for code;
/// every other tensor passes through. `options` receives the QuantOptions equal to the codes. Throws
/// hfx::Error("quant", ...) naming the tensor on a mismatch (bits, group size, packed shape), and when the
/// layers disagree on the block size.
/// Rewrites the float checkpoint in `dir` (one model.safetensors, as create-tiny writes it) as a GPTQ or
/// AWQ checkpoint of `cq` (`hfx create-tiny --quantize gptq|awq`): every linear weight that quantize_model
/// would quantize, except the LM head (GPTQ and AWQ leave it in float), is quantized round-to-nearest
/// and stored packed (to_packed), and config.json gains the quantization_config. Returns the number of
/// weights quantized.
int write_prequantized_checkpoint(const std::string& dir, const CheckpointQuant& cq);

std::shared_ptr<io::WeightStore> read_prequantized(const nlohmann::json& quantization_config,
                                                   const io::WeightStore& w, QuantOptions* options);

}  // namespace hfx::quant
