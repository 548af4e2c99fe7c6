// f16 / bf16 conversions: every 16-bit pattern round-trips, f32 → f16/bf16 picks the nearest value
// with ties to even (checked against a double-precision search, on ties, subnormals, overflow and
// random values), inf and NaN survive, and the bulk convert_elements paths agree with the scalar ones.
#include <random>

#include "kernels/kernel_ref.h"

namespace {
using namespace kt;

bool is_nan16(uint16_t h) { return (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0; }
bool is_nanbf(uint16_t b) { return (b & 0x7f80u) == 0x7f80u && (b & 0x7fu) != 0; }

TEST(DTypeConvert, AllF16PatternsRoundTrip) {
  for (uint32_t h = 0; h < 65536; h++) {
    float f = f16_to_f32(static_cast<uint16_t>(h));
    uint16_t back = f32_to_f16(f);
    if (is_nan16(static_cast<uint16_t>(h))) {
      ASSERT_TRUE(std::isnan(f)) << h;
      ASSERT_TRUE(is_nan16(back)) << h;
      ASSERT_EQ(back & 0x8000u, h & 0x8000u) << h;
    } else {
      ASSERT_EQ(back, h) << "pattern " << h << " value " << f;
    }
  }
}

TEST(DTypeConvert, AllBf16PatternsRoundTrip) {
  for (uint32_t b = 0; b < 65536; b++) {
    float f = bf16_to_f32(static_cast<uint16_t>(b));
    uint16_t back = f32_to_bf16(f);
    if (is_nanbf(static_cast<uint16_t>(b))) {
      ASSERT_TRUE(std::isnan(f)) << b;
      ASSERT_TRUE(is_nanbf(back)) << b;
    } else {
      ASSERT_EQ(back, b) << b;
    }
  }
}

/// The f16 pattern nearest to x (ties to even mantissa), by search over the finite non-negative
/// patterns in double; beyond the largest finite value rounding follows IEEE (≥ 65520 → inf).
uint16_t nearest_f16(float x) {
  double ax = std::fabs(static_cast<double>(x));
  uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  if (ax >= 65520.0) return sign | 0x7c00;
  // binary search over monotone patterns 0..0x7bff
  uint16_t lo = 0, hi = 0x7bff;
  while (lo < hi) {
    uint16_t mid = static_cast<uint16_t>((lo + hi + 1) / 2);
    if (static_cast<double>(f16_to_f32(mid)) <= ax)
      lo = mid;
    else
      hi = mid - 1;
  }
  uint16_t best = lo;
  if (lo < 0x7bff) {
    double d0 = ax - f16_to_f32(lo), d1 = static_cast<double>(f16_to_f32(lo + 1)) - ax;
    if (d1 < d0 || (d1 == d0 && (lo & 1))) best = lo + 1;
  }
  return sign | best;
}

uint16_t nearest_bf16(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  uint16_t sign = (u >> 16) & 0x8000;
  double ax = std::fabs(static_cast<double>(x));
  // candidates: truncation and the next pattern up (past the largest finite value, IEEE rounds as if
  // the next value were 2^128, which is inf)
  uint16_t t = static_cast<uint16_t>((u & 0x7fffffffu) >> 16);
  double a = bf16_to_f32(t);
  double b = t == 0x7f7f ? std::ldexp(1.0, 128) : static_cast<double>(bf16_to_f32(t + 1));
  double d0 = ax - a, d1 = b - ax;
  if (d1 < d0 || (d1 == d0 && (t & 1))) t++;
  return sign | t;
}

TEST(DTypeConvert, F32ToF16NearestEvenTiesSubnormalsOverflow) {
  // exact midpoints between every pair of adjacent finite f16 values (representable in f32)
  for (uint16_t h = 0; h < 0x7bff; h++) {
    float a = f16_to_f32(h), b = f16_to_f32(h + 1);
    float mid = static_cast<float>((static_cast<double>(a) + b) / 2);
    ASSERT_EQ(static_cast<double>(mid), (static_cast<double>(a) + b) / 2);
    uint16_t want = (h & 1) ? h + 1 : h;
    ASSERT_EQ(f32_to_f16(mid), want) << "tie between " << a << " and " << b;
    ASSERT_EQ(f32_to_f16(-mid), want | 0x8000) << "negative tie " << a;
    // just either side of the tie
    ASSERT_EQ(f32_to_f16(std::nextafter(mid, 0.0f)), h) << a;
    ASSERT_EQ(f32_to_f16(std::nextafter(mid, INFINITY)), h + 1) << a;
  }
  EXPECT_EQ(f32_to_f16(65504.0f), 0x7bff);
  EXPECT_EQ(f32_to_f16(65519.99f), 0x7bff);
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7c00);  // tie with 65536 → even → inf
  EXPECT_EQ(f32_to_f16(1e10f), 0x7c00);
  EXPECT_EQ(f32_to_f16(-INFINITY), 0xfc00);
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -25)), 0x0000);  // half the smallest subnormal → 0
  EXPECT_EQ(f32_to_f16(std::nextafter(std::ldexp(1.0f, -25), 1.0f)),
            0x0001);                                     // just above → smallest subnormal
  EXPECT_EQ(f32_to_f16(std::ldexp(3.0f, -25)), 0x0002);  // 1.5 ulp tie → even (2)
  EXPECT_EQ(f32_to_f16(-0.0f), 0x8000);
  EXPECT_TRUE(is_nan16(f32_to_f16(NAN)));
  EXPECT_TRUE(is_nan16(f32_to_f16(-NAN)));
  std::mt19937 g(1);
  std::uniform_int_distribution<uint32_t> bits(0, 0xffffffffu);
  for (int i = 0; i < 200000; i++) {
    uint32_t u = bits(g);
    // bias towards the f16 range: exponents 100..145
    u = (u & 0x807fffffu) | ((100u + (u >> 23) % 46u) << 23);
    float f;
    std::memcpy(&f, &u, 4);
    ASSERT_EQ(f32_to_f16(f), nearest_f16(f)) << f;
  }
}

