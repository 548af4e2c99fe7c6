// Private pieces of hfx::tok: UTF-8 helpers, the PCRE2 wrapper, NormalizedString (HF's string with
// per-byte alignments to the original text) and the component interfaces built from tokenizer.json.
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "hfx/core/error.h"
#include "hfx/core/json.h"

namespace hfx::tok::detail {

using json = nlohmann::json;
inline constexpr const char* kComp = "tokenizer";

// ---- UTF-8 and Unicode (unicode.cpp) ----
/// Decodes one code point at s[i] (s must be valid UTF-8); returns it and advances i.
char32_t next_cp(std::string_view s, size_t& i);
void append_utf8(std::string& out, char32_t cp);
std::string utf8(char32_t cp);
std::vector<char32_t> to_cps(std::string_view s);
/// Byte offset of the first invalid UTF-8 sequence, or npos.
size_t find_invalid_utf8(std::string_view s);
/// Rust's String::from_utf8_lossy: each maximal invalid subpart becomes U+FFFD.
std::string utf8_lossy(std::string_view bytes);
bool is_whitespace(char32_t c);    // Unicode White_Space (Rust char::is_whitespace)
bool is_numeric(char32_t c);       // Nd | Nl | No (Rust char::is_numeric)
bool is_alphanumeric(char32_t c);  // Rust char::is_alphanumeric (approx. Alphabetic = L | Nl)
bool is_punctuation(char32_t c);   // P* or ASCII punctuation
bool is_word_char(char32_t c);     // Rust regex \w
bool is_mark(char32_t c);          // Mn | Mc | Me
bool is_mark_nonspacing(char32_t c);
bool is_other_cc_cf_co(char32_t c);
/// Rust char::to_lowercase (one or two code points).
void to_lower(char32_t c, std::vector<char32_t>& out);
enum class NormForm { NFC, NFD, NFKC, NFKD };
std::string unicode_normalize(std::string_view s, NormForm f);

// ---- Regex (regex.cpp): PCRE2 with UTF + UCP, iterated like the onig crate's find_iter ----
class Regex {
 public:
  explicit Regex(const std::string& pattern);
  Regex(Regex&&) noexcept;
  Regex& operator=(Regex&&) noexcept;
  ~Regex();
  /// Non-overlapping matches as [start, end) byte ranges.
  std::vector<std::pair<size_t, size_t>> find_all(std::string_view s) const;
  /// First match at or after `from`, if any.
  std::optional<std::pair<size_t, size_t>> find_at(std::string_view s, size_t from) const;
  static std::string escape(std::string_view literal);

 private:
  void* code_ = nullptr;
};

// ---- Patterns: cover the whole input with (start, end, is_match) pieces ----
struct Piece {
  size_t start, end;
  bool is_match;
};
using Matches = std::vector<Piece>;
Matches find_matches_regex(const Regex& re, std::string_view s);
Matches find_matches_fn(const std::function<bool(char32_t)>& pred, std::string_view s);
Matches find_matches_literal(std::string_view lit, std::string_view s);
Matches invert(Matches m);

enum class SplitBehavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };
SplitBehavior parse_behavior(const json& j, const char* where);

// ---- NormalizedString (normalized.cpp) ----
/// A transformation step: a code point with HF's change marker (1 = inserted, 0 = replaces one,
/// -N = replaces one and removes N following).
struct Change {
  char32_t c;
  int64_t change;
};

class NormalizedString {
 public:
  NormalizedString() = default;
  explicit NormalizedString(std::string_view original, size_t shift = 0);
  const std::string& get() const { return s_; }
  bool empty() const { return s_.empty(); }
  /// Absolute byte offset in the full input where this piece's original text starts.
  size_t original_start() const { return shift_; }

