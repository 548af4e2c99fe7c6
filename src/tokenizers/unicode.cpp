// UTF-8 and Unicode character classes, matched to the Rust std / crates HF tokenizers uses.
#include <utf8proc.h>

#include "tokenizers/internal.h"

namespace hfx::tok::detail {

char32_t next_cp(std::string_view s, size_t& i) {
  auto b = static_cast<unsigned char>(s[i]);
  if (b < 0x80) {
    ++i;
    return b;
  }
  int n = b >= 0xF0 ? 3 : b >= 0xE0 ? 2 : 1;
  char32_t cp = b & (0x3F >> n);
  ++i;
  for (int k = 0; k < n && i < s.size(); ++k, ++i) cp = (cp << 6) | (static_cast<unsigned char>(s[i]) & 0x3F);
  return cp;
}

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

std::string utf8(char32_t cp) {
  std::string s;
  append_utf8(s, cp);
  return s;
}

std::vector<char32_t> to_cps(std::string_view s) {
  std::vector<char32_t> out;
  for (size_t i = 0; i < s.size();) out.push_back(next_cp(s, i));
  return out;
}

namespace {
// Length of the valid UTF-8 sequence at s[i], or -(length of the maximal invalid subpart).
int utf8_step(std::string_view s, size_t i) {
  auto at = [&](size_t k) -> int { return k < s.size() ? static_cast<unsigned char>(s[k]) : -1; };
  int b = at(i);
  if (b < 0x80) return 1;
  int width = (b >= 0xC2 && b <= 0xDF) ? 2 : (b >= 0xE0 && b <= 0xEF) ? 3 : (b >= 0xF0 && b <= 0xF4) ? 4 : 0;
  if (width == 0) return -1;
  int lo = 0x80, hi = 0xBF;
  if (b == 0xE0) lo = 0xA0;
  if (b == 0xED) hi = 0x9F;
  if (b == 0xF0) lo = 0x90;
  if (b == 0xF4) hi = 0x8F;
  int c1 = at(i + 1);
  if (c1 < lo || c1 > hi) return -1;
  for (int k = 2; k < width; ++k) {
    int c = at(i + k);
    if (c < 0x80 || c > 0xBF) return -k;
  }
  return width;
}
}  // namespace

size_t find_invalid_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    int n = utf8_step(s, i);
    if (n < 0) return i;
    i += n;
  }
  return std::string_view::npos;
}

std::string utf8_lossy(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    int n = utf8_step(s, i);
    if (n > 0) {
      out.append(s.substr(i, n));
      i += n;
    } else {
      out += "\xEF\xBF\xBD";
      i += -n;
    }
  }
  return out;
}

static int category(char32_t c) { return utf8proc_category(static_cast<utf8proc_int32_t>(c)); }

bool is_whitespace(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
         c == 0x3000;
}

bool is_numeric(char32_t c) {
  int k = category(c);
  return k == UTF8PROC_CATEGORY_ND || k == UTF8PROC_CATEGORY_NL || k == UTF8PROC_CATEGORY_NO;
}

static bool is_letter(int k) {
  return k == UTF8PROC_CATEGORY_LU || k == UTF8PROC_CATEGORY_LL || k == UTF8PROC_CATEGORY_LT ||
         k == UTF8PROC_CATEGORY_LM || k == UTF8PROC_CATEGORY_LO;
}

bool is_alphanumeric(char32_t c) {
  int k = category(c);
  return is_letter(k) || is_numeric(c);
}

bool is_punctuation(char32_t c) {
  if (c < 0x80)
    return (c >= 0x21 && c <= 0x2F) || (c >= 0x3A && c <= 0x40) || (c >= 0x5B && c <= 0x60) ||
           (c >= 0x7B && c <= 0x7E);
  int k = category(c);
  return k >= UTF8PROC_CATEGORY_PC && k <= UTF8PROC_CATEGORY_PO;
}

bool is_mark(char32_t c) {
  int k = category(c);
  return k == UTF8PROC_CATEGORY_MN || k == UTF8PROC_CATEGORY_MC || k == UTF8PROC_CATEGORY_ME;
}

bool is_mark_nonspacing(char32_t c) { return category(c) == UTF8PROC_CATEGORY_MN; }

bool is_word_char(char32_t c) {
  int k = category(c);
  return is_letter(k) || k == UTF8PROC_CATEGORY_NL || is_mark(c) || k == UTF8PROC_CATEGORY_ND ||
         k == UTF8PROC_CATEGORY_PC || c == 0x200C || c == 0x200D;
}

bool is_other_cc_cf_co(char32_t c) {
  int k = category(c);
  return k == UTF8PROC_CATEGORY_CC || k == UTF8PROC_CATEGORY_CF || k == UTF8PROC_CATEGORY_CO;
}

void to_lower(char32_t c, std::vector<char32_t>& out) {
  if (c == 0x130) {
    out.push_back(U'i');
    out.push_back(0x307);
    return;
  }
  out.push_back(static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(c))));
}

std::string unicode_normalize(std::string_view s, NormForm f) {
  if (s.empty()) return {};
  int opts = UTF8PROC_STABLE;
  switch (f) {
    case NormForm::NFC:
      opts |= UTF8PROC_COMPOSE;
      break;
    case NormForm::NFD:
      opts |= UTF8PROC_DECOMPOSE;
      break;
    case NormForm::NFKC:
      opts |= UTF8PROC_COMPOSE | UTF8PROC_COMPAT;
      break;
    case NormForm::NFKD:
      opts |= UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT;
      break;
  }
  utf8proc_uint8_t* out = nullptr;
  auto n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(s.data()),
                        static_cast<utf8proc_ssize_t>(s.size()), &out, static_cast<utf8proc_option_t>(opts));
  if (n < 0)
    HFX_THROW(kComp, "expected valid UTF-8 for Unicode normalization, got utf8proc error: {}",
              utf8proc_errmsg(n));
  std::string r(reinterpret_cast<char*>(out), static_cast<size_t>(n));
  free(out);
  return r;
}

const std::array<char32_t, 256>& byte_to_char() {
  static const std::array<char32_t, 256> table = [] {
    std::array<char32_t, 256> t{};
    std::vector<bool> direct(256, false);
    for (int b = '!'; b <= '~'; ++b) direct[b] = true;
    for (int b = 0xA1; b <= 0xAC; ++b) direct[b] = true;
    for (int b = 0xAE; b <= 0xFF; ++b) direct[b] = true;
    char32_t n = 0;
    for (int b = 0; b < 256; ++b) t[b] = direct[b] ? static_cast<char32_t>(b) : 256 + n++;
    return t;
  }();
  return table;
}

const std::unordered_map<char32_t, uint8_t>& char_to_byte() {
  static const std::unordered_map<char32_t, uint8_t> m = [] {
    std::unordered_map<char32_t, uint8_t> r;
    for (int b = 0; b < 256; ++b) r[byte_to_char()[b]] = static_cast<uint8_t>(b);
    return r;
  }();
  return m;
}

}  // namespace hfx::tok::detail
