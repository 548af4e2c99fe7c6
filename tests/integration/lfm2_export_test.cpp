// lfm2 through the CLI, `hfx verify` and its independent references:
//   * per backend: `hfx export --format onnx|executorch|dynamo` on a create-tiny checkpoint; verify replays
//     the decoder-only loop's recorded eager calls (batch 1, batch 2 of unequal lengths, a left-padded
//     batch of 3; prefill then decode steps, conv and key/value leaves carried) against onnx/{prefill,
//     decode,model}.onnx in ONNX Runtime and the .pte's methods in the independent .pte executor; the
//     .pt2 archives must be written (read back by tests/export/dynamo/interpreter_test.cpp);
//   * llama.cpp (node-llama-cpp, its `lfm2` architecture) on a GGUF of the same weights
//     (written by hfx's GGUF backend): the next-token softmax at every position of a 12-token sequence;
//   * bad input — a mis-shaped conv weight, an unknown layer type — is a clear error naming the tensor or
//     the layer, a non-zero exit, and no output folder.
// Transformers.js's greedy tokens are compared in tests/integration/transformersjs_test.cpp.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>

#include "hfx/artifact/export_folder.h"
#include "hfx/export/gguf.h"
#include "hfx/io/safetensors.h"
#include "hfx/models/tiny.h"
#include "hfx/ops/functional.h"
#include "hfx/verify/verify.h"
#include "support/verdict.h"

