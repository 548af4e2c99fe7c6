// Indexing, shape and factory kernels. Every result is a fresh contiguous tensor (the kernel contract),
// so view ops (slice, permute, expand, ...) materialize through one strided copy.
#include <algorithm>
#include <cmath>

#include "kernels/detail.h"

namespace hfx::kernels {
using namespace detail;

namespace {

std::vector<int64_t> read_indices(const Tensor& idx, int64_t bound, const char* op) {
  if (dtype_is_float(idx.dtype()) || idx.dtype() == DType::Bool)
    HFX_THROW("kernels", "expected integer indices for {}, got {}", op, dtype_name(idx.dtype()));
  std::vector<int64_t> v = idx.to_ints();
  for (auto& i : v) {
    if (i < -bound || i >= bound)
      HFX_THROW("kernels", "expected {} index in [{}, {}), got {}", op, -bound, bound, i);
    if (i < 0) i += bound;
  }
  return v;
}

/// Fresh contiguous copy of a view in dtype `dt`.
template <class T>
void strided_copy(const Tensor& v, Tensor& out) {
  StridedLoop<2> loop(v.shape(), {contiguous_strides(v.shape()), v.strides()},
                      {static_cast<char*>(out.raw()), static_cast<char*>(v.raw())},
                      {static_cast<int64_t>(sizeof(T)), static_cast<int64_t>(sizeof(T))});
  loop.run([](const std::array<char*, 2>& p, const std::array<int64_t, 2>& s, int64_t n) {
    T* o = reinterpret_cast<T*>(p[0]);
    const T* x = reinterpret_cast<const T*>(p[1]);
    if (s[1] == 1) {
      std::memcpy(o, x, n * sizeof(T));
    } else {
      const int64_t sx = s[1];
      for (int64_t i = 0; i < n; i++) o[i] = x[i * sx];
    }
  });
}

Tensor materialize(const Tensor& v, DType dt) {
  Tensor out = Tensor::empty(v.shape(), dt);
  if (v.numel() == 0) return out;
  if (v.dtype() != dt) {
    copy_to_contiguous(v, out.raw(), dt);
    return out;
  }
  switch (dtype_size(dt)) {
    case 1:
      strided_copy<uint8_t>(v, out);
      break;
    case 2:
      strided_copy<uint16_t>(v, out);
      break;
    case 4:
      strided_copy<uint32_t>(v, out);
      break;
    default:
      strided_copy<uint64_t>(v, out);
      break;
  }
  return out;
}

/// (outer, n, inner) split of a contiguous tensor around `dim`.
void split3(const Shape& s, int64_t dim, int64_t& outer, int64_t& n, int64_t& inner) {
  outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; d++) outer *= s[d];
  n = s.empty() ? 1 : s[dim];
  for (size_t d = dim + 1; d < s.size(); d++) inner *= s[d];
}

}  // namespace

Tensors embedding(const Tensors& in, const Attrs&) {
  check_arity(in, 2, 2, "embedding");
  const Tensor &w0 = in[0], &idx = in[1];
  if (w0.dim() != 2)
    HFX_THROW("kernels", "expected embedding weight [V, D], got {}", shape_to_string(w0.shape()));
  int64_t V = w0.shape()[0], D = w0.shape()[1];
  auto ids = read_indices(idx, V, "embedding");
  Shape os = idx.shape();
  os.push_back(D);
  Tensor out = Tensor::empty(os, w0.dtype());
  size_t es = dtype_size(w0.dtype());
  char* po = static_cast<char*>(out.raw());
  if (w0.strides()[1] == 1 || D <= 1) {
    const char* pw = static_cast<const char*>(w0.raw());
    int64_t rs = w0.strides()[0];
    for (size_t i = 0; i < ids.size(); i++) std::memcpy(po + i * D * es, pw + ids[i] * rs * es, D * es);
  } else {
    for (size_t i = 0; i < ids.size(); i++)
      copy_to_contiguous(w0.select(0, ids[i]), po + i * D * es, w0.dtype());
  }
  return {out};
}

