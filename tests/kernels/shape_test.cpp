// Indexing, shape and factory kernels: exact results (pure data movement) including views as inputs,
// negative dims / indices, empty tensors, dtype promotion in cat, and Python-style slice clamping.
#include "kernels/kernel_ref.h"

namespace {
using namespace kt;
namespace K = hfx::kernels;

std::vector<double> gather_view(const Tensor& v) { return vals(v.contiguous()); }

TEST(KernelsShape, Embedding) {
  for (DType wdt : {DType::F32, DType::BF16, DType::F16})
    for (DType idt : {DType::I64, DType::I32}) {
      Tensor w = rand_t({10, 6}, wdt, 1);
      Tensor idx = Tensor::from_ints({2, 3}, {0, 9, 3, 3, -1, 5}, idt);
      auto vw = vals(w);
      std::vector<double> r;
      for (int64_t i : {0, 9, 3, 3, 9, 5})
        for (int64_t d = 0; d < 6; d++) r.push_back(vw[i * 6 + d]);
      expect_equal(run1(K::embedding, {w, idx}), {2, 3, 6}, wdt, r, "embedding");
      expect_equal(run1(K::embedding, {transposed_copy(w), idx}), {2, 3, 6}, wdt, r,
                   "embedding strided weight");
      EXPECT_THROW(run1(K::embedding, {w, Tensor::from_ints({1}, {10}, idt)}), hfx::Error);
    }
  Tensor w = rand_t({4, 3}, DType::F32, 2);
  EXPECT_EQ(shape_to_string(run1(K::embedding, {w, Tensor::zeros({0}, DType::I64)}).shape()), "[0, 3]");
  EXPECT_EQ(shape_to_string(run1(K::embedding, {w, Tensor::from_ints({}, {2})}).shape()), "[3]");
}

TEST(KernelsShape, IndexSelectAndCopy) {
  Tensor x = rand_t({3, 4, 5}, DType::BF16, 3);
  for (int64_t dim : {0, 1, 2, -1}) {
    int64_t d = dim < 0 ? dim + 3 : dim;
    Tensor idx = Tensor::from_ints({3}, {2, 0, 2});
    Tensor got = run1(K::index_select, {strided_copy(x), idx}, {{"dim", dim}});
    Shape os = x.shape();
    os[d] = 3;
    std::vector<double> r;
    auto vx = vals(x);
    for (int64_t i = 0; i < shape_numel(os); i++) {
      auto idx2 = unravel(i, os);
      idx2[d] = std::vector<int64_t>{2, 0, 2}[idx2[d]];
      r.push_back(vx[(idx2[0] * 4 + idx2[1]) * 5 + idx2[2]]);
    }
    expect_equal(got, os, DType::BF16, r, "index_select dim " + std::to_string(dim));
  }
  // index_copy: a copy of a with rows replaced; src converted to a's dtype; input untouched
  Tensor a = rand_t({4, 3}, DType::F32, 4), src = rand_t({2, 3}, DType::BF16, 5);
  auto va = vals(a), vs = vals(src);
  Tensor got =
      run1(K::index_copy, {a, Tensor::from_ints({2}, {3, 1}), transposed_copy(src)}, {{"dim", int64_t{0}}});
  std::vector<double> r = va;
  for (int64_t j = 0; j < 3; j++) r[3 * 3 + j] = vs[j], r[1 * 3 + j] = vs[3 + j];
  expect_equal(got, {4, 3}, DType::F32, r, "index_copy");
  EXPECT_EQ(vals(a), va);
  // along the last dim (KV-cache style update)
  Tensor c = Tensor::zeros({2, 5}, DType::F32), s2 = rand_t({2, 1}, DType::F32, 6);
  Tensor g2 = run1(K::index_copy, {c, Tensor::from_ints({1}, {-2}), s2}, {{"dim", int64_t{-1}}});
  EXPECT_EQ(g2.item({1, 3}), s2.item({1, 0}));
  EXPECT_EQ(g2.item({1, 4}), 0.0);
  EXPECT_THROW(run1(K::index_copy, {c, Tensor::from_ints({1}, {1}), rand_t({2, 2}, DType::F32, 7)},
                    {{"dim", int64_t{1}}}),
               hfx::Error);
}

TEST(KernelsShape, Cat) {
  Tensor a = rand_t({2, 3, 4}, DType::F32, 1), b = rand_t({2, 1, 4}, DType::BF16, 2),
         c = rand_t({2, 2, 4}, DType::F32, 3);
  Tensor got = run1(K::cat, {a, transposed_copy(b), c}, {{"dim", int64_t{-2}}});
  auto va = vals(a), vb = vals(b), vc = vals(c);
  std::vector<double> r;
  for (int64_t i = 0; i < 2; i++) {
    r.insert(r.end(), va.begin() + i * 12, va.begin() + (i + 1) * 12);
    r.insert(r.end(), vb.begin() + i * 4, vb.begin() + (i + 1) * 4);
    r.insert(r.end(), vc.begin() + i * 8, vc.begin() + (i + 1) * 8);
  }
  expect_equal(got, {2, 6, 4}, DType::F32, r, "cat dim 1");
  // dim 0, empty pieces, legacy 1-d empty skipped
  Tensor e = Tensor::zeros({0, 3, 4}, DType::F32);
  Tensor g0 = run1(K::cat, {e, a, Tensor::zeros({0}, DType::F32), a}, {{"dim", int64_t{0}}});
  std::vector<double> r0 = va;
  r0.insert(r0.end(), va.begin(), va.end());
  expect_equal(g0, {4, 3, 4}, DType::F32, r0, "cat dim 0");
  Tensor i1 = Tensor::from_ints({2}, {1, 2}, DType::I32), i2 = Tensor::from_ints({1}, {3});
  expect_equal(run1(K::cat, {i1, i2}, {{"dim", int64_t{0}}}), {3}, DType::I64, {1, 2, 3}, "cat ints promote");
  EXPECT_THROW(run1(K::cat, {a, rand_t({3, 3, 4}, DType::F32, 9)}, {{"dim", int64_t{1}}}), hfx::Error);
}

TEST(KernelsShape, SliceClampsLikePython) {
  Tensor x = rand_t({4, 10}, DType::F16, 1);
  struct C {
    int64_t dim, start, end, step;
  } cs[] = {{1, 2, 7, 1}, {1, -3, INT64_MAX / 4, 1}, {1, 0, 100, 3}, {0, 1, -1, 1},
            {1, 8, 3, 1}, {1, -100, 2, 1},           {-1, 1, 10, 2}, {0, 4, 9, 1}};
  for (auto c : cs) {
    Attrs a{{"dim", c.dim}, {"start", hfx::Sym(c.start)}, {"end", hfx::Sym(c.end)}, {"step", c.step}};
    int64_t n = x.shape()[c.dim < 0 ? c.dim + 2 : c.dim];
    int64_t s = c.start < 0 ? std::max<int64_t>(0, c.start + n) : std::min(c.start, n);
    int64_t e = c.end < 0 ? std::max<int64_t>(0, c.end + n) : std::min(c.end, n);
    e = std::max(e, s);
    Tensor want = x.slice(c.dim, s, e, c.step);
    expect_equal(run1(K::slice, {strided_copy(x)}, a), want.shape(), DType::F16, gather_view(want),
                 "slice " + std::to_string(c.start) + ":" + std::to_string(c.end));
  }
}

TEST(KernelsShape, ViewPermuteExpandSqueeze) {
  Tensor x = rand_t({2, 3, 4}, DType::BF16, 1);
  auto vx = vals(x);
  Attrs v{{"size", std::vector<hfx::Sym>{hfx::Sym(4), hfx::Sym(-1)}}};
  expect_equal(run1(K::view, {x}, v), {4, 6}, DType::BF16, vx, "view -1");
  expect_equal(run1(K::view, {transposed_copy(x)}, v), {4, 6}, DType::BF16, vx, "view of a strided input");
  Tensor p = run1(K::permute, {x}, {{"dims", std::vector<int64_t>{2, 0, -2}}});
  expect_equal(p, {4, 2, 3}, DType::BF16, gather_view(x.permute({2, 0, 1})), "permute");
  Tensor y = rand_t({3, 1}, DType::F32, 2);
  expect_equal(run1(K::expand, {y}, {{"size", std::vector<int64_t>{2, -1, 5}}}), {2, 3, 5}, DType::F32,
               gather_view(y.expand({2, 3, 5})), "expand");
  Tensor u = run1(K::unsqueeze, {x}, {{"dim", int64_t{-1}}});
  expect_equal(u, {2, 3, 4, 1}, DType::BF16, vx, "unsqueeze -1");
  expect_equal(run1(K::unsqueeze, {x}, {{"dim", int64_t{0}}}), {1, 2, 3, 4}, DType::BF16, vx, "unsqueeze 0");
  expect_equal(run1(K::squeeze, {u}, {{"dim", int64_t{3}}}), {2, 3, 4}, DType::BF16, vx, "squeeze");
  expect_equal(run1(K::squeeze, {x}, {{"dim", int64_t{0}}}), {2, 3, 4}, DType::BF16, vx,
               "squeeze non-1 keeps");
  expect_equal(run1(K::squeeze, {Tensor::scalar(3)}, {{"dim", int64_t{-1}}}), {}, DType::F32, {3},
               "squeeze 0-d");
  // results never alias their inputs
  Tensor u2 = run1(K::view, {x}, v);
  EXPECT_NE(u2.raw(), x.raw());
}

TEST(KernelsShape, ToCopyArangeFull) {
  Tensor x = Tensor::from_floats({4}, {1.5f, -2.5f, 1e6f, 0.0f});
  expect_equal(run1(K::to_copy, {x}, {{"dtype", DType::I32}}), {4}, DType::I32, {1, -2, 1000000, 0},
               "to i32");
  expect_equal(run1(K::to_copy, {x}, {{"dtype", DType::Bool}}), {4}, DType::Bool, {1, 1, 1, 0}, "to bool");
  Tensor same = run1(K::to_copy, {x}, {{"dtype", DType::F32}});
  EXPECT_NE(same.raw(), x.raw());
  expect_equal(run1(K::to_copy, {strided_copy(x)}, {{"dtype", DType::BF16}}), {4}, DType::BF16,
               {1.5, -2.5, round_to(DType::BF16, 1e6), 0}, "to bf16");
  Attrs ar{{"start", hfx::Sym(3)}, {"end", hfx::Sym(7)}, {"dtype", DType::I64}};
  expect_equal(run1(K::arange, {}, ar), {4}, DType::I64, {3, 4, 5, 6}, "arange");
  ar.set("dtype", DType::F32);
  expect_equal(run1(K::arange, {}, ar), {4}, DType::F32, {3, 4, 5, 6}, "arange f32");
  Attrs ae{{"start", hfx::Sym(5)}, {"end", hfx::Sym(2)}, {"dtype", DType::I64}};
  expect_equal(run1(K::arange, {}, ae), {0}, DType::I64, {}, "arange empty");
  Attrs sym{{"start", hfx::Sym(0)}, {"end", hfx::Sym::symbol("s0")}, {"dtype", DType::I64}};
  EXPECT_THROW(run1(K::arange, {}, sym), hfx::Error);
  Attrs f{{"size", std::vector<int64_t>{2, 3}}, {"value", -INFINITY}, {"dtype", DType::F16}};
  expect_equal(run1(K::full, {}, f), {2, 3}, DType::F16, std::vector<double>(6, -INFINITY), "full -inf");
  Attrs fi{{"size", std::vector<int64_t>{}}, {"value", 7.0}, {"dtype", DType::I64}};
  expect_equal(run1(K::full, {}, fi), {}, DType::I64, {7}, "full scalar");
  Attrs f0{{"size", std::vector<int64_t>{0, 4}}, {"value", 1.0}, {"dtype", DType::Bool}};
  expect_equal(run1(K::full, {}, f0), {0, 4}, DType::Bool, {}, "full empty");
}

}  // namespace
