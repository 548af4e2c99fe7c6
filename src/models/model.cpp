// Loading and validation: config.json → architecture → ModelConfig, the checkpoint checked against the
// architecture's weight list (names and shapes, both ways), then the model built over the weights.
#include <filesystem>
#include <regex>
#include <set>

#include "hfx/core/error.h"
#include "hfx/io/safetensors.h"
#include "hfx/models/model.h"

namespace hfx {

Var CausalLM::w(Builder& b, const std::string& name) const {
  if (!weights_->has(name)) HFX_THROW("model", "expected tensor '{}' in the checkpoint, got none", name);
  return b.param(name, weights_->get(name));
}

Var CausalLM::w_opt(Builder& b, const std::string& name) const {
  if (!weights_->has(name)) return Var();
  return b.param(name, weights_->get(name));
}

std::vector<CacheLayerSpec> CausalLM::cache_layout() const {
  std::vector<CacheLayerSpec> r;
  for (int64_t i = 0; i < cfg_.num_hidden_layers; i++) {
    CacheLayerSpec s;
    s.num_kv_heads = cfg_.num_key_value_heads;
    s.head_dim = cfg_.head_dim;
    s.layer_type = i < static_cast<int64_t>(cfg_.layer_types.size()) ? cfg_.layer_types[i] : "full_attention";
    s.window = s.layer_type == "sliding_attention" ? cfg_.sliding_window : 0;
    r.push_back(s);
  }
  return r;
}

static std::string supported_list() {
  std::string s;
  for (const Architecture* a : all_architectures()) s += (s.empty() ? "" : ", ") + a->model_type;
  return s;
}

const Architecture& architecture(const std::string& model_type) {
  if (const Architecture* a = find_architecture(model_type)) return *a;
  HFX_THROW("model", "expected a supported model_type ({}), got '{}'", supported_list(), model_type);
}

ModelConfig parse_model_config(const nlohmann::json& config) {
  if (!config.is_object() || !config.contains("model_type") || !config["model_type"].is_string())
    HFX_THROW("model", "expected config.json to name its model_type (one of {}), got none", supported_list());
  return architecture(config["model_type"].get<std::string>()).parse_config(config);
}

void validate_weights(const Architecture& arch, const ModelConfig& cfg, const io::WeightStore& w, const std::string& where) {
  auto specs = arch.weight_specs(cfg);
  std::set<std::string> expected;
  auto in_file = [&](const std::string& name) {
    if (w.has(name) && !w.info(name).file.empty()) return w.info(name).file;
    return where;
  };
  for (const auto& [name, shape] : specs) {
    expected.insert(name);
    if (!w.has(name))
      HFX_THROW("model", "expected tensor '{}' of shape {}, got none in {}", name, shape_to_string(shape), where);
    const Shape& got = w.info(name).shape;
    if (got != shape)
      HFX_THROW("model", "expected tensor '{}' of shape {}, got {} in {}", name, shape_to_string(shape), shape_to_string(got),
                in_file(name));
  }
  std::vector<std::regex> optional;
  for (const auto& p : arch.optional_weights) optional.emplace_back(p);
  if (cfg.tie_word_embeddings) optional.emplace_back("lm_head\\.weight");
  for (const auto& name : w.names()) {
    if (expected.count(name)) continue;
    bool ok = false;
    for (const auto& re : optional) ok = ok || std::regex_match(name, re);
    if (!ok)
      HFX_THROW("model", "expected no tensor '{}' ({} does not use it), got one of shape {} in {}", name, cfg.model_type,
                shape_to_string(w.info(name).shape), in_file(name));
  }
}

std::unique_ptr<CausalLM> make_model(const nlohmann::json& config, std::shared_ptr<io::WeightStore> w) {
  ModelConfig cfg = parse_model_config(config);
  const Architecture& arch = architecture(cfg.model_type);
  auto files = w->files();
  std::string where = files.empty() ? std::string("the in-memory weights") : files.front();
  if (files.size() > 1) where = std::filesystem::path(files.front()).parent_path().string();
  validate_weights(arch, cfg, *w, where);
  return arch.create(std::move(cfg), std::move(w));
}

std::unique_ptr<CausalLM> load_model(const std::string& dir) {
  std::string cfg_path = (std::filesystem::path(dir) / "config.json").string();
  nlohmann::json config;
  try {
    config = nlohmann::json::parse(io::read_file(cfg_path));
  } catch (const nlohmann::json::exception& e) {
    HFX_THROW("model", "expected valid JSON in {}, got: {}", cfg_path, e.what());
  }
  return make_model(config, io::WeightStore::open_dir(dir));
}

}  // namespace hfx
