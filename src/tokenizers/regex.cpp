// PCRE2 (UTF + UCP) regexes iterated like the onig crate HF uses, plus the Pattern helpers of
// HF's tokenizer/pattern.rs and small JSON accessors.
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <cctype>

#include "tokenizers/internal.h"

namespace hfx::tok::detail {

Regex::Regex(const std::string& pattern) {
  int err = 0;
  PCRE2_SIZE off = 0;
  code_ = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), PCRE2_UTF | PCRE2_UCP,
                        &err, &off, nullptr);
  if (!code_) {
    PCRE2_UCHAR buf[256];
    pcre2_get_error_message(err, buf, sizeof buf);
    HFX_THROW(kComp, "expected a valid regex, got '{}' (PCRE2: {} at offset {})", pattern,
              reinterpret_cast<char*>(buf), off);
  }
  pcre2_jit_compile(static_cast<pcre2_code*>(code_), PCRE2_JIT_COMPLETE);  // best effort
}
Regex::Regex(Regex&& o) noexcept : code_(o.code_) { o.code_ = nullptr; }
Regex& Regex::operator=(Regex&& o) noexcept {
  std::swap(code_, o.code_);
  return *this;
}
Regex::~Regex() {
  if (code_) pcre2_code_free(static_cast<pcre2_code*>(code_));
}

namespace {
struct MatchData {
  pcre2_match_data* md;
  explicit MatchData(pcre2_code* code) : md(pcre2_match_data_create_from_pattern(code, nullptr)) {}
  ~MatchData() { pcre2_match_data_free(md); }
  MatchData(const MatchData&) = delete;
  MatchData& operator=(const MatchData&) = delete;
};

std::optional<std::pair<size_t, size_t>> match_at(pcre2_code* code, pcre2_match_data* md, std::string_view s,
                                                  size_t from) {
  int rc = pcre2_match(code, reinterpret_cast<PCRE2_SPTR>(s.data()), s.size(), from, PCRE2_NO_UTF_CHECK, md,
                       nullptr);
  if (rc >= 0) {
    PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
    return std::make_pair(static_cast<size_t>(ov[0]), static_cast<size_t>(ov[1]));
  }
  if (rc != PCRE2_ERROR_NOMATCH) HFX_THROW(kComp, "expected a regex match to run, got PCRE2 error {}", rc);
  return std::nullopt;
}
}  // namespace

std::optional<std::pair<size_t, size_t>> Regex::find_at(std::string_view s, size_t from) const {
  auto* code = static_cast<pcre2_code*>(code_);
  MatchData md(code);
  return match_at(code, md.md, s, from);
}

std::vector<std::pair<size_t, size_t>> Regex::find_all(std::string_view s) const {
  // onig::FindMatches: an empty match right after the previous match is skipped by one char.
  std::vector<std::pair<size_t, size_t>> out;
  size_t last_end = 0;
  std::optional<size_t> last_match_end;
  auto* code = static_cast<pcre2_code*>(code_);
  MatchData md(code);
  while (last_end <= s.size()) {
    auto m = match_at(code, md.md, s, last_end);
    if (!m) break;
    auto [b, e] = *m;
    if (b == e && last_match_end && *last_match_end == e) {
      if (last_end < s.size()) {
        size_t i = last_end;
        next_cp(s, i);
        last_end = i;
      } else {
        last_end += 1;
      }
      continue;
    }
    last_end = e;
    last_match_end = e;
    out.emplace_back(b, e);
  }
  return out;
}

std::string Regex::escape(std::string_view lit) {
  std::string r;
  for (char c : lit) {
    auto u = static_cast<unsigned char>(c);
    if (u < 0x80 && !std::isalnum(u) && c != '_' && c != ' ' && u >= 0x20) r += '\\';
    r += c;
  }
  return r;
}

