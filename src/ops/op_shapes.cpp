// Shape and dtype rules of the fused and quantized ops (see op_shapes.h). A mis-shaped weight names
// itself here, when the model is built, not deep in a kernel.
#include "ops/op_shapes.h"

#include "hfx/core/error.h"

namespace hfx::op_shapes {

int64_t norm_dim(int64_t d, int64_t rank, const char* op) {
  int64_t r = rank == 0 ? 1 : rank;
  if (d < 0) d += r;
  if (d < 0 || d >= r) HFX_THROW("ops", "expected dim in [{}, {}) for {}, got {}", -r, r, op, d);
  return d;
}

const TensorType& need(const In& in, size_t i, const char* op) {
  if (i >= in.size() || !in[i]) HFX_THROW("ops", "expected input {} of {}, got none", i, op);
  return *in[i];
}

// hfx.linear_q: x[..., K], codes uint8 [N, K / group, group·bits/8], scales f32 [N, K / group],
// optional zero points uint8 [N, ceil(K / group · bits / 8)] → [..., N] f32.
Out linear_q(const In& in, const Attrs& a, ShapeEnv&) {
  const char* op = "hfx.linear_q";
  const auto &x = need(in, 0, op), &q = need(in, 1, op), &s = need(in, 2, op);
  const int64_t bits = a.i("bits"), g = a.i("group_size");
  auto K = x.shape.empty() ? std::nullopt : x.shape.back().maybe_value();
  auto B = q.shape.size() == 3 ? q.shape[1].maybe_value() : std::nullopt;
  auto blob = q.shape.size() == 3 ? q.shape[2].maybe_value() : std::nullopt;
  if (!K || !B || !blob || (bits != 4 && bits != 8) || g <= 0 || *K != *B * g || *blob * 8 != g * bits ||
      q.dtype != DType::U8 || s.shape.size() != 2 || !s.shape[0].same(q.shape[0]) ||
      !s.shape[1].same(q.shape[1]))
    HFX_THROW(
        "ops",
        "expected hfx.linear_q x[..., K] with uint8 codes [N, K/{}, {}] and scales [N, K/{}] ({} bits), "
        "got {}, {} and {}",
        g, g * bits / 8, g, bits, x.str(), q.str(), s.str());
  SymShape out = x.shape;
  out.back() = q.shape[0];
  return {TensorType{DType::F32, out}};
}

// hfx.embedding_q: codes uint8 [V, D / group, group·bits/8], scales f32 [V, D / group], indices int
// [...], optional zero points → [..., D] f32.
Out embedding_q(const In& in, const Attrs& a, ShapeEnv&) {
  const char* op = "hfx.embedding_q";
  const auto &q = need(in, 0, op), &s = need(in, 1, op), &idx = need(in, 2, op);
  const int64_t bits = a.i("bits"), g = a.i("group_size");
  auto B = q.shape.size() == 3 ? q.shape[1].maybe_value() : std::nullopt;
  auto blob = q.shape.size() == 3 ? q.shape[2].maybe_value() : std::nullopt;
  if (!B || !blob || (bits != 4 && bits != 8) || g <= 0 || *blob * 8 != g * bits || q.dtype != DType::U8 ||
      s.shape.size() != 2 || !s.shape[0].same(q.shape[0]) || !s.shape[1].same(q.shape[1]) ||
      (idx.dtype != DType::I64 && idx.dtype != DType::I32))
    HFX_THROW("ops",
              "expected hfx.embedding_q uint8 codes [V, D/{}, {}], scales [V, D/{}] ({} bits) and integer "
              "indices, got {}, {} and {}",
              g, g * bits / 8, g, bits, q.str(), s.str(), idx.str());
  SymShape out = idx.shape;
  out.push_back(Sym(*B * g));
  return {TensorType{DType::F32, out}};
}

Out rms_norm(const In& in, const Attrs&, ShapeEnv& env) {
  const auto& x = need(in, 0, "hfx.rms_norm");
  const auto& w = need(in, 1, "hfx.rms_norm");
  if (w.shape.size() != 1 || x.shape.empty() ||
      (!w.shape[0].same(x.shape.back()) && !env.eq(w.shape[0], x.shape.back())))
    HFX_THROW("ops", "expected hfx.rms_norm weight [{}], got {}",
              x.shape.empty() ? "?" : x.shape.back().str(), w.str());
  return {x};
}

Out rope(const In& in, const Attrs&, ShapeEnv& env) {
  const auto& x = need(in, 0, "hfx.rope");
  const auto& c = need(in, 1, "hfx.rope");
  const auto& s = need(in, 2, "hfx.rope");
  if (x.shape.size() != 4 || c.shape.size() != 3 || s.shape.size() != 3)
    HFX_THROW("ops", "expected hfx.rope x[B,H,S,D] and cos/sin[B,S,R], got {}, {}, {}", x.str(), c.str(),
              s.str());
  if (!c.shape[1].same(x.shape[2]) && !env.eq(c.shape[1], x.shape[2]))
    HFX_THROW("ops", "expected hfx.rope cos length {} to match x's sequence {}", c.shape[1].str(),
              x.shape[2].str());
  return {x};
}

Out sdpa(const In& in, const Attrs&, ShapeEnv& env) {
  const auto& q = need(in, 0, "hfx.sdpa");
  const auto& k = need(in, 1, "hfx.sdpa");
  const auto& v = need(in, 2, "hfx.sdpa");
  if (q.shape.size() != 4 || k.shape.size() != 4 || v.shape.size() != 4)
    HFX_THROW("ops", "expected hfx.sdpa q[B,Hq,S,D], k[B,Hkv,T,D], v[B,Hkv,T,Dv], got {}, {}, {}", q.str(),
              k.str(), v.str());
  auto hq = q.shape[1].maybe_value(), hk = k.shape[1].maybe_value();
  if (hq && hk && (*hk == 0 || *hq % *hk != 0))
    HFX_THROW("ops", "expected query heads {} to be a multiple of key/value heads {} in hfx.sdpa", *hq, *hk);
  if (!k.shape[2].same(v.shape[2]) && !env.eq(k.shape[2], v.shape[2]))
    HFX_THROW("ops", "expected hfx.sdpa key and value lengths to agree, got {} and {}", k.str(), v.str());
  SymShape s = q.shape;
  s[3] = v.shape[3];
  return {TensorType{q.dtype, s}};
}

// hfx.moe: x[..., H], logits[..., E], then {gate_up [E, 2I, H], down [E, H, I]} or E triples
// {gate [I, H], up [I, H], down [H, I]}; out = x's shape. Checked here so a mis-shaped expert weight
// names itself when the model is built, not deep in a kernel.
Out moe(const In& in, const Attrs& a, ShapeEnv& env) {
  const char* op = "hfx.moe";
  const auto& x = need(in, 0, op);
  const auto& l = need(in, 1, op);
  auto same = [&](const Sym& p, const Sym& q) { return p.same(q) || env.eq(p, q); };
  if (x.shape.empty() || l.shape.size() != x.shape.size())
    HFX_THROW("ops", "expected hfx.moe x[..., H] and router logits[..., E] of the same rank, got {} and {}",
              x.str(), l.str());
  auto E = l.shape.back().maybe_value();
  if (!E || *E <= 0)
    HFX_THROW("ops", "expected a constant expert count (router logits' last dim) in hfx.moe, got {}",
              l.str());
  const int64_t k = a.i("top_k");
  if (k <= 0 || k > *E)
    HFX_THROW("ops", "expected hfx.moe top_k in [1, {}] (the expert count), got {}", *E, k);
  const Sym H = x.shape.back();
  const size_t n = in.size() - 2;
  if (n == 2 && need(in, 2, op).shape.size() == 3) {
    const auto &gu = *in[2], &dn = need(in, 3, op);
    if (!gu.shape[0].same(Sym(*E)) || !same(gu.shape[2], H) || dn.shape.size() != 3 ||
        !dn.shape[0].same(Sym(*E)) || !same(dn.shape[1], H) || !same(dn.shape[2] * Sym(2), gu.shape[1]))
      HFX_THROW("ops", "expected hfx.moe gate_up [{}, 2I, {}] and down [{}, {}, I], got {} and {}", *E,
                H.str(), *E, H.str(), gu.str(), dn.str());
    return {x};
  }
  if (static_cast<int64_t>(n) != 3 * *E)
    HFX_THROW("ops",
              "expected hfx.moe to get {} expert weights (gate, up, down for each of {} experts), got {}",
              3 * *E, *E, n);
  for (int64_t e = 0; e < *E; e++) {
    const auto &g = need(in, 2 + 3 * e, op), &u = need(in, 3 + 3 * e, op), &d = need(in, 4 + 3 * e, op);
    if (g.shape.size() != 2 || u.shape.size() != 2 || d.shape.size() != 2 || !same(g.shape[1], H) ||
        !same(u.shape[1], H) || !same(g.shape[0], u.shape[0]) || !same(d.shape[0], H) ||
        !same(d.shape[1], g.shape[0]))
      HFX_THROW("ops", "expected hfx.moe expert {} gate [I, {}], up [I, {}], down [{}, I], got {}, {} and {}",
                e, H.str(), H.str(), H.str(), g.str(), u.str(), d.str());
  }
  return {x};
}

Out embedding(const In& in, const Attrs&, ShapeEnv&) {
  const auto& w = need(in, 0, "aten.embedding");
  const auto& idx = need(in, 1, "aten.embedding");
  if (w.shape.size() != 2) HFX_THROW("ops", "expected a 2-d embedding weight, got {}", w.str());
  if (dtype_is_float(idx.dtype))
    HFX_THROW("ops", "expected integer indices for aten.embedding, got {}", idx.str());
  SymShape s = idx.shape;
  s.push_back(w.shape[1]);
  return {TensorType{w.dtype, s}};
}

Out index_select(const In& in, const Attrs& a, ShapeEnv&) {
  const auto& x = need(in, 0, "aten.index_select");
  const auto& idx = need(in, 1, "aten.index_select");
  if (idx.shape.size() != 1)
    HFX_THROW("ops", "expected a 1-d index for aten.index_select, got {}", idx.str());
  int64_t d = norm_dim(a.i("dim"), static_cast<int64_t>(x.shape.size()), "aten.index_select");
  SymShape s = x.shape;
  s[d] = idx.shape[0];
  return {TensorType{x.dtype, s}};
}

Out index_copy(const In& in, const Attrs& a, ShapeEnv&) {
  const auto& x = need(in, 0, "aten.index_copy");
  const auto& idx = need(in, 1, "aten.index_copy");
  const auto& src = need(in, 2, "aten.index_copy");
  int64_t d = norm_dim(a.i("dim"), static_cast<int64_t>(x.shape.size()), "aten.index_copy");
  if (idx.shape.size() != 1 || src.shape.size() != x.shape.size() || !src.shape[d].same(idx.shape[0]))
    HFX_THROW("ops", "expected index [n] and source with n at dim {} for aten.index_copy, got {} and {}", d,
              idx.str(), src.str());
  return {x};
}

}  // namespace hfx::op_shapes
