// The `Precompiled` normalizer: sentencepiece's compiled character map (the `precompiled_charsmap` of a
// `.model`'s normalizer_spec, base64 in tokenizer.json) as HF tokenizers applies it (spm_precompiled crate
// and tokenizers/src/normalizers/precompiled.rs). XLM-RoBERTa, CamemBERT, T5/mT5, ALBERT, mBART, Pegasus …
// ship it.
//
// The blob: a little-endian uint32 byte size of a darts-clone double-array trie, the trie's uint32 units,
// then the replacement strings, NUL-terminated. Keys are UTF-8 byte strings; a key's value is the offset of
// its replacement. HF walks extended grapheme clusters: a cluster under 6 bytes is looked up whole, and the
// *shortest* key that is a prefix of it replaces the whole cluster; otherwise (or with no key) each code
// point is looked up alone. That is not sentencepiece's own longest-match rule, and it is what decides the
// ids, so it is reproduced as is.
#include <utf8proc.h>

#include "tokenizers/internal.h"

namespace hfx::tok::detail {
namespace {

std::string base64_decode(std::string_view in, const char* where) {
  auto value = [&](char ch) -> int {
    if (ch >= 'A' && ch <= 'Z') return ch - 'A';
    if (ch >= 'a' && ch <= 'z') return ch - 'a' + 26;
    if (ch >= '0' && ch <= '9') return ch - '0' + 52;
    if (ch == '+') return 62;
    if (ch == '/') return 63;
    return -1;
  };
  std::string out;
  out.reserve(in.size() / 4 * 3);
  uint32_t acc = 0;
  int bits = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] == '=') break;
    int v = value(in[i]);
    if (v < 0)
      HFX_THROW(kComp, "expected {} to be standard base64, got the byte 0x{:02x} at offset {}", where,
                static_cast<unsigned char>(in[i]), i);
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xFF));
    }
  }
  return out;
}

/// The darts-clone double array of spm_precompiled (DoubleArray::common_prefix_search), bounds-checked.
class CharsMap {
 public:
  explicit CharsMap(std::string blob) : blob_(std::move(blob)) {
    const char* where = "tokenizer.json normalizer(Precompiled).precompiled_charsmap";
    if (blob_.size() < 4)
      HFX_THROW(kComp, "expected {} to hold a 4-byte trie size, got {} byte(s)", where, blob_.size());
    uint32_t trie_bytes = read_u32(0);
    if (trie_bytes % 4 != 0 || trie_bytes == 0 || 4 + static_cast<size_t>(trie_bytes) > blob_.size())
      HFX_THROW(kComp, "expected {}'s trie size to be a positive multiple of 4 within its {} bytes, got {}",
                where, blob_.size(), trie_bytes);
    units_.resize(trie_bytes / 4);
    for (size_t k = 0; k < units_.size(); ++k) units_[k] = read_u32(4 + 4 * k);
    normalized_ = blob_.substr(4 + trie_bytes);
    if (find_invalid_utf8(normalized_) != std::string_view::npos)
      HFX_THROW(
          kComp,
          "expected {}'s replacement strings to be UTF-8, got invalid bytes; re-save the tokenizer with "
          "transformers' tokenizer converter",
          where);
  }

  const std::string& blob() const { return blob_; }

  /// The replacement of the shortest key that prefixes `chunk`, or nullopt when no key does.
  std::optional<std::string_view> transform(std::string_view chunk) const {
    size_t node = 0;
    uint32_t unit = at(node);
    node ^= offset(unit);
    for (char ch : chunk) {
      auto c = static_cast<unsigned char>(ch);
      if (c == 0) break;
      node ^= c;
      unit = at(node);
      if ((unit & ((1u << 31) | 0xFFu)) != c) return std::nullopt;
      node ^= offset(unit);
      if ((unit >> 8) & 1u) return replacement(at(node) & ((1u << 31) - 1));
    }
    return std::nullopt;
  }

