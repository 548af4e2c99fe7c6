// tests/kernels/kernel_ref.h — helpers for the kernel tests: seeded random tensors in any dtype,
// non-contiguous views holding given values, double-precision readback and tolerance checks.
#pragma once
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "hfx/core/dtype.h"
#include "hfx/core/tensor.h"
#include "hfx/ir/attrs.h"
#include "kernels/kernels.h"

namespace kt {
using namespace hfx;
using hfx::kernels::Tensors;

/// Uniform values in [lo, hi) stored in `dt` (the stored values are what references read back).
inline Tensor rand_t(const Shape& s, DType dt, uint32_t seed, float lo = -2.0f, float hi = 2.0f) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(static_cast<size_t>(shape_numel(s)));
  for (auto& x : v) x = d(g);
  return Tensor::from_floats(s, v, dt);
}
/// Integers in [lo, hi] stored in `dt` (floats too: handy for comparisons with ties).
inline Tensor randint_t(const Shape& s, DType dt, uint32_t seed, int64_t lo, int64_t hi) {
  std::mt19937 g(seed);
  std::uniform_int_distribution<int64_t> d(lo, hi);
  std::vector<int64_t> v(static_cast<size_t>(shape_numel(s)));
  for (auto& x : v) x = d(g);
  if (dtype_is_float(dt)) {
    std::vector<float> f(v.begin(), v.end());
    return Tensor::from_floats(s, f, dt);
  }
  return Tensor::from_ints(s, v, dt);
}

/// Row-major values as double (exact for every dtype we store, int64 up to 2^53).
inline std::vector<double> vals(const Tensor& t) {
  std::vector<double> r;
  if (dtype_is_float(t.dtype())) {
    auto f = t.to_floats();
    r.assign(f.begin(), f.end());
  } else {
    auto i = t.to_ints();
    r.assign(i.begin(), i.end());
  }
  return r;
}

inline std::vector<int64_t> unravel(int64_t i, const Shape& s) {
  std::vector<int64_t> idx(s.size());
  for (int64_t d = static_cast<int64_t>(s.size()) - 1; d >= 0; d--) {
    idx[d] = s[d] == 0 ? 0 : i % s[d];
    i = s[d] == 0 ? 0 : i / s[d];
  }
  return idx;
}
/// Row-major index into `in` (broadcast to the out index `oidx`, trailing-aligned).
inline int64_t bindex(const std::vector<int64_t>& oidx, const Shape& in) {
  int64_t off = 0, lead = static_cast<int64_t>(oidx.size()) - static_cast<int64_t>(in.size());
  for (size_t d = 0; d < in.size(); d++) off = off * in[d] + (in[d] == 1 ? 0 : oidx[d + lead]);
  return off;
}

/// Writes `t`'s values into a fresh view with the same shape but non-contiguous strides: every dim
/// padded and the last dim strided by 2 (for 0-d/1-element tensors a plain copy).
inline Tensor strided_copy(const Tensor& t) {
  Shape big = t.shape();
  for (auto& d : big) d = 2 * d + 1;
  if (big.empty()) return t.clone();
  Tensor b = Tensor::zeros(big, t.dtype());
  Tensor v = b;
  for (int64_t d = 0; d < t.dim(); d++) v = v.slice(d, 1, 1 + 2 * t.shape()[d], 2);
  Tensor c = t.contiguous();
  size_t es = dtype_size(t.dtype());
  const char* src = static_cast<const char*>(c.raw());
  char* base = static_cast<char*>(v.raw());
  for_each_offset(v.shape(), v.strides(), [&](int64_t i, int64_t off) {
    std::memcpy(base + off * static_cast<int64_t>(es), src + i * static_cast<int64_t>(es), es);
  });
  return v;
}
/// A view with `t`'s values whose last two dims are stored transposed.
inline Tensor transposed_copy(const Tensor& t) {
  if (t.dim() < 2) return strided_copy(t);
  return t.transpose(-1, -2).contiguous().transpose(-1, -2);
}

/// Value of `v` after rounding to storage dtype `dt`.
inline double round_to(DType dt, double v) {
  float f = static_cast<float>(v);
  if (dt == DType::F16) return f16_to_f32(f32_to_f16(f));
  if (dt == DType::BF16) return bf16_to_f32(f32_to_bf16(f));
  if (dt == DType::F32) return f;
  return v;
}

/// Relative precision of one rounding to dtype (half an ulp, as a fraction).
inline double dtype_eps(DType dt) {
  switch (dt) {
    case DType::F16:
      return 1.0 / 2048;  // 11-bit significand
    case DType::BF16:
      return 1.0 / 256;  // 8-bit significand
    default:
      return 1.0 / (1 << 24);  // f32
  }
}

/// |got - ref| <= atol + rtol * |ref| elementwise (NaN matches NaN, inf matches same inf).
inline void expect_close(const Tensor& got, const Shape& shape, DType dt, const std::vector<double>& ref,
                         double rtol, double atol, const std::string& what) {
  ASSERT_EQ(shape_to_string(got.shape()), shape_to_string(shape)) << what;
  ASSERT_EQ(dtype_name(got.dtype()), std::string(dtype_name(dt))) << what;
  ASSERT_TRUE(got.is_contiguous()) << what;
  auto g = vals(got);
  ASSERT_EQ(g.size(), ref.size()) << what;
  int bad = 0;
  for (size_t i = 0; i < g.size() && bad < 5; i++) {
    double r = ref[i], x = g[i];
    bool ok;
    if (std::isnan(r))
      ok = std::isnan(x);
    else if (std::isinf(r))
      ok = x == r;
    else
      ok = std::fabs(x - r) <= atol + rtol * std::fabs(r);
    if (!ok) {
      ADD_FAILURE() << what << ": element " << i << " got " << x << " want " << r << " (rtol " << rtol
                    << ", atol " << atol << ")";
      bad++;
    }
  }
}
/// Exact equality (ints, bools, copies).
inline void expect_equal(const Tensor& got, const Shape& shape, DType dt, const std::vector<double>& ref,
                         const std::string& what) {
  expect_close(got, shape, dt, ref, 0.0, 0.0, what);
}

inline Tensor run1(Tensors (*fn)(const Tensors&, const Attrs&), const Tensors& in, const Attrs& a = {}) {
  auto r = fn(in, a);
  EXPECT_EQ(r.size(), 1u);
  return r.at(0);
}

}  // namespace kt
