// Rope scaling variants: inv_freq and attention scaling from hfx::compute_rope against the formulas of
// transformers' modeling_rope_utils, written here again independently (in double precision; hfx computes
// in float32 as transformers does, hence the relative tolerance).
#include <gtest/gtest.h>

#include <cmath>

#include "hfx/models/model.h"
#include "hfx/models/rope.h"
#include "hfx/ops/functional.h"

namespace hfx::test {
namespace {

nlohmann::json base_cfg(nlohmann::json rope_scaling, double theta = 10000.0, int64_t head_dim = 64) {
  return {{"model_type", "llama"},       {"hidden_size", 256},   {"num_attention_heads", 4},
          {"num_hidden_layers", 1},      {"head_dim", head_dim}, {"intermediate_size", 64},
          {"vocab_size", 300},           {"rope_theta", theta},  {"max_position_embeddings", 2048},
          {"rope_scaling", rope_scaling}};
}

std::vector<double> ref_default(double base, int64_t dim) {
  std::vector<double> r;
  for (int64_t i = 0; i < dim; i += 2) r.push_back(1.0 / std::pow(base, static_cast<double>(i) / dim));
  return r;
}

void expect_close(const std::vector<float>& got, const std::vector<double>& want, double rel = 2e-6) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); i++)
    EXPECT_NEAR(got[i], want[i], rel * std::fabs(want[i]) + 1e-30) << "inv_freq[" << i << "]";
}

RopeFreqs run(const nlohmann::json& cfg, std::optional<int64_t> seq = std::nullopt) {
  return compute_rope(rope_config(parse_model_config(cfg)), seq);
}

TEST(Rope, Default) {
  auto f = run(base_cfg(nullptr));
  expect_close(f.inv_freq, ref_default(10000.0, 64));
  EXPECT_EQ(f.attention_scaling, 1.0);
}

TEST(Rope, Linear) {
  auto f = run(base_cfg({{"type", "linear"}, {"factor", 4.0}}));
  auto want = ref_default(10000.0, 64);
  for (auto& x : want) x /= 4.0;
  expect_close(f.inv_freq, want);
}

TEST(Rope, DynamicDependsOnSequenceLength) {
  nlohmann::json cfg = base_cfg({{"rope_type", "dynamic"}, {"factor", 2.0}});
  // At or below max_position_embeddings: the default frequencies.
  expect_close(run(cfg, 100).inv_freq, ref_default(10000.0, 64));
  expect_close(run(cfg).inv_freq, ref_default(10000.0, 64));
  // Beyond: base * ((factor * L / max) - (factor - 1)) ** (dim / (dim - 2)).
  double L = 3000, dim = 64;
  double base = 10000.0 * std::pow(2.0 * L / 2048 - 1.0, dim / (dim - 2));
  expect_close(run(cfg, 3000).inv_freq, ref_default(base, 64), 1e-5);
}

TEST(Rope, Llama3) {
  double factor = 8, low = 1, high = 4, old = 8192;
  auto f = run(base_cfg({{"rope_type", "llama3"},
                         {"factor", factor},
                         {"low_freq_factor", low},
                         {"high_freq_factor", high},
                         {"original_max_position_embeddings", old}},
                        500000.0));
  std::vector<double> want;
  for (double inv : ref_default(500000.0, 64)) {
    double wl = 2 * M_PI / inv;
    if (wl < old / high)
      want.push_back(inv);
    else if (wl > old / low)
      want.push_back(inv / factor);
    else {
      double s = (old / wl - low) / (high - low);
      want.push_back((1 - s) * inv / factor + s * inv);
    }
  }
  expect_close(f.inv_freq, want, 1e-5);
  EXPECT_EQ(f.attention_scaling, 1.0);
}

