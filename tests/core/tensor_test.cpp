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
