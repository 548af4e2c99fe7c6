// mm / bmm / matmul / linear against double loops: transposed and sliced views (BLAS trans flags and
// leading dims vs the copy path), gemv shapes (M = 1, N = 1), empty and K = 0, broadcast batches,
// 1-d operands, f16/bf16 operands, bias.
#include "kernels/kernel_ref.h"

namespace {
using namespace kt;
namespace K = hfx::kernels;

/// Reference C = A @ B in double over [batch, M, K] x [batch, K, N] (flattened), plus Σ|a||b| per
/// element for the tolerance.
struct Ref {
  std::vector<double> c, mag;
};
Ref ref_mm(const std::vector<double>& a, const std::vector<double>& b, int64_t nb, int64_t M, int64_t K_,
           int64_t N, bool a_shared = false, bool b_shared = false) {
  Ref r;
  r.c.assign(nb * M * N, 0.0);
  r.mag.assign(nb * M * N, 0.0);
  for (int64_t z = 0; z < nb; z++)
    for (int64_t i = 0; i < M; i++)
      for (int64_t j = 0; j < N; j++) {
        double s = 0, m = 0;
        for (int64_t k = 0; k < K_; k++) {
          double p = a[(a_shared ? 0 : z) * M * K_ + i * K_ + k] * b[(b_shared ? 0 : z) * K_ * N + k * N + j];
          s += p;
          m += std::fabs(p);
        }
        r.c[z * M * N + i * N + j] = s;
        r.mag[z * M * N + i * N + j] = m;
      }
  return r;
}

// Tolerance: the f32 product accumulates K terms; blocked BLAS summation keeps the error well under
// 1e-5 * Σ|a_k b_k| for K ≤ 4096 (worst case ~K·2^-24). f16/bf16 results add one output rounding.
void expect_mm(const Tensor& got, const Shape& shape, DType dt, const Ref& r, const std::string& what) {
  ASSERT_EQ(shape_to_string(got.shape()), shape_to_string(shape)) << what;
  ASSERT_EQ(got.dtype(), dt) << what;
  auto g = vals(got);
  ASSERT_EQ(g.size(), r.c.size()) << what;
  int bad = 0;
  for (size_t i = 0; i < g.size() && bad < 5; i++) {
    double tol = 1e-5 * r.mag[i] + 2 * dtype_eps(dt) * std::fabs(r.c[i]) + 1e-30;
    if (!(std::fabs(g[i] - r.c[i]) <= tol)) {
      ADD_FAILURE() << what << ": element " << i << " got " << g[i] << " want " << r.c[i];
      bad++;
    }
  }
}

TEST(KernelsLinalg, MmShapesViewsDtypes) {
  uint32_t seed = 1;
  const std::vector<std::array<int64_t, 3>> shapes = {
      {1, 1, 1},
      {3, 5, 7},
      {64, 33, 17},
      {1, 300, 65},
      {65, 300, 1},
      {0, 4, 3},
      {4, 0, 3},
      {4, 3, 0},
      {130, 70, 129},
      // split over the kernel pool: gemv by columns, N = 1 by rows
      {1, 700, 300},
      {300, 700, 1},
      {2, 600, 250}};
  for (auto [M, Kd, N] : shapes)
    for (DType dt : {DType::F32, DType::F16, DType::BF16})
      for (int view = 0; view < 4; view++) {
        Tensor a = rand_t({M, Kd}, dt, seed++), b = rand_t({Kd, N}, dt, seed++);
        Ref r = ref_mm(vals(a), vals(b), 1, M, Kd, N);
        for (auto& c : r.c) c = round_to(dt, c);
        if (view == 1) a = transposed_copy(a);                    // Trans flag on A
        if (view == 2) b = transposed_copy(b);                    // Trans flag on B
        if (view == 3) a = strided_copy(a), b = strided_copy(b);  // neither dim unit-stride: copies
        expect_mm(run1(K::mm, {a, b}), {M, N}, dt, r,
                  "mm " + std::to_string(M) + "x" + std::to_string(Kd) + "x" + std::to_string(N) + " " +
                      dtype_name(dt) + " view " + std::to_string(view));
      }
}

TEST(KernelsLinalg, MmRowSlicedLeadingDim) {
  Tensor big = rand_t({10, 40}, DType::F32, 3);
  Tensor a = big.slice(1, 5, 25);  // [10, 20] with row stride 40
  Tensor b = rand_t({20, 6}, DType::F32, 4);
  Ref r = ref_mm(vals(a), vals(b), 1, 10, 20, 6);
  expect_mm(run1(K::mm, {a, b}), {10, 6}, DType::F32, r, "mm lda 40");
  Tensor a1 = big.slice(0, 3, 4).slice(1, 0, 20);  // M = 1 gemv path
  expect_mm(run1(K::mm, {a1, b}), {1, 6}, DType::F32, ref_mm(vals(a1), vals(b), 1, 1, 20, 6), "mm gemv");
  Tensor bt = transposed_copy(rand_t({20, 1}, DType::F32, 5));  // N = 1 with B transposed
  expect_mm(run1(K::mm, {a, bt}), {10, 1}, DType::F32, ref_mm(vals(a), vals(bt), 1, 10, 20, 1), "mm N=1");
}

TEST(KernelsLinalg, Bmm) {
  uint32_t seed = 50;
  for (auto [B, M, Kd, N] :
       std::vector<std::array<int64_t, 4>>{{4, 5, 6, 3}, {1, 1, 8, 9}, {3, 40, 64, 40}, {2, 0, 3, 4}})
    for (int view = 0; view < 3; view++) {
      Tensor a = rand_t({B, M, Kd}, DType::F32, seed++), b = rand_t({B, Kd, N}, DType::BF16, seed++);
      Ref r = ref_mm(vals(a), vals(b), B, M, Kd, N);
      if (view == 1) a = transposed_copy(a);
      if (view == 2) b = strided_copy(b);
      expect_mm(run1(K::bmm, {a, b}), {B, M, N}, DType::F32, r, "bmm view " + std::to_string(view));
    }
  // many tiny batches take the threaded per-batch path
  Tensor a = rand_t({64, 8, 16}, DType::F32, 90), b = rand_t({64, 16, 8}, DType::F32, 91);
  expect_mm(run1(K::bmm, {a, b}), {64, 8, 8}, DType::F32, ref_mm(vals(a), vals(b), 64, 8, 16, 8), "bmm many");
}

TEST(KernelsLinalg, MatmulBroadcastAnd1d) {
  // [2, 1, 3, 4] @ [5, 4, 6] → [2, 5, 3, 6]
  Tensor a = rand_t({2, 1, 3, 4}, DType::F32, 1), b = rand_t({5, 4, 6}, DType::F32, 2);
  auto va = vals(a), vb = vals(b);
  std::vector<double> ea, eb;
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 5; j++) {
      ea.insert(ea.end(), va.begin() + i * 12, va.begin() + (i + 1) * 12);
      eb.insert(eb.end(), vb.begin() + j * 24, vb.begin() + (j + 1) * 24);
    }
  expect_mm(run1(K::matmul, {a, transposed_copy(b)}), {2, 5, 3, 6}, DType::F32, ref_mm(ea, eb, 10, 3, 4, 6),
            "matmul broadcast");
  // [3, 7, 5] @ [5, 4]: shared right operand, batch folds into M (also from a permuted view)
  Tensor x = rand_t({3, 7, 5}, DType::F32, 3), w = rand_t({5, 4}, DType::F32, 4);
  Ref r = ref_mm(vals(x), vals(w), 3, 7, 5, 4, false, true);
  expect_mm(run1(K::matmul, {x, w}), {3, 7, 4}, DType::F32, r, "matmul fold");
  Tensor xp = x.permute({1, 0, 2}).contiguous().permute({1, 0, 2});  // batch dims not foldable
  expect_mm(run1(K::matmul, {xp, w}), {3, 7, 4}, DType::F32, r, "matmul permuted");
  // 1-d cases
  Tensor v = rand_t({5}, DType::F32, 5), u = rand_t({5}, DType::F32, 6);
  expect_mm(run1(K::matmul, {v, u}), {}, DType::F32, ref_mm(vals(v), vals(u), 1, 1, 5, 1), "dot");
  expect_mm(run1(K::matmul, {v, w}), {4}, DType::F32, ref_mm(vals(v), vals(w), 1, 1, 5, 4), "vec @ mat");
  expect_mm(run1(K::matmul, {x, u}), {3, 7}, DType::F32, ref_mm(vals(x), vals(u), 3, 7, 5, 1, false, true),
            "batched mat @ vec");
  Tensor s = rand_t({3, 5, 2}, DType::F32, 7);
  expect_mm(run1(K::matmul, {v, s}), {3, 2}, DType::F32, ref_mm(vals(v), vals(s), 3, 1, 5, 2, true, false),
            "vec @ batched");
  // integers (fallback)
  Tensor ia = Tensor::from_ints({2, 2}, {1, 2, 3, 4}), ib = Tensor::from_ints({2, 2}, {5, 6, 7, 8});
  expect_equal(run1(K::matmul, {ia, ib}), {2, 2}, DType::I64, {19, 22, 43, 50}, "int matmul");
}

