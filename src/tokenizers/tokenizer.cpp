// Tokenizer: tokenizer.json loading, HF's AddedVocabulary (added tokens split out before the
// model, leftmost-longest), the encode pipeline (normalize -> pre-tokenize -> model ->
// post-process), decode, tokenizer_config.json and DecodeStream.
#include "hfx/tokenizers/tokenizer.h"

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "tokenizers/internal.h"

namespace hfx::tok {
using namespace detail;

namespace {

struct AddedTok {
  std::string content;
  bool single_word = false, lstrip = false, rstrip = false, normalized = true, special = false;
};

/// Byte trie over added-token patterns, searched leftmost-longest (daachorse MatchKind::LeftmostLongest).
struct Matcher {
  std::vector<std::optional<int32_t>> values{std::nullopt};  // node -> added-token id ending there
  std::unordered_map<uint64_t, int32_t> edges;               // (node << 8 | byte) -> child
  bool empty() const { return values.size() == 1; }
  int32_t child(int32_t n, unsigned char c) const {
    auto it = edges.find((static_cast<uint64_t>(n) << 8) | c);
    return it == edges.end() ? -1 : it->second;
  }
  void add(std::string_view pattern, int32_t value) {
    int32_t n = 0;
    for (unsigned char c : pattern) {
      int32_t ch = child(n, c);
      if (ch < 0) {
        ch = static_cast<int32_t>(values.size());
        edges[(static_cast<uint64_t>(n) << 8) | c] = ch;
        values.emplace_back();
      }
      n = ch;
    }
    values[static_cast<size_t>(n)] = value;
  }
  struct Match {
    size_t start, end;
    int32_t value;
  };
  std::optional<Match> longest_at(std::string_view s, size_t start) const {
    std::optional<Match> best;
    int32_t n = 0;
    for (size_t k = start; k < s.size(); ++k) {
      int32_t ch = child(n, static_cast<unsigned char>(s[k]));
      if (ch < 0) break;
      n = ch;
      if (auto v = values[static_cast<size_t>(n)]) best = Match{start, k + 1, *v};
    }
    return best;
  }
  std::vector<Match> find_all(std::string_view s) const {
    std::vector<Match> out;
    size_t pos = 0;
    while (pos < s.size()) {
      std::optional<Match> m;
      for (size_t st = pos; st < s.size() && !m; ++st) m = longest_at(s, st);
      if (!m) break;
      out.push_back(*m);
      pos = m->end;
    }
    return out;
  }
};

bool ends_with_word(std::string_view s) {
  if (s.empty()) return false;
  size_t b = s.size() - 1;
  while (b > 0 && (static_cast<unsigned char>(s[b]) & 0xC0) == 0x80) --b;
  size_t i = b;
  return is_word_char(next_cp(s, i));
}
bool starts_with_word(std::string_view s) {
  if (s.empty()) return false;
  size_t i = 0;
  return is_word_char(next_cp(s, i));
}
// Start of the trailing whitespace run (Rust regex `\s*$`).
size_t space_leftmost_at_end(std::string_view s) {
  size_t end = s.size();
  while (end > 0) {
    size_t b = end - 1;
    while (b > 0 && (static_cast<unsigned char>(s[b]) & 0xC0) == 0x80) --b;
    size_t i = b;
    if (!is_whitespace(next_cp(s, i))) break;
    end = b;
  }
  return end;
}
size_t space_rightmost_at_start(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    size_t j = i;
    if (!is_whitespace(next_cp(s, j))) break;
    i = j;
  }
  return i;
}

std::string read_file(const std::string& path, const char* what) {
  std::ifstream f(path, std::ios::binary);
  if (!f) HFX_THROW(kComp, "expected a readable {} at '{}', got no such file", what, path);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::optional<std::string> token_content(const json& j) {
  if (j.is_string()) return j.get<std::string>();
  if (j.is_object() && j.contains("content") && j["content"].is_string())
    return j["content"].get<std::string>();
  return std::nullopt;
}

}  // namespace

struct Tokenizer::Impl {
  std::unique_ptr<Normalizer> normalizer;
  std::unique_ptr<PreTokenizer> pre_tokenizer;
  std::unique_ptr<Model> model;
  std::unique_ptr<PostProcessor> post_processor;
  std::unique_ptr<Decoder> decoder;
  std::map<std::string, int32_t> added_map;  // content -> id
  std::map<int32_t, AddedTok> added_map_r;   // id -> token
  std::set<std::string> special_set;
  Matcher split_trie, split_normalized_trie;
  TokenizerConfig config;

