// Which tokenizer class transformers 5's AutoTokenizer builds for a folder, where that class rebuilds part of
// the pipeline whatever tokenizer.json says. Only Qwen2Tokenizer does so among the families hfx loads: its
// __init__ (tokenization_qwen2.py) sets an NFC normalizer and its own split regex, which takes digits one at
// a time where Llama-3's takes up to three.
#include <filesystem>

#include "hfx/core/error.h"
#include "hfx/io/safetensors.h"
#include "hfx/tokenizers/tokenizer.h"

namespace hfx::tok {

namespace {

namespace fs = std::filesystem;

// transformers' TOKENIZER_MAPPING_NAMES entries for Qwen2Tokenizer (tokenization_auto.py), the types of hfx's
// registry among them.
const char* const kQwen2Types[] = {"qwen2", "qwen2_moe", "qwen2_vl",  "qwen2_5_vl",
                                   "qwen3", "qwen3_moe", "qwen3_next"};
// Of those, the ones in MODELS_WITH_INCORRECT_HUB_TOKENIZER_CLASS: the mapping wins over tokenizer_config's
// class.
const char* const kOverridden[] = {"qwen2"};

const char* const kQwen2Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

nlohmann::json read_json(const fs::path& p) {
  if (!fs::exists(p)) return nlohmann::json::object();
  nlohmann::json j = nlohmann::json::parse(io::read_file(p.string()), nullptr, false);
  return j.is_object() ? j : nlohmann::json::object();
}

bool any_of(const char* const* b, const char* const* e, const std::string& s) {
  for (; b != e; ++b)
    if (s == *b) return true;
  return false;
}

}  // namespace

bool loads_as_qwen2_tokenizer(const std::string& dir) {
  const std::string type = read_json(fs::path(dir) / "config.json").value("model_type", std::string());
  if (any_of(std::begin(kOverridden), std::end(kOverridden), type)) return true;
  const nlohmann::json tc = read_json(fs::path(dir) / "tokenizer_config.json");
  if (tc.contains("tokenizer_class") && tc["tokenizer_class"].is_string()) {
    const std::string cls = tc["tokenizer_class"].get<std::string>();
    return cls == "Qwen2Tokenizer" || cls == "Qwen2TokenizerFast";
  }
  return any_of(std::begin(kQwen2Types), std::end(kQwen2Types), type);
}

std::string resolved_tokenizer_json(const std::string& dir) {
  const fs::path p = fs::path(dir) / "tokenizer.json";
  std::string text = io::read_file(p.string());
  if (!loads_as_qwen2_tokenizer(dir)) return text;
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(text, nullptr, false);
  HFX_CHECK(j.is_object(), "tokenizer", "expected valid JSON in {}, got a parse error", p.string());
  const bool prefix = read_json(fs::path(dir) / "tokenizer_config.json").value("add_prefix_space", false);
  j["normalizer"] = {{"type", "NFC"}};
  j["pre_tokenizer"] = {{"type", "Sequence"},
                        {"pretokenizers",
                         {{{"type", "Split"},
                           {"pattern", {{"Regex", kQwen2Regex}}},
                           {"behavior", "Isolated"},
                           {"invert", false}},
                          {{"type", "ByteLevel"},
                           {"add_prefix_space", prefix},
                           {"trim_offsets", true},
                           {"use_regex", false}}}}};
  j["decoder"] = {
      {"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}};
  return j.dump();
}

}  // namespace hfx::tok
