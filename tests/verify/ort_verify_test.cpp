// `hfx verify` end to end through the CLI binary (HFX_CLI) on a tiny llama exported to ONNX: a clean
// export passes; deliberately damaged copies are each caught with a clear message and a non-zero exit
// (a perturbed weight named by the per-layer diff, a truncated file, a checksum mismatch, a dropped
// output, a contract widened beyond the graph, no reference); the HTML report renders in headless
// Chromium without console errors.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include <onnx/onnx_pb.h>
#include <nlohmann/json.hpp>

#include "hfx/io/safetensors.h"
#include "support/onnx_edit.h"
#include "support/oracle.h"
#include "support/shell.h"

namespace fs = std::filesystem;

namespace {

using hfx::testsupport::Proc;
using hfx::testsupport::sh;

std::string cli() { return HFX_CLI; }

fs::path root() { return fs::path(testing::TempDir()) / ("hfx_verify_" + std::to_string(::getpid())); }

onnx::ModelProto load(const fs::path& p) {
  onnx::ModelProto m;
  std::ifstream f(p, std::ios::binary);
  EXPECT_TRUE(m.ParseFromIstream(&f)) << p;
  return m;
}
void save(const onnx::ModelProto& m, const fs::path& p) {
  std::string b;
  m.SerializeToString(&b);
  std::ofstream(p, std::ios::binary | std::ios::trunc) << b;
}

class VerifyCli : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    fs::remove_all(root());
    fs::create_directories(root());
    Proc a = sh(cli() + " create-tiny llama -o " + (root() / "ck").string());
    ASSERT_EQ(a.rc, 0) << a.out;
    Proc b = sh(cli() + " export " + (root() / "ck").string() + " --format onnx -o " +
                (root() / "clean").string());
    ASSERT_EQ(b.rc, 0) << b.out;
  }
  static void TearDownTestSuite() {
    if (!std::getenv("HFX_VERIFY_KEEP")) fs::remove_all(root());
  }
  // A fresh copy of the clean export, with the checkpoint files copied in (the reference) and a manifest.
  static fs::path copy(const std::string& name, bool with_weights = true) {
    fs::path d = root() / name;
    fs::remove_all(d);
    fs::copy(root() / "clean", d, fs::copy_options::recursive);
    if (with_weights) fs::copy_file(root() / "ck" / "model.safetensors", d / "model.safetensors");
    return d;
  }
  static void manifest(const fs::path& d) {
    Proc r = sh(cli() + " manifest " + d.string() + " --source " + (root() / "ck").string());
    ASSERT_EQ(r.rc, 0) << r.out;
  }
  static Proc verify(const fs::path& d, const std::string& extra = "") {
    return sh(cli() + " verify " + d.string() + " --tokens 8 --warm-runs 2 " + extra);
  }
};

TEST_F(VerifyCli, CleanExportPassesAndRecordsTheManifest) {
  fs::path d = copy("ok");
  manifest(d);
  Proc r = sh(cli() + " verify " + d.string());  // default: 32 greedy tokens, batch 1 and 3
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("VERIFIED"), std::string::npos) << r.out;
  auto j = nlohmann::json::parse(hfx::io::read_file((d / "verify.json").string()));
  EXPECT_TRUE(j["passed"].get<bool>());
  EXPECT_EQ(j["summary"]["failed"], 0);
  for (const char* c : {"model", "prefill", "decode"}) {
    ASSERT_TRUE(j["components"].contains(c)) << c;
    EXPECT_GT(j["components"][c]["size_bytes"].get<int64_t>(), 0);
    EXPECT_TRUE(j["components"][c].contains("latency"));
    EXPECT_TRUE(j["components"][c]["placement"].contains("providers"))
        << j["components"][c]["placement"].dump();
  }
  bool greedy = false, rejects = false;
  for (const auto& c : j["checks"]) {
    if (c["check"] == "greedy" && c["status"] == "passed") greedy = true;
    if (c["check"] == "rejects" && c["status"] == "passed") rejects = true;
  }
  EXPECT_TRUE(greedy && rejects) << r.out;
  EXPECT_FALSE(j["layer_diff"]["layers"].empty());
  auto m = nlohmann::json::parse(hfx::io::read_file((d / "manifest.json").string()));
  EXPECT_EQ(m["verify"]["status"], "passed") << m["verify"].dump();
  EXPECT_TRUE(fs::exists(d / "verify.html"));
  // The verify section changed the manifest, not the listed files: checksums still hold.
  Proc again = sh(cli() + " manifest " + d.string() + " --check");
  EXPECT_EQ(again.rc, 0) << again.out;
}

