// Pre-quantized checkpoints on ExecuTorch (--format executorch --backend xnnpack): a symmetric 4-bit GPTQ
// checkpoint's codes are XNNPACK's qb4w filter as they are (zero point 8); only its float16 block scales are
// rounded to bf16, which XNNPACK's blockwise kernels read. The export records it (export_config.json
// "scales": "bf16"), verify's reference rounds the same scales, and the rounding's effect on the logits is
// measured against the real transformers run on the unrounded checkpoint
// (tests/data/goldens/prequant-llama-gptq.json). Codes XNNPACK cannot hold without re-encoding (AWQ /
// asymmetric GPTQ zero points, 8-bit per-group scales) and the other backends are refused before anything is
// written.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>

#include "hfx/artifact/export_folder.h"
#include "hfx/export/exporter.h"
#include "hfx/io/safetensors.h"
#include "hfx/models/quantize_model.h"
#include "hfx/verify/verify.h"
#include "models/model_test_util.h"
#include "quant/prequant_test_util.h"
#include "verify/pte_reader.h"

namespace hfx::test {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

ExecutorchConfig xnnpack_config() {
  ExecutorchConfig ec;
  ec.from_json({{"backend", "xnnpack"}, {"max_seq_len", 32}});
  return ec;
}

TEST(PrequantizedExecutorch, SymmetricGptqKeepsItsCodesWithBf16ScalesAndVerifies) {
  const json g = json::parse(
      io::read_file(std::string(HFX_SOURCE_DIR) + "/tests/data/goldens/prequant-llama-gptq.json"));
  TempDir dir("prequant_et");
  create_tiny("llama", dir.path.string(), TinyOptions{});
  ASSERT_EQ(quant::write_prequantized_checkpoint(dir.path.string(), cq_of("gptq", 4, 32, true)), 14);
  std::shared_ptr<const Model> base(load_model(dir.path.string()));
  const fs::path out = dir.path / "et";
  artifact::export_folder(*base, dir.path.string(), out.string(), xnnpack_config());

  const json ec = json::parse(io::read_file((out / "export_config.json").string()));
  EXPECT_EQ(ec["quantize"], json({{"method", "int4"},
                                  {"group_size", 32},
                                  {"symmetric", true},
                                  {"activations", "f32"},
                                  {"scales", "bf16"}}))
      << ec["quantize"].dump();
  // Every linear of the program runs in the XNNPACK delegate (no portable matmul is left).
  auto prog = verify::PteProgram::load_file((out / "model.pte").string());
  const auto ops = prog->operator_names();
  EXPECT_EQ(std::count(ops.begin(), ops.end(), "aten::mm.out"), 0);
  EXPECT_GT(prog->method("forward").num_delegate_calls(), 0);

  // verify's reference: the checkpoint's codes byte for byte, its scales rounded to bf16 (relative ≤ 2^-8:
  // bf16 keeps 8 significant bits).
  std::shared_ptr<const Model> ref = quant::quantize_model(*base, quant::export_quantization(out.string()));
  int weights = 0, changed = 0;
  for (const std::string& name : base->weights().names()) {
    if (!name.ends_with(".weight_q")) continue;
    weights++;
    const Tensor a = base->weights().get(name).contiguous(), b = ref->weights().get(name).contiguous();
    ASSERT_EQ(a.nbytes(), b.nbytes());
    EXPECT_EQ(std::memcmp(a.data<uint8_t>(), b.data<uint8_t>(), a.nbytes()), 0)
        << name << ": codes re-encoded";
    const std::string sn = quant::quant_names(name.substr(0, name.size() - 2)).scales;
    const Tensor s0 = base->weights().get(sn).to(DType::F32).contiguous();
    const Tensor s1 = ref->weights().get(sn).contiguous();
    for (int64_t i = 0; i < s0.numel(); i++) {
      const float x = s0.data<float>()[i], y = s1.data<float>()[i];
      EXPECT_EQ(bf16_to_f32(f32_to_bf16(y)), y) << sn;
      EXPECT_LE(std::fabs(y - x), std::ldexp(std::fabs(x), -8)) << sn;
      changed += y != x;
    }
  }
  EXPECT_EQ(weights, 14);
  EXPECT_GT(changed, 0) << "the checkpoint's float16 scales were already bf16: the test shows nothing";

  // What the rounding costs, measured against transformers on the unrounded checkpoint (the unrounded
  // eager model is ≤ 1e-4 from it, tests/quant/ort_prequantized_test.cpp): 0.0247 on this tiny llama, whose
  // logits reach 3.47 — 0.71% of the largest logit, from a relative change of ≤ 2^-8 (0.39%) per scale over
  // 14 layers' weights. Bound: 1% of the largest golden logit.
  double largest = 0;
  for (const auto& c : g["cases"])
    for (const auto& row : c["logits"])
      for (const auto& x : row) largest = std::max(largest, std::fabs(x.get<double>()));
  const double rounded = worst_vs_golden(as_causal_lm(*ref), g);
  std::printf(
      "  GPTQ scales rounded to bf16: worst |logit diff| against transformers %.3g (largest logit %.3g)\n",
      rounded, largest);
  EXPECT_GT(rounded, 1e-4);
  EXPECT_LE(rounded, 0.01 * largest);

  expect_verified(out.string(), dir.path.string());
}

// What XNNPACK cannot hold as it is — asymmetric zero points (AWQ, GPTQ sym false), 8-bit per-group scales —
// and the backends without a quantized linear are refused naming the reason, before anything is written.
TEST(PrequantizedExecutorch, CodesXnnpackCannotHoldAreRefused) {
  struct Case {
    quant::CheckpointQuant cq;
    std::string backend, want;
  };
  const std::vector<Case> cases = {
      {cq_of("awq", 4, 32, false), "xnnpack",
       "expected symmetric codes (GPTQ sym true) for --format executorch"},
      {cq_of("gptq", 4, 32, false), "xnnpack", "fixed zero point 8"},
      {cq_of("gptq", 8, 32, true), "xnnpack", "expected a 4-bit GPTQ checkpoint for --format executorch"},
      {cq_of("gptq", 4, 32, true), "portable", "expected --backend xnnpack with --quantize int4"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.want);
    TempDir dir("prequant_et_refuse");
    create_tiny("llama", dir.path.string(), TinyOptions{});
    quant::write_prequantized_checkpoint(dir.path.string(), c.cq);
    auto m = load_model(dir.path.string());
    ExecutorchConfig ec;
    ec.from_json({{"backend", c.backend}});
    expect_error([&] { artifact::export_folder(*m, dir.path.string(), (dir.path / "et").string(), ec); },
                 {c.want});
    EXPECT_FALSE(fs::exists(dir.path / "et"));
  }
}

}  // namespace
}  // namespace hfx::test
