// lfm2 (Lfm2ForCausalLM) in the model library:
//   * goldens from the real transformers 4.56.2 (tests/data/goldens/lfm2-lm.json, made by
//     tools/hf_goldens/make_nocache_goldens.sh with HFO_RUN=/work/hfo/run-new.sh on the very checkpoint
//     create-tiny writes here; the weights' sha256 is checked first): last-position logits of prompts of
//     1, 6 and 13 tokens and 32 greedy tokens, which transformers decoded by full recomputation and hfx
//     decodes with its per-layer-type cache (prefill, then one token per call);
//   * the cache equals recomputation on a left-padded batch of 3 over 24 steps, and a left-padded row gives
//     its unpadded logits (conv layers zero the padded inputs, attention layers mask them);
//   * the cache leaves: past_conv.N ↔ present_conv.N (layer type conv) on conv layers and
//     past_key_values.N.key/value ↔ present.N.key/value (full_attention) on attention layers, as
//     Transformers.js names them; layer_types or the older full_attn_idxs;
//   * config errors name the layer; a mis-shaped conv weight names the tensor.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "hfx/core/error.h"
#include "hfx/io/safetensors.h"
#include "hfx/runtime/generator.h"
#include "models/model_test_util.h"

namespace hfx::test {
namespace {

using nlohmann::json;

// Logits of one call at the last position of each row: [B][V].
std::vector<std::vector<float>> last_rows(const Var& logits) {
  Tensor t = logits.tensor().contiguous();
  const int64_t B = t.size(0), S = t.size(1), V = t.size(2);
  std::vector<std::vector<float>> r(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; b++)
    r[b].assign(t.data<float>() + (b * S + S - 1) * V, t.data<float>() + (b * S + S) * V);
  return r;
}

int64_t argmax(const std::vector<float>& v) { return std::max_element(v.begin(), v.end()) - v.begin(); }

double max_abs(const std::vector<float>& a, const std::vector<float>& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); i++) m = std::max(m, std::fabs(static_cast<double>(a[i]) - b[i]));
  return m;
}

// One call of component `model`: ids/positions [B, S], mask [B, past + S], the carried leaves appended.
NamedVars call(const Model& m, EagerBuilder& b, int64_t B, const std::vector<int64_t>& ids,
               const std::vector<int64_t>& mask, const std::vector<int64_t>& pos, const NamedVars& leaves,
               bool use_cache = true) {
  const int64_t S = static_cast<int64_t>(ids.size()) / B, T = static_cast<int64_t>(mask.size()) / B;
  NamedVars args{{"input_ids", b.wrap(ints({B, S}, ids))},
                 {"attention_mask", b.wrap(ints({B, T}, mask))},
                 {"position_ids", b.wrap(ints({B, S}, pos))}};
  args.insert(args.end(), leaves.begin(), leaves.end());
  return m.call("model", b, args, CallOptions{1, use_cache});
}

NamedVars call(const Model& m, EagerBuilder& b, const Batch& in, bool use_cache = true) {
  return call(m, b, in.B, in.ids, in.mask, in.pos, {}, use_cache);
}

NamedVars carry(const Model& m, const NamedVars& out) {
  NamedVars r;
  for (const CacheLeafDecl& c : m.component("model").cache)
    if (Var v = get(out, c.present_output)) r.emplace_back(c.past_input, v);
  return r;
}

