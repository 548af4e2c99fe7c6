// Fused composite kernels (rms_norm, rope, sdpa) against naive double-precision loops written here
// from the op definitions: GQA, causal bottom-right alignment, sliding window, softcap, additive and
// bool masks with broadcasting, rows with no visible key (zeros, never NaN), decode (S = 1) and
// chunked prefill, non-contiguous q/k/v (transposed from [B, S, H, D]), f16/bf16 storage.
#include <limits>

#include "kernels/kernel_ref.h"

namespace {
using namespace kt;
namespace K = hfx::kernels;

TEST(KernelsFused, RmsNorm) {
  uint32_t seed = 1;
  for (DType dt : {DType::F32, DType::F16, DType::BF16})
    for (DType wdt : {dt, DType::F32})
      for (double off : {0.0, 1.0})
        for (int view = 0; view < 2; view++)
          for (const Shape& s : std::vector<Shape>{{2, 3, 64}, {1, 1}, {5, 4097}, {0, 8}}) {
            int64_t D = s.back(), rows = shape_numel(s) / std::max<int64_t>(1, D);
            Tensor x = rand_t(s, dt, seed++, -4, 4), w = rand_t({D}, wdt, seed++);
            auto vx = vals(x), vw = vals(w);
            if (view) x = strided_copy(x);
            std::vector<double> r(vx.size());
            for (int64_t i = 0; i < rows; i++) {
              double ss = 0;
              for (int64_t j = 0; j < D; j++) ss += vx[i * D + j] * vx[i * D + j];
              double inv = 1 / std::sqrt(ss / D + 1e-6);
              for (int64_t j = 0; j < D; j++)
                r[i * D + j] = round_to(dt, vx[i * D + j] * inv * (vw[j] + off));
            }
            // f32: sum of squares in f32 blocks + double, rsqrt and two products: < 1e-6 relative
            expect_close(
                run1(K::rms_norm, {x, w}, {{"eps", 1e-6}, {"weight_offset", off}}), s, dt, r,
                2 * dtype_eps(dt) + 1e-6, 1e-7,
                std::string("rms_norm ") + dtype_name(dt) + "/" + dtype_name(wdt) + " " + shape_to_string(s));
          }
}

std::vector<double> ref_rope(const std::vector<double>& x, const std::vector<double>& c,
                             const std::vector<double>& s, int64_t B, int64_t H, int64_t S, int64_t D,
                             int64_t R, int64_t Bc, bool inter) {
  std::vector<double> o(x.size());
  for (int64_t b = 0; b < B; b++)
    for (int64_t h = 0; h < H; h++)
      for (int64_t t = 0; t < S; t++) {
        const double* xr = &x[((b * H + h) * S + t) * D];
        const double* cr = &c[((Bc == 1 ? 0 : b) * S + t) * R];
        const double* sr = &s[((Bc == 1 ? 0 : b) * S + t) * R];
        double* orow = &o[((b * H + h) * S + t) * D];
        for (int64_t i = 0; i < D; i++) {
          if (i >= R) {
            orow[i] = xr[i];
          } else if (!inter) {
            double rot = i < R / 2 ? -xr[i + R / 2] : xr[i - R / 2];  // rotate_half
            orow[i] = xr[i] * cr[i] + rot * sr[i];
          } else {
            double rot = i % 2 == 0 ? -xr[i + 1] : xr[i - 1];
            orow[i] = xr[i] * cr[i] + rot * sr[i];
          }
        }
      }
  return o;
}

TEST(KernelsFused, Rope) {
  uint32_t seed = 100;
  for (DType dt : {DType::F32, DType::F16, DType::BF16})
    for (bool inter : {false, true})
      for (auto [B, H, S, D, R, Bc] : std::vector<std::array<int64_t, 6>>{
               {2, 3, 5, 16, 16, 2}, {1, 4, 7, 64, 32, 1}, {2, 2, 1, 8, 4, 1}, {1, 1, 3, 6, 2, 1}})
        for (int view = 0; view < 2; view++) {
          Tensor x = rand_t({B, H, S, D}, dt, seed++), c = rand_t({Bc, S, R}, dt, seed++, -1, 1),
                 s = rand_t({Bc, S, R}, dt, seed++, -1, 1);
          auto r = ref_rope(vals(x), vals(c), vals(s), B, H, S, D, R, Bc, inter);
          for (auto& v : r) v = round_to(dt, v);
          if (view) x = x.permute({0, 2, 1, 3}).contiguous().permute({0, 2, 1, 3});  // [B, S, H, D] storage
          // f32: two products and a sum of O(1) values: 1 ulp-ish of the operands' magnitude
          expect_close(run1(K::rope, {x, c, s}, {{"interleaved", inter}}), {B, H, S, D}, dt, r,
                       2 * dtype_eps(dt), dt == DType::F32 ? 1e-6 : 4 * dtype_eps(dt),
                       std::string("rope ") + dtype_name(dt) + (inter ? " interleaved" : " half") + " D " +
                           std::to_string(D) + " R " + std::to_string(R));
        }
  // cos/sin given as [S, R] broadcast over batch
  Tensor x = rand_t({2, 2, 3, 4}, DType::F32, 1), c = rand_t({3, 4}, DType::F32, 2),
         s = rand_t({3, 4}, DType::F32, 3);
  auto r = ref_rope(vals(x), vals(c), vals(s), 2, 2, 3, 4, 4, 1, false);
  expect_close(run1(K::rope, {x, c, s}, {{"interleaved", false}}), {2, 2, 3, 4}, DType::F32, r, 1e-6, 1e-6,
               "rope 2-d cos");
}

struct SdpaCase {
  int64_t B, Hq, Hkv, S, T, D, Dv;
  bool causal;
  int64_t window;
  double softcap;
  int mask;  // 0 none, 1 additive [B, 1, S, T], 2 additive [1, Hq, 1, T] f16, 3 bool [S, T]
};

std::vector<double> ref_sdpa(const SdpaCase& c, const std::vector<double>& q, const std::vector<double>& k,
                             const std::vector<double>& v, const Tensor& mask, double scale) {
  Shape full = {c.B, c.Hq, c.S, c.T};
  std::vector<double> mv;
  if (mask.defined()) mv = vals(mask);
  std::vector<double> o(c.B * c.Hq * c.S * c.Dv, 0.0);
  int64_t G = c.Hq / c.Hkv;
  for (int64_t b = 0; b < c.B; b++)
    for (int64_t h = 0; h < c.Hq; h++)
      for (int64_t i = 0; i < c.S; i++) {
        int64_t p = c.T - c.S + i;
        std::vector<double> sc(c.T, -INFINITY);
        for (int64_t j = 0; j < c.T; j++) {
          bool ok = (!c.causal || j <= p) && (c.window == 0 || p - j < c.window);
          if (!ok) continue;
          double d = 0;
          for (int64_t e = 0; e < c.D; e++)
            d += q[((b * c.Hq + h) * c.S + i) * c.D + e] * k[((b * c.Hkv + h / G) * c.T + j) * c.D + e];
          d *= scale;
          if (c.softcap > 0) d = c.softcap * std::tanh(d / c.softcap);
          if (mask.defined()) {
            double m = mv[bindex({b, h, i, j}, mask.shape())];
            if (mask.dtype() == DType::Bool)
              d = m != 0 ? d : -INFINITY;
            else
              d += m;
          }
          sc[j] = d;
        }
        double mx = -INFINITY;
        for (double x : sc) mx = std::max(mx, x);
        if (mx == -INFINITY) continue;  // no visible key: zeros
        double z = 0;
        for (auto& x : sc) z += (x = std::exp(x - mx));
        for (int64_t e = 0; e < c.Dv; e++) {
          double acc = 0;
          for (int64_t j = 0; j < c.T; j++) acc += sc[j] / z * v[((b * c.Hkv + h / G) * c.T + j) * c.Dv + e];
          o[((b * c.Hq + h) * c.S + i) * c.Dv + e] = acc;
        }
      }
  return o;
}

TEST(KernelsFused, SdpaAgainstNaive) {
  const std::vector<SdpaCase> cases = {
      {2, 4, 2, 9, 9, 16, 16, true, 0, 0, 0},       // prefill, GQA
      {1, 8, 2, 1, 100, 32, 32, true, 0, 0, 0},     // decode, grouped rows
      {1, 8, 2, 1, 100, 32, 16, false, 0, 0, 1},    // decode, mask, Dv != D
      {2, 4, 1, 3, 10, 8, 8, true, 0, 0, 2},        // speculative S = 3, grouped over S
      {1, 2, 2, 5, 3, 8, 8, true, 0, 0, 0},         // S > T: first rows see no key → zeros
      {1, 2, 1, 20, 20, 8, 8, true, 4, 0, 0},       // sliding window
      {1, 2, 1, 1, 50, 8, 8, true, 7, 0, 0},        // decode with window
      {1, 4, 2, 12, 12, 16, 16, true, 0, 20.0, 1},  // softcap + mask
      {2, 2, 2, 6, 11, 8, 8, false, 0, 0, 3},       // bool mask, not causal
      {1, 3, 3, 300, 300, 16, 16, true, 0, 0, 0},   // chunked prefill (several 128-row blocks)
      {1, 2, 1, 0, 5, 8, 8, true, 0, 0, 0},         // empty query
  };
  uint32_t seed = 1;
  for (const auto& c : cases)
    for (DType dt : {DType::F32, DType::BF16, DType::F16})
      for (int view = 0; view < 2; view++) {
        Tensor q = rand_t({c.B, c.Hq, c.S, c.D}, dt, seed++), k = rand_t({c.B, c.Hkv, c.T, c.D}, dt, seed++),
               v = rand_t({c.B, c.Hkv, c.T, c.Dv}, dt, seed++);
        Tensor mask;
        if (c.mask == 1) mask = rand_t({c.B, 1, c.S, c.T}, DType::F32, seed++, -3, 1);
        if (c.mask == 2) mask = rand_t({1, c.Hq, 1, c.T}, DType::F16, seed++, -3, 1);
        if (c.mask == 3) {
          mask = randint_t({c.S, c.T}, DType::Bool, seed++, 0, 1);
          // make row 1 fully masked to check the zero row
          for (int64_t j = 0; j < c.T && c.S > 1; j++) static_cast<uint8_t*>(mask.raw())[c.T + j] = 0;
        }
        double scale = 1.0 / std::sqrt(static_cast<double>(c.D));
        auto r = ref_sdpa(c, vals(q), vals(k), vals(v), mask, scale);
        for (auto& x : r) x = round_to(dt, x);
        if (view) {
          q = q.permute({0, 2, 1, 3}).contiguous().permute({0, 2, 1, 3});
          k = strided_copy(k);
          v = v.permute({0, 2, 1, 3}).contiguous().permute({0, 2, 1, 3});
        }
        Tensors in = {q, k, v};
        if (mask.defined()) in.push_back(mask);
        Attrs a{{"scale", scale}, {"causal", c.causal}, {"window", c.window}, {"softcap", c.softcap}};
        Tensor got = run1(K::sdpa, in, a);
        // f32: scores are D-term dot products and the output a T-term convex combination of O(1)
        // values; fast_exp and f32 sgemm keep errors ~1e-6, so 2e-5 absolute is generous
        expect_close(got, {c.B, c.Hq, c.S, c.Dv}, dt, r, 2 * dtype_eps(dt), 2e-5,
                     "sdpa S " + std::to_string(c.S) + " T " + std::to_string(c.T) + " " + dtype_name(dt) +
                         " view " + std::to_string(view));
        for (double x : vals(got)) ASSERT_FALSE(std::isnan(x));
      }
}

TEST(KernelsFused, SdpaThreadCountsAgree) {
  SdpaCase c{2, 8, 2, 64, 64, 32, 32, true, 0, 0, 0};
  Tensor q = rand_t({2, 8, 64, 32}, DType::F32, 1), k = rand_t({2, 2, 64, 32}, DType::F32, 2),
         v = rand_t({2, 2, 64, 32}, DType::F32, 3);
  Attrs a{{"scale", 0.125}, {"causal", true}, {"window", int64_t{0}}, {"softcap", 0.0}};
  auto r = ref_sdpa(c, vals(q), vals(k), vals(v), Tensor(), 0.125);
  int before = K::num_threads();
  for (int n : {1, 2, 5}) {
    K::set_num_threads(n);
    expect_close(run1(K::sdpa, {q, k, v}, a), {2, 8, 64, 32}, DType::F32, r, 0, 2e-5,
                 "threads " + std::to_string(n));
  }
  K::set_num_threads(before);
}

}  // namespace