  void transform_range(size_t n_start, size_t n_end, const std::vector<Change>& dest, size_t initial_offset);
  void transform(const std::vector<Change>& dest, size_t initial_offset) {
    transform_range(0, s_.size(), dest, initial_offset);
  }
  void filter(const std::function<bool(char32_t)>& keep);
  void map(const std::function<char32_t(char32_t)>& f);
  void prepend(std::string_view s);
  void append(std::string_view s);
  void lowercase();
  void normalize_unicode(NormForm f);
  void strip(bool left, bool right);
  void replace(const Matches& matches, std::string_view content);
  NormalizedString slice(size_t n_start, size_t n_end) const;
  std::vector<NormalizedString> split(const Matches& matches, SplitBehavior behavior) const;

 private:
  std::string s_;
  std::vector<std::pair<size_t, size_t>> align_;  // per normalized byte, absolute original range
  size_t shift_ = 0;
};

struct Split {
  NormalizedString n;
  std::optional<std::vector<int32_t>> ids;  // set for added tokens (already tokenized)
};
using PreTokenized = std::vector<Split>;
/// Applies `fn` to every split without ids and keeps the non-empty results (HF PreTokenizedString::split).
void split_each(PreTokenized& pt, const std::function<std::vector<NormalizedString>(NormalizedString&)>& fn);

// ---- Components (built from tokenizer.json) ----
struct Normalizer {
  virtual ~Normalizer() = default;
  virtual void normalize(NormalizedString& n) const = 0;
  /// The raw sentencepiece charsmap of a `Precompiled` normalizer (first one in a Sequence), else nullopt.
  virtual std::optional<std::string> precompiled_charsmap() const { return std::nullopt; }
};
struct PreTokenizer {
  virtual ~PreTokenizer() = default;
  virtual void pre_tokenize(PreTokenized& pt) const = 0;
};
struct Model {
  virtual ~Model() = default;
  virtual void tokenize(std::string_view s, std::vector<int32_t>& out) const = 0;
  virtual std::optional<int32_t> token_to_id(std::string_view t) const = 0;
  virtual std::optional<std::string> id_to_token(int32_t id) const = 0;
  virtual size_t vocab_size() const = 0;
  virtual void for_each_token(const std::function<void(const std::string&, int32_t)>& fn) const = 0;
};
struct PostProcessor {
  virtual ~PostProcessor() = default;
  virtual void process(std::vector<int32_t>& ids, bool add_special_tokens) const = 0;
};
struct Decoder {
  virtual ~Decoder() = default;
  virtual std::vector<std::string> decode_chain(std::vector<std::string> tokens) const = 0;
};

std::unique_ptr<Normalizer> make_normalizer(const json& j);
std::unique_ptr<Normalizer> make_precompiled(const json& j);  // precompiled.cpp
std::unique_ptr<PreTokenizer> make_pre_tokenizer(const json& j);
std::unique_ptr<Model> make_model(const json& j);
std::unique_ptr<PostProcessor> make_post_processor(const json& j);
std::unique_ptr<Decoder> make_decoder(const json& j);

// ---- JSON helpers ----
/// The field `key` of object `j`; throws "[tokenizer] expected field 'where.key', ..." if missing.
const json& field(const json& j, const char* key, const std::string& where);
std::string type_of(const json& j, const std::string& where);
/// j[key] as T, checked: a wrong type is "[tokenizer] expected <where>.<key> to be ..., got ...".
template <class T>
T field_as(const json& j, const char* key, const std::string& where) {
  return jsonc::as<T>(field(j, key, where), "tokenizer", where + "." + key);
}
/// j[key] as T when present and not null, else `dflt`; a wrong type is a clear error (hfx/core/json.h).
template <class T>
T get_or(const json& j, const char* key, T dflt, const std::string& where = "tokenizer.json") {
  return jsonc::get_or<T>(j, key, std::move(dflt), "tokenizer", where);
}
/// {"String": s} / {"Regex": r} as used by Split, Replace.
struct PatternSpec {
  bool is_regex = false;
  std::string text;
};
PatternSpec parse_pattern(const json& j, const std::string& where);
Matches find_pattern(const PatternSpec& p, const Regex* re, std::string_view s);

/// GPT-2 byte <-> unicode mapping.
const std::array<char32_t, 256>& byte_to_char();
const std::unordered_map<char32_t, uint8_t>& char_to_byte();

}  // namespace hfx::tok::detail