Tensors index_select(const Tensors& in, const Attrs& a) {
  check_arity(in, 2, 2, "index_select");
  Tensor x = in[0].contiguous();
  int64_t dim = norm_dim(a.i("dim"), x.dim(), "index_select");
  int64_t outer, n, inner;
  split3(x.shape(), dim, outer, n, inner);
  auto ids = read_indices(in[1], n, "index_select");
  if (in[1].dim() > 1)
    HFX_THROW("kernels", "expected a 0-d or 1-d index for index_select, got {} dims", in[1].dim());
  Shape os = x.shape();
  if (!os.empty()) os[dim] = static_cast<int64_t>(ids.size());
  Tensor out = Tensor::empty(os, x.dtype());
  size_t es = dtype_size(x.dtype());
  int64_t m = static_cast<int64_t>(ids.size());
  const char* px = static_cast<const char*>(x.raw());
  char* po = static_cast<char*>(out.raw());
  for (int64_t o = 0; o < outer; o++)
    for (int64_t j = 0; j < m; j++)
      std::memcpy(po + ((o * m + j) * inner) * es, px + ((o * n + ids[j]) * inner) * es, inner * es);
  return {out};
}

Tensors index_copy(const Tensors& in, const Attrs& a) {
  check_arity(in, 3, 3, "index_copy");
  Tensor out = in[0].clone();
  int64_t dim = norm_dim(a.i("dim"), out.dim(), "index_copy");
  int64_t outer, n, inner;
  split3(out.shape(), dim, outer, n, inner);
  auto ids = read_indices(in[1], n, "index_copy");
  int64_t m = static_cast<int64_t>(ids.size());
  Shape want = out.shape();
  if (!want.empty()) want[dim] = m;
  Tensor src = in[2];
  if (shape_numel(want) != src.numel())
    HFX_THROW("kernels", "expected index_copy source of shape {}, got {}", shape_to_string(want),
              shape_to_string(src.shape()));
  src = materialize(src, out.dtype());
  size_t es = dtype_size(out.dtype());
  const char* ps = static_cast<const char*>(src.raw());
  char* po = static_cast<char*>(out.raw());
  for (int64_t o = 0; o < outer; o++)
    for (int64_t j = 0; j < m; j++)
      std::memcpy(po + ((o * n + ids[j]) * inner) * es, ps + ((o * m + j) * inner) * es, inner * es);
  return {out};
}

Tensors cat(const Tensors& in, const Attrs& a) {
  if (in.empty()) HFX_THROW("kernels", "expected at least one input for cat, got none");
  // legacy torch rule: 1-d empty tensors are skipped
  std::vector<Tensor> xs;
  for (const auto& t : in)
    if (!(t.dim() == 1 && t.numel() == 0)) xs.push_back(t);
  DType dt = in[0].dtype();
  for (const auto& t : in) dt = promote_types(dt, t.dtype());
  if (xs.empty()) return {Tensor::empty({0}, dt)};
  const Shape& s0 = xs[0].shape();
  if (s0.empty()) HFX_THROW("kernels", "expected cat inputs of at least 1 dim, got a 0-d tensor");
  int64_t dim = norm_dim(a.i("dim"), static_cast<int64_t>(s0.size()), "cat");
  int64_t total = 0;
  for (const auto& t : xs) {
    if (t.dim() != static_cast<int64_t>(s0.size()))
      HFX_THROW("kernels", "expected cat inputs of {} dims, got {}", s0.size(), shape_to_string(t.shape()));
    for (int64_t d = 0; d < t.dim(); d++)
      if (d != dim && t.shape()[d] != s0[d])
        HFX_THROW("kernels", "expected cat inputs to match except in dim {}, got {} and {}", dim,
                  shape_to_string(s0), shape_to_string(t.shape()));
    total += t.shape()[dim];
  }
  Shape os = s0;
  os[dim] = total;
  Tensor out = Tensor::empty(os, dt);
  int64_t outer, n, inner;
  split3(os, dim, outer, n, inner);
  size_t es = dtype_size(dt);
  char* po = static_cast<char*>(out.raw());
  int64_t at = 0;
  for (const auto& t : xs) {
    int64_t k = t.shape()[dim];
    if (k > 0 && outer > 0 && inner > 0) {
      Tensor c = (t.dtype() == dt && t.is_contiguous()) ? t : materialize(t, dt);
      const char* pc = static_cast<const char*>(c.raw());
      for (int64_t o = 0; o < outer; o++)
        std::memcpy(po + (o * n + at) * inner * es, pc + o * k * inner * es, k * inner * es);
    }
    at += k;
  }
  return {out};
}

