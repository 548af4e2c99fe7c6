// Whisper's timestamp rules and segments (src/runtime/whisper_timestamps.h) on hand-made token sequences,
// each rule of transformers 4.47's WhisperTimeStampLogitsProcessor and _retrieve_segment on its own; the
// whole against transformers' generate(return_timestamps=True) is WhisperGoldens.EagerMatchesTransformers.
// Ids here: text < 10 (EOS), <|notimestamps|> 19, timestamps 20.. (vocabulary 40).
#include <gtest/gtest.h>

#include <cmath>

#include "runtime/whisper_timestamps.h"

namespace hfx::whisper {
namespace {

const TimestampRules kRules{19, 10, 5};

std::vector<float> flat() { return std::vector<float>(40, 0.0f); }
bool banned(const std::vector<float>& l, int64_t from, int64_t to) {
  for (int64_t i = from; i < to; i++)
    if (!std::isinf(l[i])) return false;
  return true;
}
bool open_(const std::vector<float>& l, int64_t from, int64_t to) {
  for (int64_t i = from; i < to; i++)
    if (std::isinf(l[i])) return false;
  return true;
}

TEST(WhisperTimestamps, FirstTokenIsAnEarlyTimestamp) {
  auto l = flat();
  apply_timestamp_rules(kRules, {}, l);
  EXPECT_TRUE(banned(l, 0, 20));  // text, EOS and <|notimestamps|>
  EXPECT_TRUE(open_(l, 20, 26));  // timestamp_begin .. + max_initial_timestamp_index
  EXPECT_TRUE(banned(l, 26, 40));
}

TEST(WhisperTimestamps, PairsThenTextAndNoEarlierTimestamp) {
  auto l = flat();
  apply_timestamp_rules(kRules, {22, 3, 25, 25}, l);  // after a pair: text only
  EXPECT_TRUE(open_(l, 0, 19));
  EXPECT_TRUE(banned(l, 19, 40));
  // (text logits above the timestamps' total mass, so the mass rule does not ban text here)
  auto texty = [] {
    auto v = flat();
    for (int i = 0; i < 19; i++) v[i] = 5.0f;
    return v;
  };
  l = texty();
  apply_timestamp_rules(kRules, {22, 3, 25}, l);  // after a lone timestamp: a timestamp >= 25 or EOS
  EXPECT_TRUE(banned(l, 0, 10));
  EXPECT_TRUE(open_(l, 10, 19));  // EOS and the specials above it, as transformers leaves them
  EXPECT_TRUE(banned(l, 19, 25));
  EXPECT_TRUE(open_(l, 25, 40));
  l = texty();
  apply_timestamp_rules(kRules, {22, 3}, l);  // text after a timestamp: the next timestamp is later
  EXPECT_TRUE(open_(l, 0, 19));
  EXPECT_TRUE(banned(l, 20, 23));
  EXPECT_TRUE(open_(l, 23, 40));
}

TEST(WhisperTimestamps, TimestampForcedWhenTheirMassBeatsEveryTextToken) {
  auto l = flat();  // 20 timestamps at 0 against text at 0.5: their total probability wins
  for (int i = 0; i < 10; i++) l[i] = 0.5f;
  apply_timestamp_rules(kRules, {22, 3}, l);
  EXPECT_TRUE(banned(l, 0, 20));
  l = flat();
  l[4] = 10.0f;  // one text token far above
  apply_timestamp_rules(kRules, {22, 3}, l);
  EXPECT_FALSE(std::isinf(l[4]));
}

TEST(WhisperTimestamps, SegmentsAtPairsLastUnfinishedDropped) {
  // 20 a 25 | 25 b 30 | 30 c  → two segments, the second keeps both 30s, "c" unfinished
  auto s = segment_spans({20, 1, 25, 25, 2, 30, 30, 3}, 20, 1500);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].begin, 0u);
  EXPECT_EQ(s[0].end, 3u);
  EXPECT_EQ(s[0].start, 0);
  EXPECT_EQ(s[0].stop, 5);
  EXPECT_EQ(s[1].begin, 3u);
  EXPECT_EQ(s[1].end, 7u);
  EXPECT_EQ(s[1].stop, 10);  // the first of the closing pair
  // A lone timestamp at the end closes the last segment.
  s = segment_spans({20, 1, 25, 25, 2, 31}, 20, 1500);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[1].end, 6u);
  EXPECT_EQ(s[1].stop, 11);
  // No pair: one segment, to its last timestamp, or to the window without one.
  s = segment_spans({20, 1, 2, 27}, 20, 1500);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].stop, 7);
  s = segment_spans({1, 2}, 20, 1500);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].stop, 1500);
  EXPECT_TRUE(segment_spans({}, 20, 1500).empty());
}

TEST(WhisperTimestamps, SeekAdvanceToTheLastPairOrTheWholeWindow) {
  // 20 a 25 | 25 b 30 | 30 c: to the last pair's first timestamp (position 10), times the input stride 2.
  EXPECT_EQ(seek_advance({20, 1, 25, 25, 2, 30, 30, 3}, 20, 3000, 2), 20);
  // Ending on a lone timestamp, or no pair at all: the whole window.
  EXPECT_EQ(seek_advance({20, 1, 25, 25, 2, 31}, 20, 3000, 2), 3000);
  EXPECT_EQ(seek_advance({20, 1, 2, 27}, 20, 1324, 2), 1324);
  EXPECT_EQ(seek_advance({}, 20, 3000, 2), 3000);
}

}  // namespace
}  // namespace hfx::whisper
