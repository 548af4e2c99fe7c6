// Sampling: each logits processor against distributions computed by hand, the HF order
// (penalty → temperature → top-k → top-p), and seeded reproducibility.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "hfx/core/error.h"
#include "hfx/runtime/sampling.h"

namespace S = hfx::sampling;

namespace {
const float kInf = std::numeric_limits<float>::infinity();

std::vector<float> logs(std::vector<double> p) {
  std::vector<float> r;
  for (double x : p) r.push_back(static_cast<float>(std::log(x)));
  return r;
}

// Empirical frequencies of select_next over n draws from one generator.
std::vector<double> frequencies(const std::vector<float>& logits, const S::SamplingParams& p, int n) {
  S::Rng rng(p.seed);
  std::vector<double> f(logits.size(), 0.0);
  for (int i = 0; i < n; i++) {
    auto row = logits;
    f[S::select_next(row, {}, p, rng)] += 1.0 / n;
  }
  return f;
}
}  // namespace

TEST(Sampling, RepetitionPenaltyDividesPositiveMultipliesNegative) {
  std::vector<float> l = {2, -2, 1, 0.5f};
  std::vector<int64_t> prev = {0, 1, 1, 7, -1};  // 1 twice: penalized once; 7 and -1 outside the row
  S::apply_repetition_penalty(l, prev, 2.0f);
  EXPECT_EQ(l, (std::vector<float>{1, -4, 1, 0.5f}));
}

TEST(Sampling, Temperature) {
  std::vector<float> l = {2, 4, -1};
  S::apply_temperature(l, 2.0f);
  EXPECT_EQ(l, (std::vector<float>{1, 2, -0.5f}));
}

TEST(Sampling, TopKKeepsTiesAtTheThreshold) {
  std::vector<float> l = {1, 3, 2, 3, 0};
  S::apply_top_k(l, 2);
  EXPECT_EQ(l, (std::vector<float>{-kInf, 3, -kInf, 3, -kInf}));
  l = {1, 3, 2, 3, 0};
  S::apply_top_k(l, 3);
  EXPECT_EQ(l, (std::vector<float>{-kInf, 3, 2, 3, -kInf}));
  l = {1, 2};
  S::apply_top_k(l, 5);  // clamped to the row: no-op
  EXPECT_EQ(l, (std::vector<float>{1, 2}));
}

TEST(Sampling, TopPRemovesTheLowCumulativeTail) {
  // probs 0.5 0.3 0.15 0.05; ascending cumulative 0.05 0.20 0.50 1.00
  auto l = logs({0.5, 0.3, 0.15, 0.05});
  S::apply_top_p(l, 0.75f);  // remove cum <= 0.25: 0.05 and 0.15
  EXPECT_TRUE(std::isfinite(l[0]) && std::isfinite(l[1]));
  EXPECT_EQ(l[2], -kInf);
  EXPECT_EQ(l[3], -kInf);
  l = logs({0.5, 0.3, 0.15, 0.05});
  S::apply_top_p(l, 0.9f);  // remove cum <= 0.1: 0.05 only
  EXPECT_TRUE(std::isfinite(l[2]));
  EXPECT_EQ(l[3], -kInf);
  l = logs({0.5, 0.3, 0.15, 0.05});
  S::apply_top_p(l, 0.0f);  // everything but min_keep = 1 (the largest)
  EXPECT_TRUE(std::isfinite(l[0]));
  EXPECT_EQ(l[1], -kInf);
  l = logs({0.5, 0.3, 0.15, 0.05});
  auto before = l;
  S::apply_top_p(l, 1.0f);
  EXPECT_EQ(l, before);
}

TEST(Sampling, SoftmaxAndArgmax) {
  auto p = S::softmax(std::vector<float>{0, std::log(3.0f), -kInf});
  EXPECT_NEAR(p[0], 0.25, 1e-7);
  EXPECT_NEAR(p[1], 0.75, 1e-7);
  EXPECT_EQ(p[2], 0.0);
  EXPECT_EQ(S::argmax(std::vector<float>{1, 5, 5, 2}), 1);  // first of the ties, as torch.argmax
  EXPECT_THROW(S::softmax(std::vector<float>{-kInf, -kInf}), hfx::Error);
}

