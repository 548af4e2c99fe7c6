// Capture: the flat signature, the shape contract, cache leaves, explicit Dims checked against the
// sample, specialization reported with its place, and state cleanup (eager output bit-identical
// before and after an export).
#include <gtest/gtest.h>

#include <unistd.h>
#include <cstring>
#include <filesystem>

#include "hfx/capture/capture.h"
#include "hfx/core/error.h"
#include "hfx/export/exporter.h"
#include "hfx/models/tiny.h"
#include "hfx/ops/functional.h"
#include "hfx/ops/op_schema.h"

namespace fs = std::filesystem;
using namespace hfx;

namespace {

std::unique_ptr<CausalLM> tiny(const std::string& arch, nlohmann::json overrides = {}) {
  TinyOptions o;
  nlohmann::json cfg = tiny_model_config(arch, o);
  for (auto it = overrides.begin(); it != overrides.end(); ++it) cfg[it.key()] = it.value();
  const Architecture& a = architecture(arch);
  ModelConfig mc = a.parse_config(cfg);
  auto w = io::WeightStore::from_tensors(tiny_weights(mc, DType::F32, 0));
  return make_causal_lm(cfg, w);
}

std::vector<float> eager_logits(const CausalLM& m) {
  EagerBuilder b;
  ForwardArgs args;
  args.input_ids = b.wrap(Tensor::from_ints({2, 5}, {1, 2, 3, 4, 5, 9, 8, 7, 6, 5}));
  DynamicCache cache(m.cache_layout());
  args.cache = &cache;
  return m.forward(b, args).logits.tensor().to_floats();
}

}  // namespace

TEST(Capture, MergedSignatureAndContract) {
  auto m = tiny("llama");
  CaptureOptions o;
  o.kind = CallKind::Merged;
  CapturedProgram p = capture_causal_lm(*m, o);
  const Graph& g = *p.graph;
  verify_graph(g);
  std::vector<std::string> in, out;
  for (Value* v : g.inputs()) in.push_back(v->name);
  for (Value* v : g.outputs()) out.push_back(v->name);
  int64_t L = m->config().num_hidden_layers;
  ASSERT_EQ(in.size(), static_cast<size_t>(3 + 2 * L));
  EXPECT_EQ(in[0], "input_ids");
  EXPECT_EQ(in[1], "attention_mask");
  EXPECT_EQ(in[2], "position_ids");
  EXPECT_EQ(in[3], "past_key_values.0.key");
  EXPECT_EQ(out[0], "logits");
  EXPECT_EQ(out[1], "present.0.key");
  EXPECT_EQ(g.find_input("attention_mask")->type.shape[1].str(), "past_sequence_length + sequence_length");
  // KV heads and head size are fixed numbers (what Transformers.js needs).
  const auto& kv = g.find_input("past_key_values.0.key")->type.shape;
  EXPECT_TRUE(kv[1].is_const());
  EXPECT_TRUE(kv[3].is_const());
  EXPECT_EQ(g.find_output("present.0.key")->type.shape[2].str(), "past_sequence_length + sequence_length");
  EXPECT_EQ(p.contract.at("input_ids")[1].symbol, "sequence_length");
  EXPECT_EQ(p.contract.at("past_key_values.0.key")[2].min, 0);  // merged: empty past allowed
  ASSERT_EQ(g.cache_leaves().size(), static_cast<size_t>(2 * L));
  EXPECT_EQ(g.cache_leaves()[0].output_name, "present.0.key");
  EXPECT_TRUE(p.guards.empty());
}