  std::optional<int32_t> token_to_id(std::string_view t) const {
    auto it = added_map.find(std::string(t));
    if (it != added_map.end()) return it->second;
    return model->token_to_id(t);
  }

  void add_tokens(const std::vector<AddedTok>& toks) {
    int32_t model_size = static_cast<int32_t>(model->vocab_size());
    int32_t next_id = model_size;
    if (!added_map_r.empty()) {
      int32_t mx = added_map_r.rbegin()->first;
      next_id = (mx >= model_size || model_size == 0) ? mx + 1 : model_size;
    }
    for (const AddedTok& t : toks) {
      if (t.content.empty()) continue;
      int32_t id;
      if (auto e = token_to_id(t.content))
        id = *e;
      else
        id = next_id++;
      added_map[t.content] = id;
      if (t.special) special_set.insert(t.content);
      added_map_r[id] = t;
    }
    split_trie = Matcher{};
    split_normalized_trie = Matcher{};
    for (auto& [id, t] : added_map_r) {
      if (t.normalized) {
        std::string pattern = t.content;
        if (normalizer) {
          NormalizedString n(t.content);
          normalizer->normalize(n);
          pattern = n.get();
        }
        if (!pattern.empty()) split_normalized_trie.add(pattern, id);
      } else {
        split_trie.add(t.content, id);
      }
    }
  }

  // HF AddedVocabulary::find_matches + split_with_indices.
  void split_with_indices(const NormalizedString& n, const Matcher& trie, PreTokenized& out) const {
    const std::string& s = n.get();
    auto push = [&](size_t a, size_t b, std::optional<int32_t> id) {
      if (a == b) return;  // PreTokenizedString::split drops empty pieces
      Split sp{n.slice(a, b), std::nullopt};
      if (id) sp.ids = std::vector<int32_t>{*id};
      out.push_back(std::move(sp));
    };
    if (s.empty()) return;
    if (trie.empty()) {
      push(0, s.size(), std::nullopt);
      return;
    }
    size_t start_offset = 0;
    for (const auto& m : trie.find_all(s)) {
      size_t start = m.start, stop = m.end;
      const AddedTok& tok = added_map_r.at(m.value);
      if (tok.single_word) {
        bool start_space = start == 0 || !ends_with_word(std::string_view(s).substr(0, start));
        bool stop_space = stop == s.size() || !starts_with_word(std::string_view(s).substr(stop));
        if (!stop_space || !start_space) continue;
      }
      if (tok.lstrip)
        start = std::max(space_leftmost_at_end(std::string_view(s).substr(0, start)), start_offset);
      if (tok.rstrip) stop += space_rightmost_at_start(std::string_view(s).substr(stop));
      if (start_offset < start) push(start_offset, start, std::nullopt);
      push(start, stop, m.value);
      start_offset = stop;
    }
    if (start_offset != s.size()) push(start_offset, s.size(), std::nullopt);
  }

