// Loading and validation: config.json → architecture → ModelConfig, the checkpoint checked against the
// architecture's weight list (names and shapes, both ways), then the model built over the weights.
#include <filesystem>

#include <fmt/format.h>
#include <regex>
#include <set>

#include "hfx/core/error.h"
#include "hfx/io/safetensors.h"
#include "hfx/models/model.h"
#include "hfx/models/quantize_model.h"
#include "hfx/quant/quantize.h"

namespace hfx {

const char* structure_name(Structure s) {
  switch (s) {
    case Structure::DecoderOnly:
      return "decoder-only";
    case Structure::EncoderOnly:
      return "encoder-only";
    case Structure::EncoderDecoder:
      return "encoder-decoder";
    case Structure::VisionLanguage:
      return "vision-language";
  }
  return "?";
}

Var get(const NamedVars& vars, const std::string& name) {
  for (const auto& [n, v] : vars)
    if (n == name) return v;
  return Var();
}

ComponentDecl Model::component(const std::string& name) const {
  std::vector<ComponentDecl> all = components();
  for (auto& c : all)
    if (c.name == name) return std::move(c);
  std::string known;
  for (const auto& c : all) known += (known.empty() ? "" : ", ") + c.name;
  HFX_THROW("model", "expected a component of {} ({}) among [{}], got '{}'", cfg_.model_type,
            structure_name(structure()), known, name);
}

std::string head_of(const Architecture& arch, const nlohmann::json& config) {
  if (arch.heads.empty()) return "causal_lm";
  auto it = config.find("architectures");
  if (it == config.end() || !it->is_array() || it->empty()) return arch.heads.front().first;
  const std::string cls = (*it)[0].is_string() ? (*it)[0].get<std::string>() : (*it)[0].dump();
  std::string known;
  for (const auto& [head, c] : arch.heads) {
    if (c == cls) return head;
    known += (known.empty() ? "" : ", ") + c;
  }
  HFX_THROW("model",
            "expected one of the classes [{}] of {} in config.json's architectures, got '{}'; hfx supports "
            "these heads",
            known, arch.model_type, cls);
}

Structure structure_of_config(const nlohmann::json& config) {
  HFX_CHECK(config.is_object() && config.contains("model_type") && config["model_type"].is_string(), "model",
            "expected config.json with a model_type string, got {}",
            config.is_object() ? "none" : "no object");
  const std::string type = config["model_type"].get<std::string>();
  const Architecture* a = find_architecture(type);
  HFX_CHECK(a != nullptr, "model",
            "expected a model_type hfx supports (hfx create-tiny --help lists them), got '{}'", type);
  const std::string head = head_of(*a, config);
  if (head == "causal_lm") return Structure::DecoderOnly;
  if (head == "seq2seq_lm") return Structure::EncoderDecoder;
  if (head == "image_text_to_text") return Structure::VisionLanguage;
  return Structure::EncoderOnly;
}

std::vector<std::string> Model::component_names() const {
  std::vector<std::string> r;
  for (const auto& c : components()) r.push_back(c.name);
  return r;
}

std::string Model::weight_name(const std::string& name) const {
  if (rename_to_.empty() && rename_from_.empty()) return name;
  if (name.compare(0, rename_from_.size(), rename_from_) != 0) return name;
  return rename_to_ + name.substr(rename_from_.size());
}

Var Model::w(Builder& b, const std::string& name) const {
  const std::string stored = weight_name(name);
  if (stored != name) return b.param(stored, weights_->get(stored));
  if (!weights_->has(name) && weights_->has(quant::quant_names(name).qweight))
    HFX_THROW(
        "quant",
        "expected {} to read '{}' through its quantized linear layer, got a float read: this "
        "layer of {} does not support --quantize yet (decoder-only models built on src/models/blocks.cpp do)",
        cfg_.model_type, name, cfg_.model_type);
  if (!weights_->has(name)) HFX_THROW("model", "expected tensor '{}' in the checkpoint, got none", name);
  return b.param(name, weights_->get(name));
}

Var Model::w_opt(Builder& b, const std::string& name) const {
  const std::string stored = weight_name(name);
  if (!weights_->has(stored)) return Var();
  return b.param(stored, weights_->get(stored));
}

bool kv_cache_only(const Model& m) {
  for (const CacheLeafDecl& l : m.component(m.component_names().front()).cache)
    if (l.layer_type != "full_attention" && l.layer_type != "sliding_attention") return false;
  return true;
}

std::vector<ComponentDecl> CausalLM::components() const {
  ComponentDecl c;
  c.name = "model";
  c.inputs = {{"input_ids", DType::I64, {"batch_size", "sequence_length"}},
              {"attention_mask", DType::I64, {"batch_size", "past_sequence_length+sequence_length"}},
              {"position_ids", DType::I64, {"batch_size", "sequence_length"}}};
  c.outputs = {"logits"};
  std::vector<CacheLayerSpec> layout = cache_layout();
  for (size_t i = 0; i < layout.size(); i++) {
    for (const char* kind : {"key", "value"}) {
      std::string past = fmt::format("past_key_values.{}.{}", i, kind),
                  present = fmt::format("present.{}.{}", i, kind);
      c.inputs.push_back({past,
                          DType::F32,
                          {"batch_size", std::to_string(layout[i].num_kv_heads), "past_sequence_length",
                           std::to_string(layout[i].head_dim)},
                          true});
      c.outputs.push_back(present);
      c.cache.push_back({static_cast<int>(i), kind, layout[i].layer_type, layout[i].window, past, present});
    }
  }
  return {c};
}

// The causal LM's one component: the past leaves (if given) fill a DynamicCache, forward runs, and the
// cache's layers come back as the present leaves.
NamedVars CausalLM::call(const std::string& component, Builder& b, const NamedVars& in,
                         const CallOptions& opts) const {
  if (component != "model") (void)this->component(component);  // throws, listing the components
  ForwardArgs args;
  args.input_ids = get(in, "input_ids");
  args.inputs_embeds =
      get(in, "inputs_embeds");  // a vision-language model's decoder (hfx/models/component.h)
  if (!args.input_ids && !args.inputs_embeds)
    HFX_THROW("model", "expected input 'input_ids' for component 'model' of {}, got none",
              config().model_type);
  args.attention_mask = get(in, "attention_mask");
  args.position_ids = get(in, "position_ids");
  args.token_type_ids = get(in, "token_type_ids");
  args.logits_to_keep = opts.logits_to_keep;
  std::vector<CacheLayerSpec> layout = cache_layout();
  DynamicCache cache(layout);
  if (opts.use_cache) args.cache = &cache;
  for (size_t i = 0; i < layout.size(); i++) {
    Var k = get(in, fmt::format("past_key_values.{}.key", i)),
        v = get(in, fmt::format("past_key_values.{}.value", i));
    if (k && v && opts.use_cache) cache.set_past(static_cast<int>(i), k, v);
  }
  ForwardOut out = forward(b, args);
  NamedVars r{{"logits", out.logits}};
  if (!opts.use_cache) return r;
  for (size_t i = 0; i < layout.size(); i++) {
    const Var& k = cache.key(static_cast<int>(i));
    const Var& v = cache.value(static_cast<int>(i));
    if (!k.defined() || !v.defined())
      HFX_THROW("model", "expected the forward to update cache layer {}, got no key/value", i);
    r.emplace_back(fmt::format("present.{}.key", i), k);
    r.emplace_back(fmt::format("present.{}.value", i), v);
  }
  return r;
}

std::vector<CacheLayerSpec> CausalLM::cache_layout() const {
  std::vector<CacheLayerSpec> r;
  const ModelConfig& cfg = config();
  for (int64_t i = 0; i < cfg.num_hidden_layers; i++) {
    CacheLayerSpec s;
    s.num_kv_heads = cfg.num_key_value_heads;
    s.head_dim = cfg.head_dim;
    s.layer_type = i < static_cast<int64_t>(cfg.layer_types.size()) ? cfg.layer_types[i] : "full_attention";
    s.window = s.layer_type == "sliding_attention" ? cfg.sliding_window : 0;
    r.push_back(s);
  }
  return r;
}

static std::string supported_list() {
  std::string s;
  for (const Architecture* a : all_architectures()) s += (s.empty() ? "" : ", ") + a->model_type;
  return s;
}

// Edit distance (insert, delete, substitute: 1 each) between two model_type names.
static size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); j++) row[j] = j;
  for (size_t i = 1; i <= a.size(); i++) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); j++) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::vector<std::string> nearest_model_types(const std::string& model_type, size_t n) {
  std::vector<std::pair<size_t, std::string>> by_distance;
  for (const Architecture* a : all_architectures())
    by_distance.push_back({edit_distance(model_type, a->model_type), a->model_type});
  std::stable_sort(by_distance.begin(), by_distance.end(),
                   [](const auto& x, const auto& y) { return x.first < y.first; });
  std::vector<std::string> r;
  for (size_t i = 0; i < std::min(n, by_distance.size()); i++) r.push_back(by_distance[i].second);
  return r;
}