TEST(Lfm2, MatchesTransformersGoldens) {
  const json g = json::parse(io::read_file(std::string(HFX_SOURCE_DIR) + "/tests/data/goldens/lfm2-lm.json"));
  TempDir dir("lfm2_goldens");
  create_tiny("lfm2", dir.path.string());
  ASSERT_EQ(io::sha256_file((dir.path / "model.safetensors").string()),
            g["weights_sha256"].get<std::string>())
      << "create-tiny lfm2 no longer writes the checkpoint the goldens were made from; rerun "
         "HFO_RUN=/work/hfo/run-new.sh tools/hf_goldens/make_nocache_goldens.sh";
  auto m = load_causal_lm(dir.path.string());
  double worst_logit = 0, worst_step = 0;
  for (const auto& p : g["prompts"]) {
    std::vector<int64_t> ids = p["ids"].get<std::vector<int64_t>>();
    std::vector<float> want = p["last_logits"].get<std::vector<float>>();
    EagerBuilder b;
    NamedVars out = call(*m, b, left_pad({ids}));
    worst_logit = std::max(worst_logit, max_abs(last_rows(get(out, "logits"))[0], want));
    std::vector<int64_t> want_tokens = p["greedy_new_tokens"].get<std::vector<int64_t>>(), got;
    std::vector<float> want_step = p["greedy_step_logits"].get<std::vector<float>>();
    std::vector<int64_t> mask(ids.size(), 1);
    for (size_t i = 0; i < want_tokens.size(); i++) {
      std::vector<float> row = last_rows(get(out, "logits"))[0];
      int64_t t = argmax(row);
      got.push_back(t);
      worst_step =
          std::max(worst_step, std::fabs(static_cast<double>(row[static_cast<size_t>(t)]) - want_step[i]));
      mask.push_back(1);
      out = call(*m, b, 1, {t}, mask, {static_cast<int64_t>(mask.size()) - 1}, carry(*m, out));
    }
    EXPECT_EQ(got, want_tokens) << "prompt of " << ids.size() << " tokens";
  }
  std::printf("[lfm2 goldens] worst |logit - transformers| %.3g (last positions), %.3g (greedy steps)\n",
              worst_logit, worst_step);
  EXPECT_LE(worst_logit, 1e-4);
  EXPECT_LE(worst_step, 1e-4);
}

TEST(Lfm2, CacheEqualsRecomputeOnLeftPaddedBatch) {
  auto m = tiny_in_memory("lfm2", 3);
  Batch full = left_pad({{5, 9, 33, 2, 100, 7, 8}, {44}, {3, 4, 5, 6}});
  EagerBuilder cb;
  NamedVars out = call(*m, cb, full);
  double worst = 0;
  for (int step = 0; step < 24; step++) {
    std::vector<std::vector<float>> cached = last_rows(get(out, "logits"));
    EagerBuilder fb;
    std::vector<std::vector<float>> recomputed = last_rows(get(call(*m, fb, full, false), "logits"));
    std::vector<int64_t> next, pos;
    Batch grown;
    grown.B = full.B;
    grown.T = full.T + 1;
    for (int64_t b = 0; b < full.B; b++) {
      worst = std::max(worst, max_abs(cached[b], recomputed[b]));
      next.push_back(argmax(recomputed[b]));
      pos.push_back(full.pos[b * full.T + full.T - 1] + 1);
      for (int64_t j = 0; j < full.T; j++) {
        grown.ids.push_back(full.ids[b * full.T + j]);
        grown.mask.push_back(full.mask[b * full.T + j]);
        grown.pos.push_back(full.pos[b * full.T + j]);
      }
      grown.ids.push_back(next.back());
      grown.mask.push_back(1);
      grown.pos.push_back(pos.back());
    }
    full = grown;
    out = call(*m, cb, full.B, next, full.mask, pos, carry(*m, out));
  }
  std::printf("[lfm2] cache vs recompute, batch 3 left-padded, 24 steps: worst %.3g\n", worst);
  EXPECT_LE(worst, 1e-4);
}

TEST(Lfm2, LeftPaddedRowsGiveTheirUnpaddedLogits) {
  auto m = tiny_in_memory("lfm2", 1);
  const std::vector<std::vector<int64_t>> prompts = {{5, 9, 33, 2, 100, 7, 8, 1, 2}, {44, 45}, {3, 4, 5, 6}};
  EagerBuilder b;
  auto batched = last_rows(get(call(*m, b, left_pad(prompts)), "logits"));
  double worst = 0;
  for (size_t r = 0; r < prompts.size(); r++) {
    EagerBuilder one;
    worst = std::max(worst,
                     max_abs(batched[r], last_rows(get(call(*m, one, left_pad({prompts[r]})), "logits"))[0]));
  }
  std::printf("[lfm2] left-padded batch vs rows alone: worst %.3g\n", worst);
  EXPECT_LE(worst, 1e-5);
}