TEST_F(VerifyCli, PerturbedWeightFailsNumericsAndTheLayerDiffNamesLayer1) {
  fs::path d = copy("perturbed");
  fs::remove(d / "onnx" / "prefill.onnx");  // only the merged graph: the diff runs on it
  fs::remove(d / "onnx" / "decode.onnx");
  const bool done = hfx::testsupport::edit_float_initializer(
      d / "onnx" / "model.onnx", "model.layers.1.self_attn.q_proj.weight", [](float* f, size_t n) {
        for (size_t i = 0; i < n; i++) f[i] += 0.25f;
      });
  ASSERT_TRUE(done) << "no initializer model.layers.1.self_attn.q_proj.weight";
  manifest(d);  // the checksum matches the damaged file: numerics must catch it
  Proc r = verify(d);
  EXPECT_NE(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("numerics"), std::string::npos) << r.out;
  auto j = nlohmann::json::parse(hfx::io::read_file((d / "verify.json").string()));
  ASSERT_TRUE(j["layer_diff"]["first_divergence"].is_object()) << j["layer_diff"].dump();
  std::string first = j["layer_diff"]["first_divergence"]["name"];
  EXPECT_EQ(first.rfind("model.layers.1", 0), 0u) << first;
  // The first-failure line itself names the module.
  auto line = r.out.find("hfx: [verify] FAILED: model numerics:");
  ASSERT_NE(line, std::string::npos) << r.out;
  EXPECT_NE(r.out.find("per-layer diff: first divergence at model.layers.1", line), std::string::npos)
      << r.out;
  auto man = nlohmann::json::parse(hfx::io::read_file((d / "manifest.json").string()));
  EXPECT_EQ(man["verify"]["status"], "failed");
}

TEST_F(VerifyCli, TruncatedFileIsNamed) {
  fs::path d = copy("truncated");
  manifest(d);
  fs::resize_file(d / "onnx" / "decode.onnx", fs::file_size(d / "onnx" / "decode.onnx") / 2);
  Proc r = verify(d);
  EXPECT_NE(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("FAILED: manifest checksums: expected onnx/decode.onnx to have"), std::string::npos)
      << r.out;

  fs::path e = copy("truncated_nomanifest");
  fs::resize_file(e / "onnx" / "prefill.onnx", fs::file_size(e / "onnx" / "prefill.onnx") / 2);
  r = verify(e);
  EXPECT_NE(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("expected onnx/prefill.onnx to parse as an ONNX model"), std::string::npos) << r.out;
}

TEST_F(VerifyCli, ChecksumMismatchNamesFileExpectedAndActual) {
  fs::path d = copy("checksum");
  manifest(d);
  std::string s = hfx::io::read_file((d / "tokenizer_config.json").string());
  s[s.size() / 2] = s[s.size() / 2] == 'a' ? 'b' : 'a';  // same size, other bytes
  std::ofstream(d / "tokenizer_config.json", std::ios::binary | std::ios::trunc) << s;
  Proc r = verify(d);
  EXPECT_NE(r.rc, 0) << r.out;
  auto m = nlohmann::json::parse(hfx::io::read_file((d / "manifest.json").string()));
  std::string want;
  for (const auto& f : m["files"])
    if (f["path"] == "tokenizer_config.json") want = f["sha256"];
  ASSERT_FALSE(want.empty());
  std::string got = hfx::io::sha256_file((d / "tokenizer_config.json").string());
  EXPECT_NE(r.out.find("expected tokenizer_config.json to have sha256 " + want + ", got " + got),
            std::string::npos)
      << r.out;
}

TEST_F(VerifyCli, DroppedOutputIsASignatureFailure) {
  fs::path d = copy("dropped");
  onnx::ModelProto m = load(d / "onnx" / "decode.onnx");
  auto* outs = m.mutable_graph()->mutable_output();
  for (int i = 0; i < outs->size(); i++)
    if (outs->Get(i).name() == "present.1.value") {
      outs->DeleteSubrange(i, 1);
      break;
    }
  save(m, d / "onnx" / "decode.onnx");
  manifest(d);
  Proc r = verify(d);
  EXPECT_NE(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("FAILED: decode signature: expected output present.1.value"), std::string::npos)
      << r.out;
}

