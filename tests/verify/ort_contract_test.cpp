// The contract of ONNX exports through `hfx verify` (CLI binary HFX_CLI): gpt2's learned position table
// caps past + sequence in the contract (attention_mask axis 1 <= n_positions), verify runs up to that
// total and proves one position more is refused by the graph's own check; a --target ort export states
// GroupQueryAttention's batch-1 rule for a chunk over a past as a restriction of its contract, which the
// hfx runtime enforces (the shape matrix runs the chunk at batch 1, the batch-2 call is refused by name).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "hfx/io/safetensors.h"
#include "support/shell.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

using hfx::testsupport::Proc;
using hfx::testsupport::sh;
fs::path root() { return fs::path(testing::TempDir()) / ("hfx_contract_" + std::to_string(::getpid())); }

json verified(const std::string& arch, const std::string& extra) {
  fs::path ck = root() / (arch + "-ck"), out = root() / (arch + "-onnx");
  fs::create_directories(root());
  Proc a = sh(std::string(HFX_CLI) + " create-tiny " + arch + " -o " + ck.string());
  EXPECT_EQ(a.rc, 0) << a.out;
  Proc b =
      sh(std::string(HFX_CLI) + " export " + ck.string() + " --format onnx -o " + out.string() + " " + extra);
  EXPECT_EQ(b.rc, 0) << b.out;
  Proc v = sh(std::string(HFX_CLI) + " verify " + out.string() + " --tokens 8 --warm-runs 1");
  EXPECT_EQ(v.rc, 0) << v.out;
  return json::parse(hfx::io::read_file((out / "verify.json").string()));
}

const json* check(const json& report, const std::string& component, const std::string& name) {
  for (const auto& c : report["checks"])
    if (c["component"] == component && c["check"] == name) return &c;
  return nullptr;
}

const json* probe(const json& rejects, const std::string& part) {
  for (const auto& p : rejects["data"]["probes"])
    if (p["probe"].get<std::string>().find(part) != std::string::npos) return &p;
  return nullptr;
}

TEST(OnnxContract, Gpt2CapsPastPlusSequenceAtItsPositionTable) {
  json j = verified("gpt2", "");
  const json* rej = check(j, "model", "rejects");
  ASSERT_TRUE(rej && (*rej)["status"] == "passed") << j.dump().substr(0, 2000);
  const json* p = probe(*rej, "= 257 positions (contract max 256)");
  ASSERT_TRUE(p) << rej->dump();
  EXPECT_TRUE((*p)["refused"].get<bool>());
  EXPECT_EQ((*p)["by"], "the artifact (in-graph contract check)") << p->dump();
  // The total the verify ran: sequence + past within the table.
  bool total = false;
  for (const auto& c : (*check(j, "model", "shapes"))["data"]["cases"])
    if (c["label"] == "claimed max total") {
      EXPECT_TRUE(c["ran"].get<bool>()) << c.dump();
      EXPECT_LE(c["sequence"].get<int64_t>() + c["past"].get<int64_t>(), 256) << c.dump();
      total = true;
    }
  EXPECT_TRUE(total);
  EXPECT_EQ(
      check(j, "model", "contract")->at("message").get<std::string>().find("beyond max_position_embeddings"),
      std::string::npos);
}

TEST(OnnxContract, TargetOrtStatesAndEnforcesTheBatchOneChunkRule) {
  json j = verified("llama", "--target ort");
  const json* rej = check(j, "model", "rejects");
  ASSERT_TRUE(rej && (*rej)["status"] == "passed") << j.dump().substr(0, 2000);
  const json* p = probe(*rej, "batch 2 x sequence 4 over past 12");
  ASSERT_TRUE(p) << rej->dump();
  EXPECT_TRUE((*p)["refused"].get<bool>());
  EXPECT_EQ((*p)["by"], "the hfx runtime (OrtSession input check)") << p->dump();
  EXPECT_NE(
      (*p)["error"].get<std::string>().find("expected input_ids axis 0 <= 1 when input_ids axis 1 >= 2 and "
                                            "past_key_values.0.key axis 2 >= 1"),
      std::string::npos)
      << p->dump();
  bool chunk = false;
  for (const auto& c : (*check(j, "model", "shapes"))["data"]["cases"])
    if (c["label"] == "chunk over cache") {
      EXPECT_EQ(c["batch"], 1);
      EXPECT_TRUE(c["ok"].get<bool>()) << c.dump();
      chunk = true;
    }
  EXPECT_TRUE(chunk);
  // The standard target has no such rule: its chunk over cache runs at batch 2.
  json s = verified("qwen2", "");
  for (const auto& c : (*check(s, "model", "shapes"))["data"]["cases"])
    if (c["label"] == "chunk over cache") {
      EXPECT_EQ(c["batch"], 2);
    }
}

}  // namespace