std::vector<double> ref_yarn(double base, int64_t dim, double factor, double orig, double beta_fast,
                             double beta_slow) {
  auto corr = [&](double rot) { return dim * std::log(orig / (rot * 2 * M_PI)) / (2 * std::log(base)); };
  double lo = std::max(std::floor(corr(beta_fast)), 0.0),
         hi = std::min(std::ceil(corr(beta_slow)), dim - 1.0);
  if (lo == hi) hi += 0.001;
  std::vector<double> r;
  for (int64_t i = 0; i < dim / 2; i++) {
    double pf = std::pow(base, 2.0 * i / dim);
    double ramp = std::clamp((i - lo) / (hi - lo), 0.0, 1.0);
    double extrap = 1 - ramp;
    r.push_back(1 / (factor * pf) * (1 - extrap) + 1 / pf * extrap);
  }
  return r;
}

TEST(Rope, Yarn) {
  auto f = run(base_cfg({{"rope_type", "yarn"}, {"factor", 4.0}, {"original_max_position_embeddings", 512}}));
  expect_close(f.inv_freq, ref_yarn(10000.0, 64, 4.0, 512, 32, 1), 1e-5);
  EXPECT_NEAR(f.attention_scaling, 0.1 * std::log(4.0) + 1.0, 1e-12);
  // mscale / mscale_all_dim (DeepSeek style) and explicit betas.
  f = run(base_cfg({{"rope_type", "yarn"},
                    {"factor", 40.0},
                    {"original_max_position_embeddings", 1024},
                    {"mscale", 1.0},
                    {"mscale_all_dim", 0.5},
                    {"beta_fast", 16},
                    {"beta_slow", 2}}));
  expect_close(f.inv_freq, ref_yarn(10000.0, 64, 40.0, 1024, 16, 2), 1e-5);
  EXPECT_NEAR(f.attention_scaling, (0.1 * std::log(40.0) + 1) / (0.05 * std::log(40.0) + 1), 1e-12);
}

TEST(Rope, TransformersFiveRopeParametersAndPartialRotary) {
  nlohmann::json cfg = base_cfg(nullptr);
  cfg.erase("rope_theta");
  cfg["rope_parameters"] = {
      {"rope_type", "linear"}, {"factor", 2.0}, {"rope_theta", 1e6}, {"partial_rotary_factor", 0.5}};
  auto rc = rope_config(parse_model_config(cfg));
  EXPECT_EQ(rc.dim, 32);
  auto want = ref_default(1e6, 32);
  for (auto& x : want) x /= 2.0;
  expect_close(compute_rope(rc).inv_freq, want);
}

// The in-graph NTK path (sequence longer than max_position_embeddings) agrees with the host formula, and
// tracing records a guard on the sequence length.
TEST(Rope, DynamicInGraphMatchesHostAndGuards) {
  nlohmann::json cfg = base_cfg({{"rope_type", "dynamic"}, {"factor", 2.0}});
  cfg["max_position_embeddings"] = 16;
  RopeConfig rc = rope_config(parse_model_config(cfg));
  EagerBuilder b;
  const int64_t S = 20;
  std::vector<int64_t> pos(S);
  for (int64_t i = 0; i < S; i++) pos[i] = i;
  auto [cos, sin] = rope_cos_sin(b, rc, b.wrap(Tensor::from_ints({1, S}, pos)), Sym(S));
  auto inv = compute_rope(rc, S).inv_freq;
  Tensor c = cos.tensor();
  for (int64_t p = 0; p < S; p++)
    for (int64_t i = 0; i < rc.dim / 2; i++)
      EXPECT_NEAR(c.item({0, p, i}), std::cos(static_cast<float>(p) * inv[i]), 2e-5) << p << "," << i;

  Graph g;
  TraceBuilder tb(g);
  Sym s = g.env().create_symbol("seq", 1, 100, 20);
  Var ids = tb.input("position_ids", TensorType{DType::I64, {Sym(1), s}});
  rope_cos_sin(tb, rc, ids, s);
  ASSERT_FALSE(g.env().guards().empty());
  EXPECT_NE(g.env().guards().back().what.find("16"), std::string::npos) << g.env().guards().back().what;
}

}  // namespace
}  // namespace hfx::test
