// src/kernels/detail.h — helpers shared by the CPU kernels (internal): the thread pool, dim
// normalization, dtype staging (f16/bf16 → f32 compute), a strided N-operand loop with dim coalescing,
// and a vectorizable exp.
#pragma once
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <vector>

#include "hfx/core/error.h"
#include "hfx/core/tensor.h"
#include "kernels/kernels.h"

namespace hfx::kernels::detail {

// ---- threads ----

/// Splits [0, n) into at most num_threads() contiguous chunks of at least `grain` items and runs
/// fn(begin, end) on each, one on the calling thread. Nested calls (from inside a chunk) and calls made
/// while another thread holds the pool run inline.
void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

/// While alive, OpenBLAS runs single-threaded (for BLAS calls made from inside parallel_for chunks).
class BlasSingleThread {
 public:
  BlasSingleThread();
  ~BlasSingleThread();
  BlasSingleThread(const BlasSingleThread&) = delete;
  BlasSingleThread& operator=(const BlasSingleThread&) = delete;
};

// ---- dims and attrs ----

inline int64_t norm_dim(int64_t d, int64_t n, const char* op) {
  int64_t m = n == 0 ? 1 : n;  // a 0-d tensor accepts dim 0 / -1 as torch does
  if (d < 0) d += m;
  if (d < 0 || d >= m) HFX_THROW("kernels", "expected {} dim in [{}, {}), got {}", op, -m, m, d);
  return d;
}

/// Constant value of a symbolic attribute (eager execution needs concrete sizes).
int64_t const_sym(const Attrs& a, const std::string& name, const char* op);
std::vector<int64_t> const_syms(const Attrs& a, const std::string& name, const char* op);

void check_arity(const Tensors& in, size_t lo, size_t hi, const char* op);

// ---- dtype staging ----

/// `t` itself if already F32 (any strides), else a contiguous F32 copy.
inline Tensor as_f32(const Tensor& t) { return t.dtype() == DType::F32 ? t : t.to(DType::F32); }
/// Contiguous F32 (no copy when it already is).
inline Tensor contig_f32(const Tensor& t) {
  return (t.dtype() == DType::F32 && t.is_contiguous()) ? t : t.to(DType::F32);
}
/// `t` itself if of dtype `dt`, else a converted contiguous copy.
inline Tensor as_dtype(const Tensor& t, DType dt) { return t.dtype() == dt ? t : t.to(dt); }
/// Converts a contiguous result buffer to `dt` (no copy when it already is).
inline Tensor finish(const Tensor& t, DType dt) { return t.dtype() == dt ? t : t.to(dt); }

/// Float dtype of the result of a float op on `dt` (ints and bool compute in f32).
inline DType float_out(DType dt) { return dtype_is_float(dt) ? dt : DType::F32; }

// ---- broadcasting ----

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);
/// Strides of `t` broadcast to `shape` (0 on broadcast dims).
Shape broadcast_strides(const Tensor& t, const Shape& shape, const char* op);

/// A strided loop over `K` operands sharing one iteration shape. Dims are coalesced (merged where
/// every operand's strides allow, size-1 dims dropped) so contiguous same-shape operands become one
/// flat run. `body(ptrs, inner_strides, n)` is called for runs of n elements along the innermost
/// coalesced dim; ptrs are char* to the first element of the run for each operand; strides are in
/// elements. Runs in parallel when there are at least 2 * grain elements.
template <size_t K>
struct StridedLoop {
  Shape shape;
  std::array<Shape, K> strides;
  std::array<char*, K> base;
  std::array<int64_t, K> esize;

  StridedLoop(const Shape& sh, const std::array<Shape, K>& st, const std::array<char*, K>& b,
              const std::array<int64_t, K>& es)
      : base(b), esize(es) {
    // drop size-1 dims, then merge adjacent dims where all operands are "contiguous" across them
    Shape s1;
    std::array<Shape, K> t1;
    for (size_t d = 0; d < sh.size(); d++) {
      if (sh[d] == 1) continue;
      s1.push_back(sh[d]);
      for (size_t k = 0; k < K; k++) t1[k].push_back(st[k][d]);
    }
    for (size_t d = 0; d < s1.size(); d++) {
      if (!shape.empty()) {
        bool ok = true;
        for (size_t k = 0; k < K; k++)
          if (strides[k].back() != t1[k][d] * s1[d]) ok = false;
        if (ok) {
          shape.back() *= s1[d];
          for (size_t k = 0; k < K; k++) strides[k].back() = t1[k][d];
          continue;
        }
      }
      shape.push_back(s1[d]);
      for (size_t k = 0; k < K; k++) strides[k].push_back(t1[k][d]);
    }
    if (shape.empty()) {
      shape.push_back(1);
      for (size_t k = 0; k < K; k++) strides[k].push_back(0);
    }
  }

