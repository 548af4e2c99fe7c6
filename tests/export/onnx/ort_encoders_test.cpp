// Encoder-only architectures exported to ONNX (onnx/model.onnx, the Optimum / Transformers.js layout)
// and run in ONNX Runtime, against the eager model: last_hidden_state or logits at f32 ≤ 1e-4 (absolute,
// real positions only: transformers leaves padded query positions unspecified) for batch 1 at lengths 1,
// 5 and 17 and right-padded batches of 3 (lengths 4/11/7 and 9/2/16: 16 and 17 cross ModernBERT's local
// window of ±4), every architecture and head, opset 23 standard (the standard Attention op), opset 18
// standard (attention decomposed) and target ort.
//
// target ort: its fused operator (com.microsoft GroupQueryAttention) fuses the decoder's cached, causal
// attention; encoder attention is bidirectional and has no cache, so it does not apply. ModernBERT's
// RMS-free norms still fuse (SkipLayerNormalization-style com.microsoft nodes), so it exports and stays
// exact; bert, roberta, xlm-roberta and distilbert get no fused operator at all, so --target ort would
// equal --target standard and the export is refused (TargetOrtWithoutFusedOpsIsRefused).
//
// Measured: worst |ORT - eager| over all 60 cases is 1.9e-6 (modernbert masked_lm), printed per case.
#include <gtest/gtest.h>

#include "export/onnx/onnx_test_util.h"
#include "hfx/export/exporter.h"
#include "hfx/export/onnx.h"
#include "models/encoder_test_util.h"

namespace hfx::onnx_test {
namespace {

// The acceptance bound (issue 11); the measured worst is 1.9e-6.
constexpr double kTol = 1e-4;

struct P {
  test::EncoderParam e;
  std::string target;
  int opset = 23;
};

class OrtEncoders : public ::testing::TestWithParam<P> {};

TEST_P(OrtEncoders, ModelOnnxMatchesEager) {
  const auto& [e, target, opset] = GetParam();
  TempDir dir(test::param_name(e.arch + "_" + e.head + "_" + target + std::to_string(opset)));
  test::create_tiny_encoder(e.arch, e.head, (dir.path / "ckpt").string());
  auto m = load_model((dir.path / "ckpt").string());
  OnnxConfig oc;
  oc.opset = opset;
  oc.target = target;
  CaptureOptions co = contract_options(*m, oc);
  auto exp = make_onnx_exporter();
  ExportResult r = exp->export_for_generation(*m, co, {{"*", &oc}}, (dir.path / "out").string());
  for (const auto& w : r.warnings)
    std::printf("  [%s %s %s] warning: %s\n", e.arch.c_str(), e.head.c_str(), target.c_str(), w.c_str());
  ASSERT_TRUE(fs::exists(dir.path / "out/onnx/model.onnx"));
  rt::SessionOptions so;
  so.intra_op_threads = 2;
  rt::OrtSession s(dir.path / "out/onnx/model.onnx", so);

  const bool token_types = test::tiny_takes_token_types(e.arch);
  std::vector<std::string> want_in = {"input_ids", "attention_mask"};
  if (token_types) want_in.push_back("token_type_ids");
  EXPECT_EQ(s.input_names(), want_in);
  const std::string out_name = e.head == "base" ? "last_hidden_state" : "logits";
  EXPECT_EQ(s.output_names(), std::vector<std::string>{out_name});

  const int64_t V = m->config().vocab_size, pad = m->config().pad_token_id.value_or(0);
  std::vector<std::vector<int64_t>> lengths = {{1}, {5}, {17}, {4, 11, 7}, {9, 2, 16}};
  double worst = 0;
  uint64_t seed = 3;
  for (const auto& ls : lengths) {
    test::Padded p = test::right_pad(test::sample_rows(ls, 5, V, pad, seed++), pad);
    SCOPED_TRACE("B=" + std::to_string(p.B) + " T=" + std::to_string(p.T));
    Tensor ref = test::encoder_forward(*m, p);
    rt::NamedTensors feeds{{"input_ids", rt::RtTensor::i64({p.B, p.T}, p.ids)},
                           {"attention_mask", rt::RtTensor::i64({p.B, p.T}, p.mask)}};
    if (token_types) feeds.push_back({"token_type_ids", rt::RtTensor::zeros("int64", {p.B, p.T})});
    auto out = s.run(feeds);
    const auto& got = rt::find_tensor(out, out_name);
    std::vector<float> v = got.to_f32();
    Tensor t = Tensor::from_floats(Shape(got.shape.begin(), got.shape.end()), v);
    double d = test::max_abs_diff_real(t, ref, p.lengths);
    EXPECT_LE(d, kTol);
    worst = std::max(worst, d);
  }
  std::printf("  [%s %s %s opset %d] max |ORT - eager| = %.3g\n", e.arch.c_str(), e.head.c_str(),
              target.c_str(), opset, worst);
}

// Encoders whose graphs have a com.microsoft operator under target ort.
bool ort_fuses(const std::string& arch) { return arch == "modernbert"; }

std::vector<P> params() {
  std::vector<P> v;
  for (const auto& e : test::encoder_params())
    for (const auto& [t, o] :
         std::vector<std::pair<const char*, int>>{{"standard", 23}, {"standard", 18}, {"ort", 23}})
      if (std::string(t) != "ort" || ort_fuses(e.arch)) v.push_back({e, t, o});
  return v;
}

// A label that changes nothing is refused: target ort on an encoder with no fused operator, before
// anything is written to the output folder.
TEST(OrtEncodersTarget, TargetOrtWithoutFusedOpsIsRefused) {
  for (const auto& e : test::encoder_params()) {
    if (ort_fuses(e.arch) || e.head != "base") continue;
    TempDir dir(test::param_name(e.arch + "_refuse_ort"));
    test::create_tiny_encoder(e.arch, e.head, (dir.path / "ckpt").string());
    auto m = load_model((dir.path / "ckpt").string());
    OnnxConfig oc;
    oc.target = "ort";
    CaptureOptions co = contract_options(*m, oc);
    try {
      make_onnx_exporter()->export_for_generation(*m, co, {{"*", &oc}}, (dir.path / "out").string());
      ADD_FAILURE() << e.arch << ": --target ort accepted with no fused operator";
    } catch (const Error& err) {
      EXPECT_NE(std::string(err.what()).find("expected --target ort to use ONNX Runtime's fused operators"),
                std::string::npos)
          << err.what();
      std::printf("  [%s] --target ort refused: %.90s...\n", e.arch.c_str(), err.what());
    }
    // The same model with int4 weights does get MatMulNBits under target ort: accepted.
    oc.quantize.bits = 4;
    ExportResult r =
        make_onnx_exporter()->export_for_generation(*m, co, {{"*", &oc}}, (dir.path / "q").string());
    EXPECT_TRUE(fs::exists(dir.path / "q/onnx/model.onnx")) << e.arch;
  }
}

INSTANTIATE_TEST_SUITE_P(Encoders, OrtEncoders, ::testing::ValuesIn(params()),
                         [](const ::testing::TestParamInfo<P>& i) {
                           return test::param_name(i.param.e.arch + "_" + i.param.e.head + "_" +
                                                   i.param.target + std::to_string(i.param.opset));
                         });

}  // namespace
}  // namespace hfx::onnx_test