 private:
  static size_t offset(uint32_t unit) { return (unit >> 10) << ((unit & (1u << 9)) >> 6); }
  uint32_t read_u32(size_t at) const {
    uint32_t v = 0;
    for (int b = 3; b >= 0; --b)
      v = (v << 8) | static_cast<unsigned char>(blob_[at + static_cast<size_t>(b)]);
    return v;
  }
  uint32_t at(size_t node) const {
    if (node >= units_.size())
      HFX_THROW(kComp,
                "expected the precompiled_charsmap trie to stay within its {} units, got a walk to unit {}; "
                "the tokenizer.json is corrupt",
                units_.size(), node);
    return units_[node];
  }
  std::string_view replacement(size_t index) const {
    std::string_view all(normalized_);
    if (index > all.size())
      HFX_THROW(kComp, "expected a precompiled_charsmap replacement offset within {} bytes, got {}",
                all.size(), index);
    size_t end = all.find('\0', index);
    return all.substr(index, (end == std::string_view::npos ? all.size() : end) - index);
  }

  std::string blob_;
  std::vector<uint32_t> units_;
  std::string normalized_;
};

/// HF's `replace(transformations, old, new)`: the new chars replace in place; extra ones are insertions (1),
/// fewer ones fold the removal into the last change so far.
void replace_part(std::vector<Change>& tr, std::string_view old_part, std::string_view new_part) {
  auto old_count = static_cast<int64_t>(to_cps(old_part).size());
  std::vector<char32_t> added = to_cps(new_part);
  int64_t diff = static_cast<int64_t>(added.size()) - old_count;
  for (char32_t c : added) tr.push_back({c, 0});
  if (diff > 0) {
    for (size_t k = 0; k < static_cast<size_t>(diff) && k < tr.size(); ++k) tr[tr.size() - 1 - k].change = 1;
  } else if (diff < 0 && !tr.empty()) {
    tr.back().change += diff;
  }
}

/// Extended grapheme clusters (UAX #29) as [start, end) byte ranges, by utf8proc's stateful break rule.
std::vector<std::pair<size_t, size_t>> graphemes(std::string_view s) {
  std::vector<std::pair<size_t, size_t>> out;
  utf8proc_int32_t state = 0;
  char32_t prev = 0;
  size_t start = 0;
  for (size_t i = 0; i < s.size();) {
    size_t b = i;
    char32_t c = next_cp(s, i);
    if (b > 0 && utf8proc_grapheme_break_stateful(static_cast<utf8proc_int32_t>(prev),
                                                  static_cast<utf8proc_int32_t>(c), &state)) {
      out.emplace_back(start, b);
      start = b;
    }
    prev = c;
  }
  if (start < s.size()) out.emplace_back(start, s.size());
  return out;
}

struct PrecompiledN : Normalizer {
  CharsMap map;
  explicit PrecompiledN(std::string blob) : map(std::move(blob)) {}

  std::optional<std::string> precompiled_charsmap() const override { return map.blob(); }

  void normalize(NormalizedString& n) const override {
    const std::string& s = n.get();
    std::vector<Change> tr;
    tr.reserve(s.size());
    bool modified = false;
    for (auto [a, b] : graphemes(s)) {
      std::string_view g = std::string_view(s).substr(a, b - a);
      if (g.size() < 6) {
        if (auto norm = map.transform(g)) {
          modified = true;
          replace_part(tr, g, *norm);
          continue;
        }
      }
      for (size_t i = 0; i < g.size();) {
        size_t cb = i;
        char32_t c = next_cp(g, i);
        std::string_view part = g.substr(cb, i - cb);
        if (auto norm = map.transform(part)) {
          modified = true;
          replace_part(tr, part, *norm);
        } else {
          tr.push_back({c, 0});
        }
      }
    }
    if (modified) n.transform(tr, 0);
  }
};

}  // namespace

std::unique_ptr<Normalizer> make_precompiled(const json& j) {
  const char* where = "tokenizer.json normalizer(Precompiled).precompiled_charsmap";
  const json& f = field(j, "precompiled_charsmap", "normalizer(Precompiled)");
  if (!f.is_string())
    HFX_THROW(kComp, "expected {} to be a base64 string, got {}; re-save the tokenizer with transformers",
              where, f.type_name());
  return std::make_unique<PrecompiledN>(base64_decode(f.get_ref<const std::string&>(), where));
}

}  // namespace hfx::tok::detail