TEST(DTypeConvert, F32ToBf16NearestEven) {
  std::mt19937 g(2);
  std::uniform_int_distribution<uint32_t> bits(0, 0xffffffffu);
  for (int i = 0; i < 200000; i++) {
    uint32_t u = bits(g);
    float f;
    std::memcpy(&f, &u, 4);
    if (std::isnan(f)) {
      ASSERT_TRUE(is_nanbf(f32_to_bf16(f)));
      continue;
    }
    if (std::isinf(f)) continue;
    ASSERT_EQ(f32_to_bf16(f), nearest_bf16(f)) << f;
  }
  // ties: exactly half a bf16 ulp above an even / odd pattern
  EXPECT_EQ(f32_to_bf16(bf16_to_f32(0x3f80) + std::ldexp(1.0f, -8)), 0x3f80);  // 1 + 2^-8: tie → even 0x3f80
  EXPECT_EQ(f32_to_bf16(bf16_to_f32(0x3f81) + std::ldexp(1.0f, -8)), 0x3f82);  // odd → up
  EXPECT_EQ(f32_to_bf16(std::numeric_limits<float>::max()), 0x7f80);           // rounds to inf
  EXPECT_EQ(f32_to_bf16(INFINITY), 0x7f80);
  EXPECT_EQ(f32_to_bf16(std::numeric_limits<float>::denorm_min()), 0x0000);
  EXPECT_EQ(f32_to_bf16(std::ldexp(1.0f, -133)), 0x0001);  // smallest bf16 subnormal is exact
}

TEST(DTypeConvert, BulkPathsMatchScalar) {
  std::mt19937 g(3);
  std::uniform_int_distribution<uint32_t> bits(0, 0xffffffffu);
  std::vector<float> f(4097);
  for (auto& x : f) {
    uint32_t u = bits(g);
    std::memcpy(&x, &u, 4);
  }
  std::vector<uint16_t> h(f.size()), b(f.size());
  convert_elements(f.data(), DType::F32, h.data(), DType::F16, f.size());
  convert_elements(f.data(), DType::F32, b.data(), DType::BF16, f.size());
  for (size_t i = 0; i < f.size(); i++) {
    ASSERT_EQ(h[i], f32_to_f16(f[i]));
    ASSERT_EQ(b[i], f32_to_bf16(f[i]));
  }
  std::vector<float> fh(f.size()), fb(f.size());
  convert_elements(h.data(), DType::F16, fh.data(), DType::F32, f.size());
  convert_elements(b.data(), DType::BF16, fb.data(), DType::F32, f.size());
  for (size_t i = 0; i < f.size(); i++) {
    float x = f16_to_f32(h[i]), y = bf16_to_f32(b[i]);
    ASSERT_TRUE(std::memcmp(&fh[i], &x, 4) == 0);
    ASSERT_TRUE(std::memcmp(&fb[i], &y, 4) == 0);
  }
  // f16 ↔ bf16 goes through f32 exactly once
  std::vector<uint16_t> hb(f.size());
  convert_elements(h.data(), DType::F16, hb.data(), DType::BF16, f.size());
  for (size_t i = 0; i < f.size(); i++)
    if (!is_nan16(h[i])) {
      ASSERT_EQ(hb[i], f32_to_bf16(f16_to_f32(h[i])));
    }
}

}  // namespace
