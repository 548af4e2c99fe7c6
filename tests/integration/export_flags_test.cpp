// Every `hfx export` flag does something or is refused (issue 45: a label that changes nothing is a defect).
// The flags are read from `hfx export --help`, so a new flag without a case here fails the test. Each case
// runs in each format on the tiny llama: with the flag, and without it (same other arguments, `base`). The
// only outcomes allowed:
//   * the export succeeds and its artifact files (everything but manifest.json) differ from the baseline's;
//   * the export is refused, naming what was expected, and writes nothing.
// Where tools/cmd_export.cpp's table says a flag has no meaning for a format, refusal is the only outcome.
// Negative control: the baseline exported twice gives identical artifacts, so "differ" is not noise.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "hfx/io/safetensors.h"
#include "models/model_test_util.h"
#include "support/artifact_files.h"
#include "support/shell.h"

namespace fs = std::filesystem;

namespace hfx {
namespace {

using testsupport::artifact_hashes;
using testsupport::sh;

struct FlagCase {
  std::string flag;                            ///< as --help lists it
  std::string args;                            ///< the flag with its value
  std::map<std::string, std::string> base;     ///< per format: arguments of both runs ("" when none)
  std::set<std::string> formats;               ///< where it has a meaning; elsewhere it must be refused
  std::string arch = "llama";                  ///< the tiny checkpoint both runs export
  std::map<std::string, std::string> value{};  ///< per format: the flag's arguments instead of `args`
};

// The formats that capture programs (a shape contract); GGUF holds weights for llama.cpp's own graphs.
const std::set<std::string> kGraphs = {"onnx", "executorch", "dynamo"};
const std::set<std::string> kAll = {"onnx", "executorch", "dynamo", "gguf"};
// Quantized baselines: ONNX's standard target derives opset 21 for blocked DequantizeLinear, ExecuTorch
// quantizes for XNNPACK, whose codes are symmetric (without --symmetric it refuses: that is what the flag
// changes there).
const std::map<std::string, std::string> kQuant = {
    {"onnx", "--quantize int4"},
    {"executorch", "--backend xnnpack --quantize int4 --symmetric"},
    {"dynamo", "--quantize int4"}};
const std::map<std::string, std::string> kQuantAsym = {{"onnx", "--quantize int4"},
                                                       {"executorch", "--backend xnnpack --quantize int4"},
                                                       {"dynamo", "--quantize int4"}};

std::vector<FlagCase> cases() {
  return {
      {"--opset", "--opset 23", {}, {"onnx"}},
      {"--dtype", "--dtype f16", {}, kAll},
      // A decoder's programs always share onnx/model.onnx_data; the flag moves a single program's weights
      // out.
      {"--external-data", "--external-data", {}, {"onnx"}, "bert"},
      {"--target", "--target ort", {}, {"onnx"}},
      {"--no-optimize", "--no-optimize", {}, {"onnx"}},
      {"--quantize",
       "--quantize int4",
       {{"executorch", "--backend xnnpack"}},
       kAll,
       "llama",
       {{"gguf", "--quantize q8_0"}}},
      {"--group-size", "--group-size 64", kQuant, kGraphs},
      {"--symmetric", "--symmetric", kQuantAsym, kGraphs},
      {"--quantize-embedding", "--quantize-embedding", kQuant, {"onnx"}},
      {"--activations", "--activations int8", {{"onnx", "--quantize int4 --target ort"}}, {"onnx"}},
      {"--backend", "--backend xnnpack", {}, {"executorch"}},
      {"--max-seq-len", "--max-seq-len 64", {}, {"executorch"}},
      {"--static", "--static", {}, kGraphs},
      {"--max-batch", "--max-batch 2", {}, kGraphs},
      {"--max-sequence", "--max-sequence 64", {}, kGraphs},
  };
}
// Not flags of the artifact: the positional model, the output folder, the format itself, help, and
// --config (its own case below).
const std::set<std::string> kBasics = {"-h", "--help", "-o", "--out", "--format", "--config"};

class ExportFlags : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new test::TempDir("export_flags");
    for (const char* arch : {"llama", "bert"})
      ASSERT_EQ(sh(std::string(HFX_CLI) + " create-tiny " + arch + " -o " + ck(arch)).rc, 0);
  }
  static void TearDownTestSuite() { delete dir_; }
  static std::string ck(const std::string& arch = "llama") { return (dir_->path / ("ck-" + arch)).string(); }
  static testsupport::Proc run(const std::string& format, const std::string& args, const fs::path& out,
                               const std::string& arch = "llama") {
    return sh(std::string(HFX_CLI) + " --quiet export " + ck(arch) + " --format " + format + " " + args +
              " -o " + out.string());
  }
  // The baseline of (arch, format, base), exported once; a refused baseline is one entry "<refused>" (then a
  // flag that makes the export succeed has changed it).
  const std::map<std::string, std::string>& baseline(const std::string& format, const std::string& base,
                                                     const std::string& arch = "llama") {
    const std::string key = arch + "|" + format + "|" + base;
    auto it = baselines_.find(key);
    if (it != baselines_.end()) return it->second;
    const fs::path out = dir_->path / ("base" + std::to_string(baselines_.size()));
    auto p = run(format, base, out, arch);
    if (p.rc != 0) {
      EXPECT_NE(p.out.find("] expected"), std::string::npos) << format << " " << base << ": " << p.out;
      return baselines_[key] = {{"<refused>", p.out}};
    }
    return baselines_[key] = artifact_hashes(out);
  }
  static test::TempDir* dir_;
  std::map<std::string, std::map<std::string, std::string>> baselines_;
};
test::TempDir* ExportFlags::dir_ = nullptr;

