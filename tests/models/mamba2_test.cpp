// mamba2 (Mamba2ForCausalLM) in the model library (the suites shared with mamba are StateSpace in
// tests/models/mamba_test.cpp):
//   * goldens from the real transformers 4.51 (tests/data/goldens/mamba2-lm.json, made by
//     `HFO_RUN=/work/hfo/run-4.51.sh tools/hf_goldens/make_nocache_goldens.sh ./build/hfx mamba2`):
//     last-position logits of prompts of 1, 6 and 13 tokens and 32 greedy tokens, which transformers decoded
//     by full recomputation and hfx decodes with its cache. With chunk_size 8 the 13-token prompt and the
//     greedy continuations span up to 6 chunks. Not 4.47: its torch_forward sums the inter-chunk decay over
//     the wrong axis (fixed by 4.51), so its logits differ from the recurrence from the second chunk on
//     (0.013 at the 13-token prompt's last position, greedy tokens diverge);
//   * the chunked scan's state passing: a 40-token prefill (5 chunks) equals feeding the same tokens one per
//     call through the carried state, logits and final states, with 2 groups over 4 heads as well;
//   * the cache leaves: past_conv.N [B, conv_dim, K-1] and past_ssm.N [B, heads, head_dim, state];
//   * config and weight errors name the layer, the sizes or the tensor.
#include <gtest/gtest.h>

#include "hfx/core/error.h"
#include "models/ssm_test_util.h"

namespace hfx::test {
namespace {

using nlohmann::json;

TEST(Mamba2, MatchesTransformersGoldens) {
  auto [worst_logit, worst_step] = check_nocache_goldens("mamba2");
  EXPECT_LE(worst_logit, 1e-4);
  EXPECT_LE(worst_step, 1e-4);
}

double max_abs_t(const Tensor& a, const Tensor& b) {
  return max_abs(a.contiguous().to_floats(), b.contiguous().to_floats());
}

// Prefill of 40 tokens (5 chunks of 8) in one call vs the same tokens one per call.
void check_chunks_equal_steps(const json& overrides, const char* tag) {
  auto m = tiny_in_memory("mamba2", 4, overrides);
  std::vector<int64_t> ids;
  for (int64_t i = 0; i < 40; i++) ids.push_back((i * 37 + 11) % 500 + 1);
  EagerBuilder b;
  NamedVars whole = m->call("model", b,
                            {{"input_ids", b.wrap(ints({1, 40}, ids))},
                             {"attention_mask", b.wrap(ints({1, 40}, std::vector<int64_t>(40, 1)))}},
                            CallOptions{1, true});
  NamedVars out, leaves;
  for (int64_t i = 0; i < 40; i++) {
    NamedVars args{
        {"input_ids", b.wrap(ints({1, 1}, {ids[static_cast<size_t>(i)]}))},
        {"attention_mask", b.wrap(ints({1, i + 1}, std::vector<int64_t>(static_cast<size_t>(i + 1), 1)))}};
    args.insert(args.end(), leaves.begin(), leaves.end());
    out = m->call("model", b, args, CallOptions{1, true});
    leaves = carry(*m, out);
  }
  double worst = 0;
  for (const auto& [name, v] : whole) worst = std::max(worst, max_abs_t(v.tensor(), get(out, name).tensor()));
  std::printf("[mamba2 %s] 40-token chunked prefill vs 40 one-token steps: worst %.3g (logits and states)\n",
              tag, worst);
  EXPECT_LE(worst, 1e-4);
}

TEST(Mamba2, ChunkedPrefillEqualsOneTokenSteps) {
  check_chunks_equal_steps(json::object(), "4 groups");
  check_chunks_equal_steps({{"n_groups", 2}}, "2 groups over 4 heads");
}

TEST(Mamba2, DeclaresConvAndSsmLeavesOfLayerTypeMamba) {
  auto m = tiny_in_memory("mamba2");
  ComponentDecl c = m->component("model");
  ASSERT_EQ(c.cache.size(), 4u);
  EXPECT_EQ(c.cache[0].past_input, "past_conv.0");
  EXPECT_EQ(c.cache[1].past_input, "past_ssm.0");
  EXPECT_EQ(c.cache[3].present_output, "present_ssm.1");
  for (const auto& l : c.cache) EXPECT_EQ(l.layer_type, "mamba");
  for (const auto& i : c.inputs)
    if (i.name == "past_conv.1")
      EXPECT_EQ(i.axes, (std::vector<std::string>{"batch_size", "256", "3"}));  // 128 + 2·4·16
    else if (i.name == "past_ssm.1") {
      EXPECT_EQ(i.axes, (std::vector<std::string>{"batch_size", "4", "32", "16"}));
    }
}

std::string config_error(json cfg) {
  try {
    parse_model_config(cfg);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Mamba2, ConfigErrorsNameTheProblem) {
  json cfg = architecture("mamba2").tiny_config("tiny");
  cfg["layer_types"] = {"mamba", "attention"};
  EXPECT_NE(config_error(cfg).find("got 'attention' at layer 1"), std::string::npos) << config_error(cfg);
  cfg["layer_types"] = {"full_attention", "mamba"};
  EXPECT_NE(config_error(cfg).find(
                "[model] expected a layer type mamba2 runs (mamba), got 'full_attention' at layer 0"),
            std::string::npos)
      << config_error(cfg);
  cfg.erase("layer_types");
  cfg["head_dim"] = 16;
  EXPECT_NE(config_error(cfg).find(
                "expected num_heads · head_dim = expand · hidden_size for mamba2, got 4 · 16 != 128"),
            std::string::npos)
      << config_error(cfg);
  cfg["head_dim"] = 32;
  cfg["n_groups"] = 3;
  EXPECT_NE(
      config_error(cfg).find("expected num_heads divisible by n_groups for mamba2, got 4 heads and 3 groups"),
      std::string::npos)
      << config_error(cfg);
}

TEST(Mamba2, BadWeightsNameTheTensor) {
  json cfg = architecture("mamba2").tiny_config("tiny");
  ModelConfig mc = parse_model_config(cfg);
  for (const auto& [name, shape, want] : std::vector<std::tuple<std::string, Shape, std::string>>{
           {"backbone.layers.1.mixer.in_proj.weight",
            {388, 64},
            "expected tensor 'backbone.layers.1.mixer.in_proj.weight' of shape [388, 64], got [300, 64]"},
           {"backbone.layers.0.mixer.conv1d.weight",
            {256, 1, 4},
            "expected tensor 'backbone.layers.0.mixer.conv1d.weight' of shape [256, 1, 4], got [256, 1, "
            "3]"}}) {
    auto w = tiny_weights(mc, DType::F32, 0);
    Shape bad = shape;
    bad.back() == 64 ? bad[0] = 300 : bad.back() = 3;
    w[name] = Tensor::zeros(bad, DType::F32);
    try {
      make_causal_lm(cfg, io::WeightStore::from_tensors(w));
      ADD_FAILURE() << "expected an error for " << name;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace hfx::test