TEST(Capture, DecodeIsOneTokenOverANonEmptyPast) {
  auto m = tiny("gemma2");
  CaptureOptions o;
  o.kind = CallKind::Decode;
  CapturedProgram p = capture_causal_lm(*m, o);
  EXPECT_TRUE(p.graph->find_input("input_ids")->type.shape[1].is_const());
  EXPECT_EQ(p.contract.at("past_key_values.0.key")[2].min, 1);
  // gemma2 alternates sliding and global layers: the leaves keep the type and window.
  bool sliding = false, full = false;
  for (const auto& l : p.graph->cache_leaves()) {
    sliding |= l.layer_type == "sliding_attention" && l.window > 0;
    full |= l.layer_type == "full_attention" && l.window == 0;
  }
  EXPECT_TRUE(sliding && full);
}

TEST(Capture, PrefillHasNoPastAndStaticModeFixesDims) {
  auto m = tiny("qwen2");
  CaptureOptions o;
  o.kind = CallKind::Prefill;
  o.dynamic = false;
  o.sample_batch = 3;
  o.sample_sequence = 6;
  CapturedProgram p = capture_causal_lm(*m, o);
  EXPECT_EQ(p.graph->find_input("past_key_values.0.key"), nullptr);
  const auto& s = p.graph->find_input("input_ids")->type.shape;
  EXPECT_EQ(s[0].value(), 3);
  EXPECT_EQ(s[1].value(), 6);
  EXPECT_EQ(p.graph->find_output("logits")->type.shape[1].value(), 6);
}

TEST(Capture, ExplicitDimIsCheckedAgainstTheSample) {
  auto m = tiny("llama");
  CaptureOptions o;
  o.dynamic_shapes["input_ids"][1] = Dim{"seq", 16, 64};
  o.sample_sequence = 8;  // outside [16, 64]
  try {
    capture_causal_lm(*m, o);
    FAIL() << "a sample outside its Dim was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Dim('seq', min=16, max=64)"), std::string::npos) << e.what();
  }
  o.sample_sequence = 16;
  CapturedProgram p = capture_causal_lm(*m, o);
  EXPECT_EQ(p.contract.at("input_ids")[1].symbol, "seq");
  EXPECT_EQ(p.contract.at("input_ids")[1].max, 64);
}

TEST(Capture, DataDependentRopeBecomesAGuardOrAnError) {
  // Dynamic NTK rope asks "is the sequence longer than the original context?": a guard.
  auto m = tiny("llama",
                {{"rope_scaling", {{"type", "dynamic"}, {"factor", 2.0}}}, {"max_position_embeddings", 64}});
  CaptureOptions o;
  o.kind = CallKind::Prefill;
  o.sequence = Dim{"sequence_length", 1, 256};
  CapturedProgram p = capture_causal_lm(*m, o);
  ASSERT_FALSE(p.guards.empty());
  EXPECT_NE(p.guards[0].where.find("src/models"), std::string::npos) << p.guards[0].where;
  o.prefer_deferred_runtime_asserts_over_guards = false;
  EXPECT_THROW(capture_causal_lm(*m, o), Error);
}

TEST(Capture, EagerOutputIsBitIdenticalBeforeAndAfterAnExport) {
  auto m = tiny("gemma2");
  std::vector<float> before = eager_logits(*m);
  fs::path dir = fs::temp_directory_path() / ("hfx_capture_state_" + std::to_string(::getpid()));
  for (const std::string& fmt : exporter_formats()) {
    if (fmt == "gguf") continue;  // captures nothing: llama.cpp runs its own graph over the weights
    auto ex = make_exporter(fmt);
    auto cfg = make_config(fmt);
    CaptureOptions o;
    o.sequence.max = 64;
    o.past.max = 63;
    fs::remove_all(dir);
    fs::create_directories(dir);
    ex->export_for_generation(*m, o, {{"*", cfg.get()}}, dir.string());
    std::vector<float> after = eager_logits(*m);
    ASSERT_EQ(before.size(), after.size());
    EXPECT_EQ(std::memcmp(before.data(), after.data(), before.size() * sizeof(float)), 0)
        << "after a " << fmt << " export";
  }
  fs::remove_all(dir);
}
