// NormalizedString: HF's normalized text with per-byte alignments to the original input. Only the
// original start offset of each piece is observable in ids (Metaspace prepend_scheme "first"),
// but keeping HF's alignment rules exactly is what makes that offset right.
#include <algorithm>

#include <utf8proc.h>

#include "tokenizers/internal.h"

namespace hfx::tok::detail {

NormalizedString::NormalizedString(std::string_view original, size_t shift) : s_(original), shift_(shift) {
  align_.reserve(s_.size());
  for (size_t i = 0; i < s_.size();) {
    size_t b = i;
    next_cp(s_, i);
    for (size_t k = b; k < i; ++k) align_.emplace_back(shift + b, shift + i);
  }
}

void NormalizedString::transform_range(size_t n_start, size_t n_end, const std::vector<Change>& dest,
                                       size_t initial_offset) {
  // Sizes of the characters being replaced, in order.
  std::vector<size_t> sizes;
  for (size_t i = n_start; i < n_end;) {
    size_t b = i;
    next_cp(s_, i);
    sizes.push_back(i - b);
  }
  size_t ri = 0;
  size_t initial_removed = 0;
  for (; ri < initial_offset && ri < sizes.size(); ++ri) initial_removed += sizes[ri];
  size_t offset = initial_removed + n_start;
  std::string out;
  std::vector<std::pair<size_t, size_t>> al;
  for (const Change& ch : dest) {
    size_t idx = offset;
    std::pair<size_t, size_t> a;
    if (ch.change > 0) {
      a = idx < 1 ? std::make_pair(shift_, shift_) : align_[idx - 1];
    } else {
      a = align_[idx];
    }
    size_t replaced = 0;
    if (ch.change <= 0 && ri < sizes.size()) replaced = sizes[ri++];
    size_t removed = 0;
    if (ch.change < 0)
      for (int64_t k = 0; k < -ch.change && ri < sizes.size(); ++k) removed += sizes[ri++];
    offset += replaced + removed;
    size_t before = out.size();
    append_utf8(out, ch.c);
    for (size_t k = before; k < out.size(); ++k) al.push_back(a);
  }
  s_.replace(n_start, n_end - n_start, out);
  align_.erase(align_.begin() + static_cast<ptrdiff_t>(n_start),
               align_.begin() + static_cast<ptrdiff_t>(n_end));
  align_.insert(align_.begin() + static_cast<ptrdiff_t>(n_start), al.begin(), al.end());
}

void NormalizedString::filter(const std::function<bool(char32_t)>& keep) {
  int64_t removed = 0;
  size_t removed_start = 0;
  std::vector<Change> tr;
  std::optional<char32_t> last;
  for (size_t i = 0; i < s_.size();) {
    char32_t c = next_cp(s_, i);
    if (keep(c)) {
      if (last)
        tr.push_back({*last, -removed});
      else
        removed_start = static_cast<size_t>(removed);
      last = c;
      removed = 0;
    } else {
      ++removed;
    }
  }
  if (last) tr.push_back({*last, -removed});
  transform(tr, removed_start);
}

void NormalizedString::map(const std::function<char32_t(char32_t)>& f) {
  std::vector<Change> tr;
  for (size_t i = 0; i < s_.size();) tr.push_back({f(next_cp(s_, i)), 0});
  transform(tr, 0);
}

void NormalizedString::prepend(std::string_view s) {
  if (s_.empty()) return;
  size_t i = 0;
  char32_t next = next_cp(s_, i);
  std::vector<Change> tr;
  size_t k = 0;
  for (char32_t c : to_cps(s)) tr.push_back({c, k++ != 0 ? 1 : 0});
  tr.push_back({next, 1});
  transform_range(0, i, tr, 0);
}

void NormalizedString::append(std::string_view s) {
  std::vector<Change> tr;
  if (s_.empty()) {
    for (char32_t c : to_cps(s)) tr.push_back({c, 1});
    transform_range(0, 0, tr, 0);
    return;
  }
  size_t b = s_.size() - 1;
  while (b > 0 && (static_cast<unsigned char>(s_[b]) & 0xC0) == 0x80) --b;
  size_t i = b;
  tr.push_back({next_cp(s_, i), 0});
  for (char32_t c : to_cps(s)) tr.push_back({c, 1});
  transform_range(b, s_.size(), tr, 0);
}

void NormalizedString::lowercase() {
  std::vector<Change> tr;
  std::vector<char32_t> low;
  for (size_t i = 0; i < s_.size();) {
    low.clear();
    to_lower(next_cp(s_, i), low);
    for (size_t k = 0; k < low.size(); ++k) tr.push_back({low[k], k > 0 ? 1 : 0});
  }
  transform(tr, 0);
}

void NormalizedString::normalize_unicode(NormForm f) {
  // HF aligns through unicode-normalization-alignments; we normalize the whole text (exact
  // result) and align per run of a starter and its combining marks, which gives the same
  // alignments whenever normalization does not merge two starters.
  std::string whole = unicode_normalize(s_, f);
  if (whole == s_) return;
  std::string out;
  std::vector<std::pair<size_t, size_t>> al;
  size_t i = 0;
  while (i < s_.size()) {
    size_t b = i;
    next_cp(s_, i);
    while (i < s_.size()) {
      size_t j = i;
      char32_t c = next_cp(s_, j);
      if (utf8proc_get_property(static_cast<int32_t>(c))->combining_class == 0) break;
      i = j;
    }
    std::string part = unicode_normalize(std::string_view(s_).substr(b, i - b), f);
    std::pair<size_t, size_t> a{align_[b].first, align_[i - 1].second};
    out += part;
    al.insert(al.end(), part.size(), a);
  }
  if (out != whole) {
    al.assign(whole.size(), {align_.empty() ? shift_ : align_.front().first,
                             align_.empty() ? shift_ : align_.back().second});
    out = whole;
  }
  s_ = std::move(out);
  align_ = std::move(al);
}

void NormalizedString::strip(bool left, bool right) {
  auto cps = to_cps(s_);
  size_t lead = 0, trail = 0;
  if (left)
    while (lead < cps.size() && is_whitespace(cps[lead])) ++lead;
  if (right)
    while (trail < cps.size() - lead && is_whitespace(cps[cps.size() - 1 - trail])) ++trail;
  if (lead == 0 && trail == 0) return;
  std::vector<Change> tr;
  size_t count = cps.size();
  for (size_t i = 0; i < count; ++i) {
    if (i < lead || i >= count - trail) continue;
    // HF compares the char index with the byte length here; reproduced as is.
    if (i == s_.size() - trail - 1)
      tr.push_back({cps[i], -static_cast<int64_t>(trail)});
    else
      tr.push_back({cps[i], 0});
  }
  transform(tr, lead);
}

void NormalizedString::replace(const Matches& matches, std::string_view content) {
  std::string ns;
  std::vector<std::pair<size_t, size_t>> nal;
  size_t last_end = 0;
  auto content_cps = to_cps(content);
  for (const Piece& p : matches) {
    if (!p.is_match) continue;
    ns.append(s_, last_end, p.start - last_end);
    nal.insert(nal.end(), align_.begin() + static_cast<ptrdiff_t>(last_end),
               align_.begin() + static_cast<ptrdiff_t>(p.start));
    // Every inserted char takes the alignment of the last replaced byte (HF: alignments[idx - 1]).
    size_t idx = p.end;
    std::pair<size_t, size_t> a = idx < 1 ? std::make_pair(shift_, shift_) : align_[idx - 1];
    for (char32_t c : content_cps) {
      size_t before = ns.size();
      append_utf8(ns, c);
      nal.insert(nal.end(), ns.size() - before, a);
    }
    last_end = p.end;
  }
  ns.append(s_, last_end, std::string::npos);
  nal.insert(nal.end(), align_.begin() + static_cast<ptrdiff_t>(last_end), align_.end());
  s_ = std::move(ns);
  align_ = std::move(nal);
}

NormalizedString NormalizedString::slice(size_t a, size_t b) const {
  NormalizedString r;
  r.s_ = s_.substr(a, b - a);
  r.align_.assign(align_.begin() + static_cast<ptrdiff_t>(a), align_.begin() + static_cast<ptrdiff_t>(b));
  r.shift_ = a < b ? align_[a].first : shift_ + a;
  return r;
}

std::vector<NormalizedString> NormalizedString::split(const Matches& matches, SplitBehavior behavior) const {
  struct S {
    size_t a, b;
    bool remove;
  };
  std::vector<S> splits;
  switch (behavior) {
    case SplitBehavior::Isolated:
      for (auto& m : matches) splits.push_back({m.start, m.end, false});
      break;
    case SplitBehavior::Removed:
      for (auto& m : matches) splits.push_back({m.start, m.end, m.is_match});
      break;
    case SplitBehavior::Contiguous: {
      bool prev = false;
      for (auto& m : matches) {
        if (m.is_match == prev && !splits.empty())
          splits.back().b = m.end;
        else
          splits.push_back({m.start, m.end, false});
        prev = m.is_match;
      }
      break;
    }
    case SplitBehavior::MergedWithPrevious: {
      bool prev = false;
      for (auto& m : matches) {
        if (m.is_match && !prev && !splits.empty())
          splits.back().b = m.end;
        else
          splits.push_back({m.start, m.end, false});
        prev = m.is_match;
      }
      break;
    }
    case SplitBehavior::MergedWithNext: {
      bool prev = false;
      for (auto it = matches.rbegin(); it != matches.rend(); ++it) {
        if (it->is_match && !prev && !splits.empty())
          splits.back().a = it->start;
        else
          splits.push_back({it->start, it->end, false});
        prev = it->is_match;
      }
      std::reverse(splits.begin(), splits.end());
      break;
    }
  }
  std::vector<NormalizedString> out;
  for (auto& s : splits)
    if (!s.remove) out.push_back(slice(s.a, s.b));
  return out;
}

void split_each(PreTokenized& pt, const std::function<std::vector<NormalizedString>(NormalizedString&)>& fn) {
  PreTokenized next;
  next.reserve(pt.size());
  for (auto& sp : pt) {
    if (sp.ids) {
      next.push_back(std::move(sp));
      continue;
    }
    for (auto& n : fn(sp.n))
      if (!n.empty()) next.push_back({std::move(n), std::nullopt});
  }
  pt = std::move(next);
}

}  // namespace hfx::tok::detail