TEST_F(VerifyCli, ContractWidenedBeyondTheGraphFailsTheShapeMatrix) {
  fs::path d = copy("widened");
  onnx::ModelProto m = load(d / "onnx" / "model.onnx");
  for (auto& p : *m.mutable_metadata_props()) {
    if (p.key() != "hfx.contract") continue;
    auto j = nlohmann::json::parse(p.value());
    for (auto& [input, axes] : j["inputs"].items())
      for (auto& a : axes) {
        std::string s = a.value("symbol", "");
        if (s == "sequence_length" || s == "past_sequence_length") a["max"] = 8192;
        if (s == "past_sequence_length + sequence_length") a["max"] = 16384;
      }
    p.set_value(j.dump());
  }
  save(m, d / "onnx" / "model.onnx");
  manifest(d);
  Proc r = verify(d);
  EXPECT_NE(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("FAILED: model shapes: expected the contract in onnx metadata hfx.contract of "
                       "onnx/model.onnx to keep"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("within what the graph accepts [1, "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("got [1, 8192]"), std::string::npos) << r.out;
  auto j = nlohmann::json::parse(hfx::io::read_file((d / "verify.json").string()));
  bool probe_failed = false;
  for (const auto& s : j["components"]["model"]["shapes"])
    if (s.value("label", "") == "claimed max past" && !s.value("ran", true)) probe_failed = true;
  EXPECT_TRUE(probe_failed) << "the graph refuses the claimed past 8192";
}

TEST_F(VerifyCli, NoWeightsAndNoReferenceUsesTheManifestSourceOrSaysSo) {
  fs::path d = copy("noref", /*with_weights=*/false);
  // The export's manifest names the checkpoint it was made from: that is the reference.
  Proc m = verify(d, "--no-manifest --shapes 1x1,2x8,1x1+7");
  EXPECT_EQ(m.rc, 0) << m.out;
  EXPECT_NE(m.out.find("from " + fs::weakly_canonical(root() / "ck").string()), std::string::npos) << m.out;
  // A manifest source that is not a checkpoint folder: the clear error, exit 1.
  auto j = nlohmann::json::parse(hfx::io::read_file((d / "manifest.json").string()));
  j["model"]["source_path"] = (root() / "gone").string();
  std::ofstream(d / "manifest.json", std::ios::trunc) << j.dump(2);
  Proc r = verify(d);
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_NE(r.out.find("expected the checkpoint weights (model.safetensors) in"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("no --reference was given"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("the manifest names the source " + (root() / "gone").string() +
                       ", which is not a readable checkpoint folder"),
            std::string::npos)
      << r.out;
  Proc ok = verify(d, "--reference " + (root() / "ck").string() + " --shapes 1x1,2x8,1x1+7");
  EXPECT_EQ(ok.rc, 0) << ok.out;
}

TEST_F(VerifyCli, HtmlReportRendersInHeadlessChromium) {
  const char* chromium = "/usr/bin/chromium";
  HFX_REQUIRE_ORACLE(hfx::test::kChromium);
  fs::path d = copy("html");
  Proc v = verify(d);
  ASSERT_EQ(v.rc, 0) << v.out;
  fs::path prof = root() / "chromium-profile";
  fs::create_directories(prof);
  fs::path png = root() / "report.png";
  std::string flags =
      " --headless --no-sandbox --disable-gpu --disable-background-networking --disable-component-update "
      "--disable-sync --no-first-run --user-data-dir=" +
      prof.string() + " --enable-logging=stderr --v=0 ";
  Proc dom =
      sh(std::string("timeout 90 ") + chromium + flags + "--dump-dom file://" + (d / "verify.html").string());
  ASSERT_EQ(dom.rc, 0) << dom.out;
  EXPECT_NE(dom.out.find("VERIFIED"), std::string::npos) << dom.out.substr(0, 2000);
  EXPECT_NE(dom.out.find("<svg"), std::string::npos);
  EXPECT_EQ(dom.out.find("Uncaught"), std::string::npos) << dom.out.substr(0, 4000);
  EXPECT_EQ(dom.out.find(":CONSOLE("), std::string::npos) << dom.out.substr(0, 4000);
  Proc shot = sh(std::string("timeout 90 ") + chromium + flags + "--window-size=1200,2000 --screenshot=" +
                 png.string() + " file://" + (d / "verify.html").string());
  EXPECT_EQ(shot.rc, 0) << shot.out;
  ASSERT_TRUE(fs::exists(png)) << shot.out;
  EXPECT_GT(fs::file_size(png), 10000u);
}

}  // namespace
