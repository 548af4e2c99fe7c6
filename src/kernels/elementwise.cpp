// Elementwise kernels: broadcasting binary ops, comparisons, logic, where, scalar ops and unary math.
//
// Inputs whose dtype differs from the compute type (f32 for float results, int64 for integer ones,
// uint8 for logic) are converted first — at their own (unbroadcast) size — then one strided loop runs
// over the broadcast shape with dims coalesced, so contiguous same-shape inputs are one flat
// vectorizable run and views (permuted, sliced, expanded) need no copy. f16/bf16 results are computed
// into f32 and rounded once at the end.
#if defined(__GNUC__) && !defined(__clang__)  // GCC only: clang has no per-file optimize pragma
#pragma GCC optimize("O3")
#endif
#include <cmath>

#include "kernels/detail.h"

namespace hfx::kernels {
using namespace detail;

namespace {

constexpr int64_t kGrain = 1 << 15;

template <class T>
constexpr DType dtype_of() {
  if constexpr (std::is_same_v<T, float>) return DType::F32;
  if constexpr (std::is_same_v<T, int64_t>) return DType::I64;
  return DType::Bool;
}

/// Runs out[i] = op(a[i], b[i]) over the broadcast shape; T: compute type, R: result element type.
template <class T, class R, class Op>
Tensor binary_loop(const Tensor& a0, const Tensor& b0, const Shape& shape, DType rdt, Op op,
                   const char* name) {
  Tensor a = as_dtype(a0, dtype_of<T>()), b = as_dtype(b0, dtype_of<T>());
  Tensor out = Tensor::empty(shape, rdt);
  StridedLoop<3> loop(
      shape,
      {contiguous_strides(shape), broadcast_strides(a, shape, name), broadcast_strides(b, shape, name)},
      {static_cast<char*>(out.raw()), static_cast<char*>(a.raw()), static_cast<char*>(b.raw())},
      {static_cast<int64_t>(sizeof(R)), static_cast<int64_t>(sizeof(T)), static_cast<int64_t>(sizeof(T))});
  loop.run(
      [op](const std::array<char*, 3>& p, const std::array<int64_t, 3>& s, int64_t n) {
        R* __restrict o = reinterpret_cast<R*>(p[0]);
        const T* __restrict x = reinterpret_cast<const T*>(p[1]);
        const T* __restrict y = reinterpret_cast<const T*>(p[2]);
        if (s[1] == 1 && s[2] == 1) {
          for (int64_t i = 0; i < n; i++) o[i] = op(x[i], y[i]);
        } else if (s[1] == 1 && s[2] == 0) {
          const T yv = y[0];
          for (int64_t i = 0; i < n; i++) o[i] = op(x[i], yv);
        } else if (s[1] == 0 && s[2] == 1) {
          const T xv = x[0];
          for (int64_t i = 0; i < n; i++) o[i] = op(xv, y[i]);
        } else {
          const int64_t sx = s[1], sy = s[2];
          for (int64_t i = 0; i < n; i++) o[i] = op(x[i * sx], y[i * sy]);
        }
      },
      kGrain);
  return out;
}

/// Runs out[i] = op(a[i]) (T compute type, R result type).
template <class T, class R, class Op>
Tensor unary_loop(const Tensor& a0, DType rdt, Op op) {
  Tensor a = as_dtype(a0, dtype_of<T>());
  Tensor out = Tensor::empty(a.shape(), rdt);
  StridedLoop<2> loop(a.shape(), {contiguous_strides(a.shape()), a.strides()},
                      {static_cast<char*>(out.raw()), static_cast<char*>(a.raw())},
                      {static_cast<int64_t>(sizeof(R)), static_cast<int64_t>(sizeof(T))});
  loop.run(
      [op](const std::array<char*, 2>& p, const std::array<int64_t, 2>& s, int64_t n) {
        R* __restrict o = reinterpret_cast<R*>(p[0]);
        const T* __restrict x = reinterpret_cast<const T*>(p[1]);
        if (s[1] == 1) {
          for (int64_t i = 0; i < n; i++) o[i] = op(x[i]);
        } else {
          const int64_t sx = s[1];
          for (int64_t i = 0; i < n; i++) o[i] = op(x[i * sx]);
        }
      },
      kGrain);
  return out;
}

/// Arithmetic binary op: result dtype promote_types(a, b) (int/int division → f32, as torch).
template <class FOp, class IOp>
Tensors arith(const Tensors& in, const char* name, FOp fop, IOp iop, bool true_div = false) {
  check_arity(in, 2, 2, name);
  const Tensor &a = in[0], &b = in[1];
  Shape shape = broadcast_shapes(a.shape(), b.shape(), name);
  DType rt = promote_types(a.dtype(), b.dtype());
  if (true_div && !dtype_is_float(rt)) rt = DType::F32;
  if (dtype_is_float(rt)) {
    Tensor r = binary_loop<float, float>(a, b, shape, DType::F32, fop, name);
    return {finish(r, rt)};
  }
  Tensor r = binary_loop<int64_t, int64_t>(a, b, shape, DType::I64, iop, name);
  return {finish(r, rt)};
}

/// Comparison: computed in the promoted type, bool result.
template <class Cmp>
Tensors compare(const Tensors& in, const char* name, Cmp cmp) {
  check_arity(in, 2, 2, name);
  const Tensor &a = in[0], &b = in[1];
  Shape shape = broadcast_shapes(a.shape(), b.shape(), name);
  DType ct = promote_types(a.dtype(), b.dtype());
  if (dtype_is_float(ct))
    return {binary_loop<float, uint8_t>(
        a, b, shape, DType::Bool, [cmp](float x, float y) -> uint8_t { return cmp(x, y) ? 1 : 0; }, name)};
  return {binary_loop<int64_t, uint8_t>(
      a, b, shape, DType::Bool, [cmp](int64_t x, int64_t y) -> uint8_t { return cmp(x, y) ? 1 : 0; }, name)};
}

template <class Op>
Tensors logic(const Tensors& in, const char* name, Op op) {
  check_arity(in, 2, 2, name);
  Shape shape = broadcast_shapes(in[0].shape(), in[1].shape(), name);
  return {binary_loop<uint8_t, uint8_t>(in[0], in[1], shape, DType::Bool, op, name)};
}

/// Float math: result dtype = input's if float, else f32.
template <class Op>
Tensors float_unary(const Tensors& in, const char* name, Op op) {
  check_arity(in, 1, 1, name);
  DType rt = float_out(in[0].dtype());
  return {finish(unary_loop<float, float>(in[0], DType::F32, op), rt)};
}

/// Sign-preserving op valid on ints too (neg, abs, relu): result dtype = input's.
template <class FOp, class IOp>
Tensors same_unary(const Tensors& in, const char* name, FOp fop, IOp iop) {
  check_arity(in, 1, 1, name);
  DType dt = in[0].dtype();
  if (dtype_is_float(dt)) return {finish(unary_loop<float, float>(in[0], DType::F32, fop), dt)};
  if (dt == DType::Bool) HFX_THROW("kernels", "expected a numeric input for {}, got bool", name);
  return {finish(unary_loop<int64_t, int64_t>(in[0], DType::I64, iop), dt)};
}

bool is_integral(double v) { return std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 9.2e18; }

}  // namespace

// ---- binary arithmetic ----

Tensors add(const Tensors& in, const Attrs&) {
  return arith(
      in, "add", [](float x, float y) { return x + y; }, [](int64_t x, int64_t y) { return x + y; });
}
Tensors sub(const Tensors& in, const Attrs&) {
  return arith(
      in, "sub", [](float x, float y) { return x - y; }, [](int64_t x, int64_t y) { return x - y; });
}
Tensors mul(const Tensors& in, const Attrs&) {
  return arith(
      in, "mul", [](float x, float y) { return x * y; }, [](int64_t x, int64_t y) { return x * y; });
}
Tensors div(const Tensors& in, const Attrs&) {
  return arith(
      in, "div", [](float x, float y) { return x / y; },
      [](int64_t x, int64_t y) { return y == 0 ? 0 : x / y; }, true);
}
Tensors maximum(const Tensors& in, const Attrs&) {
  // NaN propagates, as torch.maximum
  return arith(
      in, "maximum", [](float x, float y) { return (x != x || x > y) ? x : y; },
      [](int64_t x, int64_t y) { return x > y ? x : y; });
}
Tensors minimum(const Tensors& in, const Attrs&) {
  return arith(
      in, "minimum", [](float x, float y) { return (x != x || x < y) ? x : y; },
      [](int64_t x, int64_t y) { return x < y ? x : y; });
}

// ---- scalar ops ----
// The result keeps the input's dtype (the op table's inference: same_as_first); an integer input
// computes in double and truncates. pow always gives a float result (table: float_unary).

namespace {
template <class FOp>
Tensors scalar_op(const Tensors& in, const char* name, double s, FOp fop) {
  check_arity(in, 1, 1, name);
  DType dt = in[0].dtype();
  if (dtype_is_float(dt)) {
    float v = static_cast<float>(s);
    return {finish(unary_loop<float, float>(in[0], DType::F32, [v, fop](float x) { return fop(x, v); }), dt)};
  }
  if (is_integral(s)) {
    int64_t v = static_cast<int64_t>(s);
    return {finish(unary_loop<int64_t, int64_t>(in[0], DType::I64, [v, fop](int64_t x) { return fop(x, v); }),
                   dt)};
  }
  Tensor r = unary_loop<int64_t, int64_t>(in[0], DType::I64, [s, fop](int64_t x) {
    double y = fop(static_cast<double>(x), s);
    return std::isfinite(y) ? static_cast<int64_t>(std::trunc(y)) : int64_t{0};
  });
  return {finish(r, dt)};
}
}  // namespace

Tensors add_scalar(const Tensors& in, const Attrs& a) {
  return scalar_op(in, "add_scalar", a.f("other"), [](auto x, auto y) { return x + y; });
}

Tensors mul_scalar(const Tensors& in, const Attrs& a) {
  return scalar_op(in, "mul_scalar", a.f("other"), [](auto x, auto y) { return x * y; });
}

Tensors pow_scalar(const Tensors& in, const Attrs& a) {
  check_arity(in, 1, 1, "pow_scalar");
  double e = a.f("exponent");
  DType rt = float_out(in[0].dtype());
  Tensor r;
  if (e == 2.0) {
    r = unary_loop<float, float>(in[0], DType::F32, [](float x) { return x * x; });
  } else if (e == 1.0) {
    r = unary_loop<float, float>(in[0], DType::F32, [](float x) { return x; });
  } else if (e == 0.5) {
    r = unary_loop<float, float>(in[0], DType::F32, [](float x) { return std::sqrt(x); });
  } else if (e == -1.0) {
    r = unary_loop<float, float>(in[0], DType::F32, [](float x) { return 1.0f / x; });
  } else if (e == 3.0) {
    r = unary_loop<float, float>(in[0], DType::F32, [](float x) { return x * x * x; });
  } else {
    float ef = static_cast<float>(e);
    r = unary_loop<float, float>(in[0], DType::F32, [ef](float x) { return std::pow(x, ef); });
  }
  return {finish(r, rt)};
}

// ---- comparisons and logic ----

Tensors eq(const Tensors& in, const Attrs&) {
  return compare(in, "eq", [](auto x, auto y) { return x == y; });
}
Tensors lt(const Tensors& in, const Attrs&) {
  return compare(in, "lt", [](auto x, auto y) { return x < y; });
}
Tensors le(const Tensors& in, const Attrs&) {
  return compare(in, "le", [](auto x, auto y) { return x <= y; });
}
Tensors gt(const Tensors& in, const Attrs&) {
  return compare(in, "gt", [](auto x, auto y) { return x > y; });
}
Tensors ge(const Tensors& in, const Attrs&) {
  return compare(in, "ge", [](auto x, auto y) { return x >= y; });
}
Tensors logical_and(const Tensors& in, const Attrs&) {
  return logic(in, "logical_and", [](uint8_t x, uint8_t y) -> uint8_t { return (x != 0) & (y != 0); });
}
Tensors logical_or(const Tensors& in, const Attrs&) {
  return logic(in, "logical_or", [](uint8_t x, uint8_t y) -> uint8_t { return (x != 0) | (y != 0); });
}
Tensors logical_not(const Tensors& in, const Attrs&) {
  check_arity(in, 1, 1, "logical_not");
  return {unary_loop<uint8_t, uint8_t>(in[0], DType::Bool, [](uint8_t x) -> uint8_t { return x == 0; })};
}

Tensors where(const Tensors& in, const Attrs&) {
  check_arity(in, 3, 3, "where");
  Tensor c = as_dtype(in[0], DType::Bool);
  Shape shape = broadcast_shapes(broadcast_shapes(c.shape(), in[1].shape(), "where"), in[2].shape(), "where");
  DType rt = promote_types(in[1].dtype(), in[2].dtype());
  auto run = [&](auto tag) -> Tensor {
    using T = decltype(tag);
    Tensor a = as_dtype(in[1], dtype_of<T>()), b = as_dtype(in[2], dtype_of<T>());
    Tensor out = Tensor::empty(shape, dtype_of<T>());
    StridedLoop<4> loop(shape,
                        {contiguous_strides(shape), broadcast_strides(c, shape, "where"),
                         broadcast_strides(a, shape, "where"), broadcast_strides(b, shape, "where")},
                        {static_cast<char*>(out.raw()), static_cast<char*>(c.raw()),
                         static_cast<char*>(a.raw()), static_cast<char*>(b.raw())},
                        {static_cast<int64_t>(sizeof(T)), 1, static_cast<int64_t>(sizeof(T)),
                         static_cast<int64_t>(sizeof(T))});
    loop.run(
        [](const std::array<char*, 4>& p, const std::array<int64_t, 4>& s, int64_t n) {
          T* __restrict o = reinterpret_cast<T*>(p[0]);
          const uint8_t* __restrict cc = reinterpret_cast<const uint8_t*>(p[1]);
          const T* __restrict x = reinterpret_cast<const T*>(p[2]);
          const T* __restrict y = reinterpret_cast<const T*>(p[3]);
          if (s[1] == 1 && s[2] == 1 && s[3] == 1) {
            for (int64_t i = 0; i < n; i++) o[i] = cc[i] ? x[i] : y[i];
          } else {
            for (int64_t i = 0; i < n; i++) o[i] = cc[i * s[1]] ? x[i * s[2]] : y[i * s[3]];
          }
        },
        kGrain);
    return out;
  };
  if (dtype_is_float(rt)) return {finish(run(float{}), rt)};
  if (rt == DType::Bool) return {run(uint8_t{})};
  return {finish(run(int64_t{}), rt)};
}

// ---- unary ----

Tensors neg(const Tensors& in, const Attrs&) {
  return same_unary(
      in, "neg", [](float x) { return -x; }, [](int64_t x) { return -x; });
}
Tensors abs(const Tensors& in, const Attrs&) {
  return same_unary(
      in, "abs", [](float x) { return std::fabs(x); }, [](int64_t x) { return x < 0 ? -x : x; });
}
Tensors relu(const Tensors& in, const Attrs&) {
  return same_unary(
      in, "relu", [](float x) { return x > 0.0f ? x : (x != x ? x : 0.0f); },
      [](int64_t x) { return x > 0 ? x : int64_t{0}; });
}
Tensors exp(const Tensors& in, const Attrs&) {
  return float_unary(in, "exp", [](float x) { return fast_exp(x); });
}
Tensors log(const Tensors& in, const Attrs&) {
  return float_unary(in, "log", [](float x) { return std::log(x); });
}
Tensors sqrt(const Tensors& in, const Attrs&) {
  return float_unary(in, "sqrt", [](float x) { return std::sqrt(x); });
}
Tensors rsqrt(const Tensors& in, const Attrs&) {
  return float_unary(in, "rsqrt", [](float x) { return 1.0f / std::sqrt(x); });
}
Tensors tanh(const Tensors& in, const Attrs&) {
  return float_unary(in, "tanh", [](float x) { return std::tanh(x); });
}
Tensors sigmoid(const Tensors& in, const Attrs&) {
  return float_unary(in, "sigmoid", [](float x) { return 1.0f / (1.0f + fast_exp(-x)); });
}
Tensors silu(const Tensors& in, const Attrs&) {
  return float_unary(in, "silu", [](float x) { return x / (1.0f + fast_exp(-x)); });
}
Tensors gelu(const Tensors& in, const Attrs& a) {
  const std::string& approx = a.s("approximate");
  if (approx == "tanh")
    return float_unary(in, "gelu", [](float x) {
      const float k = 0.7978845608028654f;  // sqrt(2/pi)
      return 0.5f * x * (1.0f + std::tanh(k * (x + 0.044715f * x * x * x)));
    });
  if (approx != "none") HFX_THROW("kernels", "expected gelu approximate 'none' or 'tanh', got '{}'", approx);
  return float_unary(in, "gelu",
                     [](float x) { return 0.5f * x * (1.0f + std::erf(x * 0.7071067811865476f)); });
}
Tensors sin(const Tensors& in, const Attrs&) {
  return float_unary(in, "sin", [](float x) { return std::sin(x); });
}
Tensors cos(const Tensors& in, const Attrs&) {
  return float_unary(in, "cos", [](float x) { return std::cos(x); });
}
Tensors reciprocal(const Tensors& in, const Attrs&) {
  return float_unary(in, "reciprocal", [](float x) { return 1.0f / x; });
}
Tensors erf(const Tensors& in, const Attrs&) {
  return float_unary(in, "erf", [](float x) { return std::erf(x); });
}
Tensors floor(const Tensors& in, const Attrs&) {
  return float_unary(in, "floor", [](float x) { return std::floor(x); });
}

}  // namespace hfx::kernels
