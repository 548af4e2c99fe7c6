// Reductions (sum, mean, amax, argmax, cumsum), softmax / log_softmax and layer_norm.
//
// Float inputs reduce in f32 blocks of 1024 elements (8-way vectorizable) whose partial sums add in
// double, so sums over 1M+ elements stay accurate to ~1e-7 relative; integer sums are int64. A
// reduction over dims that coalesce into one strided run is a row loop (parallel over rows, or over
// chunks of a single long row); over leading dims of a tensor whose kept dims are contiguous it is a
// column loop that streams whole output vectors; otherwise the permuted input is copied once.
#if defined(__GNUC__) && !defined(__clang__)  // GCC only: clang has no per-file optimize pragma
#pragma GCC optimize("O3")
#endif
#include <algorithm>
#include <limits>

#include "kernels/detail.h"

namespace hfx::kernels {
using namespace detail;

namespace {

enum class Red { Sum, Max };

/// Normalized, sorted, unique reduction dims (empty attr → all dims).
std::vector<int64_t> red_dims(const Tensor& x, const std::vector<int64_t>& dims, const char* op) {
  std::vector<int64_t> r;
  if (dims.empty()) {
    for (int64_t d = 0; d < x.dim(); d++) r.push_back(d);
    return r;
  }
  std::vector<bool> seen(std::max<int64_t>(1, x.dim()));
  for (int64_t d : dims) {
    int64_t n = norm_dim(d, x.dim(), op);
    if (seen[n]) HFX_THROW("kernels", "expected distinct {} dims, got dim {} twice", op, n);
    seen[n] = true;
    if (x.dim() > 0) r.push_back(n);
  }
  std::sort(r.begin(), r.end());
  return r;
}

Shape red_out_shape(const Tensor& x, const std::vector<int64_t>& rd, bool keepdim) {
  Shape s;
  for (int64_t d = 0; d < x.dim(); d++) {
    bool red = std::find(rd.begin(), rd.end(), d) != rd.end();
    if (!red)
      s.push_back(x.shape()[d]);
    else if (keepdim)
      s.push_back(1);
  }
  return s;
}

/// Merges adjacent dims of a (shape, strides) list where possible; drops size-1 dims.
void coalesce(Shape& sh, Shape& st) {
  Shape s2, t2;
  for (size_t i = 0; i < sh.size(); i++) {
    if (sh[i] == 1) continue;
    if (!s2.empty() && t2.back() == st[i] * sh[i]) {
      s2.back() *= sh[i];
      t2.back() = st[i];
      continue;
    }
    s2.push_back(sh[i]);
    t2.push_back(st[i]);
  }
  sh = s2;
  st = t2;
}

/// Sum of a strided f32 row: f32 blocks, double across blocks.
double row_sum_f32(const float* p, int64_t n, int64_t s) {
  double total = 0;
  if (s == 1) {
    for (int64_t b = 0; b < n; b += 1024) {
      int64_t e = std::min<int64_t>(n, b + 1024);
      float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
      int64_t i = b;
      for (; i + 8 <= e; i += 8)
        for (int k = 0; k < 8; k++) acc[k] += p[i + k];
      float t = 0;
      for (; i < e; i++) t += p[i];
      total += static_cast<double>(((acc[0] + acc[1]) + (acc[2] + acc[3])) +
                                   ((acc[4] + acc[5]) + (acc[6] + acc[7]))) +
               t;
    }
  } else {
    for (int64_t b = 0; b < n; b += 1024) {
      int64_t e = std::min<int64_t>(n, b + 1024);
      float t = 0;
      for (int64_t i = b; i < e; i++) t += p[i * s];
      total += t;
    }
  }
  return total;
}

float row_max_f32(const float* p, int64_t n, int64_t s) {
  float m = -std::numeric_limits<float>::infinity();
  bool nan = false;
  if (s == 1) {
    for (int64_t i = 0; i < n; i++) {
      float v = p[i];
      nan |= v != v;
      m = v > m ? v : m;
    }
  } else {
    for (int64_t i = 0; i < n; i++) {
      float v = p[i * s];
      nan |= v != v;
      m = v > m ? v : m;
    }
  }
  return nan ? std::numeric_limits<float>::quiet_NaN() : m;
}

// One row of n elements at stride s: f32 rows through the vector helpers (as double), int64 rows exactly.
template <class T>
T int_row(const T* p, int64_t n, int64_t s, Red kind) {
  T acc = kind == Red::Sum ? 0 : std::numeric_limits<T>::min();
  for (int64_t i = 0; i < n; i++) acc = kind == Red::Sum ? acc + p[i * s] : std::max(acc, p[i * s]);
  return acc;
}

// A single output over a long row (O == 1, R ≥ 2^16): the row split over the pool, the partial results
// combined in order (f32 partials in double; NaN kept).
template <class T>
T split_row(const T* p0, int64_t R, int64_t r_stride, Red kind) {
  constexpr bool is_f = std::is_same_v<T, float>;
  int64_t chunks = std::min<int64_t>(num_threads(), R >> 15);
  std::vector<double> part(chunks);
  std::vector<int64_t> ipart(chunks);
  parallel_for(chunks, 1, [&](int64_t b, int64_t e) {
    for (int64_t c = b; c < e; c++) {
      int64_t lo = R * c / chunks, hi = R * (c + 1) / chunks;
      const T* p = p0 + lo * r_stride;
      if constexpr (is_f)
        part[c] = kind == Red::Sum ? row_sum_f32(p, hi - lo, r_stride) : row_max_f32(p, hi - lo, r_stride);
      else
        ipart[c] = int_row(p, hi - lo, r_stride, kind);
    }
  });
  if constexpr (is_f) {
    double acc = kind == Red::Sum ? 0.0 : -std::numeric_limits<double>::infinity();
    bool nan = false;
    for (double v : part) {
      nan |= v != v;
      acc = kind == Red::Sum ? acc + v : std::max(acc, v);
    }
    return nan ? std::numeric_limits<float>::quiet_NaN() : static_cast<float>(acc);
  } else {
    int64_t acc = kind == Red::Sum ? 0 : std::numeric_limits<int64_t>::min();
    for (int64_t v : ipart) acc = kind == Red::Sum ? acc + v : std::max(acc, v);
    return acc;
  }
}

// Column mode: outputs contiguous, accumulated as whole vectors over the reduced positions `roffs`.
// f32 sums add blocks of 256 rows in f32, then the blocks in double.
template <class T>
void column_reduce(const T* px, T* po, int64_t b, int64_t n, const std::vector<int64_t>& roffs, Red kind) {
  const int64_t R = static_cast<int64_t>(roffs.size());
  if constexpr (std::is_same_v<T, float>) {
    if (kind == Red::Sum) {
      std::vector<double> acc(n, 0.0);
      std::vector<float> blk(n);
      for (int64_t r0 = 0; r0 < R; r0 += 256) {
        std::fill(blk.begin(), blk.end(), 0.0f);
        int64_t r1 = std::min<int64_t>(R, r0 + 256);
        for (int64_t r = r0; r < r1; r++) {
          const float* p = px + roffs[r] + b;
          for (int64_t i = 0; i < n; i++) blk[i] += p[i];
        }
        for (int64_t i = 0; i < n; i++) acc[i] += blk[i];
      }
      for (int64_t i = 0; i < n; i++) po[b + i] = static_cast<float>(acc[i]);
    } else {
      std::vector<float> acc(n, -std::numeric_limits<float>::infinity());
      std::vector<uint8_t> nan(n, 0);
      for (int64_t r = 0; r < R; r++) {
        const float* p = px + roffs[r] + b;
        for (int64_t i = 0; i < n; i++) {
          float v = p[i];
          nan[i] |= v != v;
          acc[i] = v > acc[i] ? v : acc[i];
        }
      }
      for (int64_t i = 0; i < n; i++) po[b + i] = nan[i] ? std::numeric_limits<float>::quiet_NaN() : acc[i];
    }
  } else {
    for (int64_t i = 0; i < n; i++) po[b + i] = kind == Red::Sum ? 0 : std::numeric_limits<int64_t>::min();
    for (int64_t r = 0; r < R; r++) {
      const int64_t* p = px + roffs[r] + b;
      for (int64_t i = 0; i < n; i++)
        po[b + i] = kind == Red::Sum ? po[b + i] + p[i] : std::max(po[b + i], p[i]);
    }
  }
}

/// Reduces f32 or int64 `x` (any strides) over `rd`; returns a contiguous result of `x`'s compute
/// type shaped like the kept dims (no keepdim; the caller reshapes).
template <class T>
Tensor reduce_core(const Tensor& x, const std::vector<int64_t>& rd, Red kind) {
  constexpr bool is_f = std::is_same_v<T, float>;
  Shape ks, kst, rs, rst;
  for (int64_t d = 0; d < x.dim(); d++) {
    bool red = std::find(rd.begin(), rd.end(), d) != rd.end();
    (red ? rs : ks).push_back(x.shape()[d]);
    (red ? rst : kst).push_back(x.strides()[d]);
  }
  Tensor out = Tensor::empty(ks, is_f ? DType::F32 : DType::I64);
  T* po = out.data<T>();
  int64_t O = shape_numel(ks), R = shape_numel(rs);
  if (O == 0) return out;
  if (R == 0) {
    if (kind == Red::Max) HFX_THROW("kernels", "expected a non-empty reduction for amax, got 0 elements");
    std::fill(po, po + O, T(0));
    return out;
  }
  coalesce(ks, kst);
  coalesce(rs, rst);
  const T* px = x.data<T>();
  bool r_one = rs.size() <= 1;
  int64_t r_stride = rs.empty() ? 1 : rst[0];
  bool k_unit = ks.size() == 1 && kst[0] == 1;
  if (r_one && !(r_stride != 1 && k_unit)) {
    // row mode
    std::vector<int64_t> offs;
    offs.reserve(O);
    for_each_offset(ks, kst, [&](int64_t, int64_t off) { offs.push_back(off); });
    if (O == 1 && R >= (1 << 16) && num_threads() > 1) {
      po[0] = split_row(px + offs[0], R, r_stride, kind);
      return out;
    }
    int64_t grain = std::max<int64_t>(1, 16384 / R);
    parallel_for(O, grain, [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; o++) {
        const T* p = px + offs[o];
        if constexpr (is_f)
          po[o] = static_cast<float>(kind == Red::Sum ? row_sum_f32(p, R, r_stride)
                                                      : row_max_f32(p, R, r_stride));
        else
          po[o] = int_row(p, R, r_stride, kind);
      }
    });
    return out;
  }
  if (k_unit) {
    std::vector<int64_t> roffs;
    roffs.reserve(R);
    for_each_offset(rs, rst, [&](int64_t, int64_t off) { roffs.push_back(off); });
    parallel_for(O, 4096, [&](int64_t b, int64_t e) { column_reduce(px, po, b, e - b, roffs, kind); });
    return out;
  }
  // general: copy the permuted view (kept dims first) contiguous, then row mode
  std::vector<int64_t> perm;
  for (int64_t d = 0; d < x.dim(); d++)
    if (std::find(rd.begin(), rd.end(), d) == rd.end()) perm.push_back(d);
  for (int64_t d : rd) perm.push_back(d);
  Tensor xc = x.permute(perm).contiguous().reshape({O, R});
  return reduce_core<T>(xc, {1}, kind).reshape(out.shape());
}

Tensors reduce_op(const Tensors& in, const Attrs& a, Red kind, bool mean, const char* op) {
  check_arity(in, 1, 1, op);
  const Tensor& x = in[0];
  auto rd = red_dims(x, a.ints("dim"), op);
  bool keepdim = a.b("keepdim");
  Shape oshape = red_out_shape(x, rd, keepdim);
  DType dt = x.dtype();
  if (dtype_is_float(dt)) {
    Tensor r = reduce_core<float>(as_f32(x), rd, kind);
    if (mean) {
      int64_t R = 1;
      for (int64_t d : rd) R *= x.shape()[d];
      float inv =
          R == 0 ? std::numeric_limits<float>::quiet_NaN() : static_cast<float>(1.0 / static_cast<double>(R));
      float* p = r.data<float>();
      for (int64_t i = 0; i < r.numel(); i++) p[i] = R == 0 ? inv : p[i] * inv;
    }
    return {finish(r, dt).reshape(oshape)};
  }
  if (mean) HFX_THROW("kernels", "expected a floating input for mean, got {}", dtype_name(dt));
  Tensor r = reduce_core<int64_t>(as_dtype(x, DType::I64), rd, kind);
  DType rt = kind == Red::Sum ? DType::I64 : dt;
  return {finish(r, rt).reshape(oshape)};
}

/// Rows along `dim` of `x` (any strides) and of a contiguous output of the same shape.
struct Rows {
  int64_t n = 1, in_stride = 1, out_stride = 1;
  std::vector<int64_t> in_offs, out_offs;
};

Rows rows_along(const Tensor& x, int64_t dim) {
  Rows r;
  if (x.dim() == 0) {
    r.in_offs = {0};
    r.out_offs = {0};
    return r;
  }
  Shape cs = contiguous_strides(x.shape());
  r.n = x.shape()[dim];
  r.in_stride = x.strides()[dim];
  r.out_stride = cs[dim];
  Shape sh, ist, ost;
  for (int64_t d = 0; d < x.dim(); d++) {
    if (d == dim) continue;
    sh.push_back(x.shape()[d]);
    ist.push_back(x.strides()[d]);
    ost.push_back(cs[d]);
  }
  int64_t O = shape_numel(sh);
  r.in_offs.reserve(O);
  r.out_offs.reserve(O);
  for_each_offset(sh, ist, [&](int64_t, int64_t off) { r.in_offs.push_back(off); });
  for_each_offset(sh, ost, [&](int64_t, int64_t off) { r.out_offs.push_back(off); });
  return r;
}

/// Runs fn(in_row (contiguous f32, n), out_row (contiguous f32 scratch, n)) for every row along dim,
/// gathering / scattering strided rows; result f32 contiguous shaped like x.
template <class Fn>
Tensor map_rows(const Tensor& xf, int64_t dim, Fn fn) {
  Rows r = rows_along(xf, dim);
  Tensor out = Tensor::empty(xf.shape(), DType::F32);
  const float* px = xf.data<float>();
  float* po = out.data<float>();
  int64_t O = static_cast<int64_t>(r.in_offs.size());
  if (r.n == 0 || O == 0 || xf.numel() == 0) return out;
  parallel_for(O, std::max<int64_t>(1, 8192 / r.n), [&](int64_t b, int64_t e) {
    std::vector<float> ibuf, obuf;
    for (int64_t o = b; o < e; o++) {
      const float* ip = px + r.in_offs[o];
      float* op = po + r.out_offs[o];
      const float* irow = ip;
      if (r.in_stride != 1) {
        ibuf.resize(r.n);
        for (int64_t i = 0; i < r.n; i++) ibuf[i] = ip[i * r.in_stride];
        irow = ibuf.data();
      }
      if (r.out_stride == 1) {
        fn(irow, op, r.n);
      } else {
        obuf.resize(r.n);
        fn(irow, obuf.data(), r.n);
        for (int64_t i = 0; i < r.n; i++) op[i * r.out_stride] = obuf[i];
      }
    }
  });
  return out;
}

}  // namespace

