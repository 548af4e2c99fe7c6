// Reference decompositions of the composite ops into primitive ops, written with the functional API so
// they run eagerly (tests compare them with the fused kernels) and trace into graphs for backends that
// have no fused op. Each computes in f32 like its fused kernel and casts back to the input's dtype.
// Shapes stay symbolic: sizes come from Var::size, the causal mask from arange over (T - S, T).
#include "ops/decompositions.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "hfx/core/error.h"
#include "hfx/ops/functional.h"

namespace hfx::decomp {
namespace {

double attr_f(const Attrs& a, const char* n, double dflt) { return a.has(n) ? a.f(n) : dflt; }
bool attr_b(const Attrs& a, const char* n, bool dflt) { return a.has(n) ? a.b(n) : dflt; }
int64_t attr_i(const Attrs& a, const char* n, int64_t dflt) { return a.has(n) ? a.i(n) : dflt; }

DType result_dtype(DType in) { return dtype_is_float(in) ? in : DType::F32; }

void need(const std::vector<Var>& in, size_t lo, size_t hi, const char* op) {
  if (in.size() < lo || in.size() > hi)
    HFX_THROW("decomp", "expected {} to {} inputs for {}, got {}", lo, hi, op, in.size());
  for (size_t i = 0; i < lo; i++)
    if (!in[i]) HFX_THROW("decomp", "expected input {} of {} to be present", i, op);
}

}  // namespace

// y = x * rsqrt(mean(x², -1) + eps) * (w + offset), all in f32, cast back to x's dtype.
std::vector<Var> rms_norm(Builder&, const std::vector<Var>& in, const Attrs& a) {
  need(in, 2, 2, "hfx.rms_norm");
  const Var& x = in[0];
  double eps = attr_f(a, "eps", 1e-6), off = attr_f(a, "weight_offset", 0.0);
  Var xf = F::to(x, DType::F32);
  Var ms = F::mean(F::pow(xf, 2.0), {-1}, true);
  Var y = F::mul(xf, F::rsqrt(F::add(ms, eps)));
  Var w = F::to(in[1], DType::F32);
  if (off != 0.0) w = F::add(w, off);
  return {F::to(F::mul(y, w), result_dtype(x.dtype()))};
}

// Half rotation (rotate_half): out = x·cos + cat(-x2, x1)·sin over the first R dims.
// Interleaved: out = x·cos + stack(-x_odd, x_even)·sin, pairs (2j, 2j+1). Dims past R pass through.
std::vector<Var> rope(Builder&, const std::vector<Var>& in, const Attrs& a) {
  need(in, 3, 3, "hfx.rope");
  const Var& x = in[0];
  bool inter = attr_b(a, "interleaved", false);
  Var xf = F::to(x, DType::F32);
  Var c = F::unsqueeze(F::to(in[1], DType::F32), 1);  // [B, 1, S, R]
  Var s = F::unsqueeze(F::to(in[2], DType::F32), 1);
  Sym R = in[1].size(-1), D = x.size(-1);
  bool partial = !R.same(D);
  Var xr = partial ? F::slice(xf, -1, 0, R) : xf;
  Var rot;
  if (!inter) {
    Sym h = floordiv(R, Sym(2));
    Var x1 = F::slice(xr, -1, 0, h), x2 = F::slice(xr, -1, h, R);
    rot = F::cat({F::neg(x2), x1}, -1);
  } else {
    Var even = F::slice(xr, -1, 0, R, 2), odd = F::slice(xr, -1, 1, R, 2);
    Var pairs = F::cat({F::unsqueeze(F::neg(odd), -1), F::unsqueeze(even, -1)}, -1);  // [B, H, S, R/2, 2]
    rot = F::reshape(pairs, {x.size(0), x.size(1), x.size(2), R});
  }
  Var out = F::add(F::mul(xr, c), F::mul(rot, s));
  if (partial) out = F::cat({out, F::slice(xf, -1, R, D)}, -1);
  return {F::to(out, result_dtype(x.dtype()))};
}

// softmax(q k^T · scale [softcap] [causal/window] + mask) v with kv heads repeated for GQA. Query i sits
// at position T - S + i (bottom-right causal); rows that see no key are zeros, as the fused kernel.
std::vector<Var> sdpa(Builder& b, const std::vector<Var>& in, const Attrs& a) {
  need(in, 3, 4, "hfx.sdpa");
  const Var &q = in[0], &k = in[1], &v = in[2];
  Var mask = in.size() > 3 ? in[3] : Var();
  double scale = attr_f(a, "scale", 0.0);
  if (scale == 0.0) {
    auto d = q.size(-1).maybe_value();
    if (!d)
      HFX_THROW("decomp", "expected a constant head dim for the default sdpa scale, got {}",
                q.size(-1).str());
    scale = 1.0 / std::sqrt(static_cast<double>(std::max<int64_t>(1, *d)));
  }
  bool causal = attr_b(a, "causal", true);
  int64_t window = attr_i(a, "window", 0);
  double softcap = attr_f(a, "softcap", 0.0);
  const double ninf = -std::numeric_limits<double>::infinity();

  Var qf = F::to(q, DType::F32), kf = F::to(k, DType::F32), vf = F::to(v, DType::F32);
  Sym Hq = q.size(1), Hkv = k.size(1);
  if (!Hq.same(Hkv)) {
    Sym G = floordiv(Hq, Hkv);
    auto repeat = [&](const Var& t) {
      Var u = F::unsqueeze(t, 2);  // [B, Hkv, 1, T, D]
      u = F::expand(u, {t.size(0), Hkv, G, t.size(2), t.size(3)});
      return F::reshape(u, {t.size(0), Hq, t.size(2), t.size(3)});
    };
    kf = repeat(kf);
    vf = repeat(vf);
  }
  Var scores = F::mul(F::matmul(qf, F::transpose(kf, -1, -2)), scale);  // [B, Hq, S, T]
  if (softcap > 0.0) scores = F::mul(F::tanh(F::mul(scores, 1.0 / softcap)), softcap);
  if (causal || window > 0) {
    Sym S = q.size(2), T = k.size(2);
    Var qpos = F::unsqueeze(F::arange(b, T - S, T), -1);  // [S, 1]
    Var kpos = F::arange(b, Sym(0), T);                   // [T]
    Var allowed;
    if (causal) allowed = F::le(kpos, qpos);  // key j <= query position p
    if (window > 0) {
      Var in_window = F::gt(kpos, F::add(qpos, static_cast<double>(-window)));  // p - j < window
      allowed = allowed ? F::logical_and(allowed, in_window) : in_window;
    }
    scores = F::where(allowed, scores, F::full(b, {}, ninf, DType::F32));
  }
  if (mask) {
    if (mask.dtype() == DType::Bool)
      scores = F::where(mask, scores, F::full(b, {}, ninf, DType::F32));
    else
      scores = F::add(scores, F::to(mask, DType::F32));
  }
  Var p = F::softmax(scores, -1);
  // a row with every key disallowed is NaN after softmax; the op defines it as zeros
  p = F::where(F::eq(p, p), p, F::full(b, {}, 0.0, DType::F32));
  return {F::to(F::matmul(p, vf), result_dtype(q.dtype()))};
}

namespace {
Var moe_act(const Var& g, const std::string& act) {
  if (act == "silu") return F::silu(g);
  if (act == "relu") return F::relu(g);
  if (act == "gelu") return F::gelu(g, "none");
  if (act == "gelu_tanh") return F::gelu(g, "tanh");
  HFX_THROW("decomp", "expected hfx.moe act silu, relu, gelu or gelu_tanh, got '{}'", act);
}
}  // namespace

// The dense expert form: the routing weights scattered into a dense [..., E] matrix by top_k repeated
// argmaxes (each knocks out the largest remaining probability; probabilities are >= 0, so -1 never
// wins; ties go to the lower index), every expert run on every token and weighted by its column (zero
// off its tokens). No data-dependent shapes or control flow, at the cost of E expert MLPs per token.
std::vector<Var> moe(Builder& b, const std::vector<Var>& in, const Attrs& a) {
  need(in, 4, std::max<size_t>(in.size(), 4), "hfx.moe");
  const Var& x = in[0];
  auto Em = in[1].size(-1).maybe_value();
  if (!Em) HFX_THROW("decomp", "expected a constant expert count for hfx.moe, got {}", in[1].size(-1).str());
  const int64_t E = *Em, k = attr_i(a, "top_k", 1);
  const std::string act = a.has("act") ? a.s("act") : "silu";
  Var p = F::softmax(F::to(in[1], DType::F32), -1);
  Var ids = F::arange(b, Sym(0), Sym(E));
  Var minus_one = F::full(b, {}, -1.0), zero = F::full(b, {}, 0.0);
  Var cur = p, sel;
  for (int64_t j = 0; j < k; j++) {
    Var hit = F::eq(ids, F::argmax(cur, -1, /*keepdim=*/true));  // [..., E] bool
    sel = sel.defined() ? F::logical_or(sel, hit) : hit;
    if (j + 1 < k) cur = F::where(hit, minus_one, cur);
  }
  Var wts = F::where(sel, p, zero);
  if (attr_b(a, "normalize", false)) wts = F::div(wts, F::sum(wts, {-1}, /*keepdim=*/true));
  Var xf = F::to(x, DType::F32), out;
  if (in.size() == 4 && in[2].dim() == 3) {
    // Stacked: one linear over all experts (gate_up viewed as [E·2I, H]); the weighted activations
    // [..., E·I] then meet down viewed as [H, E·I], whose contraction sums the experts.
    const Sym I2 = in[2].size(1), H = in[2].size(2);
    const Sym I = floordiv(I2, Sym(2));
    SymShape lead;
    for (int64_t d = 0; d + 1 < x.dim(); d++) lead.push_back(x.size(d));
    SymShape eh = lead;
    eh.insert(eh.end(), {Sym(E), I2});
    Var h = F::reshape(F::linear(xf, F::reshape(F::to(in[2], DType::F32), {Sym(E) * I2, H})), eh);
    const bool il = attr_b(a, "interleaved", false);
    Var gate = il ? F::slice(h, -1, Sym(0), I2, 2) : F::slice(h, -1, Sym(0), I);
    Var up = il ? F::slice(h, -1, Sym(1), I2, 2) : F::slice(h, -1, I, I2);
    Var y = F::mul(moe_act(gate, act), up);  // [..., E, I]
    SymShape ei = lead;
    ei.push_back(Sym(E) * I);
    y = F::reshape(F::mul(y, F::unsqueeze(wts, -1)), ei);
    Var down = F::reshape(F::permute(F::to(in[3], DType::F32), {1, 0, 2}), {H, Sym(E) * I});
    out = F::linear(y, down);
  } else {
    if (static_cast<int64_t>(in.size()) != 2 + 3 * E)
      HFX_THROW("decomp", "expected hfx.moe with {} expert weights (gate, up, down per expert), got {}",
                3 * E, in.size() - 2);
    for (int64_t e = 0; e < E; e++) {
      Var g = F::linear(xf, F::to(in[2 + 3 * e], DType::F32)),
          u = F::linear(xf, F::to(in[3 + 3 * e], DType::F32));
      Var y = F::linear(F::mul(moe_act(g, act), u), F::to(in[4 + 3 * e], DType::F32));
      y = F::mul(y, F::slice(wts, -1, e, e + 1));
      out = out.defined() ? F::add(out, y) : y;
    }
  }
  return {F::to(out, result_dtype(x.dtype()))};
}

}  // namespace hfx::decomp

