// Pre-tokenizers of tokenizer.json (HF tokenizers/src/pre_tokenizers).
#include "tokenizers/internal.h"

namespace hfx::tok::detail {
namespace {

const char* kGpt2Pattern = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

struct SequenceP : PreTokenizer {
  std::vector<std::unique_ptr<PreTokenizer>> items;
  void pre_tokenize(PreTokenized& pt) const override {
    for (auto& x : items) x->pre_tokenize(pt);
  }
};

struct ByteLevelP : PreTokenizer {
  bool add_prefix_space = true, use_regex = true;
  Regex re{kGpt2Pattern};
  void pre_tokenize(PreTokenized& pt) const override {
    split_each(pt, [&](NormalizedString& n) {
      if (add_prefix_space && (n.get().empty() || n.get()[0] != ' ')) n.prepend(" ");
      if (use_regex) return n.split(find_matches_regex(re, n.get()), SplitBehavior::Isolated);
      return std::vector<NormalizedString>{n};
    });
    for (auto& sp : pt) {
      if (sp.ids) continue;
      std::vector<Change> tr;
      const std::string& s = sp.n.get();
      for (size_t i = 0; i < s.size();) {
        size_t b = i;
        next_cp(s, i);
        for (size_t k = b; k < i; ++k)
          tr.push_back({byte_to_char()[static_cast<unsigned char>(s[k])], k > b ? 1 : 0});
      }
      sp.n.transform(tr, 0);
    }
  }
};

struct SplitP : PreTokenizer {
  Regex re;
  SplitBehavior behavior;
  bool invert_;
  SplitP(const PatternSpec& p, SplitBehavior b, bool inv)
      : re(p.is_regex ? p.text : Regex::escape(p.text)), behavior(b), invert_(inv) {}
  void pre_tokenize(PreTokenized& pt) const override {
    split_each(pt, [&](NormalizedString& n) {
      Matches m = find_matches_regex(re, n.get());
      return n.split(invert_ ? invert(std::move(m)) : m, behavior);
    });
  }
};

enum class Prepend { Always, First, Never };

struct MetaspaceP : PreTokenizer {
  char32_t replacement = 0x2581;
  std::string rep = "\xE2\x96\x81";
  Prepend scheme = Prepend::Always;
  bool split = true;
  void pre_tokenize(PreTokenized& pt) const override {
    split_each(pt, [&](NormalizedString& n) {
      n.replace(find_matches_fn([](char32_t c) { return c == U' '; }, n.get()), rep);
      bool starts = n.get().compare(0, rep.size(), rep) == 0;
      if (scheme == Prepend::Always && !starts) n.prepend(rep);
      if (scheme == Prepend::First && !starts && n.original_start() == 0) n.prepend(rep);
      if (split) {
        char32_t r = replacement;
        return n.split(find_matches_fn([r](char32_t c) { return c == r; }, n.get()),
                       SplitBehavior::MergedWithNext);
      }
      return std::vector<NormalizedString>{n};
    });
  }
};

struct FnSplitP : PreTokenizer {
  std::function<bool(char32_t)> pred;
  SplitBehavior behavior;
  FnSplitP(std::function<bool(char32_t)> p, SplitBehavior b) : pred(std::move(p)), behavior(b) {}
  void pre_tokenize(PreTokenized& pt) const override {
    split_each(pt, [&](NormalizedString& n) { return n.split(find_matches_fn(pred, n.get()), behavior); });
  }
};

// Whitespace: Rust regex `\w+|[^\w\s]+`, inverted and removed. Its matches are maximal runs of
// word chars or of non-word non-space chars; everything else (whitespace) is dropped.
struct WhitespaceP : PreTokenizer {
  void pre_tokenize(PreTokenized& pt) const override {
    split_each(pt, [&](NormalizedString& n) {
      const std::string& s = n.get();
      Matches m;
      if (s.empty()) m.push_back({0, 0, false});
      size_t prev = 0;
      int run = -1;  // 0 word, 1 other, -1 none
      size_t run_start = 0;
      auto close = [&](size_t at) {
        if (run < 0) return;
        if (prev != run_start) m.push_back({prev, run_start, true});  // inverted: gaps are "matches"
        m.push_back({run_start, at, false});
        prev = at;
        run = -1;
      };
      for (size_t i = 0; i < s.size();) {
        size_t b = i;
        char32_t c = next_cp(s, i);
        int kind = is_word_char(c) ? 0 : is_whitespace(c) ? -1 : 1;
        if (kind != run) {
          close(b);
          if (kind >= 0) {
            run = kind;
            run_start = b;
          }
        }
      }
      close(s.size());
      if (!s.empty() && prev != s.size()) m.push_back({prev, s.size(), true});
      return n.split(m, SplitBehavior::Removed);
    });
  }
};

struct BertP : PreTokenizer {
  void pre_tokenize(PreTokenized& pt) const override {
    split_each(pt, [](NormalizedString& n) {
      return n.split(find_matches_fn(is_whitespace, n.get()), SplitBehavior::Removed);
    });
    split_each(pt, [](NormalizedString& n) {
      return n.split(find_matches_fn(is_punctuation, n.get()), SplitBehavior::Isolated);
    });
  }
};

Prepend parse_prepend(const json& j) {
  std::string s = get_or<std::string>(j, "prepend_scheme", "always", "tokenizer.json pre_tokenizer");
  if (s == "always") return Prepend::Always;
  if (s == "first") return Prepend::First;
  if (s == "never") return Prepend::Never;
  HFX_THROW(kComp, "expected Metaspace.prepend_scheme to be first, always or never, got '{}'", s);
}

}  // namespace

// Shared with the Metaspace decoder.
int metaspace_prepend_scheme(const json& j) {
  Prepend p = parse_prepend(j);
  if (j.contains("add_prefix_space") && j["add_prefix_space"].is_boolean() &&
      !j["add_prefix_space"].get<bool>()) {
    if (j.contains("prepend_scheme") && p != Prepend::Never)
      HFX_THROW(
          kComp,
          "expected Metaspace.add_prefix_space to match prepend_scheme, got add_prefix_space=false with '{}'",
          j["prepend_scheme"].get<std::string>());
    p = Prepend::Never;
  }
  return static_cast<int>(p);
}

std::unique_ptr<PreTokenizer> make_pre_tokenizer(const json& j) {
  if (j.is_null()) return nullptr;
  std::string t = type_of(j, "pre_tokenizer");
  if (t == "Sequence") {
    auto s = std::make_unique<SequenceP>();
    for (auto& x : field(j, "pretokenizers", "pre_tokenizer(Sequence)"))
      if (auto p = make_pre_tokenizer(x)) s->items.push_back(std::move(p));
    return s;
  }
  if (t == "ByteLevel") {
    auto b = std::make_unique<ByteLevelP>();
    b->add_prefix_space = get_or<bool>(j, "add_prefix_space", true, "tokenizer.json pre_tokenizer");
    b->use_regex = get_or<bool>(j, "use_regex", true, "tokenizer.json pre_tokenizer");
    return b;
  }
  if (t == "Split") {
    const std::string w = "pre_tokenizer(Split)";
    return std::make_unique<SplitP>(parse_pattern(field(j, "pattern", w), w),
                                    parse_behavior(field(j, "behavior", w), "pre_tokenizer(Split)"),
                                    get_or<bool>(j, "invert", false, "tokenizer.json pre_tokenizer"));
  }
  if (t == "Metaspace") {
    auto m = std::make_unique<MetaspaceP>();
    std::string r = field_as<std::string>(j, "replacement", "pre_tokenizer(Metaspace)");
    auto cps = to_cps(r);
    if (cps.size() != 1) HFX_THROW(kComp, "expected Metaspace.replacement to be one character, got '{}'", r);
    m->replacement = cps[0];
    m->rep = r;
    m->scheme = static_cast<Prepend>(metaspace_prepend_scheme(j));
    m->split = get_or<bool>(j, "split", true, "tokenizer.json pre_tokenizer");
    return m;
  }
  if (t == "Whitespace") return std::make_unique<WhitespaceP>();
  if (t == "WhitespaceSplit") return std::make_unique<FnSplitP>(is_whitespace, SplitBehavior::Removed);
  if (t == "BertPreTokenizer") return std::make_unique<BertP>();
  if (t == "Digits")
    return std::make_unique<FnSplitP>(
        is_numeric, get_or<bool>(j, "individual_digits", false, "tokenizer.json pre_tokenizer")
                        ? SplitBehavior::Isolated
                        : SplitBehavior::Contiguous);
  if (t == "Punctuation") {
    SplitBehavior b = j.contains("behavior") ? parse_behavior(j["behavior"], "pre_tokenizer(Punctuation)")
                                             : SplitBehavior::Isolated;
    return std::make_unique<FnSplitP>(is_punctuation, b);
  }
  if (t == "CharDelimiterSplit") {
    auto cps = to_cps(field_as<std::string>(j, "delimiter", "pre_tokenizer(CharDelimiterSplit)"));
    if (cps.size() != 1)
      HFX_THROW(kComp, "expected CharDelimiterSplit.delimiter to be one character, got {}",
                j["delimiter"].dump());
    char32_t d = cps[0];
    return std::make_unique<FnSplitP>([d](char32_t c) { return c == d; }, SplitBehavior::Removed);
  }
  HFX_THROW(kComp,
            "expected pre_tokenizer.type to be one of Sequence, ByteLevel, Split, Metaspace, Whitespace, "
            "WhitespaceSplit, BertPreTokenizer, Digits, Punctuation, CharDelimiterSplit, got '{}'",
            t);
}

}  // namespace hfx::tok::detail
