// Which tokenizer class transformers 5's AutoTokenizer builds for a folder, where that class rebuilds part of
// the pipeline whatever tokenizer.json says (TokenizersBackend passes only the file's vocabulary, charsmap
// and post-processor to the class's __init__). Among the families hfx loads:
// - Qwen2Tokenizer (tokenization_qwen2.py) sets an NFC normalizer and its own split regex, which takes digits
//   one at a time where Llama-3's takes up to three;
// - XLMRobertaTokenizer and CamembertTokenizer set the file's sentencepiece charsmap as the only normalizer,
//   WhitespaceSplit + Metaspace as pre-tokenizer, a Metaspace decoder and `<s> $A </s>` as post-processor.
//   Hub files written by transformers 4 (Precompiled + Replace(" {2,}"), Metaspace alone) tokenize
//   differently as they are: " Hello" is ["▁", "Hello"] there and ["▁Hello"] in transformers 5.
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

// tokenizer_config.json's class, "Fast" dropped (transformers 5 maps both names to one class); empty if none.
std::string config_class(const fs::path& dir) {
  const nlohmann::json tc = read_json(dir / "tokenizer_config.json");
  if (!tc.contains("tokenizer_class") || !tc["tokenizer_class"].is_string()) return {};
  std::string cls = tc["tokenizer_class"].get<std::string>();
  if (cls.ends_with("Fast")) cls.resize(cls.size() - 4);
  return cls;
}

// A special token of tokenizer_config.json (a string or an AddedToken's content), else `dflt`.
std::string config_token(const nlohmann::json& tc, const char* key, const char* dflt) {
  if (!tc.contains(key)) return dflt;
  const nlohmann::json& v = tc[key];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string())
    return v["content"].get<std::string>();
  return dflt;
}

// The id of `token` in a Unigram vocabulary ([[piece, score], ...]) or the added tokens.
std::optional<int64_t> unigram_id(const nlohmann::ordered_json& j, const std::string& token) {
  const auto& vocab = j["model"]["vocab"];
  for (size_t i = 0; i < vocab.size(); ++i)
    if (vocab[i].is_array() && !vocab[i].empty() && vocab[i][0] == token) return static_cast<int64_t>(i);
  for (const auto& a : j.value("added_tokens", nlohmann::ordered_json::array()))
    if (a.value("content", "") == token) return a.value("id", int64_t{-1});
  return std::nullopt;
}

// The first Precompiled normalizer of the file (alone or in a Sequence), as transformers 5 extracts it.
nlohmann::ordered_json precompiled_of(const nlohmann::ordered_json& norm) {
  if (norm.is_object() && norm.value("type", "") == "Precompiled") return norm;
  if (norm.is_object() && norm.value("type", "") == "Sequence" && norm.contains("normalizers"))
    for (const auto& x : norm["normalizers"])
      if (x.is_object() && x.value("type", "") == "Precompiled") return x;
  return nullptr;
}

// XLMRobertaTokenizer / CamembertTokenizer's __init__ over the file's vocabulary (see the top of this file).
void rebuild_sentencepiece_roberta(nlohmann::ordered_json& j, const fs::path& dir, bool camembert) {
  const std::string where = (dir / "tokenizer.json").string();
  HFX_CHECK(j.contains("model") && j["model"].is_object() && j["model"].value("type", "") == "Unigram" &&
                j["model"].contains("vocab") && j["model"]["vocab"].is_array(),
            "tokenizer", "expected a Unigram model in {} for {}, got {}", where,
            camembert ? "CamembertTokenizer" : "XLMRobertaTokenizer",
            j.contains("model") ? j["model"].value("type", std::string("no type")) : std::string("no model"));
  const nlohmann::json tc = read_json(dir / "tokenizer_config.json");
  const std::string bos = config_token(tc, "bos_token", "<s>"), eos = config_token(tc, "eos_token", "</s>"),
                    unk = config_token(tc, "unk_token", "<unk>");
  const std::optional<int64_t> bos_id = unigram_id(j, bos), eos_id = unigram_id(j, eos);
  HFX_CHECK(bos_id && eos_id, "tokenizer",
            "expected the bos and eos tokens '{}' and '{}' in {}'s vocabulary, got {}", bos, eos, where,
            bos_id ? "no eos" : "no bos");
  j["model"]["unk_id"] = camembert ? unigram_id(j, unk).value_or(0) : int64_t{3};
  j["model"]["byte_fallback"] = false;
  j["normalizer"] = precompiled_of(j.value("normalizer", nlohmann::ordered_json()));
  const bool prefix = tc.value("add_prefix_space", true);
  const nlohmann::ordered_json meta = {{"type", "Metaspace"},
                                       {"replacement", "\u2581"},
                                       {"prepend_scheme", prefix ? "always" : "never"},
                                       {"split", true}};
  j["pre_tokenizer"] = {{"type", "Sequence"}, {"pretokenizers", {{{"type", "WhitespaceSplit"}}, meta}}};
  j["decoder"] = meta;
  auto special = [](const std::string& t) {
    return nlohmann::ordered_json{{"SpecialToken", {{"id", t}, {"type_id", 0}}}};
  };
  auto seq = [](const char* id) {
    return nlohmann::ordered_json{{"Sequence", {{"id", id}, {"type_id", 0}}}};
  };
  j["post_processor"] = {
      {"type", "TemplateProcessing"},
      {"single", {special(bos), seq("A"), special(eos)}},
      {"pair", {special(bos), seq("A"), special(eos), special(eos), seq("B"), special(eos)}},
      {"special_tokens",
       {{bos, {{"id", bos}, {"ids", {*bos_id}}, {"tokens", {bos}}}},
        {eos, {{"id", eos}, {"ids", {*eos_id}}, {"tokens", {eos}}}}}}};
}

}  // namespace

std::string rebuilding_tokenizer_class(const std::string& dir) {
  if (loads_as_qwen2_tokenizer(dir)) return "Qwen2Tokenizer";
  const std::string cls = config_class(dir);
  if (cls == "XLMRobertaTokenizer" || cls == "CamembertTokenizer") return cls;
  if (!cls.empty()) return {};
  const std::string type = read_json(fs::path(dir) / "config.json").value("model_type", std::string());
  if (type == "xlm-roberta") return "XLMRobertaTokenizer";
  if (type == "camembert") return "CamembertTokenizer";
  return {};
}

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
  const std::string cls = rebuilding_tokenizer_class(dir);
  if (cls.empty()) return text;
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(text, nullptr, false);
  HFX_CHECK(j.is_object(), "tokenizer", "expected valid JSON in {}, got a parse error", p.string());
  if (cls != "Qwen2Tokenizer") {
    rebuild_sentencepiece_roberta(j, dir, cls == "CamembertTokenizer");
    return j.dump();
  }
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