TEST(KernelsLinalg, Linear) {
  uint32_t seed = 200;
  for (DType wdt : {DType::F32, DType::BF16, DType::F16})
    for (auto [lead, Kd, N] : std::vector<std::tuple<Shape, int64_t, int64_t>>{
             {{2, 3}, 16, 8}, {{1}, 64, 33}, {{}, 7, 5}, {{4, 1}, 9, 1}, {{0, 2}, 4, 3}, {{2}, 0, 3}})
      for (int bias = 0; bias < 2; bias++)
        for (int view = 0; view < 3; view++) {
          Shape xs = lead;
          xs.push_back(Kd);
          Tensor x = rand_t(xs, wdt, seed++), w = rand_t({N, Kd}, wdt, seed++),
                 bvec = rand_t({N}, wdt, seed++);
          int64_t M = shape_numel(lead);
          auto vw = vals(w);
          std::vector<double> wt(Kd * N);
          for (int64_t n = 0; n < N; n++)
            for (int64_t k = 0; k < Kd; k++) wt[k * N + n] = vw[n * Kd + k];
          Ref r = ref_mm(vals(x), wt, 1, M, Kd, N);
          if (bias) {
            auto vb = vals(bvec);
            for (int64_t i = 0; i < M * N; i++) r.c[i] += vb[i % N], r.mag[i] += std::fabs(vb[i % N]);
          }
          for (auto& c : r.c) c = round_to(wdt, c);
          if (view == 1) x = strided_copy(x);
          if (view == 2) w = transposed_copy(w);  // weight stored [K, N]: no Trans flag
          Shape os = lead;
          os.push_back(N);
          Tensors in = {x, w};
          if (bias) in.push_back(bvec);
          expect_mm(run1(K::linear, in), os, wdt, r,
                    std::string("linear ") + dtype_name(wdt) + " " + shape_to_string(xs) + " N " +
                        std::to_string(N) + " bias " + std::to_string(bias) + " view " +
                        std::to_string(view));
        }
}

TEST(KernelsLinalg, LinearMixedDtypesPromote) {
  Tensor x = rand_t({3, 8}, DType::F32, 1), w = rand_t({4, 8}, DType::BF16, 2);
  EXPECT_EQ(run1(K::linear, {x, w}).dtype(), DType::F32);
  EXPECT_THROW(run1(K::linear, {x, rand_t({4, 9}, DType::F32, 3)}), hfx::Error);
  EXPECT_THROW(run1(K::mm, {x, rand_t({4, 9}, DType::F32, 3)}), hfx::Error);
}

}  // namespace
