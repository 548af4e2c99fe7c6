// Elementwise kernels against double-precision loops: every binary/unary/scalar/logic op over shapes
// with broadcasting, size-1 and empty dims, non-contiguous views, and f32/f16/bf16/int storage.
#include <functional>
#include <limits>

#include "kernels/kernel_ref.h"

namespace {
using namespace kt;
namespace K = hfx::kernels;
using KFn = Tensors (*)(const Tensors&, const Attrs&);

// Tolerances: an f32 result is one f32 rounding of the f32 computation of exactly-stored inputs, so
// 1 ulp (2^-23 ≈ 1.2e-7) bounds + - * / max min; transcendental ops use std:: or fast_exp (≤ 3 ulp),
// composites (gelu, silu) compound a few roundings: 4e-6. f16/bf16 results are computed in f32 then
// rounded once: one ulp of the storage type (2 * dtype_eps) plus the f32 error.
double tol_for(DType out, double f32_rtol) {
  return out == DType::F32 ? f32_rtol : 2 * dtype_eps(out) + f32_rtol;
}

struct BinCase {
  Shape a, b;
};
const std::vector<BinCase> kBinShapes = {
    {{2, 3, 4}, {2, 3, 4}},
    {{2, 3, 4}, {4}},
    {{2, 1, 4}, {1, 3, 1}},
    {{}, {5}},
    {{5}, {}},
    {{0, 3}, {3}},
    {{1}, {7, 1}},
    {{3, 1}, {1, 1}},
    {{4, 5}, {4, 1}},
    {{1, 1, 1}, {2, 3, 1}},
};

struct BinOp {
  const char* name;
  KFn fn;
  std::function<double(double, double)> ref;
};
const std::vector<BinOp> kArith = {
    {"add", K::add, [](double x, double y) { return x + y; }},
    {"sub", K::sub, [](double x, double y) { return x - y; }},
    {"mul", K::mul, [](double x, double y) { return x * y; }},
    {"div", K::div, [](double x, double y) { return x / y; }},
    {"maximum", K::maximum, [](double x, double y) { return std::max(x, y); }},
    {"minimum", K::minimum, [](double x, double y) { return std::min(x, y); }},
};

std::vector<double> ref_binary(const Tensor& a, const Tensor& b, const Shape& os,
                               const std::function<double(double, double)>& f, DType out) {
  auto va = vals(a), vb = vals(b);
  std::vector<double> r(static_cast<size_t>(shape_numel(os)));
  for (size_t i = 0; i < r.size(); i++) {
    auto idx = unravel(static_cast<int64_t>(i), os);
    r[i] = round_to(out, f(va[bindex(idx, a.shape())], vb[bindex(idx, b.shape())]));
  }
  return r;
}

Shape bshape(const Shape& a, const Shape& b) {
  size_t n = std::max(a.size(), b.size());
  Shape r(n);
  for (size_t i = 0; i < n; i++) {
    int64_t x = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t y = i < n - b.size() ? 1 : b[i - (n - b.size())];
    r[i] = x == 1 ? y : x;
  }
  return r;
}

TEST(KernelsElementwise, ArithmeticFloatAllDtypesShapesAndViews) {
  const std::vector<std::pair<DType, DType>> dts = {{DType::F32, DType::F32},   {DType::F16, DType::F16},
                                                    {DType::BF16, DType::BF16}, {DType::F32, DType::BF16},
                                                    {DType::F16, DType::BF16},  {DType::BF16, DType::I64}};
  uint32_t seed = 1;
  for (const auto& op : kArith)
    for (const auto& [da, db] : dts)
      for (const auto& sc : kBinShapes)
        for (int view = 0; view < 3; view++) {
          Tensor a = rand_t(sc.a, da, seed++);
          Tensor b =
              dtype_is_float(db) ? rand_t(sc.b, db, seed++, 0.5f, 3.0f) : randint_t(sc.b, db, seed++, 1, 5);
          if (view == 1) a = strided_copy(a);
          if (view == 2) b = transposed_copy(b);
          DType out = promote_types(da, db);
          Shape os = bshape(sc.a, sc.b);
          Tensor got = run1(op.fn, {a, b});
          expect_close(got, os, out, ref_binary(a, b, os, op.ref, out), tol_for(out, 1.2e-7), 1e-30,
                       std::string(op.name) + " " + dtype_name(da) + "/" + dtype_name(db) + " " +
                           shape_to_string(sc.a) + "," + shape_to_string(sc.b) + " view " +
                           std::to_string(view));
        }
}

TEST(KernelsElementwise, ArithmeticIntegers) {
  Tensor a = randint_t({3, 4}, DType::I64, 1, -100, 100), b = randint_t({4}, DType::I32, 2, 1, 9);
  for (const auto& op : kArith) {
    if (std::string(op.name) == "div") continue;
    expect_equal(run1(op.fn, {a, b}), {3, 4}, DType::I64, ref_binary(a, b, {3, 4}, op.ref, DType::I64),
                 op.name);
  }
  Tensor c = randint_t({5}, DType::I32, 3, -9, 9), d = randint_t({5}, DType::I32, 4, -9, 9);
  expect_equal(run1(K::add, {c, d}), {5}, DType::I32, ref_binary(c, d, {5}, kArith[0].ref, DType::I32),
               "add i32");
  // int / int is true division (f32), as torch
  expect_close(run1(K::div, {a, b}), {3, 4}, DType::F32, ref_binary(a, b, {3, 4}, kArith[3].ref, DType::F32),
               1.2e-7, 0, "div int");
}

TEST(KernelsElementwise, LargeContiguousAndBroadcastRunsInParallel) {
  // big enough for the threaded path; inner-dim broadcast and a permuted view of the same data
  Tensor a = rand_t({256, 1024}, DType::F32, 7), b = rand_t({1024}, DType::F32, 8);
  auto ra = vals(a), rb = vals(b);
  std::vector<double> ref(ra.size());
  for (size_t i = 0; i < ra.size(); i++) ref[i] = static_cast<float>(ra[i] * rb[i % 1024]);
  expect_close(run1(K::mul, {a, b}), {256, 1024}, DType::F32, ref, 0, 0, "mul broadcast");
  Tensor at = a.transpose(0, 1);  // [1024, 256] view
  Tensor got = run1(K::add, {at, at});
  auto g = vals(got);
  for (int64_t i = 0; i < 1024; i += 97)
    for (int64_t j = 0; j < 256; j += 13) ASSERT_EQ(g[i * 256 + j], static_cast<float>(2 * ra[j * 1024 + i]));
}

TEST(KernelsElementwise, ThreadCountsGiveIdenticalResults) {
  Tensor a = rand_t({3, 70000}, DType::F32, 9), b = rand_t({3, 1}, DType::BF16, 10);
  int before = K::num_threads();
  std::vector<double> first;
  for (int n : {1, 3, 4}) {
    K::set_num_threads(n);
    EXPECT_EQ(K::num_threads(), n);
    auto g = vals(run1(K::sub, {a, b}));
    if (first.empty())
      first = g;
    else
      ASSERT_EQ(g, first) << n << " threads";
  }
  K::set_num_threads(before);
}

TEST(KernelsElementwise, Comparisons) {
  struct C {
    const char* name;
    KFn fn;
    std::function<bool(double, double)> f;
  };
  std::vector<C> cs = {{"eq", K::eq, [](double x, double y) { return x == y; }},
                       {"lt", K::lt, [](double x, double y) { return x < y; }},
                       {"le", K::le, [](double x, double y) { return x <= y; }},
                       {"gt", K::gt, [](double x, double y) { return x > y; }},
                       {"ge", K::ge, [](double x, double y) { return x >= y; }}};
  uint32_t seed = 100;
  for (const auto& c : cs)
    for (auto [da, db] : std::vector<std::pair<DType, DType>>{{DType::F32, DType::F32},
                                                              {DType::BF16, DType::F16},
                                                              {DType::I64, DType::I32},
                                                              {DType::F32, DType::I64}})
      for (const auto& sc : kBinShapes) {
        Tensor a = randint_t(sc.a, da, seed++, -3, 3), b = randint_t(sc.b, db, seed++, -3, 3);
        a = strided_copy(a);
        Shape os = bshape(sc.a, sc.b);
        auto r = ref_binary(
            a, b, os, [&](double x, double y) { return c.f(x, y) ? 1.0 : 0.0; }, DType::Bool);
        expect_equal(run1(c.fn, {a, b}), os, DType::Bool, r, c.name);
      }
}

TEST(KernelsElementwise, LogicAndWhere) {
  Tensor a = randint_t({2, 3, 4}, DType::Bool, 1, 0, 1), b = randint_t({3, 1}, DType::Bool, 2, 0, 1);
  Shape os = {2, 3, 4};
  expect_equal(run1(K::logical_and, {a, b}), os, DType::Bool,
               ref_binary(
                   a, b, os, [](double x, double y) { return (x != 0 && y != 0) ? 1.0 : 0.0; }, DType::Bool),
               "and");
  expect_equal(run1(K::logical_or, {strided_copy(a), b}), os, DType::Bool,
               ref_binary(
                   a, b, os, [](double x, double y) { return (x != 0 || y != 0) ? 1.0 : 0.0; }, DType::Bool),
               "or");
  // non-bool inputs are truthy
  Tensor f = Tensor::from_floats({3}, {0.0f, 2.5f, -1.0f});
  expect_equal(run1(K::logical_not, {f}), {3}, DType::Bool, {1, 0, 0}, "not");
  // where: cond broadcast, f32/bf16 values → f32; ints; non-contiguous
  Tensor c = randint_t({3, 1}, DType::Bool, 3, 0, 1);
  Tensor x = rand_t({2, 3, 4}, DType::F32, 4), y = rand_t({4}, DType::BF16, 5);
  auto vc = vals(c), vx = vals(x), vy = vals(y);
  std::vector<double> r(24);
  for (int64_t i = 0; i < 24; i++) {
    auto idx = unravel(i, os);
    r[i] = vc[bindex(idx, c.shape())] ? vx[i] : vy[bindex(idx, y.shape())];
  }
  expect_equal(run1(K::where, {c, transposed_copy(x), y}), os, DType::F32, r, "where");
  Tensor xi = randint_t({2, 3, 4}, DType::I64, 6, -50, 50), yi = Tensor::from_ints({}, {7}, DType::I64);
  auto vxi = vals(xi);
  for (int64_t i = 0; i < 24; i++) r[i] = vc[bindex(unravel(i, os), c.shape())] ? vxi[i] : 7;
  expect_equal(run1(K::where, {c, xi, yi}), os, DType::I64, r, "where int");
  expect_equal(run1(K::where, {Tensor::zeros({0, 4}, DType::Bool), x.slice(0, 0, 0).select(1, 0), y}), {0, 4},
               DType::F32, {}, "where empty");
}

TEST(KernelsElementwise, UnaryFloatOps) {
  struct U {
    const char* name;
    KFn fn;
    std::function<double(double)> f;
    float lo, hi;
    double rtol, atol;
    Attrs attrs;
  };
  auto sig = [](double x) { return 1 / (1 + std::exp(-x)); };
  const double kGeluK = std::sqrt(2.0 / M_PI);
  std::vector<U> us = {
      {"neg", K::neg, [](double x) { return -x; }, -3, 3, 0, 0, {}},
      {"abs", K::abs, [](double x) { return std::fabs(x); }, -3, 3, 0, 0, {}},
      {"relu", K::relu, [](double x) { return x > 0 ? x : 0; }, -3, 3, 0, 0, {}},
      {"exp", K::exp, [](double x) { return std::exp(x); }, -80, 80, 4e-7, 0, {}},
      {"log", K::log, [](double x) { return std::log(x); }, 0.01f, 50, 2.4e-7, 1e-7, {}},
      {"sqrt", K::sqrt, [](double x) { return std::sqrt(x); }, 0, 50, 1.2e-7, 0, {}},
      {"rsqrt", K::rsqrt, [](double x) { return 1 / std::sqrt(x); }, 0.01f, 50, 2.4e-7, 0, {}},
      {"tanh", K::tanh, [](double x) { return std::tanh(x); }, -6, 6, 2.4e-7, 1e-7, {}},
      {"sigmoid", K::sigmoid, sig, -20, 20, 6e-7, 0, {}},
      {"silu", K::silu, [&](double x) { return x * sig(x); }, -20, 20, 6e-7, 1e-7, {}},
      {"gelu", K::gelu, [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }, -6, 6, 4e-6,
       1e-7, Attrs{{"approximate", std::string("none")}}},
      {"gelu_tanh", K::gelu,
       [&](double x) { return 0.5 * x * (1 + std::tanh(kGeluK * (x + 0.044715 * x * x * x))); }, -6, 6, 4e-6,
       1e-7, Attrs{{"approximate", std::string("tanh")}}},
      {"sin", K::sin, [](double x) { return std::sin(x); }, -4, 4, 2.4e-7, 1e-7, {}},
      {"cos", K::cos, [](double x) { return std::cos(x); }, -4, 4, 2.4e-7, 1e-7, {}},
      {"reciprocal", K::reciprocal, [](double x) { return 1 / x; }, 0.1f, 9, 1.2e-7, 0, {}},
      {"erf", K::erf, [](double x) { return std::erf(x); }, -3, 3, 2.4e-7, 1e-7, {}},
  };
  uint32_t seed = 300;
  for (const auto& u : us)
    for (DType dt : {DType::F32, DType::F16, DType::BF16})
      for (const Shape& s : std::vector<Shape>{{}, {0}, {1}, {7, 33}, {2, 1, 5}, {40000}})
        for (int view = 0; view < 2; view++) {
          Tensor x = rand_t(s, dt, seed++, u.lo, u.hi);
          if (view) x = strided_copy(x);
          auto vx = vals(x);
          std::vector<double> r(vx.size());
          for (size_t i = 0; i < vx.size(); i++) r[i] = round_to(dt, u.f(vx[i]));
          double rtol = dt == DType::F32 ? u.rtol : 2 * dtype_eps(dt) + u.rtol;
          double atol =
              dt == DType::F32 ? u.atol : u.atol + 1e-6;  // f16 results near 0 are subnormal-rounded
          expect_close(run1(u.fn, {x}, u.attrs), s, dt, r, rtol, atol,
                       std::string(u.name) + " " + dtype_name(dt) + " " + shape_to_string(s));
        }
}

TEST(KernelsElementwise, ExpEdgeValues) {
  Tensor x = Tensor::from_floats({8}, {-INFINITY, INFINITY, NAN, 0.0f, -100.0f, 88.0f, 89.0f, -104.0f});
  auto g = vals(run1(K::exp, {x}));
  EXPECT_EQ(g[0], 0.0);
  EXPECT_EQ(g[1], INFINITY);
  EXPECT_TRUE(std::isnan(g[2]));
  EXPECT_EQ(g[3], 1.0);
  // exp(-100) is an f32 subnormal (~26 × the smallest): within one subnormal step of the nearest f32
  EXPECT_NEAR(g[4], static_cast<float>(std::exp(-100.0)), 1.5 * std::numeric_limits<float>::denorm_min());
  EXPECT_NEAR(g[5] / std::exp(88.0), 1.0, 1e-6);
  EXPECT_EQ(g[6], INFINITY);
  EXPECT_EQ(g[7], 0.0);
}

TEST(KernelsElementwise, IntegerUnaryKeepDtype) {
  Tensor x = randint_t({4, 5}, DType::I32, 1, -20, 20);
  auto vx = vals(x);
  std::vector<double> n(vx.size()), ab(vx.size()), re(vx.size());
  for (size_t i = 0; i < vx.size(); i++)
    n[i] = -vx[i], ab[i] = std::fabs(vx[i]), re[i] = std::max(0.0, vx[i]);
  expect_equal(run1(K::neg, {x}), {4, 5}, DType::I32, n, "neg");
  expect_equal(run1(K::abs, {strided_copy(x)}), {4, 5}, DType::I32, ab, "abs");
  expect_equal(run1(K::relu, {x}), {4, 5}, DType::I32, re, "relu");
  // float math on ints → f32
  Tensor e = run1(K::exp, {Tensor::from_ints({2}, {0, 1})});
  EXPECT_EQ(e.dtype(), DType::F32);
}

TEST(KernelsElementwise, ScalarOps) {
  uint32_t seed = 500;
  for (DType dt : {DType::F32, DType::F16, DType::BF16})
    for (int view = 0; view < 2; view++) {
      Tensor x = rand_t({3, 17}, dt, seed++, 0.1f, 3.0f);
      if (view) x = transposed_copy(x);
      auto vx = vals(x);
      double tol = tol_for(dt, 2.4e-7);
      auto check = [&](KFn fn, const Attrs& a, std::function<double(double)> f, double rt,
                       const std::string& what) {
        std::vector<double> r(vx.size());
        for (size_t i = 0; i < vx.size(); i++) r[i] = round_to(dt, f(vx[i]));
        expect_close(run1(fn, {x}, a), {3, 17}, dt, r, rt, 0, what + " " + dtype_name(dt));
      };
      check(
          K::add_scalar, {{"other", 1.5}}, [](double v) { return v + 1.5; }, tol, "add_scalar");
      check(
          K::mul_scalar, {{"other", -0.25}}, [](double v) { return v * -0.25; }, tol, "mul_scalar");
      for (double e : {2.0, 0.5, -1.0, 3.0, 1.0, 1.7, -0.5})
        check(
            K::pow_scalar, {{"exponent", e}}, [e](double v) { return std::pow(v, e); }, tol_for(dt, 1e-6),
            "pow " + std::to_string(e));
    }
  // integer inputs keep their dtype (the op table infers same_as_first); pow is always float
  Tensor i = Tensor::from_ints({3}, {1, -2, 3}, DType::I32);
  expect_equal(run1(K::add_scalar, {i}, {{"other", 2.0}}), {3}, DType::I32, {3, 0, 5}, "int + 2");
  expect_equal(run1(K::add_scalar, {i}, {{"other", 0.5}}), {3}, DType::I32, {1, -1, 3},
               "int + 0.5 truncates");
  expect_equal(run1(K::mul_scalar, {i}, {{"other", 3.0}}), {3}, DType::I32, {3, -6, 9}, "int * 3");
  expect_equal(run1(K::pow_scalar, {i}, {{"exponent", 2.0}}), {3}, DType::F32, {1, 4, 9}, "int ^ 2");
}

}  // namespace
