// Weight-only quantization: the round-to-nearest error bound of every mode, the stored layout read
// back bit for bit, the hfx.linear_q kernel (fused decode path on each ISA the CPU has: scalar, AVX2,
// AVX-512; and the sgemm path) against aten.linear on the dequantized weight, and the errors that name a
// mis-shaped tensor.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "hfx/core/error.h"
#include "hfx/ops/builder.h"
#include "hfx/ops/functional.h"
#include "hfx/ops/linear_q.h"
#include "hfx/quant/quantize.h"
#include "kernels/linear_q.h"

namespace hfx {
namespace {

Tensor randn(const Shape& s, uint64_t seed, float scale = 1.0f) {
  std::mt19937 rng(static_cast<uint32_t>(seed));
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(static_cast<size_t>(shape_numel(s)));
  for (auto& x : v) x = d(rng);
  return Tensor::from_floats(s, v);
}

struct Mode {
  int bits, group;
  bool sym;
};
const Mode kModes[] = {{4, 32, false}, {4, 64, true}, {4, 128, false}, {8, 32, false}, {8, 128, true}};

TEST(Quantize, RoundToNearestErrorIsAtMostHalfAScale) {
  for (const Mode& m : kModes) {
    SCOPED_TRACE(std::to_string(m.bits) + " bits, group " + std::to_string(m.group) +
                 (m.sym ? " sym" : " asym"));
    Tensor w = randn({48, 256}, 3, 0.05f);
    auto q = quant::quantize_weight(w, quant::parse_options("int" + std::to_string(m.bits), m.group, m.sym));
    Tensor d = quant::dequantize(q);
    const float* pw = w.data<float>();
    const float* pd = d.data<float>();
    for (int64_t n = 0; n < 48; n++)
      for (int64_t k = 0; k < 256; k++) {
        const float s = q.scales.data<float>()[n * q.blocks() + k / m.group];
        ASSERT_LE(std::fabs(pw[n * 256 + k] - pd[n * 256 + k]), 0.5f * s * (1 + 1e-5f) + 1e-12f)
            << n << "," << k;
      }
    EXPECT_EQ(q.zero_points.defined(), !m.sym);
    EXPECT_EQ(q.qweight.shape(), (Shape{48, 256 / m.group, m.group * m.bits / 8}));
  }
}

TEST(Quantize, AsymmetricKeepsZeroExactAndUsesTheFullRange) {
  std::vector<float> v(32);
  for (int i = 0; i < 32; i++) v[i] = static_cast<float>(i) / 31.0f;  // 0 … 1, one block
  auto q = quant::quantize_weight(Tensor::from_floats({1, 32}, v), quant::parse_options("int4", 32, false));
  EXPECT_FLOAT_EQ(q.scales.data<float>()[0], 1.0f / 15.0f);
  EXPECT_EQ(q.zero_points.data<uint8_t>()[0] & 0x0F, 0);
  Tensor d = quant::dequantize(q);
  EXPECT_EQ(d.data<float>()[0], 0.0f);
  EXPECT_FLOAT_EQ(d.data<float>()[31], 1.0f);
  // codes packed low nibble first: element 0 → byte 0 bits 0-3, element 31 (code 15) → byte 15 bits 4-7
  EXPECT_EQ(q.qweight.data<uint8_t>()[15] >> 4, 15);
}

// bf16 scales (the ExecuTorch/XNNPACK export): every scale is a bfloat16 value, the codes are chosen
// against it (so the de-quantized weight is what XNNPACK's bf16-scale kernel computes with), and they stay
// within the error bound of the rounded scale; the JSON form says "scales": "bf16" and reads back.
TEST(Quantize, Bf16ScalesAreExactBf16AndTheCodesFollowThem) {
  Tensor w = randn({16, 128}, 9, 0.05f);
  quant::QuantOptions o = quant::parse_options("int4", 32, true);
  o.bf16_scales = true;
  auto q = quant::quantize_weight(w, o);
  auto plain = quant::quantize_weight(w, quant::parse_options("int4", 32, true));
  Tensor d = quant::dequantize(q);
  int differ = 0;
  for (int64_t i = 0; i < q.scales.numel(); i++) {
    const float s = q.scales.data<float>()[i];
    EXPECT_EQ(s, bf16_to_f32(f32_to_bf16(s)));
    EXPECT_EQ(s, bf16_to_f32(f32_to_bf16(plain.scales.data<float>()[i])));
    differ += s != plain.scales.data<float>()[i];
  }
  EXPECT_GT(differ, 0) << "f32 scales of random weights are rarely bf16 values";
  for (int64_t n = 0; n < 16; n++)
    for (int64_t k = 0; k < 128; k++) {
      const float s = q.scales.data<float>()[n * 4 + k / 32], x = w.data<float>()[n * 128 + k];
      const float want = std::clamp(std::nearbyint(x / s), -8.0f, 7.0f) * s;
      EXPECT_EQ(d.data<float>()[n * 128 + k], want) << n << "," << k;
    }
  nlohmann::json j = quant::to_json(o);
  EXPECT_EQ(j["scales"], "bf16");
  EXPECT_TRUE(quant::from_json(j).bf16_scales);
  EXPECT_FALSE(quant::to_json(quant::parse_options("int4", 32, true)).contains("scales"));
  j["scales"] = "f8";
  EXPECT_THROW(quant::from_json(j), Error);
}

// Per-channel scales (the ExecuTorch/XNNPACK int8 export): every block of a row holds the row's scale,
// max |w| / 127 over the whole row, and the codes follow it; asymmetric per-channel codes are refused.
TEST(Quantize, PerChannelScalesAreOnePerRowStoredBlockwise) {
  Tensor w = randn({8, 128}, 11, 0.05f);
  quant::QuantOptions o = quant::parse_options("int8", 32, true);
  o.per_channel = true;
  auto q = quant::quantize_weight(w, o);
  Tensor d = quant::dequantize(q);
  for (int64_t n = 0; n < 8; n++) {
    float amax = 0;
    for (int64_t k = 0; k < 128; k++) amax = std::max(amax, std::fabs(w.data<float>()[n * 128 + k]));
    for (int64_t b = 0; b < 4; b++)
      EXPECT_EQ(q.scales.data<float>()[n * 4 + b], amax / 127.0f) << n << "," << b;
    const float s = amax / 127.0f;
    for (int64_t k = 0; k < 128; k++)
      EXPECT_EQ(d.data<float>()[n * 128 + k], std::nearbyint(w.data<float>()[n * 128 + k] / s) * s);
  }
  EXPECT_EQ(quant::to_json(o)["per_channel"], true);
  EXPECT_TRUE(quant::from_json(quant::to_json(o)).per_channel);
  o.symmetric = false;
  EXPECT_THROW(quant::quantize_weight(w, o), Error);
}

Tensor run_linear_q(const Tensor& x, const quant::QuantizedWeight& q) {
  EagerBuilder b;
  Var zp = q.zero_points.defined() ? b.wrap(q.zero_points) : Var();
  return F::linear_q(b.wrap(x), b.wrap(q.qweight), b.wrap(q.scales), zp, q.bits, q.group_size).tensor();
}

// Each instruction set the CPU has (scalar, AVX2, AVX-512) runs the fused loop in turn.
TEST(Quantize, LinearKernelMatchesLinearOnTheDequantizedWeight) {
  using kernels::LinearQIsa;
  struct Restore {
    ~Restore() { kernels::linear_q_cap_isa(LinearQIsa::avx512_vnni); }
  } restore;
  for (LinearQIsa isa : {LinearQIsa::scalar, LinearQIsa::avx2, LinearQIsa::avx512, LinearQIsa::avx512_vnni})
    for (const Mode& m : kModes)
      for (int64_t M : {1, 3, 8, 17}) {  // ≤ 8 rows: fused dot loop; more: dequantized tiles + sgemm
        kernels::linear_q_cap_isa(isa);
        SCOPED_TRACE(std::to_string(m.bits) + " bits, group " + std::to_string(m.group) + ", M " +
                     std::to_string(M) + ", isa " +
                     std::to_string(static_cast<int>(kernels::linear_q_isa())));
        Tensor w = randn({70, 256}, 5, 0.05f), x = randn({M, 256}, 9);
        auto q =
            quant::quantize_weight(w, quant::parse_options("int" + std::to_string(m.bits), m.group, m.sym));
        EagerBuilder b;
        Tensor ref = F::linear(b.wrap(x), b.wrap(quant::dequantize(q))).tensor();
        Tensor got = run_linear_q(x, q);
        ASSERT_EQ(got.shape(), ref.shape());
        for (int64_t i = 0; i < ref.numel(); i++)
          ASSERT_NEAR(got.data<float>()[i], ref.data<float>()[i],
                      1e-5 * (1 + std::fabs(ref.data<float>()[i])))
              << i;
      }
}

// act_bits 8: x rounded to int8 per block of the group (symmetric, amax / 127), on every ISA (VNNI: integer
// dot products; the others: the float loops on the rounded x) equals linear on the dequantized weight and
// the rounded x, computed here from the definition. Ks that are not a multiple of the VNNI loop's 128-weight
// chunk (96, 160) take its masked tail.
TEST(Quantize, LinearKernelWithInt8ActivationsMatchesItsDefinition) {
  using kernels::LinearQIsa;
  struct Restore {
    ~Restore() { kernels::linear_q_cap_isa(LinearQIsa::avx512_vnni); }
  } restore;
  for (LinearQIsa isa : {LinearQIsa::scalar, LinearQIsa::avx2, LinearQIsa::avx512, LinearQIsa::avx512_vnni})
    for (const Mode& m : kModes)
      for (int64_t K : {96, 160, 256})
        for (int64_t M : {1, 3, 8, 17}) {
          if (K % m.group) continue;
          kernels::linear_q_cap_isa(isa);
          SCOPED_TRACE(std::to_string(m.bits) + " bits, group " + std::to_string(m.group) + ", K " +
                       std::to_string(K) + ", M " + std::to_string(M) + ", isa " +
                       std::to_string(static_cast<int>(kernels::linear_q_isa())));
          Tensor w = randn({70, K}, 5, 0.05f), x = randn({M, K}, 9);
          auto q =
              quant::quantize_weight(w, quant::parse_options("int" + std::to_string(m.bits), m.group, m.sym));
          Tensor xr = Tensor::empty({M, K}, DType::F32);
          for (int64_t r = 0; r < M * K; r += m.group) {
            float amax = 0;
            for (int64_t k = 0; k < m.group; k++) amax = std::max(amax, std::fabs(x.data<float>()[r + k]));
            for (int64_t k = 0; k < m.group; k++)
              xr.data<float>()[r + k] =
                  std::nearbyint(x.data<float>()[r + k] * (1.0f / (amax / 127.0f))) * (amax / 127.0f);
          }
          EagerBuilder b;
          Tensor ref = F::linear(b.wrap(xr), b.wrap(quant::dequantize(q))).tensor();
          Var zp = q.zero_points.defined() ? b.wrap(q.zero_points) : Var();
          Tensor got =
              F::linear_q(b.wrap(x), b.wrap(q.qweight), b.wrap(q.scales), zp, q.bits, q.group_size, 8)
                  .tensor();
          ASSERT_EQ(got.shape(), ref.shape());
          for (int64_t i = 0; i < ref.numel(); i++)
            ASSERT_NEAR(got.data<float>()[i], ref.data<float>()[i],
                        1e-5 * (1 + std::fabs(ref.data<float>()[i])))
                << i;
        }
}

// hfx.embedding_q gathers de-quantized rows: exactly the rows of quant::dequantize.
TEST(Quantize, EmbeddingKernelGathersDequantizedRows) {
  for (const Mode& m : kModes) {
    SCOPED_TRACE(std::to_string(m.bits) + " bits, group " + std::to_string(m.group));
    auto q = quant::quantize_weight(randn({11, 128}, 4, 0.05f),
                                    quant::parse_options("int" + std::to_string(m.bits), m.group, m.sym));
    const Tensor table = quant::dequantize(q);
    const std::vector<int64_t> ids = {3, 0, 10, 3, 7, 1};
    EagerBuilder b;
    Var zp = q.zero_points.defined() ? b.wrap(q.zero_points) : Var();
    Tensor got = F::embedding_q(b.wrap(q.qweight), b.wrap(q.scales), zp,
                                b.wrap(Tensor::from_ints({2, 3}, ids)), q.bits, q.group_size)
                     .tensor()
                     .contiguous();
    ASSERT_EQ(got.shape(), (Shape{2, 3, 128}));
    for (size_t i = 0; i < ids.size(); i++)
      for (int64_t k = 0; k < 128; k++)
        ASSERT_EQ(got.data<float>()[i * 128 + k], table.data<float>()[ids[i] * 128 + k]) << i << " " << k;
  }
  EagerBuilder b;
  auto q = quant::quantize_weight(randn({4, 64}, 4), quant::parse_options("int4", 32, false));
  EXPECT_THROW(F::embedding_q(b.wrap(q.qweight), b.wrap(q.scales), b.wrap(q.zero_points),
                              b.wrap(Tensor::from_ints({1}, {4})), 4, 32),
               Error);
}

TEST(Quantize, ErrorsNameTheTensor) {
  Tensor w = randn({4, 48}, 1);
  try {
    quant::quantize_weight(w, quant::parse_options("int4", 32, false), "model.layers.0.mlp.up_proj.weight");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("model.layers.0.mlp.up_proj.weight"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("multiple of the group size 32"), std::string::npos) << e.what();
  }
  auto q = quant::quantize_weight(randn({4, 64}, 2), quant::parse_options("int4", 32, false));
  try {
    quant::describe(q.qweight, q.scales, q.zero_points, 96, "layers.3.q_proj.weight_q");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("layers.3.q_proj.weight_q"), std::string::npos) << e.what();
  }
  EXPECT_THROW(quant::parse_options("int3", 32, false), Error);
  EXPECT_THROW(quant::parse_options("int4", 48, false), Error);
}

}  // namespace
}  // namespace hfx
