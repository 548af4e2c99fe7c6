// mamba (MambaForCausalLM) in the model library:
//   * goldens from the real transformers 4.47 (tests/data/goldens/mamba-lm.json, made by
//     tools/hf_goldens/make_nocache_goldens.sh on the very checkpoint create-tiny writes here; the weights'
//     sha256 is checked first): last-position logits of prompts of 1, 6 and 13 tokens (the 1-token one is
//     shorter than conv_kernel - 1) and 32 greedy tokens, which transformers decoded by full recomputation
//     and hfx decodes with its conv/ssm cache (prefill, then one token per call);
//   * for mamba and mamba2 (suite StateSpace): the cache equals recomputation on a left-padded batch of 3
//     over 24 steps, and a left-padded row gives its unpadded logits (transformers zeroes padded inputs, so
//     the state stays zero through them); the eager engine equals recomputation;
//   * the cache leaves: names past_conv.N / past_ssm.N ↔ present_conv.N / present_ssm.N, layer type mamba;
//   * config errors: an unknown or unsupported layer type names the layer, bad weights name the tensor.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "hfx/core/error.h"
#include "hfx/io/safetensors.h"
#include "hfx/runtime/generator.h"
#include "models/ssm_test_util.h"

namespace hfx::test {
namespace {

using nlohmann::json;

TEST(Mamba, MatchesTransformersGoldens) {
  auto [worst_logit, worst_step] = check_nocache_goldens("mamba");
  EXPECT_LE(worst_logit, 1e-4);
  EXPECT_LE(worst_step, 1e-4);
}

// The state-space suites run over the architectures with mamba layers (mamba, mamba2, granitemoehybrid).
class StateSpace : public ::testing::TestWithParam<std::string> {};

TEST_P(StateSpace, CacheEqualsRecomputeOnLeftPaddedBatch) {
  auto m = tiny_in_memory(GetParam(), 3);
  const std::vector<std::vector<int64_t>> prompts = {{5, 9, 33, 2, 100, 7, 8}, {44}, {3, 4, 5, 6}};
  Batch full = left_pad(prompts);
  EagerBuilder cb;
  NamedVars out = call(*m, cb, full, {});
  double worst = 0;
  for (int step = 0; step < 24; step++) {
    std::vector<std::vector<float>> cached = last_rows(get(out, "logits"));
    EagerBuilder fb;
    std::vector<std::vector<float>> recomputed = last_rows(get(call(*m, fb, full, {}, false), "logits"));
    std::vector<int64_t> next;
    for (int64_t b = 0; b < full.B; b++) {
      worst = std::max(worst, max_abs(cached[b], recomputed[b]));
      next.push_back(argmax(recomputed[b]));
    }
    // Grow the full sequence by one column and feed only the new column to the cached model.
    Batch grown;
    grown.B = full.B;
    grown.T = full.T + 1;
    for (int64_t b = 0; b < full.B; b++) {
      for (int64_t j = 0; j < full.T; j++) {
        grown.ids.push_back(full.ids[b * full.T + j]);
        grown.mask.push_back(full.mask[b * full.T + j]);
      }
      grown.ids.push_back(next[b]);
      grown.mask.push_back(1);
    }
    full = grown;
    NamedVars args{{"input_ids", cb.wrap(ints({full.B, 1}, next))},
                   {"attention_mask", cb.wrap(ints({full.B, full.T}, full.mask))}};
    NamedVars leaves = carry(*m, out);
    args.insert(args.end(), leaves.begin(), leaves.end());
    out = m->call("model", cb, args, CallOptions{1, true});
  }
  std::printf("[%s] cache vs recompute, batch 3 left-padded, 24 steps: worst %.3g\n", GetParam().c_str(),
              worst);
  EXPECT_LE(worst, 1e-4);
}

// The prefill's chunked scan (16-step chunks, the state passed between them) against the recurrence
// itself: the same 45 tokens fed one per call with the carried conv/ssm state (each call a single step),
// at every position; 45 crosses two chunk boundaries and pads the last chunk.
TEST(Mamba, ChunkedPrefillEqualsTokenByTokenRecurrence) {
  auto m = tiny_in_memory("mamba", 4);
  std::vector<int64_t> ids;
  for (int64_t i = 0; i < 45; i++) ids.push_back((i * 131 + 17) % 500 + 3);
  EagerBuilder b;
  NamedVars leaves;
  double worst = 0;
  for (size_t n = 1; n <= ids.size(); n++) {
    NamedVars args{
        {"input_ids", b.wrap(ints({1, 1}, {ids[n - 1]}))},
        {"attention_mask", b.wrap(ints({1, static_cast<int64_t>(n)}, std::vector<int64_t>(n, 1)))}};
    args.insert(args.end(), leaves.begin(), leaves.end());
    NamedVars step = m->call("model", b, args, CallOptions{1, true});
    leaves = carry(*m, step);
    EagerBuilder fb;
    std::vector<int64_t> prefix(ids.begin(), ids.begin() + static_cast<ptrdiff_t>(n));
    NamedVars full = call(*m, fb, left_pad({prefix}), {}, false);
    worst = std::max(worst, max_abs(last_rows(get(step, "logits"))[0], last_rows(get(full, "logits"))[0]));
  }
  std::printf("[mamba] chunked prefill vs token-by-token recurrence, 45 positions: worst %.3g\n", worst);
  EXPECT_LE(worst, 1e-4);
}

TEST_P(StateSpace, LeftPaddedRowsGiveTheirUnpaddedLogits) {
  auto m = tiny_in_memory(GetParam(), 1);
  const std::vector<std::vector<int64_t>> prompts = {{5, 9, 33, 2, 100, 7, 8, 1, 2}, {44, 45}, {3, 4, 5, 6}};
  EagerBuilder b;
  auto batched = last_rows(get(call(*m, b, left_pad(prompts), {}), "logits"));
  double worst = 0;
  for (size_t r = 0; r < prompts.size(); r++) {
    EagerBuilder one;
    worst = std::max(
        worst, max_abs(batched[r], last_rows(get(call(*m, one, left_pad({prompts[r]}), {}), "logits"))[0]));
  }
  std::printf("[%s] left-padded batch vs rows alone: worst %.3g\n", GetParam().c_str(), worst);
  EXPECT_LE(worst, 1e-5);
}

TEST_P(StateSpace, GeneratorEagerMatchesRecompute) {
  // The eager engine (hfx generate --engine eager) carries the conv/ssm leaves by the declaration.
  std::shared_ptr<const CausalLM> m = tiny_in_memory(GetParam(), 2);
  const std::vector<int64_t> prompt = {11, 12, 13, 14, 15};
  EagerEngine e(m);
  std::vector<int64_t> ids = prompt, mask(prompt.size(), 1), pos;
  for (size_t i = 0; i < prompt.size(); i++) pos.push_back(static_cast<int64_t>(i));
  std::vector<float> logits;
  e.step(ids, mask, pos, 1, static_cast<int64_t>(ids.size()), logits);
  std::vector<int64_t> seq = prompt;
  for (int s = 0; s < 8; s++) {
    int64_t t = argmax(logits);
    EagerBuilder fb;
    seq.push_back(t);
    Batch full = left_pad({seq});
    std::vector<float> want = last_rows(get(call(*m, fb, full, {}, false), "logits"))[0];
    mask.push_back(1);
    std::vector<int64_t> one = {t}, p = {static_cast<int64_t>(seq.size() - 1)};
    e.step(one, mask, p, 1, 1, logits);
    EXPECT_LE(max_abs(logits, want), 1e-4) << "step " << s;
  }
}

INSTANTIATE_TEST_SUITE_P(Archs, StateSpace, ::testing::Values("mamba", "mamba2", "granitemoehybrid"),
                         [](const auto& info) { return info.param; });

TEST(Mamba, DeclaresConvAndSsmLeavesOfLayerTypeMamba) {
  auto m = tiny_in_memory("mamba");
  ComponentDecl c = m->component("model");
  ASSERT_EQ(c.cache.size(), 4u);
  EXPECT_EQ(c.cache[0].past_input, "past_conv.0");
  EXPECT_EQ(c.cache[0].present_output, "present_conv.0");
  EXPECT_EQ(c.cache[1].past_input, "past_ssm.0");
  EXPECT_EQ(c.cache[3].present_output, "present_ssm.1");
  for (const auto& l : c.cache) EXPECT_EQ(l.layer_type, "mamba");
  const json cfg = m->config().raw;
  for (const auto& i : c.inputs)
    if (i.name == "past_conv.1")
      EXPECT_EQ(i.axes, (std::vector<std::string>{"batch_size", "128", "3"}));
    else if (i.name == "past_ssm.1") {
      EXPECT_EQ(i.axes, (std::vector<std::string>{"batch_size", "128", "16"}));
    }
  EXPECT_THROW(m->forward(*std::make_unique<EagerBuilder>(), ForwardArgs{}), Error);
}

std::string config_error(json cfg) {
  try {
    parse_model_config(cfg);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Mamba, LayerTypesAreCheckedByLayer) {
  json cfg = architecture("mamba").tiny_config("tiny");
  cfg["layer_types"] = {"mamba", "mamba"};
  EXPECT_EQ(parse_model_config(cfg).layer_types, (std::vector<std::string>{"mamba", "mamba"}));
  cfg["layer_types"] = {"mamba", "mamba2000"};
  EXPECT_NE(config_error(cfg).find(
                "[model] expected a layer type among [full_attention, sliding_attention, linear_attention, "
                "mamba, conv], got 'mamba2000' at layer 1"),
            std::string::npos)
      << config_error(cfg);
  cfg["layer_types"] = {"full_attention", "mamba"};
  EXPECT_NE(config_error(cfg).find(
                "[model] expected a layer type mamba runs (mamba), got 'full_attention' at layer 0"),
            std::string::npos)
      << config_error(cfg);
  json llama = architecture("llama").tiny_config("tiny");
  llama["layer_types"] = {"full_attention", "banana"};
  EXPECT_NE(config_error(llama).find("got 'banana' at layer 1"), std::string::npos) << config_error(llama);
}

TEST(Mamba, BadWeightsNameTheTensor) {
  json cfg = architecture("mamba").tiny_config("tiny");
  ModelConfig mc = parse_model_config(cfg);
  auto w = tiny_weights(mc, DType::F32, 0);
  w["backbone.layers.1.mixer.A_log"] = Tensor::zeros({128, 8}, DType::F32);
  try {
    make_causal_lm(cfg, io::WeightStore::from_tensors(w));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "expected tensor 'backbone.layers.1.mixer.A_log' of shape [128, 16], got [128, 8]"),
              std::string::npos)
        << e.what();
  }
  // Tied checkpoints (the released ones) have no lm_head.weight.
  cfg["tie_word_embeddings"] = true;
  ModelConfig tied = parse_model_config(cfg);
  auto tw = tiny_weights(tied, DType::F32, 0);
  EXPECT_EQ(tw.count("lm_head.weight"), 0u);
  EXPECT_NO_THROW(make_causal_lm(cfg, io::WeightStore::from_tensors(tw)));
}

}  // namespace
}  // namespace hfx::test