namespace hfx {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;

// Runs a command; returns its exit status and stdout + stderr.
std::pair<int, std::string> run(const std::string& cmd) {
  std::string out;
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return {-1, out};
  std::array<char, 65536> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  int rc = ::pclose(p);
  return {rc, out};
}

struct Dir {
  fs::path path = fs::temp_directory_path() / ("hfx_lfm2_export_" + std::to_string(::getpid()));
  Dir() { fs::remove_all(path); }
  ~Dir() { fs::remove_all(path); }
};

std::vector<std::string> passed_numerics(const verify::VerifyReport& r) {
  std::vector<std::string> out;
  for (const auto& c : r.checks)
    if (c.check == "numerics" && c.status == "passed") out.push_back(c.component + ": " + c.message);
  return out;
}

TEST(Lfm2Export, EveryBackendExportsAndVerifies) {
  Dir d;
  const std::string ckpt = (d.path / "ckpt").string();
  create_tiny("lfm2", ckpt);
  for (const char* format : {"onnx", "executorch", "dynamo"}) {
    SCOPED_TRACE(format);
    const fs::path out = d.path / format;
    auto [rc, log] =
        run(std::string(HFX_CLI) + " export " + ckpt + " --format " + format + " -o " + out.string());
    ASSERT_EQ(rc, 0) << log;
    if (std::string(format) == "dynamo") {
      EXPECT_TRUE(fs::exists(out / "prefill.pt2"));
      EXPECT_TRUE(fs::exists(out / "decode.pt2"));
      continue;
    }
    verify::VerifyOptions o;
    o.out_dir = out.string();
    o.reference = ckpt;
    o.quiet = true;
    verify::VerifyReport r = verify::run_verify(o);
    for (const auto& line : passed_numerics(r)) std::printf("  [lfm2 %s] %s\n", format, line.c_str());
    EXPECT_TRUE(testsupport::verified_or_judge_off(r)) << r.first_failure << r.not_judged;
    const size_t want =
        std::string(format) == "onnx" ? 3 : 2;  // prefill, decode, model / methods prefill, decode
    EXPECT_EQ(passed_numerics(r).size(), want);
  }
}

TEST(Lfm2Export, LlamaCppAgreesWithEager) {
  const std::string nm = HFX_NODE_MODULES;
  // A missing oracle is a failure: scripts/setup.sh installs node-llama-cpp.
  ASSERT_TRUE(fs::exists(fs::path(nm) / "node-llama-cpp" / "dist" / "index.js"))
      << "node-llama-cpp missing under " << nm;
  Dir d;
  TinyOptions opt;
  opt.seed = 11;
  create_tiny("lfm2", d.path.string(), opt);
  auto m = load_causal_lm(d.path.string());
  // the GGUF backend, as `hfx export --format gguf` runs it
  artifact::export_folder(*m, d.path.string(), (d.path / "gguf").string(), GgufConfig{});
  const std::string gguf = (d.path / "gguf" / "model.gguf").string();
  const std::vector<int64_t> ids = {1, 45, 300, 12, 77, 8, 250, 101, 3, 64, 99, 180};
  std::string list;
  for (auto t : ids) list += (list.empty() ? "" : ",") + std::to_string(t);
  const int64_t V = m->config().vocab_size;
  auto [rc, out] = run("node '" + std::string(HFX_SOURCE_DIR) + "/tests/models/llama_cpp_logits.js' '" + nm +
                       "' '" + gguf + "' " + std::to_string(V) + " " + list);
  ASSERT_EQ(rc, 0) << out;
  const json ref = json::parse(out.substr(out.find('[')));
  ASSERT_EQ(ref.size(), ids.size());
  EagerBuilder b;
  ForwardArgs a;
  a.input_ids = b.wrap(Tensor::from_ints({1, static_cast<int64_t>(ids.size())}, ids));
  Tensor probs = F::softmax(m->forward(b, a).logits, -1).tensor().contiguous();
  double worst = 0;
  for (size_t s = 0; s < ids.size(); s++)
    for (int64_t v = 0; v < V; v++)
      worst =
          std::max(worst, std::fabs(probs.item({0, static_cast<int64_t>(s), v}) - ref[s][v].get<double>()));
  std::printf(
      "[lfm2] llama.cpp (lfm2 arch) max |p_hfx - p_llama.cpp| = %.3g over %zu positions x %lld tokens\n",
      worst, ids.size(), static_cast<long long>(V));
  EXPECT_LE(worst, 1e-5);
}

// `hfx export` on a broken checkpoint: the error, a non-zero exit, and no output folder.
void expect_refused(const fs::path& ckpt, const fs::path& out, const std::string& want) {
  auto [rc, log] =
      run(std::string(HFX_CLI) + " export " + ckpt.string() + " --format onnx -o " + out.string());
  EXPECT_NE(rc, 0) << log;
  EXPECT_NE(log.find(want), std::string::npos) << log;
  EXPECT_FALSE(fs::exists(out)) << "export left " << out;
}

TEST(Lfm2Export, BadInputIsRefusedAndWritesNothing) {
  Dir d;
  const fs::path ckpt = d.path / "ckpt";
  create_tiny("lfm2", ckpt.string());
  // A mis-shaped conv weight: [hidden, 1, 4] where conv_L_cache is 3.
  const json cfg = json::parse(io::read_file((ckpt / "config.json").string()));
  ModelConfig mc = parse_model_config(cfg);
  std::vector<std::pair<std::string, Tensor>> w;
  for (auto& [n, t] : tiny_weights(mc, DType::F32, 0))
    w.emplace_back(n, n == "model.layers.2.conv.conv.weight" ? Tensor::zeros({64, 1, 4}, DType::F32) : t);
  io::write_safetensors((ckpt / "model.safetensors").string(), w);
  expect_refused(
      ckpt, d.path / "out_conv",
      "[model] expected tensor 'model.layers.2.conv.conv.weight' of shape [64, 1, 3], got [64, 1, 4]");
  // An unknown layer type names the layer.
  create_tiny("lfm2", ckpt.string());
  json bad = cfg;
  bad["layer_types"] = {"conv", "full_attention", "shortconv", "full_attention"};
  io::write_file_atomic((ckpt / "config.json").string(), bad.dump(2));
  expect_refused(ckpt, d.path / "out_type", "got 'shortconv' at layer 2");
}

}  // namespace
}  // namespace hfx
