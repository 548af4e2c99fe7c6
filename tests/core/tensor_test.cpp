// Tensor views, copies and dtype conversions.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "hfx/core/error.h"
#include "hfx/core/tensor.h"

using namespace hfx;

TEST(Tensor, ViewsShareStorage) {
  Tensor t = Tensor::from_floats({2, 3}, {0, 1, 2, 3, 4, 5});
  Tensor tt = t.transpose(0, 1);
  EXPECT_FALSE(tt.is_contiguous());
  EXPECT_EQ(tt.storage(), t.storage());
  EXPECT_EQ(tt.item({2, 1}), 5.0);
  EXPECT_EQ(tt.contiguous().to_floats(), (std::vector<float>{0, 3, 1, 4, 2, 5}));
  Tensor s = t.slice(1, 1, 3);
  EXPECT_EQ(s.to_floats(), (std::vector<float>{1, 2, 4, 5}));
  Tensor e = t.slice(0, 0, 1).expand({4, 3});
  EXPECT_EQ(e.strides()[0], 0);
  EXPECT_EQ(e.to_floats().size(), 12u);
  EXPECT_EQ(t.reshape({3, -1}).shape(), (Shape{3, 2}));
  EXPECT_THROW(t.reshape({4, 2}), Error);
  EXPECT_EQ(t.select(1, 2).to_floats(), (std::vector<float>{2, 5}));
  EXPECT_EQ(t.unsqueeze(0).shape(), (Shape{1, 2, 3}));
}

TEST(Tensor, DtypeConversionsRoundToNearestEven) {
  // bf16: 1 + 2^-8 is exactly halfway between 1 and 1 + 2^-7 → rounds to even (1.0)
  EXPECT_EQ(bf16_to_f32(f32_to_bf16(1.0f + std::ldexp(1.0f, -8))), 1.0f);
  EXPECT_EQ(bf16_to_f32(f32_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8))), 1.0f + std::ldexp(1.0f, -6));
  // f16: every pattern round-trips through f32
  for (uint32_t h = 0; h < 65536; h++) {
    float f = f16_to_f32(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    ASSERT_EQ(f32_to_f16(f), h) << h;
  }
  EXPECT_EQ(f16_to_f32(f32_to_f16(65520.0f)), INFINITY);  // rounds up to inf
  EXPECT_EQ(f16_to_f32(f32_to_f16(65519.0f)), 65504.0f);
  EXPECT_TRUE(std::isnan(f16_to_f32(f32_to_f16(NAN))));
  EXPECT_EQ(f16_to_f32(f32_to_f16(std::ldexp(1.0f, -25))), 0.0f);  // tie with 0 → even (0)
  EXPECT_EQ(f16_to_f32(f32_to_f16(std::ldexp(1.5f, -25))), std::ldexp(1.0f, -24));
  Tensor t = Tensor::from_floats({3}, {1.5f, -2.25f, 3.0f}).to(DType::BF16).to(DType::I64);
  EXPECT_EQ(t.to_ints(), (std::vector<int64_t>{1, -2, 3}));  // truncation toward zero
  EXPECT_EQ(promote_types(DType::BF16, DType::F16), DType::F32);
  EXPECT_EQ(promote_types(DType::I32, DType::BF16), DType::BF16);
  EXPECT_THROW(dtype_from_name("F64"), Error);
}

// The tiled copy of a transposed tail ([..., A, B] with strides [..., 1, s]) equals the element-by-element
// definition, item(), at sizes that are not multiples of the 64-element tile, with outer dims, a sliced
// source (s larger than A), a broadcast column (s = 0), every element size and a dtype conversion.
TEST(Tensor, TransposedCopiesEqualTheElementwiseDefinition) {
  auto check = [](const Tensor& v, DType to) {
    std::vector<char> out(static_cast<size_t>(v.numel()) * dtype_size(to));
    copy_to_contiguous(v, out.data(), to);
    Tensor got = Tensor::zeros(v.shape(), to);
    std::memcpy(got.raw(), out.data(), out.size());
    const int64_t n = v.numel();
    Shape idx(v.shape().size(), 0);
    for (int64_t i = 0; i < n; i++) {
      const double want = Tensor::scalar(v.item(idx), v.dtype()).to(to).item({});
      ASSERT_EQ(got.item(idx), want) << "element " << i << " of " << shape_to_string(v.shape());
      for (int64_t d = static_cast<int64_t>(idx.size()) - 1; d >= 0 && ++idx[d] == v.shape()[d]; d--)
        idx[d] = 0;
    }
  };
  std::vector<float> vals(3 * 70 * 130);
  for (size_t i = 0; i < vals.size(); i++) vals[i] = static_cast<float>(i % 1000) * 0.25f;  // in u8's range
  for (DType dt : {DType::F32, DType::BF16, DType::F16, DType::I64, DType::U8}) {
    SCOPED_TRACE(dtype_name(dt));
    Tensor w = Tensor::from_floats({3, 130, 70}, vals).to(dt);
    check(w.transpose(1, 2), dt);                                // [3, 70, 130], strides [9100, 1, 70]
    check(w.select(0, 1).transpose(0, 1), dt);                   // 2-D
    check(w.slice(1, 5, 100).select(0, 2).transpose(0, 1), dt);  // a sliced source
    check(w.select(0, 0).slice(0, 0, 1).expand({64, 70}).transpose(0, 1), dt);  // s = 0
  }
  Tensor w = Tensor::from_floats({130, 70}, std::vector<float>(vals.begin(), vals.begin() + 9100));
  check(w.transpose(0, 1), DType::BF16);  // converted while copied
  check(w.to(DType::BF16).transpose(0, 1), DType::F32);
}
