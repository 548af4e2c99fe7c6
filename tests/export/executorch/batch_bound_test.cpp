// ExecuTorch's batch bound. A .pte's memory plan reserves its largest call, so `--format executorch`
// defaults to batch 1 (a device runs one stream; a tiny whisper encoder's arena was 5 GB at the former
// default of 64) and `--max-batch N` raises it: the programs then take N rows, verify replays them, and
// the planned arena grows with N.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "hfx/io/safetensors.h"
#include "support/shell.h"

namespace fs = std::filesystem;

namespace {

using hfx::testsupport::Proc;
using hfx::testsupport::sh;

// The planned bytes of every replayed method in verify.json's latency checks.
int64_t planned_bytes(const fs::path& out) {
  auto j = nlohmann::json::parse(hfx::io::read_file((out / "verify.json").string()));
  int64_t total = 0;
  for (const auto& c : j["checks"])
    if (c["check"] == "latency" && c["data"].contains("planned_bytes"))
      total += c["data"]["planned_bytes"].get<int64_t>();
  return total;
}

int64_t recorded_max_batch(const fs::path& out) {
  auto j = nlohmann::json::parse(hfx::io::read_file((out / "export_config.json").string()));
  return j["max_batch"].get<int64_t>();
}

TEST(ExecutorchBatchBound, DefaultsToOneAndMaxBatchRaisesIt) {
  const fs::path root = fs::path(testing::TempDir()) / ("hfx_et_batch_" + std::to_string(::getpid()));
  fs::remove_all(root);
  const std::string cli = HFX_CLI, ck = (root / "ck").string();
  ASSERT_EQ(sh(cli + " create-tiny bert -o " + ck).rc, 0);
  for (const auto& [dir, flag] : {std::pair{"one", ""}, std::pair{"four", " --max-batch 4"}}) {
    Proc e = sh(cli + " export " + ck + " --format executorch" + flag + " -o " + (root / dir).string());
    ASSERT_EQ(e.rc, 0) << e.out;
    Proc v = sh(cli + " verify " + (root / dir).string() + " --reference " + ck);
    EXPECT_EQ(v.rc, 0) << v.out;
  }
  EXPECT_EQ(recorded_max_batch(root / "one"), 1);
  EXPECT_EQ(recorded_max_batch(root / "four"), 4);
  const int64_t one = planned_bytes(root / "one"), four = planned_bytes(root / "four");
  EXPECT_GT(one, 0);
  EXPECT_GT(four, 2 * one) << "a bound of 4 rows plans for 4 rows";
  // ONNX keeps its dynamic batch bound of 64 (nothing is planned ahead there).
  ASSERT_EQ(sh(cli + " export " + ck + " --format onnx -o " + (root / "onnx").string()).rc, 0);
  EXPECT_EQ(recorded_max_batch(root / "onnx"), 64);
  fs::remove_all(root);
}

}  // namespace