TEST(Sampling, GreedyAppliesOnlyThePenalty) {
  S::SamplingParams p;  // greedy
  p.temperature = 0.01f;
  p.top_k = 1;
  S::Rng rng(0);
  std::vector<float> l = {3, 2, 1};
  EXPECT_EQ(S::select_next(l, {}, p, rng), 0);
  p.repetition_penalty = 2.0f;  // 3 / 2 = 1.5 < 2
  l = {3, 2, 1};
  std::vector<int64_t> prev = {0};
  EXPECT_EQ(S::select_next(l, prev, p, rng), 1);
}

TEST(Sampling, TemperatureDistribution) {
  S::SamplingParams p{.greedy = false, .temperature = 2.0f, .seed = 7};
  // logits 0, ln 4 at T = 2: probs ∝ 1, 2
  auto f = frequencies({0, std::log(4.0f)}, p, 30000);
  EXPECT_NEAR(f[0], 1.0 / 3, 0.015);
  EXPECT_NEAR(f[1], 2.0 / 3, 0.015);
}

TEST(Sampling, TopKThenTopPDistribution) {
  // probs 0.4 0.3 0.2 0.1; top-k 3 → 4/9 3/9 2/9; top-p 0.6 on that: ascending cum 2/9 5/9 1 → remove 2/9
  // only (cum <= 0.4) → 4/7 3/7.
  S::SamplingParams p{.greedy = false, .top_k = 3, .top_p = 0.6f, .seed = 3};
  auto f = frequencies(logs({0.4, 0.3, 0.2, 0.1}), p, 30000);
  EXPECT_NEAR(f[0], 4.0 / 7, 0.015);
  EXPECT_NEAR(f[1], 3.0 / 7, 0.015);
  EXPECT_EQ(f[2], 0.0);
  EXPECT_EQ(f[3], 0.0);
}

TEST(Sampling, TemperatureComesBeforeTopP) {
  // probs 0.6 0.3 0.1 with top_p 0.5 alone keeps only token 0; a high temperature first flattens the
  // row to ~1/3 each, so top-p then keeps two tokens.
  S::SamplingParams p{.greedy = false, .temperature = 100.0f, .top_p = 0.5f, .seed = 1};
  auto f = frequencies(logs({0.6, 0.3, 0.1}), p, 4000);
  EXPECT_GT(f[0], 0.4);
  EXPECT_GT(f[1], 0.4);
  EXPECT_EQ(f[2], 0.0);
  p.temperature = 1.0f;
  f = frequencies(logs({0.6, 0.3, 0.1}), p, 1000);
  EXPECT_EQ(f[1], 0.0);
  EXPECT_EQ(f[2], 0.0);
}

TEST(Sampling, SeededDrawsAreReproducible) {
  S::SamplingParams p{.greedy = false, .temperature = 1.0f, .seed = 1234};
  auto l = logs({0.25, 0.25, 0.25, 0.25});
  auto draw = [&](uint64_t seed) {
    S::Rng rng(seed);
    std::vector<int64_t> ids;
    for (int i = 0; i < 64; i++) {
      auto row = l;
      ids.push_back(S::select_next(row, {}, p, rng));
    }
    return ids;
  };
  EXPECT_EQ(draw(1234), draw(1234));
  EXPECT_NE(draw(1234), draw(1235));
  S::Rng rng(5);
  for (int i = 0; i < 1000; i++) {
    double u = S::uniform01(rng);
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
  }
}

TEST(Sampling, ValidateRejectsBadParameters) {
  EXPECT_THROW(S::validate({.temperature = 0.0f}), hfx::Error);
  EXPECT_THROW(S::validate({.top_k = -1}), hfx::Error);
  EXPECT_THROW(S::validate({.top_p = 1.5f}), hfx::Error);
  EXPECT_THROW(S::validate({.repetition_penalty = 0.0f}), hfx::Error);
  EXPECT_NO_THROW(S::validate({}));
  try {
    S::validate({.temperature = -1.0f});
  } catch (const hfx::Error& e) {
    EXPECT_NE(std::string(e.what()).find("[sampling] expected temperature > 0"), std::string::npos)
        << e.what();
  }
}