TEST_F(ExportFlags, EveryFlagChangesTheArtifactOrIsRefused) {
  // Every option of --help has a case.
  const auto help = sh(std::string(HFX_CLI) + " export --help");
  ASSERT_EQ(help.rc, 0);
  std::set<std::string> listed;
  const std::regex opt(R"(^\s+(-\w,)?(--[\w-]+))");
  std::istringstream in(help.out);
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_search(line, m, opt)) listed.insert(m[2]);
  }
  std::set<std::string> covered(kBasics);
  for (const FlagCase& c : cases()) covered.insert(c.flag);
  for (const std::string& f : listed)
    EXPECT_TRUE(covered.count(f)) << f
                                  << " is in `hfx export --help` but has no case here: say what it changes";
  ASSERT_GE(listed.size(), cases().size());

  int changed = 0, refused = 0, n = 0;
  for (const FlagCase& c : cases()) {
    for (const std::string& format : kAll) {
      const auto b = c.base.find(format);
      const std::string base = b == c.base.end() ? "" : b->second;
      const fs::path out = dir_->path / ("case" + std::to_string(n++));
      const std::string args = c.value.count(format) ? c.value.at(format) : c.args;
      auto p = run(format, base + " " + args, out, c.arch);
      const std::string what = format + " " + base + " " + args;
      if (!c.formats.count(format)) {
        EXPECT_NE(p.rc, 0) << what << ": accepted where the flag changes nothing";
        EXPECT_NE(p.out.find("[export] expected " + c.flag), std::string::npos) << what << ": " << p.out;
      }
      if (p.rc != 0) {
        EXPECT_NE(p.out.find("] expected"), std::string::npos)
            << what << ": refused without saying why: " << p.out;
        EXPECT_FALSE(fs::exists(out)) << what << ": refused but wrote " << out;
        if (c.formats.count(format))  // refused by the exporter itself: show why
          std::printf("  [export flags] %s refused: %s", what.c_str(),
                      p.out.substr(p.out.find("hfx: ")).c_str());
        refused++;
        continue;
      }
      EXPECT_NE(artifact_hashes(out), baseline(format, base, c.arch))
          << what << ": the artifact equals the baseline's";
      changed++;
    }
  }
  std::printf("  [export flags] %zu flags x %zu formats: %d changed the artifact, %d refused\n",
              cases().size(), kAll.size(), changed, refused);
}

TEST_F(ExportFlags, BaselineIsReproducibleAndConfigStandsAlone) {
  // Negative control for "differ": the same export twice is byte-identical.
  for (const std::string& format : kAll) {
    auto p = run(format, "", dir_->path / ("again-" + format));
    ASSERT_EQ(p.rc, 0) << p.out;
    EXPECT_EQ(artifact_hashes(dir_->path / ("again-" + format)), baseline(format, "")) << format;
  }
  // --config holds the whole configuration: a flag beside it would be ignored, so it is refused.
  const fs::path cfg = dir_->path / "cfg.json";
  std::ofstream(cfg) << R"({"format": "onnx", "opset": 18})";
  auto p = run("onnx", "--config " + cfg.string() + " --opset 23", dir_->path / "with-config");
  EXPECT_NE(p.rc, 0);
  EXPECT_NE(p.out.find("[export] expected no --opset beside --config"), std::string::npos) << p.out;
  EXPECT_FALSE(fs::exists(dir_->path / "with-config"));
}

}  // namespace
}  // namespace hfx
