// The tokenizer as llama.cpp reads it (tokenizer.ggml.*), from the export folder's tokenizer files: a
// byte-level BPE becomes llama.cpp's "gpt2" model with the pre-tokenizer it names by its regex, a
// byte-fallback BPE its "llama" (sentencepiece) model; special ids, add_bos and the chat template come along.
#include "export/gguf/gguf_vocab.h"

#include <filesystem>
#include <optional>

#include "hfx/core/error.h"
#include "hfx/io/safetensors.h"
#include "hfx/tokenizers/tokenizer.h"

namespace hfx::gguf {

namespace {

namespace fs = std::filesystem;

// llama.cpp's token types (llama_token_type): normal, unknown, control, user-defined, unused, byte.
enum : int32_t { NORMAL = 1, UNKNOWN = 2, CONTROL = 3, USER_DEFINED = 4, UNUSED = 5, BYTE = 6 };

// A Split pre-tokenizer's regex → llama.cpp's tokenizer.ggml.pre (llama-vocab.cpp's LLAMA_VOCAB_PRE_TYPE
// names; convert_hf_to_gguf.py's get_vocab_base_pre picks them by hashing a tokenization, hfx by the regex).
struct PreRegex {
  const char* regex;
  const char* pre;
};
const PreRegex kPreRegexes[] = {
    {"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
     "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
     "llama-bpe"},
    {"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
     "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
     "qwen2"},
};

// A tokenizer.json component's parts: a Sequence's list (under `list`), else the component itself.
std::vector<nlohmann::json> parts_of(const nlohmann::json& node, const char* list) {
  std::vector<nlohmann::json> parts;
  if (node.is_object() && node.value("type", "") == "Sequence")
    for (const auto& x : node[list]) parts.push_back(x);
  else if (node.is_object())
    parts.push_back(node);
  return parts;
}

// llama.cpp's name of the pre-tokenizer: that of the tokenizer's Split regex (alone or first in a Sequence),
// or "gpt-2" for a ByteLevel that splits with GPT-2's own regex. `tok` is tokenizer.json as transformers 5
// builds it (tok::resolved_tokenizer_json: Qwen2Tokenizer's own regex whatever the file says).
std::string pre_of(const nlohmann::json& tok) {
  const nlohmann::json& p = tok.value("pre_tokenizer", nlohmann::json());
  for (const auto& x : parts_of(p, "pretokenizers")) {
    if (x.value("type", "") == "Split" && x.contains("pattern") && x["pattern"].contains("Regex")) {
      const std::string re = x["pattern"]["Regex"].get<std::string>();
      for (const PreRegex& k : kPreRegexes)
        if (re == k.regex) return k.pre;
      HFX_THROW(
          "gguf",
          "expected a pre-tokenizer llama.cpp names (the regex of llama-bpe or qwen2), got the regex '{}'; "
          "its tokenization in llama.cpp would differ from transformers'",
          re);
    }
    if (x.value("type", "") == "ByteLevel" && x.value("use_regex", true)) return "gpt-2";
  }
  HFX_THROW("gguf", "expected a byte-level BPE pre-tokenizer (a Split regex or ByteLevel), got {}",
            p.dump().substr(0, 200));
}

std::vector<std::string> merges_of(const nlohmann::json& model) {
  std::vector<std::string> merges;
  for (const auto& m : model.value("merges", nlohmann::json::array()))
    merges.push_back(m.is_string() ? m.get<std::string>()
                                   : m[0].get<std::string>() + " " + m[1].get<std::string>());
  return merges;
}

// Tokens by id (the model's vocabulary, then the added tokens), their types and, for SPM, scores. A WordPiece
// vocabulary is written as llama.cpp's "bert" model reads it (the converter's phantom-space vocabulary): a
// word's first piece "x" as "\u2581x", a continuation "##x" as "x", control tokens as they are.
void add_tokens(File& f, const nlohmann::json& tok, int64_t vocab_size, bool spm, bool wordpiece = false) {
  std::vector<std::string> tokens(static_cast<size_t>(vocab_size));
  std::vector<int32_t> types(static_cast<size_t>(vocab_size), NORMAL);
  std::vector<float> scores(static_cast<size_t>(vocab_size), 0.0f);
  for (auto it = tok["model"]["vocab"].begin(); it != tok["model"]["vocab"].end(); ++it) {
    const int64_t id = it.value().get<int64_t>();
    if (id < 0 || id >= vocab_size) continue;
    tokens[static_cast<size_t>(id)] = it.key();
    scores[static_cast<size_t>(id)] = -static_cast<float>(id);  // BPE merges by rank: the id order
    if (spm && it.key().size() == 6 && it.key().rfind("<0x", 0) == 0) types[static_cast<size_t>(id)] = BYTE;
  }
  for (const auto& a : tok.value("added_tokens", nlohmann::json::array())) {
    const int64_t id = a["id"].get<int64_t>();
    if (id < 0 || id >= vocab_size) continue;
    const std::string content = a["content"].get<std::string>();
    tokens[static_cast<size_t>(id)] = content;
    types[static_cast<size_t>(id)] =
        spm && content == "<unk>" ? UNKNOWN : (a.value("special", false) ? CONTROL : USER_DEFINED);
  }
  for (int64_t i = 0; i < vocab_size; i++) {
    auto& t = tokens[static_cast<size_t>(i)];
    if (t.empty()) {  // the embedding's rows beyond the tokenizer (padding)
      t = "[PAD" + std::to_string(i) + "]", types[static_cast<size_t>(i)] = UNUSED;
    } else if (wordpiece && types[static_cast<size_t>(i)] != CONTROL) {
      t = t.starts_with("##") ? t.substr(2) : "\xe2\x96\x81" + t;
    }
  }
  f.kv_strs("tokenizer.ggml.tokens", tokens);
  if (spm) f.kv_f32s("tokenizer.ggml.scores", scores);
  f.kv_i32s("tokenizer.ggml.token_type", types);
}

// The ids a post-processor puts around a single text, cls A sep: BertProcessing's, RobertaProcessing's, or a
// TemplateProcessing's whose single template is [special, A, special] (alone or in a Sequence).
struct Wrap {
  bool found = false;
  uint32_t cls = 0, sep = 0;
};
Wrap wrap_of(const nlohmann::json& tok) {
  for (const auto& x : parts_of(tok.value("post_processor", nlohmann::json()), "processors")) {
    const std::string type = x.value("type", "");
    if (type == "BertProcessing" || type == "RobertaProcessing")
      return Wrap{true, x["cls"][1].get<uint32_t>(), x["sep"][1].get<uint32_t>()};
    const nlohmann::json single = x.value("single", nlohmann::json::array());
    if (type == "TemplateProcessing" && single.size() == 3 && single[0].contains("SpecialToken") &&
        single[1].contains("Sequence") && single[2].contains("SpecialToken")) {
      auto id = [&](const nlohmann::json& t) {
        return x["special_tokens"][t["SpecialToken"]["id"].get<std::string>()]["ids"][0].get<uint32_t>();
      };
      return Wrap{true, id(single[0]), id(single[2])};
    }
  }
  return Wrap{};
}

// Whether the tokenizer puts BOS first: tokenizer_config.json's add_bos_token, else a TemplateProcessing
// post-processor whose single-sequence template starts with a special token.
bool adds_bos(const nlohmann::json& tok, const hfx::tok::TokenizerConfig& tc) {
  if (tc.add_bos_token) return *tc.add_bos_token;
  for (const auto& x : parts_of(tok.value("post_processor", nlohmann::json()), "processors"))
    if (x.value("type", "") == "TemplateProcessing" && !x["single"].empty())
      return x["single"][0].contains("SpecialToken");
  return false;
}

// Whether the single-text template ends with a special token after the text (T5's "$A </s>"): llama.cpp's
// add_eos_token.
bool adds_eos(const nlohmann::json& tok) {
  for (const auto& x : parts_of(tok.value("post_processor", nlohmann::json()), "processors"))
    if (x.value("type", "") == "TemplateProcessing" && x["single"].size() >= 2)
      return x["single"].back().contains("SpecialToken") &&
             x["single"][x["single"].size() - 2].contains("Sequence");
  return false;
}

nlohmann::json read_json(const fs::path& p) {
  return fs::exists(p) ? nlohmann::json::parse(io::read_file(p.string())) : nlohmann::json::object();
}

// A special token tokenizer_config.json names (a string or an AddedToken's content), by id.
std::optional<int32_t> named_id(const nlohmann::json& tc, const char* key, const hfx::tok::Tokenizer& hf) {
  if (!tc.contains(key)) return std::nullopt;
  const nlohmann::json& v = tc[key];
  const std::string s = v.is_string() ? v.get<std::string>() : v.is_object() ? v.value("content", "") : "";
  return s.empty() ? std::nullopt : hf.token_to_id(s);
}

// BERT's WordPiece as llama.cpp's "bert" (WPM) tokenizer runs it: BertNormalizer (clean text, Chinese
// characters split, lowercase and accent stripping as the file says) and BertPreTokenizer, which llama.cpp's
// WPM session does in one pass; greedy longest-match pieces. Special ids as the converter's SpecialVocab
// writes them: [CLS] as BOS, [SEP] as EOS and separator (no cls_token_id: gguf-py's writer has none,
// llama.cpp reads none).
void add_wordpiece(File& f, const nlohmann::json& tok, const nlohmann::json& tc, const ModelConfig& c,
                   const hfx::tok::Tokenizer& hf) {
  const nlohmann::json& norm = tok.value("normalizer", nlohmann::json());
  const nlohmann::json& pre = tok.value("pre_tokenizer", nlohmann::json());
  HFX_CHECK(norm.is_object() && norm.value("type", "") == "BertNormalizer" &&
                norm.value("clean_text", true) && norm.value("handle_chinese_chars", true) &&
                pre.is_object() && pre.value("type", "") == "BertPreTokenizer" &&
                tok["model"].value("continuing_subword_prefix", "##") == "##",
            "gguf",
            "expected BERT's WordPiece (BertNormalizer with clean_text and Chinese characters, "
            "BertPreTokenizer, '##' continuations) for llama.cpp's bert tokenizer, got normalizer {} and "
            "pre-tokenizer {}",
            norm.dump().substr(0, 120), pre.dump().substr(0, 120));
  f.kv_str("tokenizer.ggml.model", "bert");
  f.kv_str("tokenizer.ggml.pre",
           "default");  // WPM ignores it; the converter's hash names only known vocabularies
  add_tokens(f, tok, c.vocab_size, false, true);
  f.kv_u32("tokenizer.ggml.token_type_count", static_cast<uint32_t>(c.raw.value("type_vocab_size", 1)));
  const std::optional<int32_t> cls = named_id(tc, "cls_token", hf), sep = named_id(tc, "sep_token", hf),
                               mask = named_id(tc, "mask_token", hf);
  HFX_CHECK(
      cls && sep, "gguf",
      "expected cls_token and sep_token in tokenizer_config.json for llama.cpp's bert tokenizer (it adds "
      "them around every text), got {} and {}",
      cls ? "one" : "none", sep ? "one" : "none");
  auto put = [&](const char* key, std::optional<int32_t> id) {
    if (id) f.kv_u32(std::string("tokenizer.ggml.") + key, static_cast<uint32_t>(*id));
  };
  put("bos_token_id", cls);
  put("eos_token_id", sep);
  put("unknown_token_id", hf.unk_id());
  put("seperator_token_id", sep);  // sic: gguf's key
  std::optional<int32_t> pad = hf.pad_id();
  if (!pad && c.pad_token_id) pad = static_cast<int32_t>(*c.pad_token_id);
  put("padding_token_id", pad);
  put("mask_token_id", mask);
  f.kv_bool("tokenizer.ggml.add_bos_token", true);
  f.kv_bool("tokenizer.ggml.add_eos_token", true);
  f.kv_bool("tokenizer.ggml.add_sep_token", false);
  f.kv_bool("tokenizer.ggml.normalizer.lowercase", norm.value("lowercase", true));
  if (norm.contains("strip_accents") && norm["strip_accents"].is_boolean())  // null: as lowercase
    f.kv_bool("tokenizer.ggml.normalizer.strip_accents", norm["strip_accents"].get<bool>());
}

// The whitespace of ordinary text (tab, newline, vertical tab, form feed, carriage return, space, no-break
// space, ideographic space), which the charsmap must turn into ' ' (or drop). Other Unicode whitespace it
// leaves as is tokenizes differently (nmt_nfkc, XLM-R's map, keeps U+0085 only; docs/gguf.md says so).
constexpr const char* kWhiteSpace[] = {"\t", "\n", "\v", "\f", "\r", " ", "\u00a0", "\u3000"};

// A sentencepiece Unigram (XLM-R's, CamemBERT's, as transformers 5 builds them: the charsmap,
// WhitespaceSplit, Metaspace "always") as llama.cpp's UGM tokenizer ("t5" model) runs it: the charsmap, then
// words split at ' ' with a "▁" before each (remove_extra_whitespaces, add_space_prefix), Viterbi over the
// pieces' scores. That equals transformers' only where the charsmap turns whitespace into ' ' (llama.cpp
// splits at ' ' alone, WhitespaceSplit at all Unicode whitespace); checked for kWhiteSpace, refused
// otherwise. Whether the post-processor's pair template puts a special token between $A and $B (XLM-R's
// "</s></s>"): what gguf-py's SpecialVocab writes as add_sep_token (llama.cpp's rerank inputs put the
// separator there).
bool sep_in_pair(const nlohmann::json& tok) {
  for (const auto& x : parts_of(tok.value("post_processor", nlohmann::json()), "processors")) {
    bool after_a = false;
    for (const auto& p : x.value("pair", nlohmann::json::array())) {
      if (p.contains("Sequence")) {
        if (after_a) return false;
        after_a = true;
      } else if (after_a && p.contains("SpecialToken")) {
        return true;
      }
    }
  }
  return false;
}

void add_unigram(File& f, const nlohmann::json& tok, const nlohmann::json& tc, const ModelConfig& c,
                 const hfx::tok::Tokenizer& hf) {
  const std::vector<nlohmann::json> pre =
      parts_of(tok.value("pre_tokenizer", nlohmann::json()), "pretokenizers");
  const bool layout = pre.size() == 2 && pre[0].value("type", "") == "WhitespaceSplit" &&
                      pre[1].value("type", "") == "Metaspace" &&
                      pre[1].value("replacement", "") == "\u2581" &&
                      pre[1].value("prepend_scheme", "always") == "always" && pre[1].value("split", true);
  HFX_CHECK(layout, "gguf",
            "expected a Unigram tokenizer pre-tokenized as transformers 5's XLMRobertaTokenizer does it "
            "(WhitespaceSplit, then Metaspace '\u2581' with prepend_scheme always) for llama.cpp's UGM "
            "tokenizer, got {}; a transformers 4 tokenizer.json: re-save it with transformers 5 "
            "(AutoTokenizer.from_pretrained(dir).save_pretrained(dir))",
            tok.value("pre_tokenizer", nlohmann::json()).dump().substr(0, 200));
  const std::optional<std::string> charsmap = hf.precompiled_charsmap();
  for (const char* w : kWhiteSpace) {
    const std::string n = hf.normalize(w);
    HFX_CHECK(
        charsmap && n.find_first_not_of(' ') == std::string::npos, "gguf",
        "expected the tokenizer's sentencepiece charsmap to turn tabs, newlines and spaces into ' ' "
        "(llama.cpp's "
        "UGM tokenizer splits words at ' ' alone, transformers' WhitespaceSplit at all whitespace), got {}; "
        "this tokenizer would give other ids in llama.cpp, so it is not exported to GGUF",
        charsmap ? fmt::format("{} normalized to {}", nlohmann::json(w).dump(), nlohmann::json(n).dump())
                 : std::string("no Precompiled normalizer"));
  }
  const nlohmann::json& vocab = tok["model"]["vocab"];
  const auto n = static_cast<size_t>(c.vocab_size);
  std::vector<std::string> tokens(n);
  std::vector<float> scores(n, -10000.0f);  // the converter's score of padding rows
  std::vector<int32_t> types(n, UNUSED);
  const int64_t unk = tok["model"].value("unk_id", int64_t{-1});
  for (size_t i = 0; i < vocab.size() && i < n; ++i) {
    tokens[i] = vocab[i][0].get<std::string>();
    scores[i] = vocab[i][1].get<float>();
    types[i] = static_cast<int64_t>(i) == unk ? UNKNOWN : NORMAL;
  }
  for (const auto& a : tok.value("added_tokens", nlohmann::json::array())) {
    const auto id = a["id"].get<int64_t>();
    if (id < 0 || static_cast<size_t>(id) >= n) continue;
    tokens[static_cast<size_t>(id)] = a["content"].get<std::string>();
    if (id != unk) types[static_cast<size_t>(id)] = a.value("special", false) ? CONTROL : USER_DEFINED;
  }
  for (size_t i = 0; i < n; ++i)
    if (tokens[i].empty()) tokens[i] = "[PAD" + std::to_string(i) + "]";
  f.kv_str("tokenizer.ggml.model", "t5");
  f.kv_str("tokenizer.ggml.pre", "default");
  f.kv_strs("tokenizer.ggml.tokens", tokens);
  f.kv_f32s("tokenizer.ggml.scores", scores);
  f.kv_i32s("tokenizer.ggml.token_type", types);
  f.kv_bool("tokenizer.ggml.add_space_prefix", true);
  f.kv_bool("tokenizer.ggml.remove_extra_whitespaces", true);
  f.kv_u8s("tokenizer.ggml.precompiled_charsmap", *charsmap);
  if (sep_in_pair(tok)) f.kv_bool("tokenizer.ggml.add_sep_token", true);
  if (const auto mask = named_id(tc, "mask_token", hf))
    f.kv_u32("tokenizer.ggml.mask_token_id", static_cast<uint32_t>(*mask));
}

}  // namespace

void add_vocab(File& f, const std::string& dir, const ModelConfig& c) {
  const fs::path d(dir);
  HFX_CHECK(fs::exists(d / "tokenizer.json"), "gguf",
            "expected tokenizer.json in the checkpoint (GGUF carries the tokenizer), got none in {}", dir);
  const nlohmann::json tok = nlohmann::json::parse(tok::resolved_tokenizer_json(dir)),
                       tc = read_json(d / "tokenizer_config.json");
  const nlohmann::json& model = tok["model"];
  if (model.value("type", "") == "WordPiece")
    return add_wordpiece(f, tok, tc, c, hfx::tok::Tokenizer::from_dir(dir));
  const hfx::tok::Tokenizer hf = hfx::tok::Tokenizer::from_dir(dir);
  const std::string type = model.value("type", std::string("?"));
  HFX_CHECK(type == "BPE" || type == "Unigram", "gguf",
            "expected a BPE or Unigram tokenizer for GGUF, got a {} one", type);
  const bool spm = model.value("byte_fallback", false);
  if (type == "Unigram") {
    add_unigram(f, tok, tc, c, hf);
  } else {
    f.kv_str("tokenizer.ggml.model", spm ? "llama" : "gpt2");
    if (!spm) f.kv_str("tokenizer.ggml.pre", pre_of(tok));
    add_tokens(f, tok, c.vocab_size, spm);
    if (!spm) f.kv_strs("tokenizer.ggml.merges", merges_of(model));
  }
  if (gguf_arch_of(c.model_type) == "bert")  // RoBERTa's: llama.cpp's bert arch requires the count
    f.kv_u32("tokenizer.ggml.token_type_count", static_cast<uint32_t>(c.raw.value("type_vocab_size", 1)));
  // An encoder's cls A sep (RoBERTa's <s> A </s>, ModernBERT's [CLS] A [SEP]) as llama.cpp adds them: BOS and
  // EOS, the latter also the separator (written only for those: add_eos's default is false).
  const std::string arch = gguf_arch_of(c.model_type);
  const Wrap wrap = gguf_embedding_arch(arch) ? wrap_of(tok) : Wrap{};
  if (wrap.found)
    f.kv_u32("tokenizer.ggml.bos_token_id", wrap.cls);
  else if (c.bos_token_id)
    f.kv_u32("tokenizer.ggml.bos_token_id", static_cast<uint32_t>(*c.bos_token_id));
  if (wrap.found)
    f.kv_u32("tokenizer.ggml.eos_token_id", wrap.sep);
  else if (!c.eos_token_ids.empty())
    f.kv_u32("tokenizer.ggml.eos_token_id", static_cast<uint32_t>(c.eos_token_ids[0]));
  if (c.pad_token_id) f.kv_u32("tokenizer.ggml.padding_token_id", static_cast<uint32_t>(*c.pad_token_id));
  // The unknown token as hfx's tokenizer resolves it (tokenizer_config.json's unk_token, string or
  // AddedToken).
  if (const auto unk = hf.unk_id()) f.kv_u32("tokenizer.ggml.unknown_token_id", static_cast<uint32_t>(*unk));
  f.kv_bool("tokenizer.ggml.add_bos_token", wrap.found || adds_bos(tok, hf.config()));
  if (wrap.found) {
    f.kv_u32("tokenizer.ggml.seperator_token_id", wrap.sep);  // sic: gguf's key
    f.kv_bool("tokenizer.ggml.add_eos_token", true);
  } else if (type == "Unigram" && adds_eos(tok)) {  // T5's "$A </s>"
    f.kv_bool("tokenizer.ggml.add_eos_token", true);
  }
  std::string chat;
  if (fs::exists(d / "chat_template.jinja"))
    chat = io::read_file((d / "chat_template.jinja").string());
  else if (tc.contains("chat_template") && tc["chat_template"].is_string())
    chat = tc["chat_template"].get<std::string>();
  if (!chat.empty()) f.kv_str("tokenizer.chat_template", chat);
}

}  // namespace hfx::gguf