TEST(Lfm2, GeneratorEagerMatchesRecompute) {
  // The eager engine (hfx generate --engine eager) carries the conv and key/value leaves by the declaration.
  std::shared_ptr<const CausalLM> m = tiny_in_memory("lfm2", 2);
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
    std::vector<float> want = last_rows(get(call(*m, fb, left_pad({seq}), false), "logits"))[0];
    mask.push_back(1);
    std::vector<int64_t> one = {t}, p = {static_cast<int64_t>(seq.size() - 1)};
    e.step(one, mask, p, 1, 1, logits);
    EXPECT_LE(max_abs(logits, want), 1e-4) << "step " << s;
  }
}

TEST(Lfm2, DeclaresLeavesPerLayerType) {
  auto m = tiny_in_memory("lfm2");  // layer_types conv, full_attention, conv, full_attention
  ComponentDecl c = m->component("model");
  ASSERT_EQ(c.cache.size(), 6u);
  // conv leaves first, then the key/value block (one past_key_values entry in a .pt2's treespec)
  EXPECT_EQ(c.cache[0].past_input, "past_conv.0");
  EXPECT_EQ(c.cache[0].present_output, "present_conv.0");
  EXPECT_EQ(c.cache[0].layer_type, "conv");
  EXPECT_EQ(c.cache[1].past_input, "past_conv.2");
  EXPECT_EQ(c.cache[2].past_input, "past_key_values.1.key");
  EXPECT_EQ(c.cache[3].present_output, "present.1.value");
  EXPECT_EQ(c.cache[2].layer_type, "full_attention");
  EXPECT_EQ(c.cache[5].present_output, "present.3.value");
  for (const auto& i : c.inputs)
    if (i.name == "past_conv.2")
      EXPECT_EQ(i.axes, (std::vector<std::string>{"batch_size", "64", "3"}));
    else if (i.name == "past_key_values.3.key") {
      EXPECT_EQ(i.axes, (std::vector<std::string>{"batch_size", "2", "past_sequence_length", "16"}));
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

TEST(Lfm2, LayerTypesAreCheckedByLayer) {
  json cfg = architecture("lfm2").tiny_config("tiny");
  cfg["layer_types"] = {"conv", "full_attention", "conv", "banana"};
  EXPECT_NE(config_error(cfg).find(
                "[model] expected a layer type among [full_attention, sliding_attention, linear_attention, "
                "mamba, conv], got 'banana' at layer 3"),
            std::string::npos)
      << config_error(cfg);
  cfg["layer_types"] = {"conv", "mamba", "conv", "full_attention"};
  EXPECT_NE(config_error(cfg).find(
                "[model] expected a layer type lfm2 runs (conv, full_attention), got 'mamba' at layer 1"),
            std::string::npos)
      << config_error(cfg);
  cfg["layer_types"] = {"conv", "conv", "conv", "conv"};
  EXPECT_NE(config_error(cfg).find("expected at least one full_attention layer for lfm2"), std::string::npos)
      << config_error(cfg);
  // The older full_attn_idxs gives the same layer types.
  cfg.erase("layer_types");
  cfg["full_attn_idxs"] = {1, 3};
  EXPECT_EQ(parse_model_config(cfg).layer_types,
            (std::vector<std::string>{"conv", "full_attention", "conv", "full_attention"}));
  cfg["full_attn_idxs"] = {1, 4};
  EXPECT_NE(config_error(cfg).find("expected full_attn_idxs in [0, 4) (num_hidden_layers), got 4"),
            std::string::npos)
      << config_error(cfg);
  // Lfm2MLP: int(2·200/3) = 133, × 1.0, rounded up to a multiple of 32.
  auto m = tiny_in_memory("lfm2");
  EXPECT_EQ(m->weights().info("model.layers.0.feed_forward.w1.weight").shape, (Shape{160, 64}));
}

TEST(Lfm2, MisShapedConvWeightNamesTheTensor) {
  json cfg = architecture("lfm2").tiny_config("tiny");
  ModelConfig mc = parse_model_config(cfg);
  auto w = tiny_weights(mc, DType::F32, 0);
  w["model.layers.2.conv.conv.weight"] = Tensor::zeros({64, 1, 4}, DType::F32);
  try {
    make_causal_lm(cfg, io::WeightStore::from_tensors(w));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "expected tensor 'model.layers.2.conv.conv.weight' of shape [64, 1, 3], got [64, 1, 4]"),
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
