// What `hfx export` and `hfx verify` show on their progress bars comes from the library's callbacks
// (Exporter::set_progress, VerifyOptions::on_step); the bars themselves draw only on a terminal
// (tests/integration/hub_commands_test.cpp runs the CLI under script(1)). Here, on a tiny llama: every
// backend reports each component it writes, in order, with the stages it goes through, and bytes written
// that grow to the size of the artifacts on disk; verify reports each case of each shape matrix.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <set>

#include "hfx/export/exporter.h"
#include "hfx/models/model.h"
#include "hfx/verify/verify.h"

namespace fs = std::filesystem;

namespace hfx {
namespace {

struct ExportProgress : ::testing::Test {
  static inline fs::path dir;
  static void SetUpTestSuite() {
    dir = fs::temp_directory_path() / ("hfx_export_progress_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    const std::string cmd = std::string(HFX_CLI) + " create-tiny llama --dtype float32 -o " +
                            (dir / "ckpt").string() + " > /dev/null";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  }
  static void TearDownTestSuite() { fs::remove_all(dir); }

  // Exports the tiny llama with `format` into OUT/`format`, returning every step reported.
  static std::vector<ExportStep> steps_of(const std::string& format, ExportResult& r) {
    auto model = load_model((dir / "ckpt").string());
    std::unique_ptr<ExportConfig> cfg = make_config(format);
    auto exporter = make_exporter(format);
    std::vector<ExportStep> steps;
    exporter->set_progress([&](const ExportStep& s) { steps.push_back(s); });
    r = exporter->export_for_generation(*model, contract_options(*model, *cfg), {{"*", cfg.get()}},
                                        (dir / format).string());
    return steps;
  }
};

uint64_t bytes_on_disk(const fs::path& out) {
  uint64_t n = 0;
  for (const auto& e : fs::recursive_directory_iterator(out))
    if (e.is_regular_file()) n += e.file_size();
  return n;
}

TEST_F(ExportProgress, EveryBackendReportsEachComponentStageAndTheBytesWritten) {
  for (const std::string format : {"onnx", "dynamo", "executorch"}) {
    ExportResult r;
    const std::vector<ExportStep> steps = steps_of(format, r);
    ASSERT_FALSE(steps.empty()) << format;
    // The components reported are the programs written, in order, each from stage 0 to its last stage.
    std::vector<std::string> components;
    for (const auto& s : steps)
      if (components.empty() || components.back() != s.component) components.push_back(s.component);
    std::vector<std::string> written;
    for (const auto& p : r.programs) written.push_back(p.component);
    if (format != "executorch") {  // .pte: one program holds every method
      EXPECT_EQ(components, written) << format;
    }
    uint64_t position = 0, bytes = 0;
    for (size_t i = 0; i < steps.size(); i++) {
      const ExportStep& s = steps[i];
      EXPECT_EQ(s.components, components.size()) << format;
      EXPECT_EQ(s.component, components[s.component_index]) << format;
      EXPECT_LE(s.stage_index, s.stages) << format;
      const uint64_t at = s.component_index * s.stages + s.stage_index;
      EXPECT_GE(at, position) << format << " step " << i << " went back";
      EXPECT_GE(s.bytes_written, bytes) << format << " step " << i << " wrote fewer bytes than before";
      position = at;
      bytes = s.bytes_written;
    }
    EXPECT_EQ(position, components.size() * steps.back().stages)
        << format << ": the last step ends the export";
    EXPECT_EQ(bytes, bytes_on_disk(dir / format)) << format << ": bytes written must add up to the files";
    if (format == "onnx") {
      std::set<std::string> stages;
      for (const auto& s : steps) stages.insert(s.stage);
      EXPECT_EQ(stages, (std::set<std::string>{"capture", "fixes", "lower", "write"}));
    }
  }
}

TEST_F(ExportProgress, VerifyReportsEachShapeCase) {
  ExportResult r;
  steps_of("onnx", r);
  verify::VerifyOptions o;
  o.out_dir = (dir / "onnx").string();
  o.reference = (dir / "ckpt").string();
  o.tokens = 4;
  o.warm_runs = 1;
  o.write_manifest = false;
  o.quiet = true;
  std::map<std::string, std::vector<std::string>> steps;  // component → shape steps
  o.on_step = [&](size_t, const std::string& what) { steps[what.substr(0, what.find(' '))].push_back(what); };
  verify::VerifyReport rep = verify::run_verify(o);
  ASSERT_TRUE(rep.passed) << rep.first_failure;
  size_t shape_checks = 0;
  for (const auto& c : rep.checks) {
    if (c.check != "shapes" || !c.data.contains("cases")) continue;
    shape_checks++;
    size_t matrix = 0;  // the cases run against eager; the "claimed max" probes follow them unreported
    for (const auto& k : c.data["cases"]) matrix += k.value("label", "").rfind("claimed", 0) != 0;
    ASSERT_EQ(steps[c.component].size(), matrix) << c.component;
    for (size_t i = 0; i < matrix; i++)
      EXPECT_EQ(
          steps[c.component][i].rfind(
              c.component + " shapes " + std::to_string(i + 1) + "/" + std::to_string(matrix) + ": ", 0),
          0u)
          << steps[c.component][i];
  }
  EXPECT_EQ(shape_checks, r.programs.size());
}

}  // namespace
}  // namespace hfx