const Architecture& architecture(const std::string& model_type) {
  if (const Architecture* a = find_architecture(model_type)) return *a;
  std::string near;
  for (const auto& t : nearest_model_types(model_type, 3)) near += (near.empty() ? "" : ", ") + t;
  HFX_THROW("model",
            "expected a supported model_type, got '{}' (nearest: {}); `hfx create-tiny --help` lists all {}; "
            "to add one, see docs/adding-an-architecture.md",
            model_type, near, all_architectures().size());
}

ModelConfig parse_model_config(const nlohmann::json& config) {
  if (!config.is_object() || !config.contains("model_type") || !config["model_type"].is_string())
    HFX_THROW("model", "expected config.json to name its model_type (one of {}), got none", supported_list());
  const Architecture& arch = architecture(config["model_type"].get<std::string>());
  try {
    return arch.parse_config(config);
  } catch (const nlohmann::json::exception& e) {
    // The architectures read fields with nlohmann's typed getters: a field of the wrong type ends up here.
    HFX_THROW("model", "expected config.json fields of the types {} reads, got: {}; fix config.json",
              arch.model_type, e.what());
  }
}

void validate_weights(const Architecture& arch, const ModelConfig& cfg, const io::WeightStore& w,
                      const std::string& where) {
  auto specs = arch.weight_specs(cfg);
  std::set<std::string> expected;
  auto in_file = [&](const std::string& name) {
    if (w.has(name) && !w.info(name).file.empty()) return w.info(name).file;
    return where;
  };
  for (const auto& [name, shape] : specs) {
    expected.insert(name);
    const quant::QuantNames qn = quant::quant_names(name);
    if (!w.has(name) && w.has(qn.qweight) && shape.size() == 2) {  // a pre-quantized linear weight
      const bool zp = w.has(qn.zero_points);
      const quant::QuantizedWeight q = quant::describe(w.get(qn.qweight), w.get(qn.scales),
                                                       zp ? w.get(qn.zero_points) : Tensor(), shape[1], name);
      if (q.N != shape[0])
        HFX_THROW("model", "expected tensor '{}' of shape {} (quantized), got {} output features in {}", name,
                  shape_to_string(shape), q.N, where);
      expected.insert({qn.qweight, qn.scales});
      if (zp) expected.insert(qn.zero_points);
      continue;
    }
    if (!w.has(name))
      HFX_THROW("model", "expected tensor '{}' of shape {}, got none in {}", name, shape_to_string(shape),
                where);
    const Shape& got = w.info(name).shape;
    if (got != shape)
      HFX_THROW("model", "expected tensor '{}' of shape {}, got {} in {}", name, shape_to_string(shape),
                shape_to_string(got), in_file(name));
  }
  std::vector<std::regex> optional;
  for (const auto& p : arch.optional_weights) optional.emplace_back(p);
  if (cfg.tie_word_embeddings) optional.emplace_back("lm_head\\.weight");
  for (const auto& name : w.names()) {
    if (expected.count(name)) continue;
    bool ok = false;
    for (const auto& re : optional) ok = ok || std::regex_match(name, re);
    if (!ok)
      HFX_THROW("model", "expected no tensor '{}' ({} does not use it), got one of shape {} in {}", name,
                cfg.model_type, shape_to_string(w.info(name).shape), in_file(name));
  }
}

