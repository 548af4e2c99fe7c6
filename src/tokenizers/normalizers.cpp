// Normalizers of tokenizer.json (HF tokenizers/src/normalizers).
#include "tokenizers/internal.h"

namespace hfx::tok::detail {
namespace {

struct SequenceN : Normalizer {
  std::vector<std::unique_ptr<Normalizer>> items;
  void normalize(NormalizedString& n) const override {
    for (auto& x : items) x->normalize(n);
  }
  std::optional<std::string> precompiled_charsmap() const override {
    for (auto& x : items)
      if (auto m = x->precompiled_charsmap()) return m;
    return std::nullopt;
  }
};

struct UnicodeN : Normalizer {
  NormForm f;
  explicit UnicodeN(NormForm f) : f(f) {}
  void normalize(NormalizedString& n) const override { n.normalize_unicode(f); }
};

struct LowercaseN : Normalizer {
  void normalize(NormalizedString& n) const override { n.lowercase(); }
};

struct StripN : Normalizer {
  bool left, right;
  StripN(bool l, bool r) : left(l), right(r) {}
  void normalize(NormalizedString& n) const override { n.strip(left, right); }
};

struct StripAccentsN : Normalizer {
  void normalize(NormalizedString& n) const override {
    n.filter([](char32_t c) { return !is_mark(c); });
  }
};

struct ReplaceN : Normalizer {
  PatternSpec pat;
  Regex re;
  std::string content;
  ReplaceN(PatternSpec p, std::string c)
      : pat(std::move(p)), re(pat.is_regex ? pat.text : Regex::escape(pat.text)), content(std::move(c)) {}
  void normalize(NormalizedString& n) const override { n.replace(find_matches_regex(re, n.get()), content); }
};

struct PrependN : Normalizer {
  std::string prepend;
  void normalize(NormalizedString& n) const override {
    if (!n.empty()) n.prepend(prepend);
  }
};

struct ByteLevelN : Normalizer {
  void normalize(NormalizedString& n) const override {
    std::vector<Change> tr;
    const std::string& s = n.get();
    for (size_t i = 0; i < s.size();) {
      size_t b = i;
      next_cp(s, i);
      for (size_t k = b; k < i; ++k)
        tr.push_back({byte_to_char()[static_cast<unsigned char>(s[k])], k > b ? 1 : 0});
    }
    n.transform(tr, 0);
  }
};

bool is_chinese_char(char32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
         (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

struct BertN : Normalizer {
  bool clean_text = true, handle_chinese_chars = true, lowercase = true;
  std::optional<bool> strip_accents;
  void normalize(NormalizedString& n) const override {
    if (clean_text) {
      n.filter([](char32_t c) {
        bool control = !(c == '\t' || c == '\n' || c == '\r') && is_other_cc_cf_co(c);
        return !(c == 0 || c == 0xFFFD || control);
      });
      n.map([](char32_t c) { return is_whitespace(c) ? U' ' : c; });
    }
    if (handle_chinese_chars) {
      std::vector<Change> tr;
      const std::string& s = n.get();
      for (size_t i = 0; i < s.size();) {
        char32_t c = next_cp(s, i);
        if (is_chinese_char(c)) {
          tr.push_back({U' ', 0});
          tr.push_back({c, 1});
          tr.push_back({U' ', 1});
        } else {
          tr.push_back({c, 0});
        }
      }
      n.transform(tr, 0);
    }
    if (strip_accents.value_or(lowercase)) {
      n.normalize_unicode(NormForm::NFD);
      n.filter([](char32_t c) { return !is_mark_nonspacing(c); });
    }
    if (lowercase) n.lowercase();
  }
};

}  // namespace

std::unique_ptr<Normalizer> make_normalizer(const json& j) {
  if (j.is_null()) return nullptr;
  std::string t = type_of(j, "normalizer");
  if (t == "Sequence") {
    auto s = std::make_unique<SequenceN>();
    const json& items = field(j, "normalizers", "normalizer(Sequence)");
    for (auto& x : items)
      if (auto n = make_normalizer(x)) s->items.push_back(std::move(n));
    return s;
  }
  if (t == "NFC") return std::make_unique<UnicodeN>(NormForm::NFC);
  if (t == "NFD") return std::make_unique<UnicodeN>(NormForm::NFD);
  if (t == "NFKC") return std::make_unique<UnicodeN>(NormForm::NFKC);
  if (t == "NFKD") return std::make_unique<UnicodeN>(NormForm::NFKD);
  if (t == "Lowercase") return std::make_unique<LowercaseN>();
  if (t == "Strip")
    return std::make_unique<StripN>(get_or<bool>(j, "strip_left", false, "tokenizer.json normalizer"),
                                    get_or<bool>(j, "strip_right", false, "tokenizer.json normalizer"));
  if (t == "StripAccents") return std::make_unique<StripAccentsN>();
  if (t == "Replace")
    return std::make_unique<ReplaceN>(
        parse_pattern(field(j, "pattern", "normalizer(Replace)"), "normalizer(Replace)"),
        field_as<std::string>(j, "content", "normalizer(Replace)"));
  if (t == "Prepend") {
    auto p = std::make_unique<PrependN>();
    p->prepend = field_as<std::string>(j, "prepend", "normalizer(Prepend)");
    return p;
  }
  if (t == "ByteLevel") return std::make_unique<ByteLevelN>();
  if (t == "Precompiled") return make_precompiled(j);
  if (t == "BertNormalizer") {
    auto b = std::make_unique<BertN>();
    b->clean_text = get_or<bool>(j, "clean_text", true, "tokenizer.json normalizer");
    b->handle_chinese_chars = get_or<bool>(j, "handle_chinese_chars", true, "tokenizer.json normalizer");
    b->lowercase = get_or<bool>(j, "lowercase", true, "tokenizer.json normalizer");
    if (jsonc::has(j, "strip_accents"))
      b->strip_accents =
          jsonc::as<bool>(j["strip_accents"], kComp, "tokenizer.json normalizer.strip_accents");
    return b;
  }
  HFX_THROW(kComp,
            "expected normalizer.type to be one of Sequence, NFC, NFD, NFKC, NFKD, Lowercase, Strip, "
            "StripAccents, Replace, Prepend, BertNormalizer, ByteLevel, Precompiled, got '{}'",
            t);
}

}  // namespace hfx::tok::detail
