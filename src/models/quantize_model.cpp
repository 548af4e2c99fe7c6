// The quantized copy of a model: every quantizable linear weight replaced by its blockwise codes.
#include "hfx/models/quantize_model.h"

#include <map>
#include <optional>
#include <regex>

#include "hfx/core/error.h"
#include "hfx/io/safetensors.h"
#include "hfx/quant/checkpoint_formats.h"

namespace hfx::quant {

namespace {

bool quantizable(const std::string& name, const io::TensorInfo& ti, int64_t group, bool transposed = false) {
  if (!name.ends_with(".weight") || ti.shape.size() != 2 || !dtype_is_float(ti.dtype)) return false;
  // experts: read by the fused hfx.moe; shared: the embedding table of encoder-decoders; vision towers and
  // projectors of image-text models stay float (the language model is quantized).
  for (const char* skip : {"embed", "norm", "wpe", "wte", "experts.", "shared.", "vision_tower.",
                           "vision_model.", "visual.", "multi_modal_projector.", "connector."})
    if (name.find(skip) != std::string::npos) return false;
  return ti.shape[transposed ? 0 : 1] % group == 0;
}

// Whether `name` is one of the architecture's linear weights stored [in, out].
bool is_transposed(const Architecture& arch, const std::string& name) {
  for (const auto& re : arch.transposed_weights)
    if (std::regex_match(name, std::regex(re))) return true;
  return false;
}

void put(std::map<std::string, Tensor>& m, const std::string& weight, const QuantizedWeight& q) {
  QuantNames nm = quant_names(weight);
  m[nm.qweight] = q.qweight;
  m[nm.scales] = q.scales;
  if (q.zero_points.defined()) m[nm.zero_points] = q.zero_points;
}

// The store with every quantized weight's block scales rounded to bfloat16 (QuantOptions::bf16_scales) and
// the codes as they are: what XNNPACK's 4-bit kernels run of a GPTQ checkpoint's float16 scales (a relative
// change of at most 2^-8 per scale: bf16 keeps 8 significant bits), so the eager model computes the
// delegate's very weights.
std::shared_ptr<io::WeightStore> with_bf16_scales(const io::WeightStore& ws) {
  std::map<std::string, Tensor> all;
  for (const std::string& name : ws.names()) all[name] = ws.get(name);
  for (const std::string& name : ws.names()) {
    if (!name.ends_with(".weight_q")) continue;
    const std::string scales = quant_names(name.substr(0, name.size() - 2)).scales;
    Tensor s = all.at(scales).to(DType::F32).contiguous().clone();
    float* p = s.data<float>();
    for (int64_t i = 0; i < s.numel(); i++) p[i] = bf16_to_f32(f32_to_bf16(p[i]));
    all[scales] = s;
  }
  return io::WeightStore::from_tensors(std::move(all));
}

}  // namespace

std::unique_ptr<Model> quantize_model(const Model& model, const QuantOptions& o, int* count) {
  const io::WeightStore& ws = model.weights();
  const ModelConfig& cfg = model.config();
  if (const QuantOptions& p = cfg.prequantized; p.enabled()) {
    if (o.bits != p.bits || o.group_size != p.group_size || o.symmetric != p.symmetric)
      HFX_THROW(
          "quant",
          "expected no --quantize for this {} checkpoint: it is already quantized ({}, groups of {}{}), "
          "got --quantize {} --group-size {}{}; drop --quantize",
          cfg.model_type, p.method(), p.group_size, p.symmetric ? ", symmetric" : "", o.method(),
          o.group_size, o.symmetric ? " --symmetric" : "");
    if (o.per_channel)
      HFX_THROW("quant",
                "expected per-group scales for the {} checkpoint's codes (one per group of {}), got quantize "
                "per_channel: a pre-quantized checkpoint's scales are used as they are",
                cfg.model_type, p.group_size);
    int n = 0;
    for (const std::string& name : ws.names()) n += name.ends_with(".weight_q") ? 1 : 0;
    if (count) *count = n;
    ModelConfig c = cfg;
    c.int8_activations = o.int8_activations;
    if (!o.bf16_scales) return architecture(cfg.model_type).create(std::move(c), model.weights_ptr());
    return architecture(cfg.model_type).create(std::move(c), with_bf16_scales(ws));
  }
  std::map<std::string, Tensor> all;
  int n = 0;
  const Architecture& arch = architecture(cfg.model_type);
  for (const std::string& name : ws.names()) {
    all[name] = ws.get(name);
    const bool transposed = is_transposed(arch, name);
    if (!o.enabled() || !quantizable(name, ws.info(name), o.group_size, transposed)) continue;
    put(all, name, quantize_weight(transposed ? all[name].transpose(0, 1) : all[name], o, name));
    all.erase(name);  // a layer that would still read it as float fails naming it (Model::w)
    ws.release(name);
    n++;
  }
  // Tied embeddings: the LM head reads the embedding table as a linear weight. With the table quantized
  // (o.embedding) it reads the table's codes; else it gets its own codes and the gather stays float.
  const std::string embed = arch.embedding_weight;
  if (o.enabled() && o.embedding && (embed.empty() || !ws.has(embed)))
    HFX_THROW("quant",
              "expected an architecture whose token embedding table hfx can gather quantized with "
              "--quantize-embedding, got the {} model {}; drop --quantize-embedding",
              structure_name(model.structure()), cfg.model_type);
  const bool table = !embed.empty() && ws.has(embed) && ws.info(embed).shape.size() == 2 &&
                     dtype_is_float(ws.info(embed).dtype) && ws.info(embed).shape[1] % o.group_size == 0;
  if (o.enabled() && o.embedding && table) {
    put(all, embed, quantize_weight(all[embed], o, embed));
    all.erase(embed);
    n++;
  } else if (o.enabled() && cfg.tie_word_embeddings && table && !ws.has(arch.lm_head_weight)) {
    put(all, arch.lm_head_weight, quantize_weight(all[embed], o, arch.lm_head_weight));
    n++;
  }
  if (count) *count = n;
  // Built through the architecture directly: the original was validated when it was loaded, and the
  // quantized tensors are additions the weight list does not name.
  ModelConfig c = cfg;
  c.int8_activations = o.int8_activations && n > 0;
  return architecture(cfg.model_type).create(std::move(c), io::WeightStore::from_tensors(std::move(all)));
}

std::unique_ptr<Model> quantize_for_export(const Model& model, const QuantOptions& o) {
  if (!o.enabled()) return nullptr;
  int count = 0;
  auto m = quantize_model(model, o, &count);
  if (count == 0)
    HFX_THROW("quant",
              "expected linear weights [N, K] with K a multiple of {} to quantize in {}, got none; try "
              "--group-size 32 or export without --quantize",
              o.group_size, model.config().model_type);
  return m;
}

int write_prequantized_checkpoint(const std::string& dir, const CheckpointQuant& cq) {
  const std::string cfg_path = dir + "/config.json", st_path = dir + "/model.safetensors";
  nlohmann::json config = nlohmann::json::parse(io::read_file(cfg_path));
  if (config.contains("quantization_config"))
    HFX_THROW("quant", "expected a float checkpoint in {} to quantize, got one with a quantization_config",
              dir);
  auto ws = io::WeightStore::open_dir(dir);
  QuantOptions o;
  o.bits = cq.bits;
  o.group_size = static_cast<int>(cq.group_size);
  o.symmetric = cq.symmetric;
  std::vector<std::pair<std::string, Tensor>> out;
  int n = 0;
  for (const std::string& name : ws->names()) {
    Tensor t = ws->get(name).contiguous();
    // gpt2's Conv1D weights ([in, out]) stay float: GPTQ / AWQ tools pack them transposed.
    const bool linear =
        name != "lm_head.weight" && !is_transposed(architecture(config.value("model_type", "")), name) &&
        quantizable(name, ws->info(name), cq.group_size) && t.shape()[0] % (32 / cq.bits) == 0;
    if (!linear) {
      out.emplace_back(name, t);
      continue;
    }
    const std::string prefix = name.substr(0, name.size() - 7);  // drops ".weight"
    const PackedLinear p = to_packed(cq, quantize_weight(t, o, name), prefix);
    out.emplace_back(prefix + ".qweight", p.qweight);
    out.emplace_back(prefix + ".qzeros", p.qzeros);
    out.emplace_back(prefix + ".scales", p.scales);
    if (p.g_idx.defined()) out.emplace_back(prefix + ".g_idx", p.g_idx);
    n++;
  }
  if (n == 0)
    HFX_THROW("quant", "expected linear weights with K a multiple of {} in {}, got none", cq.group_size, dir);
  ws.reset();  // the file is replaced below
  io::write_safetensors(st_path, out);
  config["quantization_config"] = checkpoint_quant_json(cq);
  io::write_file_atomic(cfg_path, config.dump(2));
  return n;
}

std::shared_ptr<io::WeightStore> read_prequantized(const nlohmann::json& quantization_config,
                                                   const io::WeightStore& w, QuantOptions* options) {
  const CheckpointQuant cq = parse_checkpoint_quant(quantization_config);
  std::map<std::string, Tensor> all;
  auto get = [&](const std::string& name) { return w.has(name) ? w.get(name) : Tensor(); };
  std::optional<QuantOptions> seen;
  std::string first;
  for (const std::string& name : w.names()) {
    if (!name.ends_with(".qweight")) continue;
    const std::string prefix = name.substr(0, name.size() - 8);
    const QuantizedWeight q = from_packed(
        cq,
        {get(prefix + ".qweight"), get(prefix + ".qzeros"), get(prefix + ".scales"), get(prefix + ".g_idx")},
        prefix);
    QuantOptions o = options_of(cq, q.K);
    if (seen && seen->group_size != o.group_size)
      HFX_THROW(
          "quant",
          "expected one block size for every layer of the {} checkpoint, got {} for '{}' and {} for '{}' "
          "(group_size -1 over rows of different lengths)",
          cq.method, seen->group_size, first, o.group_size, prefix);
    if (!seen) seen = o, first = prefix;
    put(all, prefix + ".weight", q);
  }
  if (!seen)
    HFX_THROW("quant",
              "expected '*.qweight' tensors in a checkpoint whose quantization_config says {}, got none",
              cq.method);
  for (const std::string& name : w.names()) {
    const auto dot = name.rfind('.');
    const std::string leaf = dot == std::string::npos ? name : name.substr(dot + 1);
    const std::string prefix = dot == std::string::npos ? "" : name.substr(0, dot);
    const bool packed = (leaf == "qweight" || leaf == "qzeros" || leaf == "scales" || leaf == "g_idx") &&
                        w.has(prefix + ".qweight");
    if (!packed) all[name] = w.get(name);
  }
  *options = *seen;
  return io::WeightStore::from_tensors(std::move(all));
}

}  // namespace hfx::quant