Tensors sum(const Tensors& in, const Attrs& a) { return reduce_op(in, a, Red::Sum, false, "sum"); }
Tensors mean(const Tensors& in, const Attrs& a) { return reduce_op(in, a, Red::Sum, true, "mean"); }
Tensors amax(const Tensors& in, const Attrs& a) { return reduce_op(in, a, Red::Max, false, "amax"); }

Tensors argmax(const Tensors& in, const Attrs& a) {
  check_arity(in, 1, 1, "argmax");
  const Tensor& x = in[0];
  int64_t dim = norm_dim(a.i("dim"), x.dim(), "argmax");
  bool keepdim = a.b("keepdim");
  Shape oshape;
  for (int64_t d = 0; d < x.dim(); d++) {
    if (d != dim)
      oshape.push_back(x.shape()[d]);
    else if (keepdim)
      oshape.push_back(1);
  }
  Tensor out = Tensor::empty(oshape, DType::I64);
  Rows r = rows_along(x, x.dim() == 0 ? 0 : dim);
  if (r.n == 0 && !r.in_offs.empty()) HFX_THROW("kernels", "expected a non-empty dim for argmax, got size 0");
  int64_t* po = out.data<int64_t>();
  int64_t O = static_cast<int64_t>(r.in_offs.size());
  if (dtype_is_float(x.dtype())) {
    Tensor xf = as_f32(x);
    Rows rf = rows_along(xf, x.dim() == 0 ? 0 : dim);
    const float* px = xf.data<float>();
    parallel_for(O, std::max<int64_t>(1, 8192 / std::max<int64_t>(1, rf.n)), [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; o++) {
        const float* p = px + rf.in_offs[o];
        int64_t best = 0;
        float bv = p[0];
        if (bv == bv) {
          for (int64_t i = 1; i < rf.n; i++) {
            float v = p[i * rf.in_stride];
            if (v != v) {  // NaN is the maximum (first one wins), as torch
              best = i;
              break;
            }
            if (v > bv) bv = v, best = i;
          }
        }
        po[o] = best;
      }
    });
  } else {
    Tensor xi = as_dtype(x, DType::I64);
    Rows ri = rows_along(xi, x.dim() == 0 ? 0 : dim);
    const int64_t* px = xi.data<int64_t>();
    for (int64_t o = 0; o < O; o++) {
      const int64_t* p = px + ri.in_offs[o];
      int64_t best = 0, bv = p[0];
      for (int64_t i = 1; i < ri.n; i++)
        if (p[i * ri.in_stride] > bv) bv = p[i * ri.in_stride], best = i;
      po[o] = best;
    }
  }
  return {out};
}

