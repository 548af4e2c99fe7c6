// ONNX artifacts in ONNX Runtime: the run-time shape contract, symbolic sizes at several sizes,
// external data, opsets 18 and 23.
#include <gtest/gtest.h>

#include "export/onnx/onnx_test_util.h"
#include "hfx/core/error.h"
#include "hfx/ops/functional.h"

namespace hfx::onnx_test {
namespace {

// ids [B, S] (S in [1, 16]), mask [B, P + S], past [B, 2, P, 4]:
//   y = view(emb(ids), [B, S, 2, 4]) permuted, cat with past, sliced to the last S positions, viewed [B, S, 8].
struct Built {
  std::unique_ptr<Graph> g;
  Tensor table;
};
Built chain() {
  Built b;
  b.g = std::make_unique<Graph>();
  Graph& g = *b.g;
  Sym B = g.env().create_symbol("batch_size", 1, 8, 2);
  Sym S = g.env().create_symbol("sequence_length", 1, 16, 3);
  Sym P = g.env().create_symbol("past_sequence_length", 0, 32, 4);
  TraceBuilder tb(g);
  Var ids = tb.input("input_ids", TensorType{DType::I64, {B, S}});
  tb.input("attention_mask", TensorType{DType::I64, {B, P + S}});
  Var past = tb.input("past_key_values.0.key", TensorType{DType::F32, {B, Sym(2), P, Sym(4)}});
  std::vector<float> tv(10 * 8);
  for (size_t i = 0; i < tv.size(); i++) tv[i] = 0.01f * static_cast<float>(i) - 0.3f;
  b.table = Tensor::from_floats({10, 8}, tv);
  Var e = F::embedding(tb.param("embed", b.table), ids);
  Var k = F::permute(F::reshape(e, {B, S, Sym(2), Sym(4)}), {0, 2, 1, 3});
  Var all = F::cat({past, k}, 2);
  Var last = F::slice(all, 2, P, P + S);
  Var y = F::reshape(F::permute(last, {0, 2, 1, 3}), {B, S, Sym(8)});
  Var pos = F::arange(tb, P, P + S);
  g.add_output("y", y.value());
  g.add_output("present.0.key", all.value());
  g.add_output("positions", pos.value());
  return b;
}

rt::NamedTensors feeds(int64_t B, int64_t S, int64_t P, int64_t mask_len = -1) {
  std::vector<int64_t> ids(B * S);
  for (size_t i = 0; i < ids.size(); i++) ids[i] = static_cast<int64_t>(i % 10);
  if (mask_len < 0) mask_len = P + S;
  std::vector<int64_t> mask(B * mask_len, 1);
  std::vector<float> past(B * 2 * P * 4, 0.5f);
  return {{"input_ids", rt::RtTensor::i64({B, S}, ids)},
          {"attention_mask", rt::RtTensor::i64({B, mask_len}, mask)},
          {"past_key_values.0.key", rt::RtTensor::f32({B, 2, P, 4}, past)}};
}

class OrtLowering : public ::testing::TestWithParam<int> {};

TEST_P(OrtLowering, SymbolicSizesHoldAtSeveralSizes) {
  auto b = chain();
  TempDir dir("chain");
  onnx_export::LowerOptions lo;
  lo.opset = GetParam();
  rt::OrtSession s(lower_and_write(*b.g, lo, dir.path));
  for (auto [B, S, P] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{{1, 1, 0}, {2, 3, 4}, {3, 7, 9}, {1, 16, 32}}) {
    SCOPED_TRACE(::testing::Message() << "B=" << B << " S=" << S << " P=" << P);
    auto out = s.run(feeds(B, S, P));
    const auto& y = rt::find_tensor(out, "y");
    ASSERT_EQ(y.shape, (std::vector<int64_t>{B, S, 8}));
    auto yv = y.to_f32();
    for (int64_t i = 0; i < B * S; i++)
      for (int64_t j = 0; j < 8; j++) ASSERT_FLOAT_EQ(yv[i * 8 + j], b.table.data<float>()[(i % 10) * 8 + j]);
    EXPECT_EQ(rt::find_tensor(out, "present.0.key").shape, (std::vector<int64_t>{B, 2, P + S, 4}));
    auto pos = rt::find_tensor(out, "positions").to_i64();
    ASSERT_EQ(static_cast<int64_t>(pos.size()), S);
    for (int64_t i = 0; i < S; i++) EXPECT_EQ(pos[i], P + i);
  }
}

TEST_P(OrtLowering, OutOfRangeInputIsRejectedWithTheContract) {
  auto b = chain();
  TempDir dir("guard");
  onnx_export::LowerOptions lo;
  lo.opset = GetParam();
  rt::OrtSession s(lower_and_write(*b.g, lo, dir.path));
  try {
    s.run(feeds(1, 17, 0));  // sequence_length max is 16
    ADD_FAILURE() << "expected the artifact to reject sequence_length 17";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("hfx.contract: sequence_length in [1, 16]"), std::string::npos) << e.what();
  }
  try {
    s.run(feeds(1, 2, 3, /*mask_len=*/4));  // attention_mask must be past + sequence = 5
    ADD_FAILURE() << "expected the artifact to reject a mismatched attention_mask";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("attention_mask axis 1 == past_sequence_length + sequence_length"), std::string::npos)
        << e.what();
  }
  EXPECT_NO_THROW(s.run(feeds(8, 16, 32)));
}

TEST_P(OrtLowering, ExternalDataRoundTrip) {
  auto b = chain();
  TempDir dir("extdata");
  onnx_export::LowerOptions lo;
  lo.opset = GetParam();
  std::string embedded = lower_and_write(*b.g, lo, dir.path, "embedded.onnx", false);
  std::string external = lower_and_write(*b.g, lo, dir.path, "model.onnx", true);
  EXPECT_TRUE(fs::exists(dir.path / "model.onnx_data"));
  EXPECT_LT(fs::file_size(external), fs::file_size(embedded));
  rt::OrtSession a(embedded), c(external);
  auto ya = rt::find_tensor(a.run(feeds(2, 5, 3)), "y").to_f32();
  auto yc = rt::find_tensor(c.run(feeds(2, 5, 3)), "y").to_f32();
  EXPECT_EQ(ya, yc);
}

INSTANTIATE_TEST_SUITE_P(Opsets, OrtLowering, ::testing::Values(18, 23), [](const auto& i) { return "opset" + std::to_string(i.param); });

}  // namespace
}  // namespace hfx::onnx_test
