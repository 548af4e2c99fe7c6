// Mixture-of-experts decoders (mixtral, qwen2_moe, qwen3_moe, olmoe, granitemoe):
//   * eager vs goldens from the real transformers: tests/models/causal_goldens_test.cpp;
//   * routing: top-k and the renormalization each change the output;
//   * bad input: missing / mis-shaped expert weights, num_experts_per_tok > experts, layer types.
// Tolerance 1e-4 absolute at f32 on logits of magnitude ~1. Measured worst |hfx - transformers| (printed):
// mixtral 2.6e-6, qwen2_moe 1.6e-6, qwen3_moe 1.9e-6, olmoe 1.7e-6, granitemoe 3.7e-7 — the size of hfx's
// own cached-vs-recomputed difference on these checkpoints (ModelArch: up to 2.6e-6), so 1e-4 leaves ~40x
// room for summation order while any routing mistake (a wrong expert) moves logits by > 1e-3 (MoeRouting).
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "hfx/core/error.h"
#include "hfx/io/safetensors.h"
#include "hfx/runtime/generator.h"
#include "models/model_test_util.h"
#include "support/shell.h"
#include "support/verdict.h"

namespace hfx::test {
namespace {

using nlohmann::json;

const std::vector<std::string> kMoe = {"mixtral", "qwen2_moe", "qwen3_moe", "olmoe", "granitemoe"};

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

// Routing is live: top-k of E, all E experts (num_experts_per_tok = E) and, where the family reads it,
// norm_topk_prob flipped, each change the logits (the goldens pin down which one transformers computes).
Tensor logits_of(const CausalLM& m) {
  Batch b = left_pad({{5, 6, 7, 8, 9, 10, 11}});
  EagerBuilder eb;
  ForwardArgs a;
  a.input_ids = eb.wrap(ints({1, b.T}, b.ids));
  a.attention_mask = eb.wrap(ints({1, b.T}, b.mask));
  return m.forward(eb, a).logits.tensor().contiguous();
}
double max_diff(const Tensor& x, const Tensor& y) {
  double d = 0;
  for (int64_t i = 0; i < x.numel(); i++)
    d = std::max(d, static_cast<double>(std::fabs(x.data<float>()[i] - y.data<float>()[i])));
  return d;
}

TEST(MoeRouting, TopKAndNormalizationChangeTheOutput) {
  for (const std::string& arch : kMoe) {
    SCOPED_TRACE(arch);
    auto m = tiny_in_memory(arch, 3);
    const auto& raw = m->config().raw;
    const int64_t E = raw.value("num_local_experts", raw.value("num_experts", int64_t{0}));
    Tensor base = logits_of(*m);
    EXPECT_GT(max_diff(base, logits_of(*tiny_in_memory(arch, 3, json{{"num_experts_per_tok", E}}))), 1e-3);
    if (arch != "mixtral" && arch != "granitemoe") {  // these two always renormalize
      EXPECT_GT(max_diff(base, logits_of(*tiny_in_memory(
                                   arch, 3, json{{"norm_topk_prob", !raw.value("norm_topk_prob", false)}}))),
                1e-3);
    }
  }
}

// ---- bad input ----
std::pair<json, std::map<std::string, Tensor>> parts(const std::string& arch) {
  json cfg = tiny_model_config(arch, TinyOptions{});
  ModelConfig mc = parse_model_config(cfg);
  return {cfg, tiny_weights(mc, DType::F32, 0)};
}

TEST(MoeErrors, MissingExpertWeight) {
  auto [cfg, w] = parts("mixtral");
  w.erase("model.layers.1.block_sparse_moe.experts.3.w2.weight");
  std::string msg = error_of([&] { make_model(cfg, io::WeightStore::from_tensors(w)); });
  EXPECT_NE(msg.find("[model] expected tensor 'model.layers.1.block_sparse_moe.experts.3.w2.weight' of shape "
                     "[64, 128], got none"),
            std::string::npos)
      << msg;
}

TEST(MoeErrors, MisShapedExpertAndSharedExpertGate) {
  auto [cfg, w] = parts("qwen2_moe");
  w["model.layers.0.mlp.experts.1.up_proj.weight"] = Tensor::zeros({31, 64});
  std::string msg = error_of([&] { make_model(cfg, io::WeightStore::from_tensors(w)); });
  EXPECT_NE(msg.find("[model] expected tensor 'model.layers.0.mlp.experts.1.up_proj.weight' of shape [32, "
                     "64], got [31, 64]"),
            std::string::npos)
      << msg;
  auto [cfg2, w2] = parts("qwen2_moe");
  w2.erase("model.layers.1.mlp.shared_expert_gate.weight");
  msg = error_of([&] { make_model(cfg2, io::WeightStore::from_tensors(w2)); });
  EXPECT_NE(msg.find("[model] expected tensor 'model.layers.1.mlp.shared_expert_gate.weight' of shape [1, "
                     "64], got none"),
            std::string::npos)
      << msg;
}

TEST(MoeErrors, TopKAboveExperts) {
  for (const auto& [arch, key] :
       std::vector<std::pair<std::string, std::string>>{{"mixtral", "num_local_experts"},
                                                        {"qwen2_moe", "num_experts"},
                                                        {"qwen3_moe", "num_experts"},
                                                        {"olmoe", "num_experts"},
                                                        {"granitemoe", "num_local_experts"}}) {
    json cfg = tiny_model_config(arch, TinyOptions{});
    int64_t E = cfg[key].get<int64_t>();
    cfg["num_experts_per_tok"] = E + 1;
    std::string msg = error_of([&] { parse_model_config(cfg); });
    EXPECT_NE(msg.find("[model] expected 0 < num_experts_per_tok <= " + key + " (" + std::to_string(E) +
                       "), got " + std::to_string(E + 1)),
              std::string::npos)
        << arch << ": " << msg;
  }
}

TEST(LayerTypes, VocabularyAndUnsupportedTypes) {
  json cfg = tiny_model_config("qwen3_moe", TinyOptions{});
  cfg["layer_types"] = {"full_attention", "mamba"};
  std::string msg = error_of([&] { parse_model_config(cfg); });
  EXPECT_NE(msg.find("[model] expected a layer type qwen3_moe runs (full_attention, sliding_attention), got "
                     "'mamba' at layer 1"),
            std::string::npos)
      << msg;
  cfg["layer_types"] = {"full_attention", "ssm_attention"};
  msg = error_of([&] { parse_model_config(cfg); });
  EXPECT_NE(
      msg.find("[model] expected a layer type among [full_attention, sliding_attention, linear_attention, "
               "mamba, conv], got 'ssm_attention' at layer 1"),
      std::string::npos)
      << msg;
  cfg["layer_types"] = {"full_attention", "full_attention"};
  EXPECT_NO_THROW(parse_model_config(cfg));
  json ol = tiny_model_config("olmoe", TinyOptions{});
  ol["layer_types"] = {"sliding_attention", "full_attention"};
  msg = error_of([&] { parse_model_config(ol); });
  EXPECT_NE(
      msg.find(
          "[model] expected a layer type olmoe runs (full_attention), got 'sliding_attention' at layer 0"),
      std::string::npos)
      << msg;
}

using hfx::testsupport::Proc;
using hfx::testsupport::sh;

// `hfx export` on a bad MoE checkpoint: a non-zero exit, the [model] message, and no output folder.
TEST(MoeErrors, CliExportRefusesBadCheckpointsAndWritesNothing) {
  namespace fs = std::filesystem;
  TempDir dir("moe_cli");
  const std::string cli = HFX_CLI;
  const fs::path good = dir.path / "good";
  ASSERT_EQ(sh(cli + " create-tiny mixtral -o " + good.string()).rc, 0);
  auto variant = [&](const std::string& name,
                     const std::function<void(json&, std::map<std::string, Tensor>&)>& edit) {
    fs::path d = dir.path / name;
    fs::create_directories(d);
    for (const auto& e : fs::directory_iterator(good)) fs::copy(e.path(), d / e.path().filename());
    json cfg = json::parse(io::read_file((good / "config.json").string()));
    auto w = io::WeightStore::open_dir(good.string());
    std::map<std::string, Tensor> t;
    for (const auto& n : w->names()) t[n] = w->get(n);
    edit(cfg, t);
    std::vector<std::pair<std::string, Tensor>> list(t.begin(), t.end());
    io::write_safetensors((d / "model.safetensors").string(), list);
    io::write_file_atomic((d / "config.json").string(), cfg.dump(2));
    return d;
  };
  struct Bad {
    fs::path ckpt;
    std::string want;
  };
  std::vector<Bad> bad = {
      {variant("topk", [](json& c, auto&) { c["num_experts_per_tok"] = 5; }),
       "[model] expected 0 < num_experts_per_tok <= num_local_experts (4), got 5"},
      {variant("missing",
               [](json&, auto& t) { t.erase("model.layers.0.block_sparse_moe.experts.2.w1.weight"); }),
       "[model] expected tensor 'model.layers.0.block_sparse_moe.experts.2.w1.weight' of shape [128, 64], "
       "got none"},
      {variant("shape",
               [](json&, auto& t) {
                 t["model.layers.1.block_sparse_moe.gate.weight"] = Tensor::zeros({3, 64});
               }),
       "[model] expected tensor 'model.layers.1.block_sparse_moe.gate.weight' of shape [4, 64], got [3, 64]"},
      {variant("layer_type",
               [](json& c, auto&) {
                 c["layer_types"] = {"full_attention", "linear_attention"};
               }),
       "got 'linear_attention' at layer 1"},
  };
  for (const auto& b : bad)
    for (const char* format : {"onnx", "executorch", "dynamo"}) {
      SCOPED_TRACE(b.ckpt.filename().string() + " " + format);
      fs::path out = dir.path / ("out_" + b.ckpt.filename().string() + "_" + format);
      Proc p = sh(cli + " export " + b.ckpt.string() + " --format " + format + " -o " + out.string());
      EXPECT_NE(p.rc, 0) << p.out;
      EXPECT_NE(p.out.find(b.want), std::string::npos) << p.out;
      EXPECT_FALSE(fs::exists(out));
    }
}

// `hfx export` + `hfx verify --reference` for every format: ONNX (recorded calls replayed in ONNX
// Runtime), ExecuTorch (.pte prefill + 16 decode steps in the independent executor), Dynamo (.pt2
// structure; its numerics need PyTorch, tools/pt2_check, and are covered by DynamoInterpret here).
class MoeCli : public ::testing::TestWithParam<std::string> {};

TEST_P(MoeCli, EveryFormatExportsAndVerifies) {
  namespace fs = std::filesystem;
  const std::string arch = GetParam(), cli = HFX_CLI;
  TempDir dir("moe_verify_" + arch);
  const std::string ckpt = (dir.path / "ckpt").string();
  ASSERT_EQ(sh(cli + " create-tiny " + arch + " -o " + ckpt).rc, 0);
  for (const char* format : {"onnx", "executorch", "dynamo"}) {
    SCOPED_TRACE(format);
    const std::string out = (dir.path / format).string();
    Proc e = sh(cli + " export " + ckpt + " --format " + format + " -o " + out);
    ASSERT_EQ(e.rc, 0) << e.out;
    Proc v = sh(cli + " verify " + out + " --reference " + ckpt);
    EXPECT_TRUE(testsupport::verified_or_judge_off(v.rc, v.out)) << v.out;
  }
}

INSTANTIATE_TEST_SUITE_P(Moe, MoeCli, ::testing::ValuesIn(kMoe),
                         [](const auto& i) { return param_name(i.param); });

}  // namespace
}  // namespace hfx::test
