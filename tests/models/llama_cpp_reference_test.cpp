// Logits against an independent implementation: llama.cpp through node-llama-cpp on the same weights,
// written as GGUF F32 by hfx's GGUF backend (hfx/export/gguf.h, as `hfx export --format gguf`). Compares full
// next-token softmax distributions at every position of a token sequence and prints the max abs difference
// per architecture. Needs node-llama-cpp under deps/npm/node_modules (support/oracle.h: a failure in CI, a
// skip otherwise).
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <fstream>

#include "hfx/artifact/export_folder.h"
#include "hfx/export/gguf.h"
#include "hfx/ops/functional.h"
#include "models/model_test_util.h"
#include "support/oracle.h"

namespace hfx::test {
namespace {

std::string run_capture(const std::string& cmd) {
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return out;
  std::array<char, 65536> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  int rc = ::pclose(p);
  if (rc != 0) out = "ERROR rc=" + std::to_string(rc) + " " + out.substr(0, 2000);
  return out;
}

struct Case {
  std::string model_type, gguf_arch;
  nlohmann::json overrides;
  double tol = 1e-5;   // GELU archs: llama.cpp rounds GELU through an f16 lookup table
  size_t tokens = 12;  // mamba: 45, so the chunked scan (16-step chunks) crosses two chunk boundaries
};

class LlamaCppReference : public ::testing::TestWithParam<Case> {};

TEST_P(LlamaCppReference, SoftmaxMatches) {
  HFX_REQUIRE_ORACLE(hfx::test::kNodeLlamaCpp);
  const std::string nm = HFX_NODE_MODULES;
  const Case& c = GetParam();
  TempDir dir("llamacpp_" + c.model_type);
  TinyOptions o;
  o.seed = 11;
  create_tiny(c.model_type, dir.path.string(), o);
  // Apply overrides (e.g. no sliding window: llama.cpp's llama arch has none) to config.json.
  auto cfg = nlohmann::json::parse(io::read_file((dir.path / "config.json").string()));
  cfg.update(c.overrides);
  io::write_file_atomic((dir.path / "config.json").string(), cfg.dump(2));
  if (!c.overrides.empty()) {
    // An override may change weight shapes (mamba2's n_groups): the weights again, as create-tiny draws them.
    const ModelConfig mc = parse_model_config(cfg);
    auto w = tiny_weights(mc, mc.dtype, o.seed);
    io::write_safetensors((dir.path / "model.safetensors").string(), {w.begin(), w.end()});
  }
  auto m = load_causal_lm(dir.path.string());
  ASSERT_EQ(gguf_arch_of(c.model_type), c.gguf_arch);
  const std::string folder = (dir.path / "gguf").string();
  artifact::export_folder(*m, dir.path.string(), folder, GgufConfig{});
  const std::string gguf = folder + "/model.gguf";

  std::vector<int64_t> ids = {1, 45, 300, 12, 77, 8, 250, 101, 3, 64, 99, 180};
  for (size_t i = ids.size(); i < c.tokens; i++)
    ids.push_back(static_cast<int64_t>((i * 131 + 17) % 500) + 3);
  std::string list;
  for (auto t : ids) list += (list.empty() ? "" : ",") + std::to_string(t);
  const int64_t V = m->config().vocab_size;
  std::string script = std::string(HFX_SOURCE_DIR) + "/tests/models/llama_cpp_logits.js";
  std::string out = run_capture("node '" + script + "' '" + nm + "' '" + gguf + "' " + std::to_string(V) +
                                " " + list + " 2>&1");
  ASSERT_EQ(out.rfind("ERROR", 0), std::string::npos) << out;
  auto ref = nlohmann::json::parse(out.substr(out.find('[')));
  ASSERT_EQ(ref.size(), ids.size());

  EagerBuilder b;
  ForwardArgs a;
  a.input_ids = b.wrap(Tensor::from_ints({1, static_cast<int64_t>(ids.size())}, ids));
  Tensor probs = F::softmax(m->forward(b, a).logits, -1).tensor().contiguous();
  double max_diff = 0;
  for (size_t s = 0; s < ids.size(); s++)
    for (int64_t v = 0; v < V; v++)
      max_diff = std::max(max_diff,
                          std::fabs(probs.item({0, static_cast<int64_t>(s), v}) - ref[s][v].get<double>()));
  std::printf(
      "[ %s ] llama.cpp (%s arch) max |p_hfx - p_llama.cpp| = %.3g over %zu positions x %lld tokens\n",
      c.model_type.c_str(), c.gguf_arch.c_str(), max_diff, ids.size(), static_cast<long long>(V));
  EXPECT_LE(max_diff, c.tol);
}

INSTANTIATE_TEST_SUITE_P(
    Archs, LlamaCppReference,
    ::testing::Values(Case{"llama", "llama", nlohmann::json::object()},
                      // llama.cpp's llama arch has no sliding window
                      Case{"mistral", "llama", {{"sliding_window", nullptr}}},
                      Case{"qwen2", "qwen2", nlohmann::json::object()},
                      Case{"qwen3", "qwen3", nlohmann::json::object()},
                      // mixtures of experts: stacked experts, routers, qwen2moe's shared expert
                      Case{"mixtral", "llama", nlohmann::json::object()},
                      Case{"qwen2_moe", "qwen2moe", nlohmann::json::object()},
                      Case{"qwen3_moe", "qwen3moe", nlohmann::json::object()},
                      Case{"granite", "granite", nlohmann::json::object()},
                      Case{"granitemoe", "granitemoe", nlohmann::json::object()},
                      Case{"gemma", "gemma", nlohmann::json::object(), 1e-4},
                      Case{"gemma2", "gemma2", nlohmann::json::object(), 1e-4},
                      // sliding and global layers with their own rope bases, q/k norms
                      Case{"gemma3_text", "gemma3", nlohmann::json::object(), 1e-4},
                      Case{"phi3", "phi3", {{"sliding_window", nullptr}}},
                      Case{"gpt2", "gpt2", nlohmann::json::object(), 1e-4},
                      // the selective scan against llama.cpp's ggml_ssm_scan / ggml_ssm_conv
                      Case{"mamba", "mamba", nlohmann::json::object(), 1e-5, 45},
                      // the chunked SSD scan against llama.cpp's mamba2 (ggml_ssm_scan with
                      // heads); the tiny config's 4 groups: the gated norm is per group on both sides
                      Case{"mamba2", "mamba2", nlohmann::json::object(), 1e-5},
                      // mamba, attention and MoE layers: llama.cpp's granitehybrid
                      Case{"granitemoehybrid", "granitehybrid", nlohmann::json::object(), 1e-5}),
    [](const auto& info) { return info.param.model_type; });

}  // namespace
}  // namespace hfx::test
