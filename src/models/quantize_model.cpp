// The quantized copy of a model: every quantizable linear weight replaced by its blockwise codes.
#include "hfx/models/quantize_model.h"

#include <map>

namespace hfx::quant {

namespace {

bool quantizable(const std::string& name, const io::TensorInfo& ti, int64_t group) {
  if (!name.ends_with(".weight") || ti.shape.size() != 2 || !dtype_is_float(ti.dtype)) return false;
  for (const char* skip : {"embed", "norm", "wpe", "wte", "experts."})  // experts: read by the fused hfx.moe
    if (name.find(skip) != std::string::npos) return false;
  return ti.shape[1] % group == 0;
}

void put(std::map<std::string, Tensor>& m, const std::string& weight, const QuantizedWeight& q) {
  QuantNames nm = quant_names(weight);
  m[nm.qweight] = q.qweight;
  m[nm.scales] = q.scales;
  if (q.zero_points.defined()) m[nm.zero_points] = q.zero_points;
}

}  // namespace

std::unique_ptr<Model> quantize_model(const Model& model, const QuantOptions& o, int* count) {
  const io::WeightStore& ws = model.weights();
  const ModelConfig& cfg = model.config();
  std::map<std::string, Tensor> all;
  int n = 0;
  for (const std::string& name : ws.names()) {
    all[name] = ws.get(name);
    if (!o.enabled() || !quantizable(name, ws.info(name), o.group_size)) continue;
    put(all, name, quantize_weight(all[name], o, name));
    all.erase(name);  // a layer that would still read it as float fails naming it (Model::w)
    ws.release(name);
    n++;
  }
  // Tied embeddings: the LM head reads the embedding table as a linear weight; it gets its own codes
  // (the embedding's gather stays float).
  const std::string embed = "model.embed_tokens.weight";
  if (o.enabled() && cfg.tie_word_embeddings && ws.has(embed) && !ws.has("lm_head.weight") &&
      ws.info(embed).shape.size() == 2 && ws.info(embed).shape[1] % o.group_size == 0) {
    put(all, "lm_head.weight", quantize_weight(all[embed], o, "lm_head.weight"));
    n++;
  }
  if (count) *count = n;
  // Built through the architecture directly: the original was validated when it was loaded, and the
  // quantized tensors are additions the weight list does not name.
  return architecture(cfg.model_type).create(cfg, io::WeightStore::from_tensors(std::move(all)));
}

}  // namespace hfx::quant
