// Whisper's timestamp rules, line for line from transformers 4.47 (generation/logits_process.py,
// WhisperTimeStampLogitsProcessor; models/whisper/generation_whisper.py, _retrieve_segment), so that the
// tokens and segments equal transformers'. Transformers.js 4.3.1's port skips two of the rules (the first
// step's max_initial_timestamp_index and the non-decreasing timestamps); transformers is the reference.
#include "whisper_timestamps.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace hfx::whisper {

void apply_timestamp_rules(const TimestampRules& r, const std::vector<int64_t>& seq,
                           std::vector<float>& logits) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  const int64_t V = static_cast<int64_t>(logits.size()), tb = std::min(r.timestamp_begin(), V);
  auto mask = [&](int64_t from, int64_t to) {
    std::fill(logits.begin() + std::clamp<int64_t>(from, 0, V),
              logits.begin() + std::clamp<int64_t>(to, 0, V), kNegInf);
  };
  mask(r.no_timestamps, r.no_timestamps + 1);
  const size_t n = seq.size();
  const bool last_ts = n >= 1 && seq[n - 1] >= tb;
  const bool penultimate_ts = n < 2 || seq[n - 2] >= tb;
  if (last_ts) {
    if (penultimate_ts)
      mask(tb, V);  // after a pair: text
    else
      mask(0, r.eos);  // after a lone timestamp: a timestamp or EOS
  }
  int64_t last = -1;
  for (int64_t t : seq)
    if (t >= tb) last = t;
  if (last >= 0) mask(tb, last_ts && !penultimate_ts ? last : last + 1);  // timestamps do not decrease
  if (n == 0) {  // the first token: a timestamp, not later than max_initial_timestamp_index
    mask(0, tb);
    if (r.max_initial_timestamp_index) mask(tb + *r.max_initial_timestamp_index + 1, V);
  }
  // log_softmax, then: a timestamp when the timestamps' total probability beats every text token.
  const float top = *std::max_element(logits.begin(), logits.end());
  if (std::isinf(top)) return;
  double sum = 0, ts = 0, text_max = -std::numeric_limits<double>::infinity();
  for (int64_t i = 0; i < V; i++) {
    const double e = std::exp(static_cast<double>(logits[i]) - top);
    sum += e;
    if (i >= tb)
      ts += e;
    else
      text_max = std::max(text_max, static_cast<double>(logits[i]) - top);
  }
  const double lse = std::log(sum);
  if (ts > 0 && std::log(ts) - lse > text_max - lse) mask(0, tb);
}

std::vector<SegmentSpan> segment_spans(const std::vector<int64_t>& ids, int64_t tb, double window) {
  std::vector<SegmentSpan> out;
  const size_t n = ids.size();
  auto is_ts = [&](size_t i) { return ids[i] >= tb; };
  std::vector<size_t> slices;
  for (size_t i = 0; i + 1 < n; i++)
    if (is_ts(i) && is_ts(i + 1)) slices.push_back(i + 1);
  if (slices.empty()) {
    if (n == 0) return out;
    double stop = window;
    for (size_t i = n; i-- > 0;)
      if (is_ts(i)) {
        if (ids[i] != tb) stop = static_cast<double>(ids[i] - tb);
        break;
      }
    out.push_back({0, n, 0, stop});
    return out;
  }
  // A lone timestamp at the end closes the last segment; otherwise the last segment keeps the second
  // timestamp of its pair (its end is the first) and what follows is unfinished.
  const bool single_ending = n >= 2 && !is_ts(n - 2) && is_ts(n - 1);
  if (single_ending)
    slices.push_back(n);
  else
    slices.back() += 1;
  size_t last = 0;
  for (size_t i = 0; i < slices.size(); i++) {
    const size_t s = slices[i];
    const size_t end_at = i + 1 == slices.size() && !single_ending ? s - 2 : s - 1;
    out.push_back({last, s, static_cast<double>(ids[last] - tb), static_cast<double>(ids[end_at] - tb)});
    last = s;
  }
  return out;
}

int64_t seek_advance(const std::vector<int64_t>& ids, int64_t tb, int64_t window_frames,
                     int64_t input_stride) {
  const size_t n = ids.size();
  size_t last_pair = 0;  // one past the last timestamp pair's second token; 0: none
  for (size_t i = 0; i + 1 < n; i++)
    if (ids[i] >= tb && ids[i + 1] >= tb) last_pair = i + 2;
  const bool single_ending = n >= 2 && ids[n - 2] < tb && ids[n - 1] >= tb;
  if (last_pair == 0 || single_ending) return window_frames;
  // transformers: slices[-1] += 1, then seek_sequence[last_slice - 2], the pair's first timestamp.
  return (ids[last_pair - 2] - tb) * input_stride;
}

}  // namespace hfx::whisper