namespace hfx::decomp {

// x @ dequant(W)^T with the codes de-quantized in the graph (MatMulNBits' layout, hfx/quant/quantize.h),
// for backends with no quantized matmul (torch.export's core ATen). A 4-bit byte holds elements (2j, 2j+1)
// in its (low, high) nibble: one gather from a constant [256, 2] table (byte → its two nibbles) splits
// them with ops every backend has, no bitwise op. 8-bit codes are cast. Zero points: the input's (4-bit
// ones packed like the codes, a padding nibble past the last block) or the symmetric 2^(bits-1).
std::vector<Var> linear_q(Builder& b, const std::vector<Var>& in, const Attrs& a) {
  need(in, 3, 4, "hfx.linear_q");
  if (attr_i(a, "act_bits", 0) != 0)
    HFX_THROW(
        "decomp",
        "expected hfx.linear_q act_bits 0 to decompose it, got {}: the int8 rounding of the activations "
        "is ONNX Runtime's MatMulNBits math (--target ort), not decomposed",
        attr_i(a, "act_bits", 0));
  const int64_t bits = a.i("bits"), g = a.i("group_size");
  const Var &x = in[0], &codes = in[1], &scales = in[2];
  const Var zp = in.size() > 3 ? in[3] : Var();
  const Sym N = codes.size(0), B = codes.size(1);
  auto nibbles = [&](const Var& bytes) {  // [..., n] uint8 → [..., n, 2] f32 (low, high)
    Tensor t = Tensor::empty({256, 2}, DType::F32);
    for (int v = 0; v < 256; v++) t.data<float>()[2 * v] = v & 15, t.data<float>()[2 * v + 1] = v >> 4;
    return F::embedding(b.constant(t), F::to(bytes, DType::I64));
  };
  Var q = bits == 4 ? F::reshape(nibbles(codes), {N, B, Sym(g)}) : F::to(codes, DType::F32);  // [N, B, g]
  if (!zp) {
    q = F::add(q, -static_cast<double>(int64_t{1} << (bits - 1)));
  } else {
    Var z = bits == 8 ? F::to(zp, DType::F32)
                      : F::slice(F::reshape(nibbles(zp), {N, zp.size(1) * Sym(2)}), 1, 0, B);  // [N, B]
    q = F::sub(q, F::unsqueeze(z, -1));
  }
  Var w = F::reshape(F::mul(q, F::unsqueeze(F::to(scales, DType::F32), -1)), {N, B * Sym(g)});
  return {F::linear(x.dtype() == DType::F32 ? x : F::to(x, DType::F32), w)};
}

}  // namespace hfx::decomp
