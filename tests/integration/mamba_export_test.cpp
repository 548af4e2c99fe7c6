// mamba, mamba2 and granitemoehybrid through the CLI and `hfx verify`, per backend: `hfx export --format
// onnx|executorch|dynamo` on a create-tiny checkpoint, then verify replays the decoder-only loop's recorded
// eager calls (batch 1, batch 2 of unequal lengths, a left-padded batch of 3; prefill then decode steps, the
// conv/ssm leaves carried) against onnx/{prefill,decode,model}.onnx in ONNX Runtime and the .pte's methods
// prefill and decode in the independent .pte executor, every output by name. The .pt2 archives are read back
// by tests/export/dynamo/interpreter_test.cpp (DynamoInterpretMamba); here they must be written. Bad input
// (mis-shaped mixer weights, an unknown layer type) fails every export with the error naming it, exit 1,
// and nothing written.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include <sys/wait.h>

#include "export/executorch/executorch_exporter.h"
#include "hfx/core/tensor.h"
#include "hfx/export/registry.h"
#include "hfx/io/safetensors.h"

#include "hfx/models/tiny.h"
#include "hfx/verify/verify.h"
#include "models/model_test_util.h"
#include "support/verdict.h"

namespace hfx {
namespace {
namespace fs = std::filesystem;

int run_cli(const std::string& args) {
  std::string cmd = std::string(HFX_CLI) + " " + args + " >/dev/null 2>&1";
  return std::system(cmd.c_str());
}

struct Dir {
  fs::path path = fs::temp_directory_path() / ("hfx_ssm_export_" + std::to_string(::getpid()));
  Dir() { fs::remove_all(path); }
  ~Dir() { fs::remove_all(path); }
};

// Passed numerics checks of `report` per component ("prefill", "decode", "model", "model.pte" ...).
std::vector<std::string> passed_numerics(const verify::VerifyReport& r) {
  std::vector<std::string> out;
  for (const auto& c : r.checks)
    if (c.check == "numerics" && c.status == "passed") out.push_back(c.component + ": " + c.message);
  return out;
}

class MambaExport : public ::testing::TestWithParam<std::string> {};

TEST_P(MambaExport, EveryBackendExportsAndVerifies) {
  Dir d;
  const std::string arch = GetParam(), ckpt = (d.path / "ckpt").string();
  create_tiny(arch, ckpt);
  for (const char* format : {"onnx", "executorch", "dynamo"}) {
    SCOPED_TRACE(format);
    const fs::path out = d.path / format;
    // ExecuTorch plans memory for the largest shapes: mamba's chunked scan's [B, d_inner, d_state, S/16, 16,
    // 16] buffers at max_seq_len 128 and batch 64 still take ~1 GB each, so its .pte is made for sequences up
    // to 32; mamba2's SSD scan (per head, not per channel × state) takes the default (128).
    const std::string extra =
        std::string(format) == "executorch" && arch == "mamba" ? " --max-seq-len 32" : "";
    ASSERT_EQ(run_cli("export " + ckpt + " --format " + format + extra + " -o " + out.string()), 0);
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
    for (const auto& line : passed_numerics(r))
      std::printf("  [%s %s] %s\n", arch.c_str(), format, line.c_str());
    EXPECT_TRUE(testsupport::verified_or_judge_off(r)) << r.first_failure << r.not_judged;
    const size_t want =
        std::string(format) == "onnx" ? 3 : 2;  // prefill, decode, model / methods prefill, decode
    EXPECT_EQ(passed_numerics(r).size(), want);
  }
}

INSTANTIATE_TEST_SUITE_P(Archs, MambaExport, ::testing::Values("mamba", "mamba2", "granitemoehybrid"),
                         [](const auto& info) { return info.param; });

// A hybrid whose layers are all mamba (granitemoehybrid's default layer types; jamba with fewer layers than
// its attn_layer_offset) has no KV leaf to carry the past: its attention mask is a dim of its own
// (total_sequence_length, as mamba's), so the decode calls' longer masks record and verify.
TEST(HybridExport, AllMambaLayersExportAndVerify) {
  for (const char* arch : {"granitemoehybrid", "jamba"}) {
    SCOPED_TRACE(arch);
    Dir d;
    const std::string ckpt = (d.path / "ckpt").string(), out = (d.path / "onnx").string();
    ASSERT_EQ(run_cli(std::string("create-tiny ") + arch + " --layers 2 -o " + ckpt), 0);
    ASSERT_EQ(run_cli("export " + ckpt + " --format onnx -o " + out), 0);
    verify::VerifyOptions o;
    o.out_dir = out;
    o.reference = ckpt;
    o.quiet = true;
    verify::VerifyReport r = verify::run_verify(o);
    EXPECT_TRUE(testsupport::verified_or_judge_off(r)) << r.first_failure << r.not_judged;
    EXPECT_EQ(passed_numerics(r).size(), 3u);  // prefill, decode, model
  }
}

// --backend xnnpack: each method of the state-space and hybrid programs runs at least 90% of its FLOPs (at
// the bounds' sizes) inside XNNPACK delegates. mamba's chunked scan reaches it only because a symbolic
// sequence is scanned in chunks of a constant length (models/mamba.cpp): with min(16, S) its sums over the
// chunk stayed on portable kernels (71% of the prefill's FLOPs delegated).
TEST(SsmXnnpack, EachMethodDelegatesNinetyPercentOfItsFlops) {
  for (const char* arch : {"mamba", "mamba2", "granitemoehybrid", "lfm2"}) {
    SCOPED_TRACE(arch);
    auto model = test::tiny_in_memory(arch);
    ExecutorchConfig cfg;
    cfg.backend = "xnnpack";
    cfg.max_seq_len = 32;
    CaptureOptions opts;
    opts.sample_sequence = 5;
    et::ExecutorchProgram p = et::build_component_program(*model, cfg, opts);
    std::set<std::string> methods;
    for (const et::PteMethodStats& m : p.pte.methods) {
      if (m.flops == 0) continue;  // the metadata methods
      methods.insert(m.name);
      EXPECT_GT(m.delegate_calls, 0) << m.name;
      EXPECT_GE(m.delegated_flops, 0.9 * m.flops) << m.name << ": " << m.delegated_flops << " of " << m.flops;
    }
    EXPECT_EQ(methods, (std::set<std::string>{"prefill", "decode"}));
  }
}

std::pair<int, std::string> run_capture(const std::string& args) {
  std::string cmd = std::string(HFX_CLI) + " " + args + " 2>&1", out;
  FILE* p = popen(cmd.c_str(), "r");
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  int rc = pclose(p);
  return {WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, out};
}

// Per architecture: a mis-shaped A_log, a mis-shaped conv1d weight (its x|B|C channels), an unknown layer
// type.
struct BadInput {
  std::string arch, a_log, a_log_want, conv, conv_want;
  std::vector<std::string> layer_types;
  std::string layer_want;
};

class SsmBadInput : public ::testing::TestWithParam<BadInput> {};

TEST_P(SsmBadInput, FailsWithNothingWritten) {
  const BadInput& c = GetParam();
  Dir d;
  const fs::path good = d.path / "good";
  create_tiny(c.arch, good.string());
  auto variant = [&](const std::string& name,
                     const std::function<void(nlohmann::json&, std::map<std::string, Tensor>&)>& f) {
    fs::path v = d.path / name;
    fs::create_directories(v);
    for (const auto& e : fs::directory_iterator(good)) fs::copy(e.path(), v / e.path().filename());
    auto cfg = nlohmann::json::parse(io::read_file((good / "config.json").string()));
    auto store = io::WeightStore::open_dir(good.string());
    std::map<std::string, Tensor> t;
    for (const auto& n : store->names()) t[n] = store->get(n);
    f(cfg, t);
    std::vector<std::pair<std::string, Tensor>> list(t.begin(), t.end());
    io::write_safetensors((v / "model.safetensors").string(), list);
    io::write_file_atomic((v / "config.json").string(), cfg.dump(2));
    return v;
  };
  const std::vector<std::pair<fs::path, std::string>> bad = {
      {variant("a_log", [&](auto&, auto& t) { t[c.a_log] = Tensor::zeros({3}); }), c.a_log_want},
      {variant("conv",
               [&](auto&, auto& t) {
                 t[c.conv] = Tensor::zeros({128, 1, 4});
               }),
       c.conv_want},
      {variant("layer_type", [&](auto& cfg, auto&) { cfg["layer_types"] = c.layer_types; }), c.layer_want},
  };
  for (const auto& [ckpt, want] : bad)
    for (const char* format : {"onnx", "executorch", "dynamo"}) {
      SCOPED_TRACE(ckpt.filename().string() + " " + format);
      const fs::path out = d.path / ("out_" + ckpt.filename().string() + "_" + format);
      auto [rc, text] =
          run_capture("export " + ckpt.string() + " --format " + format + " -o " + out.string());
      EXPECT_EQ(rc, 1) << text;
      EXPECT_NE(text.find(want), std::string::npos) << text;
      EXPECT_FALSE(fs::exists(out));
    }
}

INSTANTIATE_TEST_SUITE_P(
    Archs, SsmBadInput,
    ::testing::Values(
        BadInput{"mamba2",
                 "backbone.layers.1.mixer.A_log",
                 "[model] expected tensor 'backbone.layers.1.mixer.A_log' of shape [4], got [3]",
                 "backbone.layers.0.mixer.conv1d.weight",
                 "[model] expected tensor 'backbone.layers.0.mixer.conv1d.weight' of shape [256, 1, 4], got "
                 "[128, 1, 4]",
                 {"mamba", "mamba3"},
                 "got 'mamba3' at layer 1"},
        BadInput{"granitemoehybrid",
                 "model.layers.2.mamba.A_log",
                 "[model] expected tensor 'model.layers.2.mamba.A_log' of shape [4], got [3]",
                 "model.layers.0.mamba.conv1d.weight",
                 "[model] expected tensor 'model.layers.0.mamba.conv1d.weight' of shape [160, 1, 4], got "
                 "[128, 1, 4]",
                 {"mamba", "attention", "mamba", "mamba3"},
                 "got 'mamba3' at layer 3"}),
    [](const auto& info) { return info.param.arch; });

}  // namespace
}  // namespace hfx
