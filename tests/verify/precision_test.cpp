// What a quantized export's weights cost (hfx/verify/precision.h): the quantized model against its float32
// model over the greedy steps of the fixed prompt set. The measure is exact on a model against itself,
// orders int8 below int4, and `hfx verify` of a quantized export reports it (verify.json "precision", an
// info check, and the manifest's verify report) without bounding it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "hfx/io/safetensors.h"
#include "hfx/models/quantize_model.h"
#include "hfx/quant/quantize.h"
#include "hfx/verify/precision.h"
#include "models/model_test_util.h"
#include "support/shell.h"

namespace fs = std::filesystem;

namespace {

using hfx::testsupport::Proc;
using hfx::testsupport::sh;

TEST(QuantPrecision, AgreementOfAModelWithItselfIsExactAndInt8IsCloserThanInt4) {
  auto model = hfx::test::tiny_in_memory("llama", 3);
  const hfx::CausalLM& f32 = hfx::as_causal_lm(*model);
  hfx::verify::AgreementOptions o;
  o.prompts = 3;
  o.steps = 6;
  const auto self = hfx::verify::measure_agreement(f32, f32, o);
  EXPECT_EQ(self.positions, 3 * 6);
  EXPECT_EQ(self.top1, 1.0);
  EXPECT_EQ(self.max_abs_diff, 0.0);
  EXPECT_EQ(self.max_kl, 0.0);
  EXPECT_GT(self.max_abs_logit, 0.0);
  auto q8 = hfx::quant::quantize_model(*model, hfx::quant::parse_options("int8", 32, false));
  auto q4 = hfx::quant::quantize_model(*model, hfx::quant::parse_options("int4", 32, false));
  const auto a8 = hfx::verify::measure_agreement(f32, hfx::as_causal_lm(*q8), o);
  const auto a4 = hfx::verify::measure_agreement(f32, hfx::as_causal_lm(*q4), o);
  EXPECT_GT(a8.max_abs_diff, 0.0);
  EXPECT_LT(a8.max_abs_diff, a4.max_abs_diff);  // 16x finer steps
  EXPECT_LT(a8.mean_kl, a4.mean_kl);
  EXPECT_LE(a4.mean_kl, a4.max_kl);
  EXPECT_EQ(a8.max_abs_logit, self.max_abs_logit);  // the float32 model's scale, whatever the copy
}

TEST(QuantPrecision, VerifyOfAQuantizedExportReportsItsDistanceToTheFloatModel) {
  const fs::path root = fs::path(testing::TempDir()) / ("hfx_precision_" + std::to_string(::getpid()));
  fs::remove_all(root);
  const std::string cli = HFX_CLI;
  ASSERT_EQ(sh(cli + " create-tiny llama -o " + (root / "ck").string()).rc, 0);
  Proc e = sh(cli + " export " + (root / "ck").string() + " --format onnx --target ort --quantize int4 -o " +
              (root / "q").string());
  ASSERT_EQ(e.rc, 0) << e.out;
  Proc r = sh(cli + " verify " + (root / "q").string() + " --tokens 4 --warm-runs 1");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("int4 g32 weights vs the float32 model over 32 greedy positions"), std::string::npos)
      << r.out;
  auto j = nlohmann::json::parse(hfx::io::read_file((root / "q" / "verify.json").string()));
  ASSERT_TRUE(j.contains("precision")) << j.dump().substr(0, 400);
  EXPECT_EQ(j["precision"]["positions"], 8 * 4);
  EXPECT_EQ(j["precision"]["weights"]["method"], "int4");
  const double top1 = j["precision"]["top1_agreement"];
  EXPECT_GE(top1, 0.0);
  EXPECT_LE(top1, 1.0);
  EXPECT_GT(j["precision"]["max_abs_logit_diff"].get<double>(), 0.0);
  auto m = nlohmann::json::parse(hfx::io::read_file((root / "q" / "manifest.json").string()));
  EXPECT_EQ(m["verify"]["report"]["precision"], j["precision"]);
  // A float export has nothing to report.
  ASSERT_EQ(sh(cli + " export " + (root / "ck").string() + " --format onnx -o " + (root / "f").string()).rc,
            0);
  ASSERT_EQ(sh(cli + " verify " + (root / "f").string() + " --tokens 4 --warm-runs 1").rc, 0);
  auto f = nlohmann::json::parse(hfx::io::read_file((root / "f" / "verify.json").string()));
  EXPECT_FALSE(f.contains("precision"));
  fs::remove_all(root);
}

}  // namespace
