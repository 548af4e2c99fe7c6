// Pre-quantized GPTQ / AWQ checkpoints (hfx/quant/checkpoint_formats.h), the layouts: tensors packed here by
// the published AutoGPTQ / AutoAWQ rules (written out in this file, not with hfx's packer) read back to the
// right codes, scales and zero points; groups larger than a MatMulNBits block cut exactly; the writer
// create-tiny uses is the reader's inverse; every malformed tensor or config refused naming the tensor.
// The models and their exports: tests/quant/ort_prequantized_test.cpp.
#include <gtest/gtest.h>

#include <cmath>

#include <cstring>

#include "hfx/core/error.h"
#include "hfx/quant/checkpoint_formats.h"
#include "models/model_test_util.h"
#include "quant/prequant_test_util.h"

namespace hfx::test {
namespace {

using nlohmann::json;

int code_of(int64_t k, int64_t n, int bits) { return static_cast<int>((k * 7 + n * 3 + 1) % (1 << bits)); }
int zero_of(int64_t g, int64_t n, int bits) {
  return static_cast<int>((g * 5 + n + 2) % ((1 << bits) - 1)) + 1;
}
float scale_of(int64_t g, int64_t n) { return 0.01f * static_cast<float>(1 + (g * 3 + n) % 11); }

// AutoGPTQ's QuantLinear.pack, as published: codes along K into int32 rows, zero points − 1 (v1) along N.
quant::PackedLinear pack_gptq(int64_t K, int64_t N, int bits, int64_t group, bool v2) {
  const int per = 32 / bits;
  const int64_t G = K / group;
  quant::PackedLinear t;
  t.qweight = Tensor::zeros({K / per, N}, DType::I32);
  t.qzeros = Tensor::zeros({G, N / per}, DType::I32);
  Tensor scales = Tensor::zeros({G, N}, DType::F32);
  t.g_idx = Tensor::zeros({K}, DType::I32);
  for (int64_t k = 0; k < K; k++) {
    t.g_idx.data<int32_t>()[k] = static_cast<int32_t>(k / group);
    for (int64_t n = 0; n < N; n++)
      t.qweight.data<int32_t>()[(k / per) * N + n] |=
          static_cast<int32_t>(static_cast<uint32_t>(code_of(k, n, bits)) << (bits * (k % per)));
  }
  for (int64_t g = 0; g < G; g++)
    for (int64_t n = 0; n < N; n++) {
      scales.data<float>()[g * N + n] = scale_of(g, n);
      const uint32_t z = static_cast<uint32_t>(zero_of(g, n, bits) - (v2 ? 0 : 1));
      t.qzeros.data<int32_t>()[g * (N / per) + n / per] |= static_cast<int32_t>(z << (bits * (n % per)));
    }
  t.scales = scales.to(DType::F16);
  return t;
}

// AutoAWQ's WQLinear_GEMM.from_linear pack: qweight[:, c] |= intweight[:, 8c + order[i]] << 4i.
quant::PackedLinear pack_awq(int64_t K, int64_t N, int64_t group) {
  const int order[8] = {0, 2, 4, 6, 1, 3, 5, 7};
  const int64_t G = K / group;
  quant::PackedLinear t;
  t.qweight = Tensor::zeros({K, N / 8}, DType::I32);
  t.qzeros = Tensor::zeros({G, N / 8}, DType::I32);
  Tensor scales = Tensor::zeros({G, N}, DType::F32);
  for (int64_t c = 0; c < N / 8; c++)
    for (int i = 0; i < 8; i++) {
      const int64_t n = c * 8 + order[i];
      for (int64_t k = 0; k < K; k++)
        t.qweight.data<int32_t>()[k * (N / 8) + c] |= static_cast<int32_t>(code_of(k, n, 4) << (4 * i));
      for (int64_t g = 0; g < G; g++)
        t.qzeros.data<int32_t>()[g * (N / 8) + c] |= static_cast<int32_t>(zero_of(g, n, 4) << (4 * i));
    }
  for (int64_t g = 0; g < G; g++)
    for (int64_t n = 0; n < N; n++) scales.data<float>()[g * N + n] = scale_of(g, n);
  t.scales = scales.to(DType::F16);
  return t;
}

// W[n, k] = (q − z) · s with the fp16-rounded scale, from the formulas above.
void expect_dequantized(const quant::QuantizedWeight& q, int64_t group, int bits) {
  const Tensor w = quant::dequantize(q);
  for (int64_t n = 0; n < q.N; n++)
    for (int64_t k = 0; k < q.K; k++) {
      const float s =
          Tensor::from_floats({1}, {scale_of(k / group, n)}).to(DType::F16).to(DType::F32).data<float>()[0];
      const float want = static_cast<float>(code_of(k, n, bits) - zero_of(k / group, n, bits)) * s;
      ASSERT_EQ(w.data<float>()[n * q.K + k], want) << "n " << n << " k " << k;
    }
}

TEST(Prequantized, GptqLayoutsReadToTheirCodes) {
  for (int bits : {4, 8})
    for (bool v2 : {false, true}) {
      SCOPED_TRACE(std::to_string(bits) + " bits, v2 " + std::to_string(v2));
      const auto q =
          quant::from_packed(cq_of("gptq", bits, 64, false, v2), pack_gptq(128, 48, bits, 64, v2), "l");
      EXPECT_EQ(q.group_size, 64);
      expect_dequantized(q, 64, bits);
    }
}

TEST(Prequantized, AwqLayoutReadsToItsCodes) {
  const auto q = quant::from_packed(cq_of("awq", 4, 32, false), pack_awq(96, 40, 32), "l");
  EXPECT_EQ(q.N, 40);
  EXPECT_EQ(q.K, 96);
  expect_dequantized(q, 32, 4);
}

// A group of 256 (and a whole row, group_size −1) becomes MatMulNBits blocks of 128 repeating its scale
// and zero point: the same weights.
TEST(Prequantized, LargeGroupsAreCutIntoBlocksExactly) {
  const auto q =
      quant::from_packed(cq_of("gptq", 4, 256, false, true), pack_gptq(512, 16, 4, 256, true), "l");
  EXPECT_EQ(q.group_size, 128);
  EXPECT_EQ(q.blocks(), 4);
  expect_dequantized(q, 256, 4);
  quant::PackedLinear row = pack_gptq(384, 8, 4, 384, true);
  row.g_idx = Tensor();
  const auto r = quant::from_packed(cq_of("gptq", 4, -1, false, true), row, "l");
  EXPECT_EQ(r.group_size, 128);
  expect_dequantized(r, 384, 4);
}

// The writer create-tiny uses is the reader's inverse (its tensors are also what the goldens read).
TEST(Prequantized, WriterRoundTrips) {
  Tensor w = tiny_random_tensor("w", {48, 128}, DType::F32, 3, 0.0, 0.05);
  for (const auto& [method, bits, sym, v2] :
       std::vector<std::tuple<std::string, int, bool, bool>>{{"gptq", 4, true, false},
                                                             {"gptq", 8, false, true},
                                                             {"gptq", 4, false, true},
                                                             {"awq", 4, false, false}}) {
    SCOPED_TRACE(method + " " + std::to_string(bits));
    const auto cq = cq_of(method, bits, 32, sym, v2);
    quant::QuantOptions o = quant::options_of(cq, 128);
    const auto q = quant::quantize_weight(w, o);
    const auto back = quant::from_packed(cq, quant::to_packed(cq, q, "w"), "w");
    ASSERT_EQ(back.zero_points.defined(), q.zero_points.defined());
    EXPECT_EQ(std::memcmp(back.qweight.data<uint8_t>(), q.qweight.data<uint8_t>(), q.qweight.numel()), 0);
    if (q.zero_points.defined()) {
      EXPECT_EQ(
          std::memcmp(back.zero_points.data<uint8_t>(), q.zero_points.data<uint8_t>(), q.zero_points.numel()),
          0);
    }
    const Tensor s16 = q.scales.to(DType::F16).to(DType::F32);
    for (int64_t i = 0; i < s16.numel(); i++) ASSERT_EQ(back.scales.data<float>()[i], s16.data<float>()[i]);
  }
}

TEST(Prequantized, MalformedTensorsAreRefusedNamingThem) {
  const std::string P = "model.layers.0.mlp.up_proj";
  // config says 8 bits, the tensors hold 4-bit packing: the zero points' shape gives it away
  expect_error(
      [&] { quant::from_packed(cq_of("gptq", 8, 64, false, true), pack_gptq(128, 48, 4, 64, true), P); },
      {P + ".qzeros", "8 bits", "int32 [1, 12]", "got int32 [2, 6]"});
  // config says group 32, the checkpoint has groups of 64
  expect_error(
      [&] { quant::from_packed(cq_of("gptq", 4, 32, false, true), pack_gptq(128, 48, 4, 64, true), P); },
      {P + ".qzeros", "group 32", "int32 [4, 6]", "got int32 [2, 6]"});
  quant::PackedLinear scales = pack_gptq(128, 48, 4, 64, true);
  scales.scales = Tensor::zeros({2, 40}, DType::F16);
  expect_error([&] { quant::from_packed(cq_of("gptq", 4, 64, false, true), scales, P); },
               {P + ".scales", "float16 [2, 48]", "got float16 [2, 40]"});
  // a packed shape that fits nothing: qweight with a missing row
  quant::PackedLinear bad = pack_awq(96, 40, 32);
  bad.qzeros = Tensor::zeros({3, 4}, DType::I32);
  expect_error([&] { quant::from_packed(cq_of("awq", 4, 32, false), bad, P); }, {P + ".qzeros", "[3, 5]"});
  bad = pack_awq(96, 40, 32);
  bad.scales = bad.scales.to(DType::F32);
  expect_error([&] { quant::from_packed(cq_of("awq", 4, 32, false), bad, P); }, {P + ".scales", "float16"});
  // act-order g_idx
  quant::PackedLinear act = pack_gptq(128, 16, 4, 64, true);
  std::swap(act.g_idx.data<int32_t>()[0], act.g_idx.data<int32_t>()[127]);
  expect_error([&] { quant::from_packed(cq_of("gptq", 4, 64, false, true), act, P); },
               {P + ".g_idx", "desc_act"});
  // sym true, but a zero point is not 8
  expect_error(
      [&] { quant::from_packed(cq_of("gptq", 4, 64, true, true), pack_gptq(128, 16, 4, 64, true), P); },
      {P + ".qzeros", "sym"});
  // the config itself
  expect_error(
      [] {
        quant::parse_checkpoint_quant({{"quant_method", "gptq"}, {"bits", 3}});
      },
      {"bits", "got 3"});
  expect_error(
      [] {
        quant::parse_checkpoint_quant({{"quant_method", "awq"}, {"bits", 8}});
      },
      {"bits", "awq"});
  expect_error(
      [] {
        quant::parse_checkpoint_quant({{"quant_method", "gptq"}, {"group_size", 48}});
      },
      {"group_size", "48"});
  expect_error(
      [] {
        quant::parse_checkpoint_quant({{"quant_method", "awq"}, {"version", "gemv"}});
      },
      {"gemv"});
  expect_error(
      [] {
        quant::parse_checkpoint_quant({{"quant_method", "bitsandbytes"}});
      },
      {"gptq or awq", "bitsandbytes"});
}

}  // namespace
}  // namespace hfx::test
