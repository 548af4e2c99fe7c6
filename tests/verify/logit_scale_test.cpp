// `hfx verify` at a trained model's logit scale. A random tiny checkpoint has |logits| <= 3; a trained one
// has them in the tens, and every error that scales with the activations (kernel reduction order, a
// rounded weight) grows with them. verify's bounds are max(abs, rel x max|eager|) for that reason
// (src/verify/tolerances.cpp): an f32 export of a checkpoint written with --initializer-range 0.5
// (|logits| ~28) must verify, on ONNX and ExecuTorch, and the rel term must keep its teeth: a weight
// scaled by 1.002 still fails numerics.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <onnx/onnx_pb.h>
#include <nlohmann/json.hpp>

#include "hfx/io/safetensors.h"
#include "support/onnx_edit.h"
#include "support/shell.h"

namespace fs = std::filesystem;

namespace {

using hfx::testsupport::Proc;
using hfx::testsupport::sh;

std::string scale_cli() { return HFX_CLI; }
fs::path scale_root() {
  return fs::path(testing::TempDir()) / ("hfx_logit_scale_" + std::to_string(::getpid()));
}

// The largest |eager logit| any numerics record of verify.json saw (ErrorStats' ref_max_abs).
double max_eager_logit(const nlohmann::json& j) {
  double m = 0;
  if (j.is_object()) {
    if (j.contains("ref_max_abs") && j["ref_max_abs"].is_number()) m = j["ref_max_abs"].get<double>();
    for (const auto& [k, v] : j.items()) m = std::max(m, max_eager_logit(v));
  } else if (j.is_array()) {
    for (const auto& v : j) m = std::max(m, max_eager_logit(v));
  }
  return m;
}

class LogitScale : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    fs::remove_all(scale_root());
    fs::create_directories(scale_root());
    Proc a =
        sh(scale_cli() + " create-tiny llama --initializer-range 0.5 -o " + (scale_root() / "ck").string());
    ASSERT_EQ(a.rc, 0) << a.out;
    for (const char* f : {"onnx", "executorch"}) {
      Proc b = sh(scale_cli() + " export " + (scale_root() / "ck").string() + " --format " + f + " -o " +
                  (scale_root() / f).string());
      ASSERT_EQ(b.rc, 0) << b.out;
    }
  }
  static void TearDownTestSuite() { fs::remove_all(scale_root()); }
  static nlohmann::json report(const fs::path& d) {
    return nlohmann::json::parse(hfx::io::read_file((d / "verify.json").string()));
  }
};

TEST_F(LogitScale, F32ExportsOfALargeLogitModelVerify) {
  for (const char* f : {"onnx", "executorch"}) {
    Proc r = sh(scale_cli() + " verify " + (scale_root() / f).string());
    EXPECT_EQ(r.rc, 0) << f << ": " << r.out;
    auto j = report(scale_root() / f);
    // The scale this test is about: a random model at std 0.02 stays below 3.5.
    EXPECT_GT(max_eager_logit(j["checks"]), 15.0) << f;
    EXPECT_EQ(j["tolerances"]["key"], "exact") << f;
    EXPECT_GT(j["tolerances"]["logits_rel"].get<double>(), 0) << f;
  }
}

TEST_F(LogitScale, AWeightScaledBy1Point002StillFails) {
  const fs::path d = scale_root() / "perturbed";
  fs::remove_all(d);
  fs::copy(scale_root() / "onnx", d, fs::copy_options::recursive);
  // The weight is in the data file the three graphs share: scaled once, every graph reads it scaled.
  const bool done = hfx::testsupport::edit_float_initializer(
      d / "onnx" / "model.onnx", "model.layers.1.mlp.down_proj.weight", [](float* w, size_t n) {
        for (size_t i = 0; i < n; i++) w[i] *= 1.002f;
      });
  ASSERT_TRUE(done) << "no initializer model.layers.1.mlp.down_proj.weight";
  Proc man = sh(scale_cli() + " manifest " + d.string() + " --source " + (scale_root() / "ck").string());
  ASSERT_EQ(man.rc, 0) << man.out;  // checksums match the damaged files: numerics must catch it
  Proc r = sh(scale_cli() + " verify " + d.string() + " --tokens 8 --warm-runs 1");
  EXPECT_NE(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("numerics"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("x max|eager|"), std::string::npos) << r.out;  // the message names both terms
}

}  // namespace
