// sentence-transformers' model folder (hfx/models/sentence_transformers.h): modules.json and the Pooling
// module's config.json, read once for every consumer (hfx embed, the GGUF backend's pooling key).
#include "hfx/models/sentence_transformers.h"

#include <filesystem>

#include <nlohmann/json.hpp>

#include "hfx/core/error.h"
#include "hfx/io/safetensors.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace hfx::models {

const char* pooling_name(Pooling p) {
  switch (p) {
    case Pooling::Mean:
      return "mean";
    case Pooling::Cls:
      return "cls";
    case Pooling::Max:
      return "max";
  }
  return "?";
}

Pooling pooling_from_name(const std::string& name) {
  for (Pooling p : {Pooling::Mean, Pooling::Cls, Pooling::Max})
    if (name == pooling_name(p)) return p;
  HFX_THROW("embed", "expected a pooling mode among [mean, cls, max], got '{}'", name);
}

namespace {

json read_json(const fs::path& p) {
  try {
    return json::parse(io::read_file(p.string()));
  } catch (const json::exception& e) {
    HFX_THROW("embed", "expected valid JSON in {}, got: {}", p.string(), e.what());
  }
}

// 1_Pooling/config.json → the one supported mode.
Pooling pooling_of(const json& j, const fs::path& where) {
  static const std::pair<const char*, const char*> kModes[] = {
      {"pooling_mode_mean_tokens", "mean"},
      {"pooling_mode_cls_token", "cls"},
      {"pooling_mode_max_tokens", "max"},
      {"pooling_mode_mean_sqrt_len_tokens", "mean_sqrt_len_tokens"},
      {"pooling_mode_weightedmean_tokens", "weightedmean"},
      {"pooling_mode_lasttoken", "lasttoken"}};
  std::vector<std::string> on;
  for (const auto& [key, name] : kModes)
    if (j.contains(key) && j[key].is_boolean() && j[key].get<bool>()) on.push_back(name);
  if (on.size() != 1) {
    std::string got;
    for (const auto& s : on) got += (got.empty() ? "" : ", ") + s;
    HFX_THROW("embed", "expected exactly one pooling mode in {}, got [{}]", where.string(), got);
  }
  if (on[0] != "mean" && on[0] != "cls" && on[0] != "max")
    HFX_THROW("embed", "expected pooling mode mean, cls or max in {}, got '{}' (not supported)",
              where.string(), on[0]);
  return pooling_from_name(on[0]);
}

}  // namespace

EmbedSettings read_embed_settings(const std::string& dir) {
  EmbedSettings s;
  fs::path modules = fs::path(dir) / "modules.json";
  if (!fs::exists(modules)) return s;
  json m = read_json(modules);
  if (!m.is_array())
    HFX_THROW("embed", "expected a list of modules in {}, got {}", modules.string(), m.type_name());
  s.source = "modules.json";
  s.normalize = false;
  bool pooled = false;
  for (const auto& mod : m) {
    const std::string type = mod.value("type", ""), path = mod.value("path", "");
    if (type == "sentence_transformers.models.Pooling") {
      fs::path cfg = fs::path(dir) / path / "config.json";
      if (!fs::exists(cfg))
        HFX_THROW("embed", "expected the Pooling module's config at {}, got none", cfg.string());
      s.pooling = pooling_of(read_json(cfg), cfg);
      pooled = true;
    } else if (type == "sentence_transformers.models.Normalize") {
      s.normalize = true;
    } else if (type != "sentence_transformers.models.Transformer") {
      HFX_THROW("embed", "expected modules Transformer, Pooling and Normalize in {}, got '{}'",
                modules.string(), type);
    }
  }
  if (!pooled)
    HFX_THROW("embed", "expected a sentence_transformers.models.Pooling module in {}, got none",
              modules.string());
  return s;
}

}  // namespace hfx::models
