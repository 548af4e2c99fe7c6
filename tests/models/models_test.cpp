// Model library tests, for every architecture: greedy generation with the cache equals full
// recomputation (batch 1 and left-padded batch 3), the traced forward verifies and names every Hugging
// Face module, bad checkpoints fail with messages naming the tensor, create-tiny round-trips from disk.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <set>

#include "hfx/core/error.h"
#include "hfx/ops/functional.h"
#include "hfx/ops/op_schema.h"
#include "models/model_test_util.h"

namespace hfx::test {
namespace {

struct StepOut {
  std::vector<float> logits;  // [B, V] at each row's last position
  std::vector<int64_t> argmax;
};

StepOut last_logits(const Tensor& logits) {
  StepOut o;
  Tensor l = logits.contiguous();
  const int64_t B = l.size(0), S = l.size(1), V = l.size(2);
  const float* p = l.data<float>();
  for (int64_t b = 0; b < B; b++) {
    const float* row = p + (b * S + S - 1) * V;
    o.logits.insert(o.logits.end(), row, row + V);
    o.argmax.push_back(std::max_element(row, row + V) - row);
  }
  return o;
}

// Greedy decoding of `steps` tokens twice: with a DynamicCache (prefill + one token per step) and by
// recomputing the whole sequence at every step. Returns the max abs logit difference.
double check_cache_equals_recompute(const CausalLM& m, const std::vector<std::vector<int64_t>>& prompts,
                                    int steps) {
  Batch bt = left_pad(prompts);
  const int64_t B = bt.B;
  EagerBuilder cb;
  DynamicCache cache(m.cache_layout());
  std::vector<int64_t> ids = bt.ids, mask = bt.mask, pos = bt.pos;  // the full sequence so far, [B, T]
  int64_t T = bt.T;
  std::vector<int64_t> next_pos(B);
  for (int64_t b = 0; b < B; b++) next_pos[b] = pos[b * T + T - 1] + 1;
  double max_diff = 0;

  ForwardArgs a;
  a.input_ids = cb.wrap(ints({B, T}, ids));
  a.attention_mask = cb.wrap(ints({B, T}, mask));
  a.position_ids = cb.wrap(ints({B, T}, pos));
  a.cache = &cache;
  a.logits_to_keep = 1;
  StepOut cached = last_logits(m.forward(cb, a).logits.tensor());

  for (int step = 0; step < steps; step++) {
    // Full recomputation over the same sequence.
    EagerBuilder fb;
    ForwardArgs f;
    f.input_ids = fb.wrap(ints({B, T}, ids));
    f.attention_mask = fb.wrap(ints({B, T}, mask));
    f.position_ids = fb.wrap(ints({B, T}, pos));
    StepOut full = last_logits(m.forward(fb, f).logits.tensor());
    EXPECT_EQ(cached.argmax, full.argmax) << "step " << step;
    for (size_t i = 0; i < full.logits.size(); i++)
      max_diff = std::max(max_diff, static_cast<double>(std::fabs(full.logits[i] - cached.logits[i])));
    if (step + 1 == steps) break;
    // Append the greedy token and run one cached step.
    std::vector<int64_t> nids, nmask, npos, tok(B), tpos(B);
    for (int64_t b = 0; b < B; b++) {
      tok[b] = cached.argmax[b];
      tpos[b] = next_pos[b]++;
      for (int64_t t = 0; t < T; t++) {
        nids.push_back(ids[b * T + t]);
        nmask.push_back(mask[b * T + t]);
        npos.push_back(pos[b * T + t]);
      }
      nids.push_back(tok[b]);
      nmask.push_back(1);
      npos.push_back(tpos[b]);
    }
    ids = nids, mask = nmask, pos = npos, T++;
    ForwardArgs s;
    s.input_ids = cb.wrap(ints({B, 1}, tok));
    s.attention_mask = cb.wrap(ints({B, T}, mask));
    s.position_ids = cb.wrap(ints({B, 1}, tpos));
    s.cache = &cache;
    cached = last_logits(m.forward(cb, s).logits.tensor());
    EXPECT_EQ(cache.past_length().value(), T);
  }
  return max_diff;
}

class ModelArch : public ::testing::TestWithParam<std::string> {};

TEST_P(ModelArch, CacheEqualsRecomputeBatch1) {
  auto m = tiny_in_memory(GetParam(), 1);
  double d = check_cache_equals_recompute(*m, {{5, 17, 42, 99, 7, 300}}, 32);
  EXPECT_LE(d, 1e-4);
  std::printf("[ %s ] batch 1: max |cached - full| = %.3g\n", GetParam().c_str(), d);
}

TEST_P(ModelArch, CacheEqualsRecomputeBatch3LeftPadded) {
  auto m = tiny_in_memory(GetParam(), 2);
  double d = check_cache_equals_recompute(
      *m, {{11, 12, 13}, {200, 201, 202, 203, 204, 205, 206, 207, 208}, {3, 4, 5, 6, 70}}, 32);
  EXPECT_LE(d, 1e-4);
  std::printf("[ %s ] batch 3: max |cached - full| = %.3g\n", GetParam().c_str(), d);
}

// A padded row gives the same logits as the row alone (positions and mask do their job).
TEST_P(ModelArch, LeftPaddingMatchesUnpadded) {
  auto m = tiny_in_memory(GetParam(), 3);
  std::vector<int64_t> row = {9, 8, 7, 6};
  Batch alone = left_pad({row}), padded = left_pad({row, {1, 2, 3, 4, 5, 6, 7}});
  auto run = [&](const Batch& bt) {
    EagerBuilder b;
    ForwardArgs a;
    a.input_ids = b.wrap(ints({bt.B, bt.T}, bt.ids));
    a.attention_mask = b.wrap(ints({bt.B, bt.T}, bt.mask));
    a.position_ids = b.wrap(ints({bt.B, bt.T}, bt.pos));
    return last_logits(m->forward(b, a).logits.tensor());
  };
  StepOut x = run(alone), y = run(padded);
  const size_t V = x.logits.size();
  double d = 0;
  for (size_t i = 0; i < V; i++) d = std::max(d, static_cast<double>(std::fabs(x.logits[i] - y.logits[i])));
  EXPECT_LE(d, 1e-4);
}

TEST_P(ModelArch, TraceVerifiesAndNamesModules) {
  auto m = tiny_in_memory(GetParam(), 4);
  Graph g;
  TraceBuilder tb(g);
  Sym B = g.env().create_symbol("batch", 1, 64, 2), S = g.env().create_symbol("seq", 1, 1024, 5);
  ForwardArgs a;
  a.input_ids = tb.input("input_ids", TensorType{DType::I64, {B, S}});
  a.attention_mask = tb.input("attention_mask", TensorType{DType::I64, {B, S}});
  ForwardOut out = m->forward(tb, a);
  g.add_output("logits", out.logits.value());
  EXPECT_EQ(out.logits.dtype(), DType::F32);
  ASSERT_NO_THROW(verify_graph(g));
  // A module is found by its named output value or, when its output is also its parent's output
  // (o_proj → self_attn, down_proj → mlp, lm_head → the graph output "logits"), by the node it ran:
  // node names are "<module path>/<op>".
  std::set<std::string> names, node_scopes, fused_weights;
  for (const auto& n : g.nodes()) {
    for (Value* v : n->outputs) names.insert(v->name);
    node_scopes.insert(n->name.substr(0, n->name.find('/')));
    // hfx.moe runs every expert in one op (so --target ort can fuse it): an expert projection is found by
    // its weight going into that op, whose own name is the experts module.
    if (n->op == "hfx.moe")
      for (Value* v : n->inputs) fused_weights.insert(v->name);
  }
  auto aliased = [](const std::string& e) {
    for (const char* t : {".o_proj", ".down_proj", ".c_proj", "lm_head", ".w2", ".output_linear", ".dense",
                          ".fc2", ".out_proj", ".fc_out", ".dense_4h_to_h", "output_projection"})
      if (e.size() >= std::strlen(t) && e.compare(e.size() - std::strlen(t), std::strlen(t), t) == 0)
        return true;
    return false;
  };
  std::vector<std::string> expected;
  const Architecture& arch = architecture(GetParam());
  for (const auto& [w, shape] : arch.weight_specs(m->config()))
    if (w.size() > 7 && w.compare(w.size() - 7, 7, ".weight") == 0)
      expected.push_back(w.substr(0, w.size() - 7));
  // Layer, attention and MLP modules of the checkpoints not laid out as Llama's ("" mlp: OPT's fc1 / fc2
  // sit on the layer itself).
  struct Layout {
    std::string layers, attn, mlp;
  };
  const std::map<std::string, Layout> layouts = {{"gpt2", {"transformer.h.", ".attn", ".mlp"}},
                                                 {"gptj", {"transformer.h.", ".attn", ".mlp"}},
                                                 {"codegen", {"transformer.h.", ".attn", ".mlp"}},
                                                 {"gpt_bigcode", {"transformer.h.", ".attn", ".mlp"}},
                                                 {"falcon", {"transformer.h.", ".self_attention", ".mlp"}},
                                                 {"bloom", {"transformer.h.", ".self_attention", ".mlp"}},
                                                 {"mpt", {"transformer.blocks.", ".attn", ".ffn"}},
                                                 {"gpt_neo", {"transformer.h.", ".attn.attention", ".mlp"}},
                                                 {"gpt_neox", {"gpt_neox.layers.", ".attention", ".mlp"}},
                                                 {"opt", {"model.decoder.layers.", ".self_attn", ""}},
                                                 {"biogpt", {"biogpt.layers.", ".self_attn", ""}},
                                                 {"xglm", {"model.layers.", ".self_attn", ""}}};
  const auto it = layouts.find(GetParam());
  const Layout lay = it != layouts.end() ? it->second : Layout{"model.layers.", ".self_attn", ".mlp"};
  for (int64_t i = 0; i < m->config().num_hidden_layers; i++) {
    std::string p = lay.layers + std::to_string(i);
    expected.push_back(p);
    expected.push_back(p + lay.attn);
    if (!lay.mlp.empty()) expected.push_back(p + lay.mlp);
  }
  expected.push_back(GetParam() == "biogpt" ? "output_projection" : "lm_head");
  for (auto e : expected) {
    // Mixtral's MLP is its sparse block, block_sparse_moe.
    if (!names.count(e) && e.size() > 4 && e.compare(e.size() - 4, 4, ".mlp") == 0)
      e = e.substr(0, e.size() - 4) + ".block_sparse_moe";
    const bool in_fused_moe = fused_weights.count(e + ".weight") > 0;
    EXPECT_TRUE(names.count(e) || (aliased(e) && node_scopes.count(e)) || in_fused_moe)
        << "missing named value " << e;
  }
}

TEST_P(ModelArch, CreateTinyOnDiskLoadsAndRuns) {
  TempDir dir("create_" + GetParam());
  TinyOptions o;
  o.seed = 7;
  nlohmann::json cfg = create_tiny(GetParam(), dir.path.string(), o);
  for (const char* f : {"config.json", "generation_config.json", "model.safetensors", "tokenizer.json",
                        "tokenizer_config.json"})
    EXPECT_TRUE(std::filesystem::exists(dir.path / f)) << f;
  auto m = load_causal_lm(dir.path.string());
  EXPECT_EQ(m->config().model_type, GetParam());
  EXPECT_EQ(m->config().vocab_size, cfg["vocab_size"].get<int64_t>());
  // Same seed, same weights: the in-memory path agrees with the file.
  ModelConfig mc = parse_model_config(cfg);
  auto mem = tiny_weights(mc, DType::F32, 7);
  for (const auto& [name, t] : mem) {
    Tensor f = m->weights().get(name);
    ASSERT_EQ(f.shape(), t.shape()) << name;
    EXPECT_EQ(f.to_floats(), t.to_floats()) << name;
  }
}

TEST_P(ModelArch, Bfloat16CheckpointRunsInF32) {
  auto m = tiny_in_memory(GetParam(), 5, nlohmann::json::object(), DType::BF16);
  EagerBuilder b;
  ForwardArgs a;
  a.input_ids = b.wrap(ints({1, 4}, {1, 2, 3, 4}));
  Tensor l = m->forward(b, a).logits.tensor();
  EXPECT_EQ(l.dtype(), DType::F32);
  for (float x : l.to_floats()) ASSERT_TRUE(std::isfinite(x));
}

INSTANTIATE_TEST_SUITE_P(All, ModelArch, ::testing::ValuesIn(all_model_types()),
                         [](const auto& info) { return info.param; });

// ---- logits_to_keep ----
TEST(Models, LogitsToKeepSlicesLastPositions) {
  auto m = tiny_in_memory("llama", 1);
  EagerBuilder b;
  ForwardArgs a;
  a.input_ids = b.wrap(ints({1, 5}, {1, 2, 3, 4, 5}));
  Tensor all = m->forward(b, a).logits.tensor();
  a.logits_to_keep = 2;
  Tensor two = m->forward(b, a).logits.tensor();
  ASSERT_EQ(two.shape(), (Shape{1, 2, all.size(2)}));
  auto x = two.to_floats(), y = all.slice(1, 3, 5).contiguous().to_floats();
  ASSERT_EQ(x.size(), y.size());
  for (size_t i = 0; i < x.size(); i++) EXPECT_NEAR(x[i], y[i], 1e-5);  // GEMM blocking differs with M
}

// ---- bad checkpoints ----
std::pair<nlohmann::json, std::map<std::string, Tensor>> llama_parts() {
  nlohmann::json cfg = tiny_model_config("llama", {});
  return {cfg, tiny_weights(parse_model_config(cfg), DType::F32, 0)};
}

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "<no error>";
}

TEST(ModelErrors, MissingTensor) {
  auto [cfg, w] = llama_parts();
  w.erase("model.layers.1.mlp.up_proj.weight");
  std::string msg = error_of([&] { make_model(cfg, io::WeightStore::from_tensors(w)); });
  EXPECT_NE(
      msg.find("[model] expected tensor 'model.layers.1.mlp.up_proj.weight' of shape [128, 64], got none"),
      std::string::npos)
      << msg;
}

TEST(ModelErrors, SurplusTensor) {
  auto [cfg, w] = llama_parts();
  w["model.layers.0.mlp.extra_proj.weight"] = Tensor::zeros({4, 4});
  std::string msg = error_of([&] { make_model(cfg, io::WeightStore::from_tensors(w)); });
  EXPECT_NE(msg.find("expected no tensor 'model.layers.0.mlp.extra_proj.weight' (llama does not use it), got "
                     "one of shape [4, 4]"),
            std::string::npos)
      << msg;
}

TEST(ModelErrors, KnownOptionalTensorsAreAccepted) {
  auto [cfg, w] = llama_parts();
  w["model.layers.0.self_attn.rotary_emb.inv_freq"] = Tensor::zeros({8});
  cfg["tie_word_embeddings"] = true;  // lm_head.weight becomes optional
  EXPECT_NO_THROW(make_model(cfg, io::WeightStore::from_tensors(w)));
}

TEST(ModelErrors, ShapeMismatchNamesTheFile) {
  auto [cfg, w] = llama_parts();
  w["model.layers.1.mlp.up_proj.weight"] = Tensor::zeros({128, 60});
  TempDir dir("bad_shape");
  std::vector<std::pair<std::string, Tensor>> list(w.begin(), w.end());
  io::write_safetensors((dir.path / "model.safetensors").string(), list);
  io::write_file_atomic((dir.path / "config.json").string(), cfg.dump());
  std::string msg = error_of([&] { load_model(dir.path.string()); });
  std::string want =
      "[model] expected tensor 'model.layers.1.mlp.up_proj.weight' of shape [128, 64], got [128, 60] in " +
      (dir.path / "model.safetensors").string();
  EXPECT_NE(msg.find(want), std::string::npos) << msg;
}

TEST(ModelErrors, UnknownModelType) {
  auto [cfg, w] = llama_parts();
  cfg["model_type"] = "llamax";
  std::string msg = error_of([&] { make_model(cfg, io::WeightStore::from_tensors(w)); });
  EXPECT_NE(msg.find("[model] expected a supported model_type, got 'llamax' (nearest: llama, "),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("lists all " + std::to_string(all_architectures().size())), std::string::npos) << msg;
  EXPECT_NE(msg.find("docs/adding-an-architecture.md"), std::string::npos) << msg;
  // Near names come first: a typo of a newer type finds it, not the first types of the registry.
  EXPECT_EQ(nearest_model_types("starcoder", 1), std::vector<std::string>{"starcoder2"});
  EXPECT_EQ(nearest_model_types("olmo4", 2), (std::vector<std::string>{"olmo", "olmo2"}));
  EXPECT_EQ(nearest_model_types("qwen2", 1), std::vector<std::string>{"qwen2"});
}

TEST(ModelErrors, AKnobHfxDoesNotImplementIsRefusedByName) {
  // Cohere's use_qk_norm (per-head LayerNorms with a [heads, head_dim] weight) is not implemented: the config
  // is refused naming the knob instead of exporting a model without those norms.
  nlohmann::json cfg = tiny_model_config("cohere", TinyOptions{});
  cfg["use_qk_norm"] = true;
  std::string msg = error_of([&] { architecture("cohere").weight_specs(parse_model_config(cfg)); });
  EXPECT_NE(
      msg.find("[model] expected config.json.use_qk_norm to be false for cohere (hfx does not implement "
               "Cohere's per-head q/k LayerNorms yet), got true"),
      std::string::npos)
      << msg;
  cfg["use_qk_norm"] = false;  // the default is accepted
  EXPECT_NO_THROW(architecture("cohere").weight_specs(parse_model_config(cfg)));
}

TEST(ModelErrors, EncoderKnobsOutsideWhatTransformersRuns) {
  // MPNetEncoder buckets relative positions into 32 whatever relative_attention_num_buckets says: a smaller
  // table would be indexed past its end, so hfx refuses it instead of exporting a gather out of range.
  nlohmann::json cfg = tiny_model_config("mpnet", TinyOptions{});
  cfg["relative_attention_num_buckets"] = 16;
  std::string msg = error_of([&] { parse_model_config(cfg); });
  EXPECT_NE(msg.find("[model] expected relative_attention_num_buckets >= 32 for mpnet"), std::string::npos)
      << msg;
  cfg["relative_attention_num_buckets"] = 48;  // a larger table is used in its first 32 rows
  EXPECT_NO_THROW(architecture("mpnet").weight_specs(parse_model_config(cfg)));
  nlohmann::json al = tiny_model_config("albert", TinyOptions{});
  al["num_hidden_groups"] = 0;
  msg = error_of([&] { parse_model_config(al); });
  EXPECT_NE(msg.find("[model] expected num_hidden_groups > 0 for albert, got 0"), std::string::npos) << msg;
  // DeBERTa's grouped ConvLayer (conv_groups > 1) is not implemented: refused by name, not exported
  // ungrouped.
  nlohmann::json db = tiny_model_config("deberta-v2", TinyOptions{});
  db["conv_kernel_size"] = 3;
  db["conv_groups"] = 2;
  msg = error_of([&] { parse_model_config(db); });
  EXPECT_NE(msg.find("[model] expected config.json.conv_groups to be 1 for deberta-v2"), std::string::npos)
      << msg;
  db["conv_groups"] = 1;
  EXPECT_NO_THROW(architecture("deberta-v2").weight_specs(parse_model_config(db)));
}

TEST(ModelErrors, UnknownPreset) {
  std::string msg = error_of([&] { tiny_model_config("llama", TinyOptions{.preset = "llama-9000"}); });
  EXPECT_NE(msg.find("expected a llama preset (tiny, llama-3.2-1b, llama-100m), got 'llama-9000'"),
            std::string::npos)
      << msg;
}

// ---- config parsing ----
TEST(ModelConfig, TransformersDefaultsAndVariants) {
  nlohmann::json j = {{"model_type", "llama"},  {"hidden_size", 64},        {"num_attention_heads", 4},
                      {"num_hidden_layers", 1}, {"intermediate_size", 128}, {"vocab_size", 300},
                      {"eos_token_id", {5, 6}}, {"dtype", "bfloat16"}};
  ModelConfig c = parse_model_config(j);
  EXPECT_EQ(c.num_key_value_heads, 4);
  EXPECT_EQ(c.head_dim, 16);
  EXPECT_EQ(c.dtype, DType::BF16);
  EXPECT_EQ(c.eos_token_ids, (std::vector<int64_t>{5, 6}));
  EXPECT_FALSE(c.tie_word_embeddings);
  j["model_type"] = "gemma";
  c = parse_model_config(j);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_EQ(c.head_dim, 256);  // GemmaConfig's default head_dim
  nlohmann::json g2 = {{"model_type", "gemma2"},
                       {"hidden_size", 64},
                       {"num_attention_heads", 4},
                       {"num_hidden_layers", 4},
                       {"sliding_window", 8}};
  c = parse_model_config(g2);
  EXPECT_EQ(c.layer_types, (std::vector<std::string>{"sliding_attention", "full_attention",
                                                     "sliding_attention", "full_attention"}));
  nlohmann::json q2 = {{"model_type", "qwen2"},  {"hidden_size", 64},          {"num_attention_heads", 4},
                       {"num_hidden_layers", 3}, {"use_sliding_window", true}, {"sliding_window", 16},
                       {"max_window_layers", 1}};
  c = parse_model_config(q2);
  EXPECT_EQ(c.layer_types,
            (std::vector<std::string>{"full_attention", "sliding_attention", "sliding_attention"}));
  nlohmann::json gp = {{"model_type", "gpt2"}, {"n_embd", 64}, {"n_head", 4}, {"n_layer", 2}};
  c = parse_model_config(gp);
  EXPECT_EQ(c.intermediate_size, 256);
  EXPECT_EQ(c.max_position_embeddings, 1024);
  EXPECT_DOUBLE_EQ(c.norm_eps, 1e-5);
  EXPECT_TRUE(c.tie_word_embeddings);
}

}  // namespace
}  // namespace hfx::test