std::unique_ptr<Model> make_model(const nlohmann::json& config, std::shared_ptr<io::WeightStore> w) {
  ModelConfig cfg = parse_model_config(config);
  const Architecture& arch = architecture(cfg.model_type);
  if (!arch.heads.empty())
    (void)head_of(arch, config);  // a class the architecture does not declare is refused
  auto files = w->files();
  std::string where = files.empty() ? std::string("the in-memory weights") : files.front();
  if (files.size() > 1) where = std::filesystem::path(files.front()).parent_path().string();
  for (const auto& [from, to] : arch.weight_layouts) {  // another layout of the same weights
    const auto names = w->names();
    auto under = [&](const std::string& p) {
      return std::any_of(names.begin(), names.end(),
                         [&](const std::string& n) { return n.rfind(p, 0) == 0; });
    };
    if (under(from) && !under(to)) w->rename_prefix(from, to);
  }
  if (config.contains("quantization_config"))  // GPTQ / AWQ: the codes go into the store as they are
    w = quant::read_prequantized(config["quantization_config"], *w, &cfg.prequantized);
  validate_weights(arch, cfg, *w, where);
  return arch.create(std::move(cfg), std::move(w));
}

std::unique_ptr<Model> load_model(const std::string& dir) {
  std::string cfg_path = (std::filesystem::path(dir) / "config.json").string();
  nlohmann::json config;
  try {
    config = nlohmann::json::parse(io::read_file(cfg_path));
  } catch (const nlohmann::json::exception& e) {
    HFX_THROW("model", "expected valid JSON in {}, got: {}", cfg_path, e.what());
  }
  return make_model(config, io::WeightStore::open_dir(dir));
}

const CausalLM& as_causal_lm(const Model& m) {
  if (auto* c = dynamic_cast<const CausalLM*>(&m)) return *c;
  HFX_THROW("model",
            "expected a decoder-only causal LM here, got the {} model {} (head {}); this path supports "
            "decoder-only "
            "models only",
            structure_name(m.structure()), m.config().model_type, m.head());
}

namespace {
std::unique_ptr<CausalLM> to_causal(std::unique_ptr<Model> m) {
  as_causal_lm(*m);
  return std::unique_ptr<CausalLM>(static_cast<CausalLM*>(m.release()));
}
}  // namespace

std::unique_ptr<CausalLM> load_causal_lm(const std::string& dir) { return to_causal(load_model(dir)); }
std::unique_ptr<CausalLM> make_causal_lm(const nlohmann::json& config, std::shared_ptr<io::WeightStore> w) {
  return to_causal(make_model(config, std::move(w)));
}

}  // namespace hfx
