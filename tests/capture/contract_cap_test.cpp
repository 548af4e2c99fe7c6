// One contract for every format: the same gpt2 (a learned position table of n_positions = 48 rows)
// exported to ONNX, .pt2 and .pte claims no position past the table — sequence <= 48, past <= 47, and
// past + sequence (attention_mask axis 1 of the merged program, narrowed by the capture's guard) <= 48 —
// and keeps the guard for the runtime; the ExecuTorch static cache is capped at 48 too.
#include <filesystem>

#include <gtest/gtest.h>
#include <unistd.h>

#include "hfx/export/exporter.h"
#include "models/model_test_util.h"

namespace hfx {
namespace {

namespace fs = std::filesystem;

int64_t axis_max(const ShapeContract& c, const std::string& input, size_t axis) {
  auto it = c.find(input);
  return it == c.end() || it->second.size() <= axis ? -1 : it->second[axis].max;
}

TEST(ContractCap, EveryFormatStaysInsideTheLearnedPositionTable) {
  auto model = test::tiny_in_memory("gpt2", 0, {{"n_positions", 48}});
  const fs::path dir = fs::path(testing::TempDir()) / ("hfx_contract_cap_" + std::to_string(::getpid()));
  for (const char* format : {"onnx", "dynamo", "executorch"}) {
    std::unique_ptr<ExportConfig> cfg = make_config(format);
    const CaptureOptions opts = contract_options(*model, *cfg);
    ExportResult r = make_exporter(format)->export_for_generation(*model, opts, {{"*", cfg.get()}},
                                                                  (dir / format).string());
    ASSERT_FALSE(r.programs.empty()) << format;
    bool guarded = false;
    for (const CapturedProgram& p : r.programs) {
      const std::string what = std::string(format) + " " + p.component;
      const int64_t seq = axis_max(p.contract, p.contract.count("tokens") ? "tokens" : "input_ids", 1);
      EXPECT_GE(seq, 1) << what;
      EXPECT_LE(seq, 48) << what;
      EXPECT_LE(axis_max(p.contract, "past_key_values.0.key", 2), 47) << what;
      EXPECT_LE(axis_max(p.contract, "attention_mask", 1), 48) << what;
      for (const Guard& g : p.guards) guarded |= g.what.find("<= 48") != std::string::npos;
    }
    // The merged ONNX program asks the table's question at run time; .pt2 has no merged program and its
    // ranges alone answer it (prefill: past 0; decode: one token over at most 47).
    if (std::string(format) == "onnx") {
      EXPECT_TRUE(guarded) << "the merged program keeps gpt2's guard";
    }
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace hfx