Tensors cumsum(const Tensors& in, const Attrs& a) {
  check_arity(in, 1, 1, "cumsum");
  const Tensor& x = in[0];
  int64_t dim = norm_dim(a.i("dim"), x.dim(), "cumsum");
  if (dtype_is_float(x.dtype())) {
    Tensor r = map_rows(as_f32(x), dim, [](const float* p, float* o, int64_t n) {
      double acc = 0;
      for (int64_t i = 0; i < n; i++) o[i] = static_cast<float>(acc += p[i]);
    });
    return {finish(r, x.dtype())};
  }
  Tensor xi = as_dtype(x, DType::I64);
  Tensor out = Tensor::empty(x.shape(), DType::I64);
  Rows r = rows_along(xi, x.dim() == 0 ? 0 : dim);
  const int64_t* px = xi.data<int64_t>();
  int64_t* po = out.data<int64_t>();
  for (size_t o = 0; o < r.in_offs.size(); o++) {
    int64_t acc = 0;
    for (int64_t i = 0; i < r.n; i++)
      po[r.out_offs[o] + i * r.out_stride] = acc += px[r.in_offs[o] + i * r.in_stride];
  }
  return {out};
}

Tensors softmax(const Tensors& in, const Attrs& a) {
  check_arity(in, 1, 1, "softmax");
  const Tensor& x = in[0];
  int64_t dim = norm_dim(a.i("dim"), x.dim(), "softmax");
  Tensor r = map_rows(as_f32(x), x.dim() == 0 ? 0 : dim, [](const float* p, float* o, int64_t n) {
    float m = row_max_f32(p, n, 1);
    double s = exp_sub_sum(p, m, o, n);  // an all -inf row gives NaN, as torch
    float inv = static_cast<float>(1.0 / s);
    for (int64_t i = 0; i < n; i++) o[i] *= inv;
  });
  return {finish(r, float_out(x.dtype()))};
}

