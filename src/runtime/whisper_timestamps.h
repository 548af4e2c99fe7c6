// src/runtime/whisper_timestamps.h — Whisper's timestamp rules and segments (hfx/runtime/transcribe.h), as
// transformers 4.47's WhisperTimeStampLogitsProcessor and WhisperGenerationMixin._retrieve_segment do them.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

namespace hfx::whisper {

struct TimestampRules {
  int64_t no_timestamps = 0;  ///< <|notimestamps|>; timestamps are the ids after it
  int64_t eos = 0;            ///< ids below it are text tokens
  std::optional<int64_t> max_initial_timestamp_index;
  int64_t timestamp_begin() const { return no_timestamps + 1; }
};

/// Masks `logits` (one row, after suppress_tokens) for the next token after `generated` (the tokens after
/// the prompt): <|notimestamps|> never; the first token a timestamp ≤ max_initial_timestamp_index; after a
/// timestamp pair text, after a lone timestamp a timestamp or EOS; no timestamp below the last one; only
/// timestamps when their total probability beats every text token.
void apply_timestamp_rules(const TimestampRules& r, const std::vector<int64_t>& generated,
                           std::vector<float>& logits);

/// One segment of `ids` (EOS removed): [begin, end) into ids, and its times in timestamp positions
/// (seconds / time_precision).
struct SegmentSpan {
  size_t begin = 0, end = 0;
  double start = 0, stop = 0;
};
/// The finished segments of `ids`: split after each timestamp pair, plus the last one when the sequence ends
/// with a lone timestamp; otherwise the last segment keeps both timestamps of its closing pair (its end is
/// the first) and the text after it is an unfinished segment, dropped. With
/// no pair the whole sequence is one segment from 0 to its last timestamp (to `window`, the clip's length
/// in positions, when it has none).
std::vector<SegmentSpan> segment_spans(const std::vector<int64_t>& ids, int64_t timestamp_begin,
                                       double window);

/// How far transformers' long-form transcription moves on after a window (_retrieve_segment's
/// segment_offset, in feature frames): the whole window (`window_frames`) when `ids` end with a lone
/// timestamp or hold no timestamp pair, else to the last pair's timestamp (position × `input_stride`).
int64_t seek_advance(const std::vector<int64_t>& ids, int64_t timestamp_begin, int64_t window_frames,
                     int64_t input_stride);

}  // namespace hfx::whisper