  std::vector<int32_t> encode(std::string_view text, bool add_special) const {
    if (size_t bad = find_invalid_utf8(text); bad != std::string_view::npos)
      HFX_THROW(kComp, "expected valid UTF-8 text to encode, got an invalid byte 0x{:02X} at offset {}",
                static_cast<unsigned char>(text[bad]), bad);
    PreTokenized pt;
    split_with_indices(NormalizedString(text), split_trie, pt);
    PreTokenized pt2;
    for (auto& sp : pt) {
      if (sp.ids) {
        pt2.push_back(std::move(sp));
        continue;
      }
      if (normalizer) normalizer->normalize(sp.n);
      split_with_indices(sp.n, split_normalized_trie, pt2);
    }
    if (pre_tokenizer) pre_tokenizer->pre_tokenize(pt2);
    std::vector<int32_t> ids;
    for (auto& sp : pt2) {
      if (sp.ids)
        ids.insert(ids.end(), sp.ids->begin(), sp.ids->end());
      else
        model->tokenize(sp.n.get(), ids);
    }
    if (post_processor) post_processor->process(ids, add_special);
    return ids;
  }

  std::optional<std::string> id_to_token(int32_t id) const {
    auto it = added_map_r.find(id);
    if (it != added_map_r.end()) return it->second.content;
    return model->id_to_token(id);
  }

  std::string decode(std::span<const int32_t> ids, bool skip_special) const {
    std::vector<std::string> toks;
    toks.reserve(ids.size());
    for (int32_t id : ids) {
      auto t = id_to_token(id);
      if (!t) continue;
      if (skip_special && special_set.count(*t)) continue;
      toks.push_back(std::move(*t));
    }
    if (decoder) {
      std::string out;
      for (auto& s : decoder->decode_chain(std::move(toks))) out += s;
      return out;
    }
    std::string out;
    for (size_t i = 0; i < toks.size(); ++i) {
      if (i) out += ' ';
      out += toks[i];
    }
    return out;
  }

