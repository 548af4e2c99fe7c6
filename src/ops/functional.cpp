// The functional API: one op-table call per function. Helpers that are not ops (transpose, the -1 of
// reshape) are resolved here in terms of ops, never by a side path.
#include "hfx/ops/functional.h"
#include "hfx/ops/linear_q.h"

#include "hfx/core/error.h"

namespace hfx::F {

namespace {
Var call1(const std::string& op, const std::vector<Var>& in, const Attrs& a = {}) {
  for (const Var& v : in)
    if (v.defined()) return v.builder().call(op, in, a).at(0);
  HFX_THROW("functional", "expected at least one defined input for {}", op);
}
}  // namespace

Var op(const std::string& name, const std::vector<Var>& inputs, const Attrs& attrs) {
  return call1(name, inputs, attrs);
}

Var add(const Var& a, const Var& b) { return call1("aten.add.Tensor", {a, b}); }
Var sub(const Var& a, const Var& b) { return call1("aten.sub.Tensor", {a, b}); }
Var mul(const Var& a, const Var& b) { return call1("aten.mul.Tensor", {a, b}); }
Var div(const Var& a, const Var& b) { return call1("aten.div.Tensor", {a, b}); }
Var maximum(const Var& a, const Var& b) { return call1("aten.maximum", {a, b}); }
Var minimum(const Var& a, const Var& b) { return call1("aten.minimum", {a, b}); }
Var add(const Var& a, double s) { return call1("aten.add.Scalar", {a}, {{"other", s}}); }
Var mul(const Var& a, double s) { return call1("aten.mul.Scalar", {a}, {{"other", s}}); }
Var pow(const Var& a, double e) { return call1("aten.pow.Tensor_Scalar", {a}, {{"exponent", e}}); }
Var eq(const Var& a, const Var& b) { return call1("aten.eq.Tensor", {a, b}); }
Var lt(const Var& a, const Var& b) { return call1("aten.lt.Tensor", {a, b}); }
Var le(const Var& a, const Var& b) { return call1("aten.le.Tensor", {a, b}); }
Var gt(const Var& a, const Var& b) { return call1("aten.gt.Tensor", {a, b}); }
Var ge(const Var& a, const Var& b) { return call1("aten.ge.Tensor", {a, b}); }
Var logical_and(const Var& a, const Var& b) { return call1("aten.logical_and", {a, b}); }
Var logical_or(const Var& a, const Var& b) { return call1("aten.logical_or", {a, b}); }
Var logical_not(const Var& a) { return call1("aten.logical_not", {a}); }
Var where(const Var& c, const Var& a, const Var& b) { return call1("aten.where.self", {c, a, b}); }
Var neg(const Var& a) { return call1("aten.neg", {a}); }
Var exp(const Var& a) { return call1("aten.exp", {a}); }
Var log(const Var& a) { return call1("aten.log", {a}); }
Var sqrt(const Var& a) { return call1("aten.sqrt", {a}); }
Var rsqrt(const Var& a) { return call1("aten.rsqrt", {a}); }
Var tanh(const Var& a) { return call1("aten.tanh", {a}); }
Var sigmoid(const Var& a) { return call1("aten.sigmoid", {a}); }
Var silu(const Var& a) { return call1("aten.silu", {a}); }
Var relu(const Var& a) { return call1("aten.relu", {a}); }
Var gelu(const Var& a, const std::string& approx) {
  return call1("aten.gelu", {a}, {{"approximate", approx}});
}
Var sin(const Var& a) { return call1("aten.sin", {a}); }
Var cos(const Var& a) { return call1("aten.cos", {a}); }
Var abs(const Var& a) { return call1("aten.abs", {a}); }
Var reciprocal(const Var& a) { return call1("aten.reciprocal", {a}); }
Var erf(const Var& a) { return call1("aten.erf", {a}); }
Var mm(const Var& a, const Var& b) { return call1("aten.mm", {a, b}); }
Var bmm(const Var& a, const Var& b) { return call1("aten.bmm", {a, b}); }
Var matmul(const Var& a, const Var& b) { return call1("aten.matmul", {a, b}); }
Var linear(const Var& x, const Var& w, const Var& bias) {
  if (bias.defined()) return call1("aten.linear", {x, w, bias});
  return call1("aten.linear", {x, w});
}
Var linear_q(const Var& x, const Var& codes, const Var& scales, const Var& zero_points, int64_t bits,
             int64_t group_size, int64_t act_bits) {
  Attrs a{{"bits", bits}, {"group_size", group_size}};
  if (act_bits != 0) a.set("act_bits", act_bits);
  if (zero_points.defined()) return call1("hfx.linear_q", {x, codes, scales, zero_points}, a);
  return call1("hfx.linear_q", {x, codes, scales}, a);
}
Var embedding_q(const Var& codes, const Var& scales, const Var& zero_points, const Var& indices, int64_t bits,
                int64_t group_size) {
  Attrs a{{"bits", bits}, {"group_size", group_size}};
  if (zero_points.defined()) return call1("hfx.embedding_q", {codes, scales, indices, zero_points}, a);
  return call1("hfx.embedding_q", {codes, scales, indices}, a);
}

Var sum(const Var& a, const std::vector<int64_t>& d, bool k) {
  return call1("aten.sum.dim_IntList", {a}, {{"dim", d}, {"keepdim", k}});
}
Var mean(const Var& a, const std::vector<int64_t>& d, bool k) {
  return call1("aten.mean.dim", {a}, {{"dim", d}, {"keepdim", k}});
}
Var amax(const Var& a, const std::vector<int64_t>& d, bool k) {
  return call1("aten.amax", {a}, {{"dim", d}, {"keepdim", k}});
}
Var argmax(const Var& a, int64_t d, bool k) {
  return call1("aten.argmax", {a}, {{"dim", d}, {"keepdim", k}});
}
Var cumsum(const Var& a, int64_t d) { return call1("aten.cumsum", {a}, {{"dim", d}}); }
Var softmax(const Var& a, int64_t d) { return call1("aten._softmax", {a}, {{"dim", d}}); }
Var log_softmax(const Var& a, int64_t d) { return call1("aten._log_softmax", {a}, {{"dim", d}}); }
Var layer_norm(const Var& x, const Var& w, const Var& b, double eps) {
  return call1("aten.layer_norm", {x, w, b}, {{"eps", eps}});
}
Var embedding(const Var& w, const Var& idx) { return call1("aten.embedding", {w, idx}); }
Var index_select(const Var& a, int64_t d, const Var& idx) {
  return call1("aten.index_select", {a, idx}, {{"dim", d}});
}
Var index_copy(const Var& a, int64_t d, const Var& idx, const Var& src) {
  return call1("aten.index_copy", {a, idx, src}, {{"dim", d}});
}
Var cat(const std::vector<Var>& xs, int64_t d) {
  if (xs.size() == 1) return xs[0];
  return call1("aten.cat", xs, {{"dim", d}});
}
Var slice(const Var& a, int64_t d, const Sym& start, const Sym& end, int64_t step) {
  return call1("aten.slice.Tensor", {a}, {{"dim", d}, {"start", start}, {"end", end}, {"step", step}});
}
Var reshape(const Var& a, const SymShape& shape) { return call1("aten.view", {a}, {{"size", shape}}); }
Var permute(const Var& a, const std::vector<int64_t>& dims) {
  return call1("aten.permute", {a}, {{"dims", dims}});
}
Var transpose(const Var& a, int64_t d0, int64_t d1) {
  int64_t n = a.dim();
  if (d0 < 0) d0 += n;
  if (d1 < 0) d1 += n;
  std::vector<int64_t> p(n);
  for (int64_t i = 0; i < n; i++) p[i] = i;
  std::swap(p.at(d0), p.at(d1));
  return permute(a, p);
}
Var expand(const Var& a, const SymShape& shape) { return call1("aten.expand", {a}, {{"size", shape}}); }
Var unsqueeze(const Var& a, int64_t d) { return call1("aten.unsqueeze", {a}, {{"dim", d}}); }
Var squeeze(const Var& a, int64_t d) { return call1("aten.squeeze.dim", {a}, {{"dim", d}}); }
Var to(const Var& a, DType dt) {
  if (a.dtype() == dt) return a;
  return call1("aten._to_copy", {a}, {{"dtype", dt}});
}
Var arange(Builder& b, const Sym& start, const Sym& end, DType dt) {
  return b.call("aten.arange.start", {}, {{"start", start}, {"end", end}, {"dtype", dt}}).at(0);
}
Var full(Builder& b, const SymShape& shape, double value, DType dt) {
  return b.call("aten.full", {}, {{"size", shape}, {"value", value}, {"dtype", dt}}).at(0);
}
Var rms_norm(const Var& x, const Var& w, double eps, double off) {
  return call1("hfx.rms_norm", {x, w}, {{"eps", eps}, {"weight_offset", off}});
}
Var rope(const Var& x, const Var& c, const Var& s, bool inter) {
  return call1("hfx.rope", {x, c, s}, {{"interleaved", inter}});
}
Var sdpa(const Var& q, const Var& k, const Var& v, const Var& mask, double scale, bool causal, int64_t window,
         double softcap) {
  std::vector<Var> in{q, k, v};
  if (mask.defined()) in.push_back(mask);
  return call1("hfx.sdpa", in,
               {{"scale", scale}, {"causal", causal}, {"window", window}, {"softcap", softcap}});
}

Var moe(const Var& x, const Var& router_logits, const std::vector<Var>& experts, int64_t top_k,
        bool normalize, const std::string& act) {
  std::vector<Var> in{x, router_logits};
  in.insert(in.end(), experts.begin(), experts.end());
  return call1("hfx.moe", in, {{"top_k", top_k}, {"normalize", normalize}, {"act", act}});
}

}  // namespace hfx::F
