// Reductions, softmax / log_softmax, cumsum, argmax and layer_norm against double loops: dim lists
// (empty = all, negative, several), keepdim, views that hit the row / column / copy paths, empty
// reductions, 1M-element sums, f16/bf16 storage, NaN and -inf rows.
#include <algorithm>
#include <limits>

#include "kernels/kernel_ref.h"

namespace {
using namespace kt;
namespace K = hfx::kernels;

/// Generic double reduction over `dims` (sorted, normalized) of a row-major tensor.
std::vector<double> ref_reduce(const std::vector<double>& x, const Shape& s, const std::vector<int64_t>& dims,
                               bool is_max, bool is_mean, Shape* out_shape, bool keepdim) {
  Shape os, osk;
  for (int64_t d = 0; d < static_cast<int64_t>(s.size()); d++) {
    bool red = std::find(dims.begin(), dims.end(), d) != dims.end();
    if (!red)
      os.push_back(s[d]), osk.push_back(s[d]);
    else
      osk.push_back(1);
  }
  *out_shape = keepdim ? osk : os;
  int64_t on = shape_numel(os);
  std::vector<double> acc(on, is_max ? -INFINITY : 0.0);
  std::vector<int64_t> cnt(on, 0);
  for (int64_t i = 0; i < static_cast<int64_t>(x.size()); i++) {
    auto idx = unravel(i, s);
    int64_t o = 0;
    for (size_t d = 0; d < s.size(); d++)
      if (std::find(dims.begin(), dims.end(), static_cast<int64_t>(d)) == dims.end()) o = o * s[d] + idx[d];
    if (is_max)
      acc[o] = (std::isnan(x[i]) || std::isnan(acc[o])) ? NAN : std::max(acc[o], x[i]);
    else
      acc[o] += x[i];
    cnt[o]++;
  }
  if (is_mean)
    for (int64_t o = 0; o < on; o++) acc[o] = cnt[o] ? acc[o] / cnt[o] : NAN;
  return acc;
}

TEST(KernelsReduce, SumMeanAmaxDimsKeepdimViewsDtypes) {
  const Shape s = {3, 4, 5};
  const std::vector<std::vector<int64_t>> dimsets = {{},     {0},    {1},    {-1},
                                                     {0, 2}, {0, 1}, {1, 2}, {-3, -2, -1}};
  uint32_t seed = 1;
  for (DType dt : {DType::F32, DType::F16, DType::BF16})
    for (const auto& dims : dimsets)
      for (bool keepdim : {false, true})
        for (int view = 0; view < 3; view++) {
          Tensor x = rand_t(s, dt, seed++);
          auto vx = vals(x);
          if (view == 1) x = strided_copy(x);
          if (view == 2) x = transposed_copy(x);
          std::vector<int64_t> nd;
          for (int64_t d : dims) nd.push_back(d < 0 ? d + 3 : d);
          if (dims.empty()) nd = {0, 1, 2};
          std::sort(nd.begin(), nd.end());
          Attrs a{{"dim", dims}, {"keepdim", keepdim}};
          // f32: block sums in f32 over ≤ 60 terms: ~1e-6 of Σ|x| (values O(1) so atol 1e-5 covers
          // cancellation); f16/bf16 add one output rounding
          double rt = 2 * dtype_eps(dt) + 1e-6;
          struct {
            const char* name;
            hfx::kernels::Tensors (*fn)(const Tensors&, const Attrs&);
            bool mx, mn;
          } ops[] = {
              {"sum", K::sum, false, false}, {"mean", K::mean, false, true}, {"amax", K::amax, true, false}};
          for (auto& op : ops) {
            Shape os;
            auto r = ref_reduce(vx, s, nd, op.mx, op.mn, &os, keepdim);
            for (auto& v : r) v = round_to(dt, v);
            expect_close(run1(op.fn, {x}, a), os, dt, r, rt, dt == DType::F32 ? 1e-5 : 2e-2,
                         std::string(op.name) + " " + dtype_name(dt) + " dims " +
                             std::to_string(dims.size()) + " keep " + std::to_string(keepdim) + " view " +
                             std::to_string(view));
          }
        }
}

TEST(KernelsReduce, LargeSumsStayAccurate) {
  // 1<<20 elements: f32 block partial sums added in double, so the error is ~1024·2^-24 of a block's
  // Σ|x| at worst and far smaller in total: 1e-6 relative to Σ|x| is a safe bound.
  const int64_t n = 1 << 20;
  Tensor x = rand_t({n}, DType::F32, 11, -1.0f, 3.0f);
  auto vx = vals(x);
  double ref = 0, mag = 0;
  for (double v : vx) ref += v, mag += std::fabs(v);
  Attrs all{{"dim", std::vector<int64_t>{}}, {"keepdim", false}};
  double got = run1(K::sum, {x}, all).item();
  EXPECT_NEAR(got, ref, 1e-6 * mag);
  EXPECT_NEAR(run1(K::mean, {x}, all).item(), ref / n, 1e-6 * mag / n);
  // the same as a [1024, 1024] column reduction (column loop) and a strided view
  Tensor m = x.reshape({1024, 1024});
  Tensor col = run1(K::sum, {m}, {{"dim", std::vector<int64_t>{0}}, {"keepdim", false}});
  auto g = vals(col);
  for (int64_t j = 0; j < 1024; j += 31) {
    double r = 0, mg = 0;
    for (int64_t i = 0; i < 1024; i++) r += vx[i * 1024 + j], mg += std::fabs(vx[i * 1024 + j]);
    EXPECT_NEAR(g[j], r, 1e-6 * mg);
  }
  Tensor every2 = x.slice(0, 0, n, 2);
  double r2 = 0, m2 = 0;
  for (int64_t i = 0; i < n; i += 2) r2 += vx[i], m2 += std::fabs(vx[i]);
  EXPECT_NEAR(run1(K::sum, {every2}, all).item(), r2, 1e-6 * m2);
  double amax = *std::max_element(vx.begin(), vx.end());
  EXPECT_EQ(run1(K::amax, {x}, all).item(), amax);
  // bf16 storage: the sum is computed in f32/double, then rounded once to bf16
  Tensor xb = x.to(DType::BF16);
  auto vb = vals(xb);
  double rb = 0;
  for (double v : vb) rb += v;
  EXPECT_NEAR(run1(K::sum, {xb}, all).item(), rb, 2 * dtype_eps(DType::BF16) * std::fabs(rb) + 1e-6 * mag);
}

TEST(KernelsReduce, IntegersEmptyNaN) {
  Tensor i = randint_t({4, 6}, DType::I32, 1, -100, 100);
  auto vi = vals(i);
  Shape os;
  auto r = ref_reduce(vi, {4, 6}, {1}, false, false, &os, false);
  expect_equal(run1(K::sum, {i}, {{"dim", std::vector<int64_t>{1}}, {"keepdim", false}}), os, DType::I64, r,
               "int sum");
  r = ref_reduce(vi, {4, 6}, {0}, true, false, &os, true);
  expect_equal(run1(K::amax, {i}, {{"dim", std::vector<int64_t>{0}}, {"keepdim", true}}), os, DType::I32, r,
               "int amax");
  Tensor bsum = run1(K::sum, {Tensor::from_ints({3}, {1, 0, 1}, DType::Bool)},
                     {{"dim", std::vector<int64_t>{}}, {"keepdim", false}});
  EXPECT_EQ(bsum.dtype(), DType::I64);
  EXPECT_EQ(bsum.item(), 2);
  // empty reductions: sum 0, mean NaN, amax throws
  Tensor e = Tensor::zeros({3, 0}, DType::F32);
  Attrs d1{{"dim", std::vector<int64_t>{1}}, {"keepdim", false}};
  expect_equal(run1(K::sum, {e}, d1), {3}, DType::F32, {0, 0, 0}, "empty sum");
  expect_equal(run1(K::mean, {e}, d1), {3}, DType::F32, {NAN, NAN, NAN}, "empty mean");
  EXPECT_THROW(run1(K::amax, {e}, d1), hfx::Error);
  expect_equal(run1(K::sum, {e}, {{"dim", std::vector<int64_t>{0}}, {"keepdim", true}}), {1, 0}, DType::F32,
               {}, "sum over non-empty dim of empty tensor");
  // NaN propagates through amax; 0-d input
  Tensor n = Tensor::from_floats({4}, {1.0f, NAN, 3.0f, 2.0f});
  EXPECT_TRUE(std::isnan(run1(K::amax, {n}, {{"dim", std::vector<int64_t>{0}}, {"keepdim", false}}).item()));
  Tensor z = Tensor::scalar(2.5);
  EXPECT_EQ(run1(K::sum, {z}, {{"dim", std::vector<int64_t>{}}, {"keepdim", false}}).item(), 2.5);
  EXPECT_EQ(run1(K::sum, {z}, {{"dim", std::vector<int64_t>{0}}, {"keepdim", false}}).item(), 2.5);
  EXPECT_THROW(run1(K::sum, {i}, {{"dim", std::vector<int64_t>{1, -1}}, {"keepdim", false}}), hfx::Error);
  EXPECT_THROW(run1(K::sum, {i}, {{"dim", std::vector<int64_t>{2}}, {"keepdim", false}}), hfx::Error);
}

TEST(KernelsReduce, Argmax) {
  Tensor x = randint_t({3, 4, 5}, DType::F32, 1, -3, 3);  // many ties: the first index wins
  auto vx = vals(x);
  for (int64_t dim : {0, 1, 2, -1})
    for (bool keep : {false, true})
      for (int view = 0; view < 2; view++) {
        int64_t d = dim < 0 ? dim + 3 : dim;
        Shape s = {3, 4, 5}, os;
        for (int64_t k = 0; k < 3; k++)
          if (k != d)
            os.push_back(s[k]);
          else if (keep)
            os.push_back(1);
        std::vector<double> r;
        Shape rs = s;
        rs[d] = 1;
        for (int64_t o = 0; o < shape_numel(rs); o++) {
          auto idx = unravel(o, rs);
          int64_t best = 0;
          double bv = -INFINITY;
          for (int64_t j = 0; j < s[d]; j++) {
            idx[d] = j;
            double v = vx[(idx[0] * 4 + idx[1]) * 5 + idx[2]];
            if (v > bv) bv = v, best = j;
          }
          r.push_back(best);
        }
        Tensor in = view ? transposed_copy(x) : x;
        expect_equal(run1(K::argmax, {in}, {{"dim", dim}, {"keepdim", keep}}), os, DType::I64, r,
                     "argmax dim " + std::to_string(dim));
      }
  Tensor n = Tensor::from_floats({5}, {1.0f, 7.0f, NAN, 9.0f, NAN}, DType::BF16);
  EXPECT_EQ(run1(K::argmax, {n}, {{"dim", int64_t{0}}, {"keepdim", false}}).item(), 2);
  Tensor i = Tensor::from_ints({2, 3}, {1, 5, 5, -1, -2, -3}, DType::I32);
  expect_equal(run1(K::argmax, {i}, {{"dim", int64_t{1}}, {"keepdim", false}}), {2}, DType::I64, {1, 0},
               "int argmax");
  EXPECT_THROW(run1(K::argmax, {Tensor::zeros({2, 0})}, {{"dim", int64_t{1}}, {"keepdim", false}}),
               hfx::Error);
}

TEST(KernelsReduce, Cumsum) {
  Tensor x = rand_t({3, 4, 5}, DType::F32, 2);
  auto vx = vals(x);
  for (int64_t dim : {0, 1, -1})
    for (DType dt : {DType::F32, DType::BF16}) {
      int64_t d = dim < 0 ? dim + 3 : dim;
      Tensor xd = x.to(dt);
      auto v = vals(xd);
      std::vector<double> r(v.size());
      Shape s = {3, 4, 5};
      for (int64_t i = 0; i < 60; i++) {
        auto idx = unravel(i, s);
        double acc = 0;
        for (int64_t j = 0; j <= idx[d]; j++) {
          auto k = idx;
          k[d] = j;
          acc += v[(k[0] * 4 + k[1]) * 5 + k[2]];
        }
        r[i] = round_to(dt, acc);
      }
      // accumulated in double, one rounding to f32 / bf16
      expect_close(run1(K::cumsum, {strided_copy(xd)}, {{"dim", dim}}), s, dt, r, 2 * dtype_eps(dt), 1e-6,
                   "cumsum " + std::to_string(dim));
    }
  Tensor i = Tensor::from_ints({2, 3}, {1, 2, 3, 4, 5, 6}, DType::I32);
  expect_equal(run1(K::cumsum, {i}, {{"dim", int64_t{1}}}), {2, 3}, DType::I64, {1, 3, 6, 4, 9, 15},
               "int cumsum");
}

TEST(KernelsReduce, SoftmaxAndLogSoftmax) {
  Shape s = {3, 4, 37};
  uint32_t seed = 20;
  for (DType dt : {DType::F32, DType::F16, DType::BF16})
    for (int64_t dim : {0, 1, 2, -1})
      for (int view = 0; view < 2; view++) {
        Tensor x = rand_t(s, dt, seed++, -8, 8);
        auto vx = vals(x);
        if (view) x = transposed_copy(x);
        int64_t d = dim < 0 ? dim + 3 : dim;
        std::vector<double> sm(vx.size()), lsm(vx.size());
        for (int64_t i = 0; i < static_cast<int64_t>(vx.size()); i++) {
          auto idx = unravel(i, s);
          double m = -INFINITY, z = 0;
          for (int64_t j = 0; j < s[d]; j++) {
            auto k = idx;
            k[d] = j;
            m = std::max(m, vx[(k[0] * 4 + k[1]) * 37 + k[2]]);
          }
          for (int64_t j = 0; j < s[d]; j++) {
            auto k = idx;
            k[d] = j;
            z += std::exp(vx[(k[0] * 4 + k[1]) * 37 + k[2]] - m);
          }
          sm[i] = round_to(dt, std::exp(vx[i] - m) / z);
          lsm[i] = round_to(dt, vx[i] - m - std::log(z));
        }
        // f32: exp ≤ 3 ulp plus the normalization: 2e-6 relative; log_softmax cancels near 0 → atol
        double rt = dt == DType::F32 ? 2e-6 : 2 * dtype_eps(dt) + 2e-6;
        expect_close(run1(K::softmax, {x}, {{"dim", dim}}), s, dt, sm, rt, 1e-9,
                     std::string("softmax ") + dtype_name(dt) + " dim " + std::to_string(dim));
        expect_close(run1(K::log_softmax, {x}, {{"dim", dim}}), s, dt, lsm, rt, 2e-6,
                     std::string("log_softmax ") + dtype_name(dt) + " dim " + std::to_string(dim));
      }
  // rows with -inf entries, and an all -inf row → NaN (as torch)
  Tensor m = Tensor::from_floats({2, 3}, {0.0f, -INFINITY, 0.0f, -INFINITY, -INFINITY, -INFINITY});
  auto g = vals(run1(K::softmax, {m}, {{"dim", int64_t{-1}}}));
  EXPECT_EQ(g[0], 0.5);
  EXPECT_EQ(g[1], 0.0);
  EXPECT_TRUE(std::isnan(g[3]));
  // a long row (vocab-sized)
  Tensor big = rand_t({2, 100000}, DType::F32, 99, -20, 20);
  auto vb = vals(big);
  auto gb = vals(run1(K::softmax, {big}, {{"dim", int64_t{1}}}));
  double total = 0;
  for (int64_t j = 0; j < 100000; j++) total += gb[j];
  EXPECT_NEAR(total, 1.0, 1e-5);
}

TEST(KernelsReduce, LayerNorm) {
  uint32_t seed = 40;
  for (DType dt : {DType::F32, DType::BF16, DType::F16})
    for (int wb = 0; wb < 4; wb++)
      for (int view = 0; view < 2; view++) {
        Shape s = {2, 3, 48};
        Tensor x = rand_t(s, dt, seed++, -3, 5), w = rand_t({48}, dt, seed++), b = rand_t({48}, dt, seed++);
        auto vx = vals(x), vw = vals(w), vb = vals(b);
        if (view) x = transposed_copy(x);
        std::vector<double> r(vx.size());
        for (int64_t row = 0; row < 6; row++) {
          double mu = 0, var = 0;
          for (int64_t i = 0; i < 48; i++) mu += vx[row * 48 + i];
          mu /= 48;
          for (int64_t i = 0; i < 48; i++) var += (vx[row * 48 + i] - mu) * (vx[row * 48 + i] - mu);
          var /= 48;
          for (int64_t i = 0; i < 48; i++) {
            double y = (vx[row * 48 + i] - mu) / std::sqrt(var + 1e-5);
            if (wb & 1) y *= vw[i];
            if (wb & 2) y += vb[i];
            r[row * 48 + i] = round_to(dt, y);
          }
        }
        Tensors in = {x, (wb & 1) ? w : Tensor(), (wb & 2) ? b : Tensor()};
        // f32 two-pass mean/variance: a few ulp of the O(1) outputs
        expect_close(run1(K::layer_norm, in, {{"eps", 1e-5}}), s, dt, r, 2 * dtype_eps(dt) + 1e-6, 1e-5,
                     std::string("layer_norm ") + dtype_name(dt) + " wb " + std::to_string(wb));
      }
}

}  // namespace