  std::optional<int32_t> special(const std::optional<std::string>& configured,
                                 std::initializer_list<const char*> guesses) const {
    if (configured) return token_to_id(*configured);
    for (const char* g : guesses)
      if (auto id = token_to_id(g)) return id;
    return std::nullopt;
  }
};

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

static TokenizerConfig parse_config(const json& c) {
  TokenizerConfig cfg;
  if (!c.is_object())
    HFX_THROW(kComp, "expected tokenizer_config.json to hold an object, got {}", c.type_name());
  if (c.contains("add_bos_token") && c["add_bos_token"].is_boolean())
    cfg.add_bos_token = c["add_bos_token"].get<bool>();
  if (c.contains("add_eos_token") && c["add_eos_token"].is_boolean())
    cfg.add_eos_token = c["add_eos_token"].get<bool>();
  if (c.contains("bos_token")) cfg.bos_token = token_content(c["bos_token"]);
  if (c.contains("eos_token")) cfg.eos_token = token_content(c["eos_token"]);
  if (c.contains("pad_token")) cfg.pad_token = token_content(c["pad_token"]);
  if (c.contains("unk_token")) cfg.unk_token = token_content(c["unk_token"]);
  if (c.contains("chat_template")) {
    const json& t = c["chat_template"];
    if (t.is_string()) {
      cfg.chat_template = t.get<std::string>();
    } else if (t.is_array()) {  // [{name, template}, ...]: the "default" one, else the first
      const std::string where = "tokenizer_config.json chat_template[]";
      for (auto& e : t) {
        jsonc::object(e, kComp, where);
        if (get_or<std::string>(e, "name", "", where) == "default" && jsonc::has(e, "template"))
          cfg.chat_template = jsonc::get<std::string>(e, "template", kComp, where);
      }
      if (!cfg.chat_template && !t.empty() && jsonc::has(t[0], "template"))
        cfg.chat_template = jsonc::get<std::string>(t[0], "template", kComp, where);
    }
  }
  if (c.contains("tokenizer_class") && c["tokenizer_class"].is_string())
    cfg.tokenizer_class = c["tokenizer_class"].get<std::string>();
  if (c.contains("model_max_length")) {
    const json& m = c["model_max_length"];
    if (m.is_number_integer()) cfg.model_max_length = m.get<int64_t>();
    // transformers writes 1e30 for "no limit": a float outside int64's range means none (converting it would
    // be undefined behaviour), as does a negative one.
    else if (m.is_number_float() && m.get<double>() >= 0 && m.get<double>() < 9.0e18)
      cfg.model_max_length = static_cast<int64_t>(m.get<double>());
  }
  return cfg;
}

Tokenizer Tokenizer::from_json_string(std::string_view tokenizer_json, std::string_view config_json) {
  json j;
  try {
    j = json::parse(tokenizer_json);
  } catch (const json::exception& e) {
    HFX_THROW(kComp, "expected valid JSON in tokenizer.json, got parse error: {}", e.what());
  }
  auto impl = std::make_unique<Impl>();
  try {
    if (!j.is_object()) HFX_THROW(kComp, "expected tokenizer.json to hold an object, got {}", j.type_name());
    if (j.contains("version") && j["version"] != "1.0")
      HFX_THROW(kComp, "expected tokenizer.json version '1.0', got {}", j["version"].dump());
    impl->model = make_model(field(j, "model", "tokenizer.json"));
    impl->normalizer = make_normalizer(j.value("normalizer", json()));
    impl->pre_tokenizer = make_pre_tokenizer(j.value("pre_tokenizer", json()));
    impl->post_processor = make_post_processor(j.value("post_processor", json()));
    impl->decoder = make_decoder(j.value("decoder", json()));
    std::vector<AddedTok> toks;
    if (j.contains("added_tokens") && !j["added_tokens"].is_null()) {
      const json& at = j["added_tokens"];
      if (!at.is_array())
        HFX_THROW(kComp, "expected tokenizer.json added_tokens to be an array, got {}", at.type_name());
      for (size_t i = 0; i < at.size(); ++i) {
        const json& t = at[i];
        const std::string where = fmt::format("tokenizer.json added_tokens[{}]", i);
        AddedTok a;
        a.content = field_as<std::string>(t, "content", fmt::format("added_tokens[{}]", i));
        a.single_word = get_or<bool>(t, "single_word", false, where);
        a.lstrip = get_or<bool>(t, "lstrip", false, where);
        a.rstrip = get_or<bool>(t, "rstrip", false, where);
        a.special = get_or<bool>(t, "special", false, where);
        a.normalized = get_or<bool>(t, "normalized", !a.special, where);
        toks.push_back(std::move(a));
      }
    }
    impl->add_tokens(toks);
    if (!config_json.empty()) impl->config = parse_config_json(config_json);
  } catch (const json::exception& e) {
    HFX_THROW(kComp, "expected tokenizer.json fields of the right types, got {}", e.what());
  }
  return Tokenizer(std::move(impl));
}

TokenizerConfig Tokenizer::parse_config_json(std::string_view config_json) {
  json c;
  try {
    c = json::parse(config_json);
  } catch (const json::exception& e) {
    HFX_THROW(kComp, "expected valid JSON in tokenizer_config.json, got parse error: {}", e.what());
  }
  try {
    return parse_config(c);
  } catch (const json::exception& e) {
    HFX_THROW(kComp, "expected tokenizer_config.json fields of the right types, got {}", e.what());
  }
}

void Tokenizer::set_config(TokenizerConfig config) { impl_->config = std::move(config); }

Tokenizer Tokenizer::from_files(const std::string& tokenizer_json_path,
                                const std::string& tokenizer_config_path) {
  std::string tj = read_file(tokenizer_json_path, "tokenizer.json");
  std::string cj = tokenizer_config_path.empty() ? std::string()
                                                 : read_file(tokenizer_config_path, "tokenizer_config.json");
  try {
    return from_json_string(tj, cj);
  } catch (const hfx::Error& e) {
    // Name the file the problem came from.
    std::string msg = e.what();
    msg = msg.substr(msg.find("] ") + 2);
    HFX_THROW(kComp, "{} (in '{}')", msg, tokenizer_json_path);
  }
}

Tokenizer Tokenizer::from_dir(const std::string& dir) {
  namespace fs = std::filesystem;
  fs::path d(dir);
  fs::path cfg = d / "tokenizer_config.json";
  if (rebuilding_tokenizer_class(dir).empty())
    return from_files((d / "tokenizer.json").string(), fs::exists(cfg) ? cfg.string() : std::string());
  // The class's own pipeline over the file's vocabulary (resolved_tokenizer_json).
  const std::string cj = fs::exists(cfg) ? read_file(cfg.string(), "tokenizer_config.json") : std::string();
  try {
    return from_json_string(resolved_tokenizer_json(dir), cj);
  } catch (const hfx::Error& e) {
    std::string msg = e.what();
    HFX_THROW(kComp, "{} (in '{}')", msg.substr(msg.find("] ") + 2), (d / "tokenizer.json").string());
  }
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special_tokens) const {
  return impl_->encode(text, add_special_tokens);
}
std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special_tokens) const {
  return impl_->decode(ids, skip_special_tokens);
}
int32_t Tokenizer::vocab_size() const {
  size_t n = impl_->model->vocab_size();
  for (auto& [content, id] : impl_->added_map)
    if (!impl_->model->token_to_id(content)) ++n;
  return static_cast<int32_t>(n);
}
std::optional<int32_t> Tokenizer::token_to_id(std::string_view token) const {
  return impl_->token_to_id(token);
}
std::string Tokenizer::id_to_token(int32_t id) const {
  return impl_->id_to_token(id).value_or(std::string());
}
bool Tokenizer::is_special(int32_t id) const {
  auto it = impl_->added_map_r.find(id);
  return it != impl_->added_map_r.end() && impl_->special_set.count(it->second.content);
}
std::optional<int32_t> Tokenizer::bos_id() const {
  return impl_->special(impl_->config.bos_token,
                        {"<|begin_of_text|>", "<s>", "<bos>", "<|startoftext|>", "[CLS]"});
}
std::optional<int32_t> Tokenizer::eos_id() const {
  return impl_->special(impl_->config.eos_token,
                        {"<|end_of_text|>", "<|endoftext|>", "</s>", "<eos>", "[SEP]"});
}
std::optional<int32_t> Tokenizer::pad_id() const {
  return impl_->special(impl_->config.pad_token, {"<pad>", "[PAD]", "<|pad|>"});
}
std::optional<int32_t> Tokenizer::unk_id() const {
  return impl_->special(impl_->config.unk_token, {"<unk>", "[UNK]"});
}
const TokenizerConfig& Tokenizer::config() const { return impl_->config; }