Tensors slice(const Tensors& in, const Attrs& a) {
  check_arity(in, 1, 1, "slice");
  const Tensor& x = in[0];
  int64_t dim = norm_dim(a.i("dim"), x.dim(), "slice");
  int64_t step = a.i("step");
  if (step <= 0) HFX_THROW("kernels", "expected a positive slice step, got {}", step);
  int64_t n = x.shape()[dim];
  int64_t start = const_sym(a, "start", "slice"), end = const_sym(a, "end", "slice");
  if (start < 0) start += n;
  if (end < 0) end += n;
  start = std::clamp<int64_t>(start, 0, n);
  end = std::clamp<int64_t>(end, start, n);
  return {materialize(x.slice(dim, start, end, step), x.dtype())};
}

Tensors view(const Tensors& in, const Attrs& a) {
  check_arity(in, 1, 1, "view");
  Shape s = const_syms(a, "size", "view");
  return {materialize(in[0], in[0].dtype()).reshape(s)};
}

Tensors permute(const Tensors& in, const Attrs& a) {
  check_arity(in, 1, 1, "permute");
  return {materialize(in[0].permute(a.ints("dims")), in[0].dtype())};
}

Tensors expand(const Tensors& in, const Attrs& a) {
  check_arity(in, 1, 1, "expand");
  Shape s = const_syms(a, "size", "expand");
  const Tensor& x = in[0];
  size_t lead = s.size() >= static_cast<size_t>(x.dim()) ? s.size() - x.dim() : 0;
  for (size_t i = 0; i < s.size(); i++)
    if (s[i] == -1) {
      if (i < lead)
        HFX_THROW("kernels", "expected no -1 in a new leading expand dim, got {}", shape_to_string(s));
      s[i] = x.shape()[i - lead];
    }
  return {materialize(x.expand(s), x.dtype())};
}

Tensors unsqueeze(const Tensors& in, const Attrs& a) {
  check_arity(in, 1, 1, "unsqueeze");
  return {materialize(in[0], in[0].dtype()).unsqueeze(a.i("dim"))};
}

Tensors squeeze(const Tensors& in, const Attrs& a) {
  check_arity(in, 1, 1, "squeeze");
  const Tensor& x = in[0];
  if (x.dim() == 0) {
    norm_dim(a.i("dim"), 0, "squeeze");
    return {x.clone()};
  }
  Tensor c = materialize(x, x.dtype());
  int64_t d = norm_dim(a.i("dim"), x.dim(), "squeeze");
  return {c.squeeze(d)};
}

Tensors to_copy(const Tensors& in, const Attrs& a) {
  check_arity(in, 1, 1, "to_copy");
  return {materialize(in[0], a.dtype("dtype"))};
}

Tensors arange(const Tensors& in, const Attrs& a) {
  int64_t start = const_sym(a, "start", "arange"), end = const_sym(a, "end", "arange");
  int64_t n = std::max<int64_t>(0, end - start);
  DType dt = a.dtype("dtype");
  std::vector<int64_t> v(n);
  for (int64_t i = 0; i < n; i++) v[i] = start + i;
  Tensor out = Tensor::empty({n}, dt);
  if (dtype_is_float(dt)) {
    std::vector<float> f(v.begin(), v.end());
    convert_elements(f.data(), DType::F32, out.raw(), dt, n);
  } else {
    convert_elements(v.data(), DType::I64, out.raw(), dt, n);
  }
  return {out};
}

Tensors full(const Tensors& in, const Attrs& a) {
  Shape s = const_syms(a, "size", "full");
  DType dt = a.dtype("dtype");
  double v = a.f("value");
  Tensor out = Tensor::empty(s, dt);
  int64_t n = out.numel();
  if (n == 0) return {out};
  if (dtype_is_float(dt)) {
    float f = static_cast<float>(v);
    convert_elements(&f, DType::F32, out.raw(), dt, 1);
  } else if (dt == DType::Bool) {
    static_cast<uint8_t*>(out.raw())[0] = v != 0.0;
  } else {
    int64_t iv = std::isfinite(v) ? static_cast<int64_t>(v) : 0;
    convert_elements(&iv, DType::I64, out.raw(), dt, 1);
  }
  size_t es = dtype_size(dt);
  char* p = static_cast<char*>(out.raw());
  for (int64_t i = 1; i < n; i++) std::memcpy(p + i * es, p, es);
  return {out};
}

}  // namespace hfx::kernels