Matches find_matches_regex(const Regex& re, std::string_view s) {
  if (s.empty()) return {{0, 0, false}};
  Matches out;
  size_t prev = 0;
  for (auto [b, e] : re.find_all(s)) {
    if (prev != b) out.push_back({prev, b, false});
    out.push_back({b, e, true});
    prev = e;
  }
  if (prev != s.size()) out.push_back({prev, s.size(), false});
  return out;
}

Matches find_matches_fn(const std::function<bool(char32_t)>& pred, std::string_view s) {
  if (s.empty()) return {{0, 0, false}};
  Matches out;
  size_t last_offset = 0, last_seen = 0;
  for (size_t i = 0; i < s.size();) {
    size_t b = i;
    char32_t c = next_cp(s, i);
    last_seen = i;
    if (pred(c)) {
      if (last_offset < b) out.push_back({last_offset, b, false});
      out.push_back({b, i, true});
      last_offset = i;
    }
  }
  if (last_seen > last_offset) out.push_back({last_offset, last_seen, false});
  return out;
}

Matches find_matches_literal(std::string_view lit, std::string_view s) {
  if (lit.empty()) return {{0, to_cps(s).size(), false}};  // HF quirk: char count, not bytes
  if (s.empty()) return {{0, 0, false}};
  Matches out;
  size_t prev = 0;
  for (size_t pos = s.find(lit); pos != std::string_view::npos; pos = s.find(lit, pos + lit.size())) {
    if (prev != pos) out.push_back({prev, pos, false});
    out.push_back({pos, pos + lit.size(), true});
    prev = pos + lit.size();
  }
  if (prev != s.size()) out.push_back({prev, s.size(), false});
  return out;
}

Matches invert(Matches m) {
  for (auto& p : m) p.is_match = !p.is_match;
  return m;
}

SplitBehavior parse_behavior(const json& j, const char* where) {
  std::string b = j.is_string() ? j.get<std::string>() : std::string();
  if (b == "Removed" || b == "removed") return SplitBehavior::Removed;
  if (b == "Isolated" || b == "isolated") return SplitBehavior::Isolated;
  if (b == "MergedWithPrevious" || b == "merged_with_previous") return SplitBehavior::MergedWithPrevious;
  if (b == "MergedWithNext" || b == "merged_with_next") return SplitBehavior::MergedWithNext;
  if (b == "Contiguous" || b == "contiguous") return SplitBehavior::Contiguous;
  HFX_THROW(kComp,
            "expected {}.behavior to be one of Removed, Isolated, MergedWithPrevious, MergedWithNext, "
            "Contiguous, got {}",
            where, j.dump());
}

const json& field(const json& j, const char* key, const std::string& where) {
  if (!j.is_object()) HFX_THROW(kComp, "expected '{}' to be an object, got {}", where, j.type_name());
  auto it = j.find(key);
  if (it == j.end()) HFX_THROW(kComp, "expected field '{}.{}', got none", where, key);
  return *it;
}

std::string type_of(const json& j, const std::string& where) {
  const json& t = field(j, "type", where);
  if (!t.is_string()) HFX_THROW(kComp, "expected '{}.type' to be a string, got {}", where, t.dump());
  return t.get<std::string>();
}

PatternSpec parse_pattern(const json& j, const std::string& where) {
  if (j.is_object()) {
    if (j.contains("String")) return {false, field_as<std::string>(j, "String", where + ".pattern")};
    if (j.contains("Regex")) return {true, field_as<std::string>(j, "Regex", where + ".pattern")};
  }
  if (j.is_string()) return {false, j.get<std::string>()};
  HFX_THROW(kComp, "expected '{}.pattern' to be {{\"String\": ...}} or {{\"Regex\": ...}}, got {}", where,
            j.dump());
}

Matches find_pattern(const PatternSpec& p, const Regex* re, std::string_view s) {
  if (re) return find_matches_regex(*re, s);
  return find_matches_literal(p.text, s);
}

}  // namespace hfx::tok::detail
