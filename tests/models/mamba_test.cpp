// mamba (MambaForCausalLM) in the model library:
//   * goldens from the real transformers 4.47 (tests/data/goldens/mamba-lm.json, made by
//     tools/hf_goldens/make_nocache_goldens.sh on the very checkpoint create-tiny writes here; the weights'
//     sha256 is checked first): last-position logits of prompts of 1, 6 and 13 tokens (the 1-token one is
//     shorter than conv_kernel - 1) and 32 greedy tokens, which transformers decoded by full recomputation
//     and hfx decodes with its conv/ssm cache (prefill, then one token per call);
//   * the cache equals recomputation on a left-padded batch of 3 over 24 steps, and a left-padded row gives
//     its unpadded logits (transformers zeroes padded inputs, so the state stays zero through them);
//   * the cache leaves: names past_conv.N / past_ssm.N ↔ present_conv.N / present_ssm.N, layer type mamba;
//   * config errors: an unknown or unsupported layer type names the layer, bad weights name the tensor.
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

// Logits of one call of component `model` at the last position of each row: [B][V].
std::vector<std::vector<float>> last_rows(const Var& logits) {
  Tensor t = logits.tensor().contiguous();
  const int64_t B = t.size(0), S = t.size(1), V = t.size(2);
  std::vector<std::vector<float>> r(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; b++) r[b].assign(t.data<float>() + (b * S + S - 1) * V, t.data<float>() + (b * S + S) * V);
  return r;
}

int64_t argmax(const std::vector<float>& v) { return std::max_element(v.begin(), v.end()) - v.begin(); }

double max_abs(const std::vector<float>& a, const std::vector<float>& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); i++) m = std::max(m, std::fabs(static_cast<double>(a[i]) - b[i]));
  return m;
}

// One call of component `model`: ids/mask [B, *], the carried leaves appended.
NamedVars call(const Model& m, EagerBuilder& b, const Batch& in, const NamedVars& leaves, bool use_cache = true) {
  NamedVars args{{"input_ids", b.wrap(ints({in.B, in.T}, in.ids))}, {"attention_mask", b.wrap(ints({in.B, in.T}, in.mask))}};
  args.insert(args.end(), leaves.begin(), leaves.end());
  return m.call("model", b, args, CallOptions{1, use_cache});
}

NamedVars carry(const Model& m, const NamedVars& out) {
  NamedVars r;
  for (const CacheLeafDecl& c : m.component("model").cache)
    if (Var v = get(out, c.present_output)) r.emplace_back(c.past_input, v);
  return r;
}

TEST(Mamba, MatchesTransformersGoldens) {
  const json g = json::parse(io::read_file(std::string(HFX_SOURCE_DIR) + "/tests/data/goldens/mamba-lm.json"));
  TempDir dir("mamba_goldens");
  create_tiny("mamba", dir.path.string());
  ASSERT_EQ(io::sha256_file((dir.path / "model.safetensors").string()), g["weights_sha256"].get<std::string>())
      << "create-tiny mamba no longer writes the checkpoint the goldens were made from; rerun "
         "tools/hf_goldens/make_nocache_goldens.sh";
  auto m = load_causal_lm(dir.path.string());
  double worst_logit = 0, worst_step = 0;
  for (const auto& p : g["prompts"]) {
    std::vector<int64_t> ids = p["ids"].get<std::vector<int64_t>>();
    std::vector<float> want = p["last_logits"].get<std::vector<float>>();
    EagerBuilder b;
    NamedVars out = call(*m, b, left_pad({ids}), {});
    worst_logit = std::max(worst_logit, max_abs(last_rows(get(out, "logits"))[0], want));
    // Greedy with the conv/ssm cache: one token per call.
    std::vector<int64_t> want_tokens = p["greedy_new_tokens"].get<std::vector<int64_t>>(), got;
    std::vector<float> want_step = p["greedy_step_logits"].get<std::vector<float>>();
    std::vector<int64_t> mask(ids.size(), 1);
    for (size_t i = 0; i < want_tokens.size(); i++) {
      std::vector<float> row = last_rows(get(out, "logits"))[0];
      int64_t t = argmax(row);
      got.push_back(t);
      worst_step = std::max(worst_step, std::fabs(static_cast<double>(row[static_cast<size_t>(t)]) - want_step[i]));
      mask.push_back(1);
      // input_ids [1, 1], attention_mask [1, past + 1], the carried leaves
      NamedVars args{{"input_ids", b.wrap(ints({1, 1}, {t}))},
                     {"attention_mask", b.wrap(ints({1, static_cast<int64_t>(mask.size())}, mask))}};
      NamedVars leaves = carry(*m, out);
      args.insert(args.end(), leaves.begin(), leaves.end());
      out = m->call("model", b, args, CallOptions{1, true});
    }
    EXPECT_EQ(got, want_tokens) << "prompt of " << ids.size() << " tokens";
  }
  std::printf("[mamba goldens] worst |logit - transformers| %.3g (last positions), %.3g (greedy steps)\n", worst_logit, worst_step);
  EXPECT_LE(worst_logit, 1e-4);
  EXPECT_LE(worst_step, 1e-4);
}

