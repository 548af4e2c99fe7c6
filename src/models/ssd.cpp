// The Mamba-2 mixer as transformers' Mamba2Mixer.torch_forward computes it (the same math as mamba_ssm's
// mamba_chunk_scan_combined), written without data-dependent control flow so one graph is both prefill
// and decode in every backend.
//
// The scan is the chunked SSD algorithm: the sequence is zero-padded to whole chunks of `chunk` tokens.
// Inside a chunk the output is a masked matmul with the segment sums seg[l, s] = Σ_{s<k≤l} dt_k·A (a
// cumsum over a lower-triangular repeat, as transformers' segment_sum, so no difference of large
// cumulative sums); each chunk's own final state is a matmul too, and the states are passed between chunks
// by the same segment-sum decay over the chunk totals (one [chunks+1, chunks+1] matmul, the empty past or
// the carried state as chunk 0). Memory is O(S·chunk) per head, not O(S²). Padded positions have dt = 0,
// so they neither decay the state nor add to it: the final state is the one after the last real token.
//
// Heads share B and C by groups: head h reads group h / (heads / groups), as transformers' repeat_interleave
// and mamba_ssm do. The gated RMSNorm (MambaRMSNormGated) normalizes y·silu(gate) per group of
// intermediate / n_groups channels, as transformers 5 and mamba_ssm do.
#include "ssd.h"

#include <cmath>
#include <limits>

#include "hfx/core/error.h"

