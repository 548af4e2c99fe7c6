// mamba through the CLI and `hfx verify`, per backend: `hfx export --format onnx|executorch|dynamo` on a
// create-tiny checkpoint, then verify replays the decoder-only loop's recorded eager calls (batch 1,
// batch 2 of unequal lengths, a left-padded batch of 3; prefill then decode steps, the conv/ssm leaves
// carried) against onnx/{prefill,decode,model}.onnx in ONNX Runtime and the .pte's methods prefill and
// decode in the independent .pte executor, every output by name. The .pt2 archives are read back by
// tests/export/dynamo/interpreter_test.cpp (DynamoInterpretMamba); here they must be written.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>

#include "hfx/models/tiny.h"
#include "hfx/verify/verify.h"

namespace hfx {
namespace {
namespace fs = std::filesystem;

int run_cli(const std::string& args) {
  std::string cmd = std::string(HFX_CLI) + " " + args + " >/dev/null 2>&1";
  return std::system(cmd.c_str());
}

struct Dir {
  fs::path path = fs::temp_directory_path() / ("hfx_mamba_export_" + std::to_string(::getpid()));
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

TEST(MambaExport, EveryBackendExportsAndVerifies) {
  Dir d;
  const std::string ckpt = (d.path / "ckpt").string();
  create_tiny("mamba", ckpt);
  for (const char* format : {"onnx", "executorch", "dynamo"}) {
    SCOPED_TRACE(format);
    const fs::path out = d.path / format;
    // ExecuTorch plans memory for the largest shapes: the chunked scan's [B, d_inner, d_state, S/16, 16, 16]
    // buffers at max_seq_len 128 and batch 64 still take ~1 GB each, so the .pte is made for sequences up
    // to 32.
    const std::string extra = std::string(format) == "executorch" ? " --max-seq-len 32" : "";
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
    for (const auto& line : passed_numerics(r)) std::printf("  [mamba %s] %s\n", format, line.c_str());
    EXPECT_TRUE(r.passed) << r.first_failure;
    const size_t want = std::string(format) == "onnx" ? 3 : 2;  // prefill, decode, model / methods prefill, decode
    EXPECT_EQ(passed_numerics(r).size(), want);
  }
}

}  // namespace
}  // namespace hfx
