// `hfx verify` on .pte and .pt2 export folders through the CLI binary (HFX_CLI): a clean ExecuTorch
// export of a float32 and a bfloat16 tiny llama passes with the tolerance of its dtype and backend and
// reports latency per phase (prefill and decode tokens/s), memory and program size, and its
// out-of-contract calls (more tokens than the bound, a position past the static cache) fail with an
// error; a gpt2 program (learned position table) refuses a position past the table. Damaged folders are
// caught after the manifest is re-signed: a flipped weight byte of the .pte by the numerics against
// eager, a flipped byte of the .pt2 by the CRC-32 of its records.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <tuple>

#include <nlohmann/json.hpp>

#include "hfx/io/safetensors.h"
#include "support/shell.h"
#include "support/verdict.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

using hfx::testsupport::Proc;
using hfx::testsupport::sh;

std::string cli() { return HFX_CLI; }
fs::path root() { return fs::path(testing::TempDir()) / ("hfx_pte_verify_" + std::to_string(::getpid())); }

// create-tiny + export into root()/<name>; the checkpoint in root()/<name>-ck.
fs::path exported(const std::string& name, const std::string& create, const std::string& format,
                  const std::string& extra = "") {
  fs::path ck = root() / (name + "-ck"), out = root() / name;
  if (fs::exists(out)) return out;
  Proc a = sh(cli() + " create-tiny " + create + " -o " + ck.string());
  EXPECT_EQ(a.rc, 0) << a.out;
  Proc b = sh(cli() + " export " + ck.string() + " --format " + format + " -o " + out.string() + " " + extra);
  EXPECT_EQ(b.rc, 0) << b.out;
  return out;
}

const json* check(const json& report, const std::string& component, const std::string& name) {
  for (const auto& c : report["checks"])
    if (c["component"] == component && c["check"] == name) return &c;
  return nullptr;
}

// Flips one byte at `offset` (xor 0x40: in a float32's high byte, its exponent) and re-signs the manifest.
void flip_and_resign(const fs::path& out, const fs::path& file, uint64_t offset, const fs::path& ck) {
  std::string b = hfx::io::read_file(file.string());
  ASSERT_LT(offset, b.size());
  b[offset] = static_cast<char>(b[offset] ^ 0x40);
  std::ofstream(file, std::ios::binary | std::ios::trunc) << b;
  Proc r = sh(cli() + " manifest " + out.string() + " --source " + ck.string());
  ASSERT_EQ(r.rc, 0) << r.out;
}

class PteVerify : public testing::TestWithParam<std::tuple<std::string, std::string>> {
 protected:
  static void SetUpTestSuite() {
    fs::remove_all(root());
    fs::create_directories(root());
  }
  static void TearDownTestSuite() {
    if (!std::getenv("HFX_VERIFY_KEEP")) fs::remove_all(root());
  }
};