namespace hfx::models {

void check_ssd_dims(const SsdDims& d, const std::string& mt) {
  if (d.hidden <= 0 || d.inner <= 0 || d.state <= 0 || d.kernel < 1 || d.heads <= 0 || d.head_dim <= 0 ||
      d.groups <= 0 || d.chunk <= 0)
    HFX_THROW(
        "model",
        "expected positive hidden/intermediate/state/conv_kernel/heads/head_dim/n_groups/chunk_size sizes "
        "for {}, got {}/{}/{}/{}/{}/{}/{}/{}",
        mt, d.hidden, d.inner, d.state, d.kernel, d.heads, d.head_dim, d.groups, d.chunk);
  if (d.heads * d.head_dim != d.inner)
    HFX_THROW(
        "model",
        "expected num_heads · head_dim = expand · hidden_size for {}, got {} · {} != {}; fix the config's "
        "head sizes",
        mt, d.heads, d.head_dim, d.inner);
  if (d.heads % d.groups != 0)
    HFX_THROW("model", "expected num_heads divisible by n_groups for {}, got {} heads and {} groups", mt,
              d.heads, d.groups);
}

void ssd_weight_specs(WeightSpecs& s, const std::string& p, const SsdDims& d) {
  s.push_back({p + "in_proj.weight", {d.inner + d.conv_dim() + d.heads, d.hidden}});
  if (d.bias) s.push_back({p + "in_proj.bias", {d.inner + d.conv_dim() + d.heads}});
  s.push_back({p + "conv1d.weight", {d.conv_dim(), 1, d.kernel}});
  if (d.conv_bias) s.push_back({p + "conv1d.bias", {d.conv_dim()}});
  s.push_back({p + "dt_bias", {d.heads}});
  s.push_back({p + "A_log", {d.heads}});
  s.push_back({p + "D", {d.heads}});
  s.push_back({p + "norm.weight", {d.inner}});
  s.push_back({p + "out_proj.weight", {d.hidden, d.inner}});
  if (d.bias) s.push_back({p + "out_proj.bias", {d.hidden}});
}

void read_time_step_limit(SsdDims& d, const json& j) {
  auto it = j.find("time_step_limit");
  if (it == j.end() || it->is_null()) return;
  if (!it->is_array() || it->size() != 2 || !(*it)[0].is_number())
    HFX_THROW("model", "expected time_step_limit [min, max], got {}", it->dump());
  d.dt_min = (*it)[0].get<double>();
  const json& hi = (*it)[1];
  d.dt_max = hi.is_number() && std::isfinite(hi.get<double>()) ? hi.get<double>() : 0.0;
}

Var softplus(const Var& z) {
  Var big = F::gt(z, F::full(z.builder(), {}, 20.0));
  return F::where(big, z, F::log(F::add(F::exp(z), 1.0)));
}

namespace {

// exp(segment_sum(v)) on v [..., T]: out[..., t, s] = exp(Σ_{s<k≤t} v_k) for s ≤ t, 0 above the diagonal.
Var exp_segsum(Builder& b, const Var& v, const Sym& T) {
  Var t_idx = F::unsqueeze(F::arange(b, Sym(0), T), 1), s_idx = F::unsqueeze(F::arange(b, Sym(0), T), 0);
  Var zero = F::full(b, {}, 0.0);
  // [..., T(k), T(s)]: v_k where k > s
  Var rep = F::where(F::gt(t_idx, s_idx), F::unsqueeze(v, static_cast<int64_t>(v.dim())), zero);
  Var seg = F::cumsum(rep, static_cast<int64_t>(rep.dim()) - 2);
  return F::where(F::ge(t_idx, s_idx), F::exp(seg), zero);
}

// [B, S, ...] zero-padded to [B, L, ...] along dim 1 (pad = L - S, possibly 0).
Var pad_seq(Builder& b, const Var& x, const Sym& pad) {
  SymShape shape = x.shape();
  shape[1] = pad;
  return F::cat({x, F::full(b, shape, 0.0)}, 1);
}

// [B, L, H, X] → [B, chunks, H, Q, X]
Var to_chunks(const Var& x, const Sym& B, const Sym& nc, int64_t Q, int64_t H, int64_t X) {
  return F::permute(F::reshape(x, {B, nc, Sym(Q), Sym(H), Sym(X)}), {0, 1, 3, 2, 4});
}

// The chunked scan: x [B, S, H, P], dt [B, S, H], A [H], Bh/Ch [B, S, H, N], h0 [B, H, P, N] →
// y [B, S, H, P] (without the D skip); h0 becomes the final state.
Var chunked_scan(Builder& b, const SsdDims& d, const Var& x, const Var& dt, const Var& A, const Var& Bh,
                 const Var& Ch, Var& h0) {
  const int64_t Q = d.chunk, H = d.heads, P = d.head_dim, N = d.state;
  Sym Bs = x.size(0), S = x.size(1);
  Sym nc = floordiv(S + Sym(Q - 1), Sym(Q)), pad = nc * Sym(Q) - S;
  Var xdt = to_chunks(pad_seq(b, F::mul(x, F::unsqueeze(dt, 3)), pad), Bs, nc, Q, H, P);  // [B, c, H, Q, P]
  Var Bc = to_chunks(pad_seq(b, Bh, pad), Bs, nc, Q, H, N),
      Cc = to_chunks(pad_seq(b, Ch, pad), Bs, nc, Q, H, N);
  Var a = F::permute(F::reshape(pad_seq(b, F::mul(dt, A), pad), {Bs, nc, Sym(Q), Sym(H)}),
                     {0, 1, 3, 2});  // [B, c, H, Q]
  Var acs = F::cumsum(a, 3);
  // 1. Within each chunk: (C_l · B_s) · exp(seg[l, s]) applied to x_s·dt_s.
  Var G = F::matmul(Cc, F::transpose(Bc, 3, 4));                     // [B, c, H, Q(l), Q(s)]
  Var y_diag = F::matmul(F::mul(G, exp_segsum(b, a, Sym(Q))), xdt);  // [B, c, H, Q, P]
  // 2. Each chunk's own final state from the zero state: Σ_l exp(acs_last - acs_l) · x_l·dt_l ⊗ B_l.
  Var decay_states = F::exp(F::sub(F::slice(acs, 3, Q - 1, Q), acs));  // [B, c, H, Q]
  Var states =
      F::matmul(F::transpose(F::mul(xdt, F::unsqueeze(decay_states, 4)), 3, 4), Bc);  // [B, c, H, P, N]
  // 3. States passed between chunks: chunk 0 is the past state; decay by the chunk totals' segment sums.
  Var all = F::cat({F::unsqueeze(h0, 1), states}, 1);                             // [B, c+1, H, P, N]
  Var totals = F::permute(F::squeeze(F::slice(acs, 3, Q - 1, Q), 3), {0, 2, 1});  // [B, H, c]
  totals = F::cat({F::full(b, {Bs, Sym(H), Sym(1)}, 0.0), totals}, 2);            // [B, H, c+1]
  Var flat = F::reshape(F::permute(all, {0, 2, 1, 3, 4}), {Bs, Sym(H), nc + Sym(1), Sym(P * N)});
  Var passed = F::reshape(F::matmul(exp_segsum(b, totals, nc + Sym(1)), flat),
                          {Bs, Sym(H), nc + Sym(1), Sym(P), Sym(N)});
  h0 = F::squeeze(F::slice(passed, 2, nc, nc + Sym(1)), 2);  // [B, H, P, N]
  Var start = F::permute(F::slice(passed, 2, Sym(0), nc),
                         {0, 2, 1, 3, 4});  // [B, c, H, P, N]: state entering chunk c
  // 4. The entering state read out by C, decayed to each position.
  Var y_off =
      F::mul(F::matmul(Cc, F::transpose(start, 3, 4)), F::unsqueeze(F::exp(acs), 4));  // [B, c, H, Q, P]
  Var y = F::reshape(F::permute(F::add(y_diag, y_off), {0, 1, 3, 2, 4}), {Bs, nc * Sym(Q), Sym(H), Sym(P)});
  return F::slice(y, 1, Sym(0), S);
}

// [B, S, groups·N] → [B, S, heads, N]: head h reads group h / (heads / groups).
Var per_head(const Var& g, const SsdDims& d, const Sym& B, const Sym& S) {
  Var r = F::unsqueeze(F::reshape(g, {B, S, Sym(d.groups), Sym(d.state)}), 3);
  r = F::expand(r, {B, S, Sym(d.groups), Sym(d.heads / d.groups), Sym(d.state)});
  return F::reshape(r, {B, S, Sym(d.heads), Sym(d.state)});
}

// Depthwise causal conv1d over [past inputs | new inputs] along time; conv_state becomes the last K-1 inputs.
Var conv1d(Builder& b, const Model& m, const SsdDims& d, const Var& xbc, Var& conv_state) {
  const std::string p = b.scope() + ".";
  Sym B = xbc.size(0), S = xbc.size(1);
  const int64_t CD = d.conv_dim(), K = d.kernel;
  Var past = conv_state ? F::to(conv_state, DType::F32) : F::full(b, {B, Sym(CD), Sym(K - 1)}, 0.0);
  Var xc = F::cat({past, F::transpose(xbc, 1, 2)}, 2);  // [B, CD, K-1+S]
  Var cw = F::reshape(W(b, m, p + "conv1d.weight"), {Sym(CD), Sym(K)});
  Var y;
  {
    Scope sc(b, "conv1d");
    for (int64_t k = 0; k < K; k++) {
      Var term = F::mul(F::slice(xc, 2, Sym(k), S + Sym(k)), F::slice(cw, 1, k, k + 1));
      y = y ? F::add(y, term) : term;
    }
    if (d.conv_bias) y = F::add(y, F::unsqueeze(W(b, m, p + "conv1d.bias"), 1));
    b.name_output(y);
  }
  conv_state = F::slice(xc, 2, S, S + Sym(K - 1));
  return F::silu(F::transpose(y, 1, 2));  // [B, S, CD]
}

}  // namespace

Var ssd_mixer(Builder& b, const Model& m, const SsdDims& d, const Var& x, const Var& mask, Var& conv_state,
              Var& ssm_state) {
  const std::string p = b.scope() + ".";
  Sym B = x.size(0), S = x.size(1);
  const int64_t I = d.inner, CD = d.conv_dim(), H = d.heads, GN = d.groups * d.state;
  // Padded positions are zeroed before in_proj and after the convolution (apply_mask_to_padding_states),
  // so a left-padded row's state stays zero through its padding.
  Var proj = linear(b, m, mask ? F::mul(x, mask) : x, "in_proj", d.bias);  // [B, S, I + CD + H]
  Var gate = F::slice(proj, 2, 0, I), dt_in = F::slice(proj, 2, I + CD, I + CD + H);
  Var xbc = conv1d(b, m, d, F::slice(proj, 2, I, I + CD), conv_state);
  if (mask) xbc = F::mul(xbc, mask);
  Var xs = F::reshape(F::slice(xbc, 2, 0, I), {B, S, Sym(H), Sym(d.head_dim)});
  Var Bh = per_head(F::slice(xbc, 2, I, I + GN), d, B, S),
      Ch = per_head(F::slice(xbc, 2, I + GN, I + 2 * GN), d, B, S);
  Var dt = softplus(F::add(dt_in, W(b, m, p + "dt_bias")));  // [B, S, H]
  if (d.dt_min > 0) dt = F::maximum(dt, F::full(b, {}, d.dt_min));
  if (d.dt_max > 0) dt = F::minimum(dt, F::full(b, {}, d.dt_max));
  Var A = F::neg(F::exp(W(b, m, p + "A_log")));  // [H]
  Var y;
  {
    Scope ss(b, "ssm");
    Var h = ssm_state ? F::to(ssm_state, DType::F32)
                      : F::full(b, {B, Sym(H), Sym(d.head_dim), Sym(d.state)}, 0.0);
    y = chunked_scan(b, d, xs, dt, A, Bh, Ch, h);
    ssm_state = h;
    y = F::add(y, F::mul(xs, F::unsqueeze(W(b, m, p + "D"), 1)));  // D skip
    y = F::reshape(y, {B, S, Sym(I)});
    b.name_output(y);
  }
  // MambaRMSNormGated: rms_norm(y · silu(gate)) · weight, each group of I / n_groups channels normalized on
  // its own (transformers 5, mamba_ssm; transformers 4.x normalized all I at once, which equals it only for
  // one group).
  const Var gated = F::mul(y, F::silu(gate));
  if (d.groups == 1) {
    y = rms_norm(b, m, gated, "norm", d.eps, 0.0);
  } else {
    Scope sn(b, "norm");
    Var x4 = F::reshape(gated, {B, S, Sym(d.groups), Sym(I / d.groups)});
    x4 = F::mul(x4, F::rsqrt(F::add(F::mean(F::pow(x4, 2.0), {3}, true), d.eps)));
    y = F::mul(F::reshape(x4, {B, S, Sym(I)}), W(b, m, b.scope() + ".weight"));
    b.name_output(y);
  }
  return linear(b, m, y, "out_proj", d.bias);
}

}  // namespace hfx::models