Tensors log_softmax(const Tensors& in, const Attrs& a) {
  check_arity(in, 1, 1, "log_softmax");
  const Tensor& x = in[0];
  int64_t dim = norm_dim(a.i("dim"), x.dim(), "log_softmax");
  Tensor r = map_rows(as_f32(x), x.dim() == 0 ? 0 : dim, [](const float* p, float* o, int64_t n) {
    float m = row_max_f32(p, n, 1);
    double s = exp_sub_sum(p, m, o, n);
    float lse = m + static_cast<float>(std::log(s));
    for (int64_t i = 0; i < n; i++) o[i] = p[i] - lse;
  });
  return {finish(r, float_out(x.dtype()))};
}

Tensors layer_norm(const Tensors& in, const Attrs& a) {
  check_arity(in, 1, 3, "layer_norm");
  const Tensor& x = in[0];
  if (x.dim() == 0) HFX_THROW("kernels", "expected layer_norm input of at least 1 dim, got a 0-d tensor");
  int64_t D = x.size(-1);
  Tensor w = in.size() > 1 && in[1].defined() ? contig_f32(in[1]) : Tensor();
  Tensor b = in.size() > 2 && in[2].defined() ? contig_f32(in[2]) : Tensor();
  if ((w.defined() && w.numel() != D) || (b.defined() && b.numel() != D))
    HFX_THROW("kernels", "expected layer_norm weight/bias of {} elements", D);
  float eps = static_cast<float>(a.f("eps"));
  const float* pw = w.defined() ? w.data<float>() : nullptr;
  const float* pb = b.defined() ? b.data<float>() : nullptr;
  Tensor r = map_rows(as_f32(x), x.dim() - 1, [&](const float* p, float* o, int64_t n) {
    float mu = static_cast<float>(row_sum_f32(p, n, 1) / static_cast<double>(n));
    for (int64_t i = 0; i < n; i++) o[i] = p[i] - mu;
    double var = 0;
    for (int64_t i0 = 0; i0 < n; i0 += 1024) {
      float t = 0;
      for (int64_t i = i0; i < std::min<int64_t>(n, i0 + 1024); i++) t += o[i] * o[i];
      var += t;
    }
    float rstd = static_cast<float>(1.0 / std::sqrt(var / static_cast<double>(n) + eps));
    for (int64_t i = 0; i < n; i++) {
      float v = o[i] * rstd;
      if (pw) v *= pw[i];
      if (pb) v += pb[i];
      o[i] = v;
    }
  });
  return {finish(r, float_out(x.dtype()))};
}

}  // namespace hfx::kernels
