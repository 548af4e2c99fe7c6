// hfx/ops/functional.h — the functional API that model code is written against.
//
// Each function calls exactly one op of the op table (named in its comment) through the Var's
// builder, so model code has no side path around the table. Shapes are symbolic (`Sym`); dims may be
// negative (counted from the end) wherever an op takes a dim.
#pragma once
#include <string>
#include <vector>

#include "hfx/ops/builder.h"

namespace hfx::F {

/// Any op of the op table by name, with its single output: what every function below does, for an op
/// that has no named wrapper yet (e.g. `F::op("aten.erf", {x})`). Throws naming an unknown op.
Var op(const std::string& name, const std::vector<Var>& inputs, const Attrs& attrs = {});

// ---- elementwise binary (broadcasting) ----
Var add(const Var& a, const Var& b);      ///< aten.add.Tensor
Var sub(const Var& a, const Var& b);      ///< aten.sub.Tensor
Var mul(const Var& a, const Var& b);      ///< aten.mul.Tensor
Var div(const Var& a, const Var& b);      ///< aten.div.Tensor
Var maximum(const Var& a, const Var& b);  ///< aten.maximum
Var minimum(const Var& a, const Var& b);  ///< aten.minimum
Var add(const Var& a, double s);          ///< aten.add.Scalar
Var mul(const Var& a, double s);          ///< aten.mul.Scalar
Var pow(const Var& a, double exponent);   ///< aten.pow.Tensor_Scalar
// ---- comparison / logic (bool results) ----
Var eq(const Var& a, const Var& b);                      ///< aten.eq.Tensor
Var lt(const Var& a, const Var& b);                      ///< aten.lt.Tensor
Var le(const Var& a, const Var& b);                      ///< aten.le.Tensor
Var gt(const Var& a, const Var& b);                      ///< aten.gt.Tensor
Var ge(const Var& a, const Var& b);                      ///< aten.ge.Tensor
Var logical_and(const Var& a, const Var& b);             ///< aten.logical_and
Var logical_or(const Var& a, const Var& b);              ///< aten.logical_or
Var logical_not(const Var& a);                           ///< aten.logical_not
Var where(const Var& cond, const Var& a, const Var& b);  ///< aten.where.self
// ---- unary ----
Var neg(const Var& a);                                            ///< aten.neg
Var exp(const Var& a);                                            ///< aten.exp
Var log(const Var& a);                                            ///< aten.log
Var sqrt(const Var& a);                                           ///< aten.sqrt
Var rsqrt(const Var& a);                                          ///< aten.rsqrt
Var tanh(const Var& a);                                           ///< aten.tanh
Var sigmoid(const Var& a);                                        ///< aten.sigmoid
Var silu(const Var& a);                                           ///< aten.silu
Var relu(const Var& a);                                           ///< aten.relu
Var gelu(const Var& a, const std::string& approximate = "none");  ///< aten.gelu ("none" | "tanh")
Var sin(const Var& a);                                            ///< aten.sin
Var cos(const Var& a);                                            ///< aten.cos
Var abs(const Var& a);                                            ///< aten.abs
Var reciprocal(const Var& a);                                     ///< aten.reciprocal
Var erf(const Var& a);                                            ///< aten.erf
// ---- linear algebra ----
Var mm(const Var& a, const Var& b);      ///< aten.mm: [M,K] @ [K,N]
Var bmm(const Var& a, const Var& b);     ///< aten.bmm: [B,M,K] @ [B,K,N]
Var matmul(const Var& a, const Var& b);  ///< aten.matmul: batched with broadcasting over leading dims
/// aten.linear: x[..., K] @ w[N, K]^T (+ bias[N]); `bias` may be absent.
Var linear(const Var& x, const Var& w, const Var& bias = Var());
// ---- reductions ----
Var sum(const Var& a, const std::vector<int64_t>& dims, bool keepdim = false);   ///< aten.sum.dim_IntList
Var mean(const Var& a, const std::vector<int64_t>& dims, bool keepdim = false);  ///< aten.mean.dim
Var amax(const Var& a, const std::vector<int64_t>& dims, bool keepdim = false);  ///< aten.amax
Var argmax(const Var& a, int64_t dim, bool keepdim = false);                     ///< aten.argmax (int64)
Var cumsum(const Var& a, int64_t dim);                                           ///< aten.cumsum
Var softmax(const Var& a, int64_t dim);                                          ///< aten._softmax
Var log_softmax(const Var& a, int64_t dim);                                      ///< aten._log_softmax
// ---- normalization ----
/// aten.layer_norm over the last dim; weight/bias may be absent.
Var layer_norm(const Var& x, const Var& weight, const Var& bias, double eps);
// ---- indexing and shape ----
Var embedding(const Var& weight,
              const Var& indices);  ///< aten.embedding: weight[V, D], indices int64 → [..., D]
Var index_select(const Var& a, int64_t dim, const Var& index);  ///< aten.index_select
/// aten.index_copy: a copy of `a` with a.select(dim, index[i]) = src.select(dim, i).
Var index_copy(const Var& a, int64_t dim, const Var& index, const Var& src);
Var cat(const std::vector<Var>& xs, int64_t dim);  ///< aten.cat
/// aten.slice.Tensor: a[start:end:step] along dim (end clamped to the size).
Var slice(const Var& a, int64_t dim, const Sym& start, const Sym& end, int64_t step = 1);
Var reshape(const Var& a,
            const SymShape& shape);  ///< aten.view (at most one -1 entry, resolved symbolically)
Var permute(const Var& a, const std::vector<int64_t>& dims);  ///< aten.permute
Var transpose(const Var& a, int64_t d0, int64_t d1);          ///< aten.permute with two dims swapped
Var expand(const Var& a, const SymShape& shape);              ///< aten.expand (-1 keeps a dim)
Var unsqueeze(const Var& a, int64_t dim);                     ///< aten.unsqueeze
Var squeeze(const Var& a, int64_t dim);                       ///< aten.squeeze.dim
Var to(const Var& a, DType dt);                               ///< aten._to_copy
// ---- factories (no tensor inputs) ----
Var arange(Builder& b, const Sym& start, const Sym& end, DType dt = DType::I64);   ///< aten.arange.start
Var full(Builder& b, const SymShape& shape, double value, DType dt = DType::F32);  ///< aten.full
// ---- composite ops (fused kernels; backends keep or decompose them) ----
/// hfx.rms_norm: x * rsqrt(mean(x², -1) + eps) * (weight + weight_offset), computed in f32.
Var rms_norm(const Var& x, const Var& weight, double eps, double weight_offset = 0.0);
/// hfx.rope: x[B, H, S, D] rotated by cos/sin[B, S, R] (R ≤ D rotary dims, the rest passes through).
/// Half rotation (Llama): pairs (i, i + R/2), cos = [f, f]; interleaved (GPT-J): pairs (2i, 2i+1),
/// cos = [f0, f0, f1, f1, ...].
Var rope(const Var& x, const Var& cos, const Var& sin, bool interleaved = false);
/// hfx.sdpa: softmax(q k^T * scale [softcap] + mask) v with q[B, Hq, S, D], k[B, Hkv, T, D],
/// v[B, Hkv, T, Dv], Hq % Hkv == 0 (grouped-query). Causal alignment is bottom-right: query i sits at
/// position T - S + i. `window` > 0 keeps keys with pos_q - pos_k < window. `softcap` > 0 applies
/// softcap * tanh(scores / softcap) before masking. `mask` (optional) is additive, broadcast to
/// [B, Hq, S, T].
Var sdpa(const Var& q, const Var& k, const Var& v, const Var& mask, double scale, bool causal,
         int64_t window = 0, double softcap = 0.0);
/// hfx.moe: a sparse mixture-of-experts MLP over x[..., H] with router logits[..., E]. Each token goes to
/// the top_k experts of softmax(logits) (renormalized to sum 1 when `normalize`); expert e computes
/// down_e(act(gate_e x) * up_e x) and the outputs are summed with the routing weights. `experts` is
/// either {gate_up [E, 2I, H] (gate rows first; attribute `interleaved`: gate, up alternating, as the
/// ONNX Runtime lowering packs it), down [E, H, I]} or E triples {gate [I, H], up [I, H],
/// down [H, I]}. act: silu, relu, gelu or gelu_tanh.
Var moe(const Var& x, const Var& router_logits, const std::vector<Var>& experts, int64_t top_k,
        bool normalize, const std::string& act = "silu");

}  // namespace hfx::F