TEST_P(PteVerify, CleanProgramPassesWithLatencyMemoryAndRefusals) {
  const auto& [dtype, backend] = GetParam();
  fs::path out = exported("llama-" + dtype + "-" + backend, "llama --dtype " + dtype, "executorch",
                          "--backend " + backend);
  Proc r = sh(cli() + " verify " + out.string());
  ASSERT_EQ(r.rc, 0) << r.out;
  json j = json::parse(hfx::io::read_file((out / "verify.json").string()));
  const json* num = check(j, "model.pte", "numerics");
  ASSERT_TRUE(num && (*num)["status"] == "passed") << r.out;
  EXPECT_EQ((*num)["data"]["backend"], backend);
  EXPECT_EQ((*num)["data"]["tolerance"]["logits_abs"].get<double>(), 1e-5);
  // The XNNPACK program's work runs in its delegate calls; the portable one has none.
  if (backend == "xnnpack")
    EXPECT_GT((*num)["data"]["delegate_calls"].get<int>(), 2) << r.out;
  else
    EXPECT_EQ((*num)["data"]["delegate_calls"].get<int>(), 0) << r.out;
  const json* lat = check(j, "model.pte", "latency");
  ASSERT_TRUE(lat) << r.out;
  EXPECT_GT((*lat)["data"]["forward"]["prefill_tokens_per_s"].get<double>(), 0);
  EXPECT_GT((*lat)["data"]["forward"]["decode_tokens_per_s"].get<double>(), 0);
  const json* mem = check(j, "model.pte", "memory");
  ASSERT_TRUE(mem) << r.out;
  EXPECT_GT((*mem)["data"]["planned_bytes"]["forward"].get<int64_t>(), 0);
  EXPECT_EQ((*mem)["data"]["size_bytes"].get<int64_t>(),
            static_cast<int64_t>(fs::file_size(out / "model.pte")));
  const json* rej = check(j, "model.pte", "rejects");
  ASSERT_TRUE(rej && (*rej)["status"] == "passed") << r.out;
  ASSERT_EQ((*rej)["data"]["probes"].size(), 2u);
  for (const auto& p : (*rej)["data"]["probes"]) EXPECT_TRUE(p["refused"].get<bool>()) << p.dump();
  EXPECT_NE((*rej)["data"]["probes"][0]["error"].get<std::string>().find("within its dynamic bound"),
            std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(DtypesAndBackends, PteVerify,
                         testing::Combine(testing::Values("float32", "bfloat16"),
                                          testing::Values("portable", "xnnpack")),
                         [](const auto& i) { return std::get<0>(i.param) + "_" + std::get<1>(i.param); });

// ExecuTorch's 8da4w program: verify holds it to the measured activation-rounding row, not 1e-5; and a
// program whose static cache is short (--max-seq-len 16) is run within it (7 + 9 positions).
TEST(PteVerifyQuant, Int4XnnpackProgramPassesWithItsRowInAShortCache) {
  fs::path out = exported("llama-int4-xnnpack", "llama", "executorch",
                          "--backend xnnpack --quantize int4 --symmetric --max-seq-len 16");
  Proc r = sh(cli() + " verify " + out.string());
  ASSERT_EQ(r.rc, 0) << r.out;
  json j = json::parse(hfx::io::read_file((out / "verify.json").string()));
  const json* num = check(j, "model.pte", "numerics");
  ASSERT_TRUE(num && (*num)["status"] == "passed") << r.out;
  EXPECT_EQ((*num)["data"]["tolerance"]["logits_abs"].get<double>(), 0.5);
  EXPECT_NE((*num)["data"]["tolerance"]["basis"].get<std::string>().find("int8-dynamic-activations"),
            std::string::npos);
  EXPECT_EQ((*num)["data"]["latency"]["forward"]["decode_steps"].get<int>(), 9);
  json m = json::parse(hfx::io::read_file((out / "manifest.json").string()));
  EXPECT_EQ(m["precision"]["key"], "int8-dynamic-activations");
  EXPECT_EQ(m["export_config"]["quantize"]["scales"], "bf16");
}

TEST(PteVerifyDamage, FlippedWeightByteOfThePteIsCaughtByNumerics) {
  fs::create_directories(root());
  fs::path clean = exported("llama-damage-src", "llama", "executorch");
  fs::path out = root() / "llama-damaged";
  fs::remove_all(out);
  fs::copy(clean, out, fs::copy_options::recursive);
  // The constants follow the program (segment base in the eh00 header, bytes 24..31): the middle of
  // the segment is inside the largest weight (the embedding).
  std::string b = hfx::io::read_file((out / "model.pte").string());
  uint64_t base = 0;
  for (int i = 0; i < 8; i++) base |= static_cast<uint64_t>(static_cast<uint8_t>(b[24 + i])) << (8 * i);
  const uint64_t mid = base + (b.size() - base) / 2;
  flip_and_resign(out, out / "model.pte", mid - mid % 4 + 3, root() / "llama-damage-src-ck");
  Proc r = sh(cli() + " verify " + out.string());
  EXPECT_NE(r.rc, 0) << r.out;
  json j = json::parse(hfx::io::read_file((out / "verify.json").string()));
  EXPECT_EQ((*check(j, "manifest", "checksums"))["status"], "passed")
      << "the re-signed manifest matches the damaged file";
  const json* num = check(j, "model.pte", "numerics");
  ASSERT_TRUE(num) << r.out;
  EXPECT_EQ((*num)["status"], "failed") << r.out;
}

TEST(PteVerifyDamage, FlippedByteOfThePt2IsCaughtByTheRecordCrc) {
  fs::create_directories(root());
  fs::path clean = exported("llama-pt2-src", "llama", "dynamo");
  Proc ok = sh(cli() + " verify " + clean.string());
  ASSERT_TRUE(hfx::testsupport::verified_or_judge_off(ok.rc, ok.out)) << ok.out;
  fs::path out = root() / "llama-pt2-damaged";
  fs::remove_all(out);
  fs::copy(clean, out, fs::copy_options::recursive);
  const fs::path pt2 = out / "prefill.pt2";
  flip_and_resign(out, pt2, fs::file_size(pt2) / 2, root() / "llama-pt2-src-ck");
  Proc r = sh(cli() + " verify " + out.string());
  EXPECT_NE(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("prefill.pt2 structure"), std::string::npos) << r.out;
}

// In the XNNPACK program the weights of the delegated layers are named data (the last segments): a byte
// flipped near the end of the file lands in the last one the delegates read (lm_head's), and the reader's
// XNNGraph interpreter, which reads the weights from there, turns it into wrong logits.
TEST(PteVerifyDamage, FlippedNamedDataByteOfTheXnnpackProgramIsCaughtByNumerics) {
  fs::create_directories(root());
  fs::path clean = exported("llama-xnn-damage-src", "llama", "executorch", "--backend xnnpack");
  fs::path out = root() / "llama-xnn-damaged";
  fs::remove_all(out);
  fs::copy(clean, out, fs::copy_options::recursive);
  const uint64_t size = fs::file_size(out / "model.pte"), at = size - 256;
  flip_and_resign(out, out / "model.pte", at - at % 4 + 3, root() / "llama-xnn-damage-src-ck");
  Proc r = sh(cli() + " verify " + out.string());
  EXPECT_NE(r.rc, 0) << r.out;
  json j = json::parse(hfx::io::read_file((out / "verify.json").string()));
  EXPECT_EQ((*check(j, "manifest", "checksums"))["status"], "passed");
  const json* num = check(j, "model.pte", "numerics");
  ASSERT_TRUE(num) << r.out;
  EXPECT_EQ((*num)["status"], "failed") << r.out;
}

TEST(PteVerifyContract, Gpt2ProgramRefusesAPositionPastItsTable) {
  fs::create_directories(root());
  // --max-seq-len beyond n_positions (256 in the tiny config): the export caps the cache at the table.
  fs::path out = exported("gpt2-pte", "gpt2", "executorch", "--max-seq-len 4096");
  json man = json::parse(hfx::io::read_file((out / "manifest.json").string()));
  EXPECT_NE(man["warnings"].dump().find("max_seq_len 4096 capped at max_position_embeddings 256"),
            std::string::npos)
      << man.dump();
  Proc r = sh(cli() + " verify " + out.string());
  ASSERT_EQ(r.rc, 0) << r.out;
  json j = json::parse(hfx::io::read_file((out / "verify.json").string()));
  const json* rej = check(j, "model.pte", "rejects");
  ASSERT_TRUE(rej && (*rej)["status"] == "passed") << r.out;
  EXPECT_NE((*rej)["data"]["probes"][1]["probe"].get<std::string>().find("position 256"), std::string::npos)
      << rej->dump();
  const std::string err = (*rej)["data"]["probes"][1]["error"];
  EXPECT_NE(err.find("embedding index in [-256, 256), got 256"), std::string::npos) << err;
}

}  // namespace