std::string Tokenizer::normalize(std::string_view text) const {
  if (!impl_->normalizer) return std::string(text);
  NormalizedString n(text);
  impl_->normalizer->normalize(n);
  return n.get();
}

std::optional<std::string> Tokenizer::precompiled_charsmap() const {
  return impl_->normalizer ? impl_->normalizer->precompiled_charsmap() : std::nullopt;
}

// ---- DecodeStream: HF tokenizers' step_decode_stream ----
DecodeStream::DecodeStream(const Tokenizer& tokenizer, bool skip_special_tokens)
    : tok_(&tokenizer), skip_special_(skip_special_tokens) {}

std::string DecodeStream::step(int32_t id) {
  ids_.push_back(id);
  std::string s = tok_->decode(ids_, skip_special_);
  static const std::string kRepl = "\xEF\xBF\xBD";
  bool ends_incomplete = s.size() >= 3 && s.compare(s.size() - 3, 3, kRepl) == 0;
  if (s.size() > prefix_.size() && !ends_incomplete) {
    if (s.compare(0, prefix_.size(), prefix_) != 0)
      HFX_THROW(kComp, "expected the decoded stream to extend '{}', got '{}' (decoder is not prefix-stable)",
                prefix_, s);
    std::string new_text = s.substr(prefix_.size());
    size_t new_prefix_index = ids_.size() - prefix_index_;
    ids_.erase(ids_.begin(), ids_.begin() + static_cast<ptrdiff_t>(prefix_index_));
    prefix_ = tok_->decode(ids_, skip_special_);
    prefix_index_ = new_prefix_index;
    return new_text;
  }
  return {};
}

}  // namespace hfx::tok