  int64_t numel() const { return shape_numel(shape); }

  template <class Body>
  void run_range(int64_t begin, int64_t end, Body& body) const {
    const size_t nd = shape.size();
    std::vector<int64_t> idx(nd);
    int64_t rem = begin;
    for (int64_t d = static_cast<int64_t>(nd) - 1; d >= 0; d--) {
      idx[d] = rem % shape[d];
      rem /= shape[d];
    }
    std::array<char*, K> p;
    for (size_t k = 0; k < K; k++) {
      int64_t off = 0;
      for (size_t d = 0; d < nd; d++) off += idx[d] * strides[k][d];
      p[k] = base[k] + off * esize[k];
    }
    std::array<int64_t, K> inner;
    for (size_t k = 0; k < K; k++) inner[k] = strides[k][nd - 1];
    const int64_t last = shape[nd - 1];
    int64_t i = begin;
    while (i < end) {
      int64_t n = std::min(last - idx[nd - 1], end - i);
      body(p, inner, n);
      i += n;
      if (i >= end) break;
      // advance: innermost run done → carry
      for (size_t k = 0; k < K; k++) p[k] += (n - 0) * inner[k] * esize[k];
      idx[nd - 1] += n;
      for (int64_t d = static_cast<int64_t>(nd) - 1; d > 0 && idx[d] == shape[d]; d--) {
        for (size_t k = 0; k < K; k++) p[k] -= shape[d] * strides[k][d] * esize[k];
        idx[d] = 0;
        idx[d - 1]++;
        for (size_t k = 0; k < K; k++) p[k] += strides[k][d - 1] * esize[k];
      }
    }
  }

  template <class Body>
  void run(Body body, int64_t grain = 1 << 15) const {
    int64_t n = numel();
    if (n == 0) return;
    if (n < 2 * grain) {
      run_range(0, n, body);
      return;
    }
    parallel_for(n, grain, [&](int64_t b, int64_t e) {
      Body local = body;
      run_range(b, e, local);
    });
  }
};

// ---- math ----

/// exp(x) in f32 with ~2 ulp error, branch-free so loops over it vectorize. exp(-inf) = 0,
/// overflow → inf, NaN → NaN.
inline float fast_exp(float x) {
  // Cody–Waite range reduction x = n*ln2 + r, |r| <= ln2/2; degree-6 polynomial for e^r.
  const float hi = 88.7228394f, lo = -103.972084f;
  float xc = x < lo ? lo : (x > hi ? hi : x);
  const float magic = 12582912.0f;  // 1.5 * 2^23: adding it rounds to nearest integer
  float n = (xc * 1.44269504088896341f + magic) - magic;
  float r = xc - n * 0.693145751953125f;
  r = r - n * 1.428606765330187045e-06f;
  float p = 1.0f / 720;
  p = p * r + 1.0f / 120;
  p = p * r + 1.0f / 24;
  p = p * r + 1.0f / 6;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  // scale by 2^n in two steps so that n down to -150 (subnormal results) works
  int32_t ni = static_cast<int32_t>(n);
  int32_t n1 = ni >> 1, n2 = ni - n1;
  uint32_t b1 = static_cast<uint32_t>(n1 + 127) << 23, b2 = static_cast<uint32_t>(n2 + 127) << 23;
  float s1, s2;
  std::memcpy(&s1, &b1, 4);
  std::memcpy(&s2, &b2, 4);
  float y = p * s1 * s2;
  y = x > hi ? INFINITY : y;
  y = x < lo ? 0.0f : y;
  return x != x ? x : y;
}

/// y[i] = exp(x[i] - m), returns the sum (in double over f32 blocks).
double exp_sub_sum(const float* x, float m, float* y, int64_t n);

}  // namespace hfx::kernels::detail