TEST(Mamba, CacheEqualsRecomputeOnLeftPaddedBatch) {
  auto m = tiny_in_memory("mamba", 3);
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
    NamedVars args{{"input_ids", cb.wrap(ints({full.B, 1}, next))}, {"attention_mask", cb.wrap(ints({full.B, full.T}, full.mask))}};
    NamedVars leaves = carry(*m, out);
    args.insert(args.end(), leaves.begin(), leaves.end());
    out = m->call("model", cb, args, CallOptions{1, true});
  }
  std::printf("[mamba] cache vs recompute, batch 3 left-padded, 24 steps: worst %.3g\n", worst);
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

TEST(Mamba, LeftPaddedRowsGiveTheirUnpaddedLogits) {
  auto m = tiny_in_memory("mamba", 1);
  const std::vector<std::vector<int64_t>> prompts = {{5, 9, 33, 2, 100, 7, 8, 1, 2}, {44, 45}, {3, 4, 5, 6}};
  EagerBuilder b;
  auto batched = last_rows(get(call(*m, b, left_pad(prompts), {}), "logits"));
  double worst = 0;
  for (size_t r = 0; r < prompts.size(); r++) {
    EagerBuilder one;
    worst = std::max(worst, max_abs(batched[r], last_rows(get(call(*m, one, left_pad({prompts[r]}), {}), "logits"))[0]));
  }
  std::printf("[mamba] left-padded batch vs rows alone: worst %.3g\n", worst);
  EXPECT_LE(worst, 1e-5);
}

TEST(Mamba, GeneratorEagerMatchesRecompute) {
  // The eager engine (hfx generate --engine eager) carries the conv/ssm leaves by the declaration.
  std::shared_ptr<const CausalLM> m = tiny_in_memory("mamba", 2);
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
    if (i.name == "past_conv.1") EXPECT_EQ(i.axes, (std::vector<std::string>{"batch_size", "128", "3"}));
    else if (i.name == "past_ssm.1") EXPECT_EQ(i.axes, (std::vector<std::string>{"batch_size", "128", "16"}));
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
  EXPECT_NE(config_error(cfg).find("[model] expected a layer type among [full_attention, sliding_attention, chunked_attention, "
                                   "linear_attention, mamba, conv], got 'mamba2000' at layer 1"),
            std::string::npos)
      << config_error(cfg);
  cfg["layer_types"] = {"full_attention", "mamba"};
  EXPECT_NE(config_error(cfg).find("[model] expected a layer type mamba runs (mamba), got 'full_attention' at layer 0"),
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
    EXPECT_NE(std::string(e.what()).find("expected tensor 'backbone.layers.1.mixer.A_log' of shape [128, 16], got [128, 8]"),
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
