// The Llama-family decoder (DecoderLM): transformers' LlamaDecoderLayer and its relatives line by line, with
// what varies in the family (norm kind and placement, parallel residual, partial/interleaved rotary, NoPE
// layers, gated or plain MLP, biases, q/k norms, multipliers, soft-capping, experts) read from
// DecoderOptions, so that an architecture of the family is a declaration.
#include <algorithm>
#include <cmath>

#include <limits>

#include "blocks.h"
#include "hfx/core/error.h"
#include "hfx/ops/linear_q.h"
#include "hfx/quant/quantize.h"

namespace hfx::models {

namespace {
// The parameters of one norm of `kind` over `n` features named `name` (none for OLMo's parameterless one).
void norm_specs(WeightSpecs& s, NormKind kind, const std::string& name, int64_t n) {
  if (name.empty() || kind == NormKind::layer_no_affine) return;
  s.push_back({name + ".weight", {n}});
  if (kind == NormKind::layer || kind == NormKind::layer_1p) s.push_back({name + ".bias", {n}});
}

// hidden_act → hfx.moe's act attribute (the same functions activation() applies).
std::string moe_activation(const std::string& name) {
  if (name == "silu" || name == "swish") return "silu";
  if (name == "gelu" || name == "relu") return name;
  if (name == "gelu_new" || name == "gelu_pytorch_tanh" || name == "gelu_fast" || name == "gelu_python_tanh")
    return "gelu_tanh";
  HFX_THROW("model",
            "expected a supported activation (silu, gelu, gelu_new, gelu_pytorch_tanh, relu), got '{}'",
            name);
}
}  // namespace

namespace {
// A linear's weight [out, in] and, with `bias`, its bias [out].
void linear_specs(WeightSpecs& s, const std::string& name, int64_t out, int64_t in, bool bias) {
  s.push_back({name + ".weight", {out, in}});
  if (bias) s.push_back({name + ".bias", {out}});
}

void attention_specs(WeightSpecs& s, const ModelConfig& c, const DecoderOptions& o, const std::string& a) {
  const int64_t E = c.hidden_size, H = c.num_attention_heads, K = c.num_key_value_heads, D = c.head_dim;
  const DecoderNames& n = o.names;
  if (o.qkv == QkvLayout::separate) {
    linear_specs(s, a + n.q, H * D, E, o.qkv_bias);
    linear_specs(s, a + n.k, K * D, E, o.qkv_bias);
    linear_specs(s, a + n.v, K * D, E, o.qkv_bias);
  } else {
    linear_specs(s, a + n.qkv, (H + 2 * K) * D, E, o.qkv_bias);
  }
  linear_specs(s, a + o.o_proj, E, H * D, o.o_bias);
  if (o.qk_norm || o.qk_norm_flat) {
    norm_specs(s, o.norm, a + o.q_norm, o.qk_norm ? D : H * D);
    norm_specs(s, o.norm, a + o.k_norm, o.qk_norm ? D : K * D);
  }
}

void moe_specs(WeightSpecs& s, const ModelConfig& c, const MoeOptions& m, const std::string& q) {
  const int64_t E = c.hidden_size;
  s.push_back({q + m.router + ".weight", {m.num_experts, E}});
  if (m.stacked) {
    s.push_back({q + "input_linear.weight", {m.num_experts, 2 * m.intermediate, E}});
    s.push_back({q + "output_linear.weight", {m.num_experts, E, m.intermediate}});
  }
  for (int64_t x = 0; x < m.num_experts && !m.stacked; x++) {
    std::string e = q + "experts." + std::to_string(x) + ".";
    s.push_back({e + (m.mixtral_names ? "w1" : "gate_proj") + ".weight", {m.intermediate, E}});
    s.push_back({e + (m.mixtral_names ? "w2" : "down_proj") + ".weight", {E, m.intermediate}});
    s.push_back({e + (m.mixtral_names ? "w3" : "up_proj") + ".weight", {m.intermediate, E}});
  }
}

// The shared MLP of `m` under `at` (the block, or with shared_beside the layer).
void shared_specs(WeightSpecs& s, const ModelConfig& c, const MoeOptions& m, const std::string& at) {
  const int64_t E = c.hidden_size, S = m.shared_intermediate;
  const std::string p = at + m.shared_name + ".";
  if (m.shared_stacked) {
    s.push_back({p + "input_linear.weight", {2 * S, E}});
    s.push_back({p + "output_linear.weight", {E, S}});
  } else {
    s.push_back({p + "gate_proj.weight", {S, E}});
    s.push_back({p + "up_proj.weight", {S, E}});
    s.push_back({p + "down_proj.weight", {E, S}});
  }
  if (m.shared_sigmoid_gate) s.push_back({at + m.shared_name + "_gate.weight", {1, E}});
}

void mlp_specs(WeightSpecs& s, const ModelConfig& c, const DecoderOptions& o, const std::string& m) {
  const int64_t E = c.hidden_size, I = c.intermediate_size;
  if (!o.gated_mlp) {
    linear_specs(s, m + o.mlp_in, I, E, o.mlp_bias);
  } else if (o.fused_gate_up) {
    s.push_back({m + "gate_up_proj.weight", {2 * I, E}});
  } else {
    linear_specs(s, m + "gate_proj", I, E, o.mlp_bias);
    linear_specs(s, m + "up_proj", I, E, o.mlp_bias);
  }
  linear_specs(s, m + o.mlp_out, E, I, o.mlp_bias);
}
}  // namespace

WeightSpecs decoder_weight_specs(const ModelConfig& c, const DecoderOptions& o) {
  WeightSpecs s;
  const int64_t E = c.hidden_size;
  const DecoderNames& n = o.names;
  s.push_back({n.embed_weight(), {c.vocab_size, E}});
  if (!o.embed_norm.empty()) norm_specs(s, o.norm, n.model + "." + o.embed_norm, E);
  if (!o.position_embedding.empty() && !o.sinusoidal_positions)
    s.push_back({n.model + "." + o.position_embedding + ".weight",
                 {c.max_position_embeddings + o.position_offset, E}});
  for (int64_t i = 0; i < c.num_hidden_layers; i++) {
    const std::string p = n.layer(i);
    const auto named = [&](const std::string& x) { return x.empty() ? x : p + x; };
    norm_specs(s, o.norm, named(o.norms.input), E);
    attention_specs(s, c, o, p + n.attn + ".");
    for (const std::string* x : {&o.norms.post_attn, &o.norms.pre_mlp, &o.norms.post_mlp})
      norm_specs(s, o.norm, named(*x), E);
    if (o.moe.sparse(i)) {
      moe_specs(s, c, o.moe, p + o.moe.block + ".");
      if (o.moe.shared_intermediate > 0)
        shared_specs(s, c, o.moe, o.moe.shared_beside ? p : p + o.moe.block + ".");
    } else
      mlp_specs(s, c, o, n.mlp.empty() ? p : p + n.mlp + ".");
  }
  norm_specs(s, o.norm, n.model + "." + o.final_norm, E);
  if (!c.tie_word_embeddings) s.push_back({n.lm_head + ".weight", {c.vocab_size, E}});
  if (o.lm_head_bias) s.push_back({n.lm_head + ".bias", {c.vocab_size}});
  return s;
}

Var DecoderLM::attention(Builder& b, const Var& x, int layer, const Var& cos, const Var& sin, const Var& mask,
                         KVCache* cache, bool full_mask) const {
  const auto& c = config();
  const DecoderNames& n = o_.names;
  Scope s(b, n.attn);
  const int64_t H = c.num_attention_heads, K = c.num_key_value_heads, D = c.head_dim;
  Sym B = x.size(0), S = x.size(1);
  Var q, k, v;
  if (o_.qkv == QkvLayout::concat) {
    Var qkv = linear(b, *this, x, n.qkv, o_.qkv_bias);
    q = F::slice(qkv, -1, 0, H * D);
    k = F::slice(qkv, -1, H * D, (H + K) * D);
    v = F::slice(qkv, -1, (H + K) * D, (H + 2 * K) * D);
  } else if (o_.qkv == QkvLayout::per_head) {  // [B, S, H, 3D]: head h's q, k, v side by side
    Var qkv = F::reshape(linear(b, *this, x, n.qkv, o_.qkv_bias), {B, S, Sym(H), Sym(3 * D)});
    q = F::slice(qkv, -1, 0, D);
    k = F::slice(qkv, -1, D, 2 * D);
    v = F::slice(qkv, -1, 2 * D, 3 * D);
  } else if (o_.qkv == QkvLayout::codegen) {  // [B, S, 4, 3 · H·D/4]: group g's q, v, k side by side
    const int64_t local = H * D / 4;
    Var qkv = F::reshape(linear(b, *this, x, n.qkv, o_.qkv_bias), {B, S, Sym(4), Sym(3 * local)});
    q = F::slice(qkv, -1, 0, local);
    v = F::slice(qkv, -1, local, 2 * local);
    k = F::slice(qkv, -1, 2 * local, 3 * local);
  } else {
    q = linear(b, *this, x, n.q, o_.qkv_bias);
    k = linear(b, *this, x, n.k, o_.qkv_bias);
    v = linear(b, *this, x, n.v, o_.qkv_bias);
  }
  if (o_.qk_norm_flat) {
    q = norm(b, q, o_.q_norm);
    k = norm(b, k, o_.k_norm);
  }
  if (o_.clip_qkv > 0) {
    // torch.clamp(x, -clip, clip) as min(max(x, -clip), clip).
    Var lo = b.constant(Tensor::scalar(-o_.clip_qkv)), hi = b.constant(Tensor::scalar(o_.clip_qkv));
    q = F::minimum(F::maximum(q, lo), hi);
    k = F::minimum(F::maximum(k, lo), hi);
    v = F::minimum(F::maximum(v, lo), hi);
  }
  q = F::reshape(q, {B, S, H, D});
  k = F::reshape(k, {B, S, K, D});
  v = F::reshape(v, {B, S, K, D});
  if (o_.qk_norm && !o_.qk_norm_after_rope) {
    q = norm(b, q, o_.q_norm);
    k = norm(b, k, o_.k_norm);
  }
  q = F::transpose(q, 1, 2);  // [B, H, S, D]
  k = F::transpose(k, 1, 2);
  v = F::transpose(v, 1, 2);
  if (cos) {
    q = F::rope(q, cos, sin, o_.rope.interleaved);
    k = F::rope(k, cos, sin, o_.rope.interleaved);
  }
  if (o_.qk_norm && o_.qk_norm_after_rope) {  // on [B, H, S, D]: still over head_dim
    q = norm(b, q, o_.q_norm);
    k = norm(b, k, o_.k_norm);
  }
  if (cache) std::tie(k, v) = cache->update(layer, k, v);
  // ALiBi over the keys attention sees: past + S, or a static cache's every slot (slot j holds position j).
  const Var bias_mask = o_.alibi_slopes.empty() ? mask : with_alibi(b, mask, k.size(2));
  const bool sliding = c.layer_types.at(layer) == "sliding_attention";
  double scale = o_.attn_scale > 0 ? o_.attn_scale : 1.0 / std::sqrt(static_cast<double>(D));
  Var o = full_mask ? F::sdpa(q, k, v, bias_mask, scale, /*causal=*/false, 0, o_.attn_softcap)
                    : F::sdpa(q, k, v, bias_mask, scale, /*causal=*/true, sliding ? c.sliding_window : 0,
                              o_.attn_softcap);
  o = F::reshape(F::transpose(o, 1, 2), {B, S, H * D});
  o = linear(b, *this, o, o_.o_proj, o_.o_bias);
  b.name_output(o);
  return o;
}

// The routed experts are one hfx.moe op (eager: a sparse kernel that runs each expert on its tokens only;
// backends without a fused MoE get the op table's dense decomposition through their registry entry;
// --target ort lowers it to com.microsoft.MoE). The router linear and Qwen2-MoE's shared expert stay
// outside: every family here routes by softmax → top-k → optional renormalization, which the op
// covers (GraniteMoE's softmax over the top-k logits is exactly that renormalization).
namespace {

// PhiMoE's sparsemixer (eval) on router logits [..., E]: the top-1 expert's weight is its softmax over the
// logits within 2·eps of the maximum (relative: (max − s) / max(|s|, max) <= 2·eps); then the same for the
// top-2 expert over the logits with the top-1 one masked out. Returned as log-weights (−inf off the two) for
// hfx.moe's top-2 with renormalization, and the weights' sum to scale its output back: together exactly the
// two weights applied as they are.
std::pair<Var, Var> sparsemixer(Builder& b, const Var& scores, double eps) {
  // torch's −inf fill as float's lowest: the same softmax zeros, and a constant every format serializes.
  const Var ninf = F::full(b, {}, std::numeric_limits<float>::lowest()),
            expert = F::arange(b, Sym(0), scores.size(-1));
  auto pick = [&](const Var& masked) {  // (one-hot of the argmax, its weight)
    Var top = F::amax(masked, {-1}, true);
    Var onehot = F::eq(expert, F::argmax(masked, -1, true));
    Var factor = F::maximum(F::abs(scores), top);
    Var far = F::gt(F::div(F::sub(top, scores), factor), F::full(b, {}, 2.0 * eps));
    Var gates = F::softmax(F::where(far, ninf, masked), -1);
    return std::pair<Var, Var>{onehot, F::sum(F::mul(gates, F::to(onehot, DType::F32)), {-1}, true)};
  };
  auto [one1, p1] = pick(scores);
  auto [one2, p2] = pick(F::where(one1, ninf, scores));
  Var w = F::add(F::mul(F::to(one1, DType::F32), p1), F::mul(F::to(one2, DType::F32), p2));
  return {F::log(w), F::add(p1, p2)};
}

}  // namespace

Var DecoderLM::moe(Builder& b, const Var& x) const {
  const auto& m = o_.moe;
  Scope s(b, m.block);
  const std::string blk = b.scope() + ".";
  Var logits = linear(b, *this, x, m.router, false);  // router [B, S, E]
  std::vector<Var> experts;
  if (m.stacked) {
    experts = {w(b, blk + "input_linear.weight"), w(b, blk + "output_linear.weight")};
  } else {
    for (int64_t e = 0; e < m.num_experts; e++) {
      const std::string p = blk + "experts." + std::to_string(e) + ".";
      for (const char* n : m.mixtral_names ? std::vector<const char*>{"w1", "w3", "w2"}
                                           : std::vector<const char*>{"gate_proj", "up_proj", "down_proj"})
        experts.push_back(w(b, p + n + ".weight"));
    }
  }
  Var out;
  {
    Scope se(b, "experts");
    if (m.sparsemixer) {
      auto [route, scale] = sparsemixer(b, logits, m.jitter_eps);
      out = F::mul(F::moe(x, route, experts, 2, /*normalize=*/true, moe_activation(o_.act)), scale);
    } else {
      out = F::moe(x, logits, experts, m.top_k, m.norm_topk_prob, moe_activation(o_.act));
    }
    b.name_output(out);
  }
  if (m.shared_intermediate > 0 && !m.shared_beside) out = F::add(out, shared_mlp(b, x));
  b.name_output(out);
  return out;
}

Var DecoderLM::shared_mlp(Builder& b, const Var& x) const {
  const auto& m = o_.moe;
  Var y;
  {
    Scope ss(b, m.shared_name);
    Var gate, up;
    if (m.shared_stacked) {  // input_linear rows: gate, then up
      Var gu = linear(b, *this, x, "input_linear", false);
      gate = F::slice(gu, -1, 0, m.shared_intermediate);
      up = F::slice(gu, -1, m.shared_intermediate, 2 * m.shared_intermediate);
    } else {
      gate = linear(b, *this, x, "gate_proj", false);
      up = linear(b, *this, x, "up_proj", false);
    }
    y = linear(b, *this, F::mul(activation(gate, o_.act), up),
               m.shared_stacked ? "output_linear" : "down_proj", false);
    b.name_output(y);
  }
  if (!m.shared_sigmoid_gate) return y;
  Var g = F::sigmoid(linear(b, *this, x, m.shared_name + "_gate", false));  // [B, S, 1]
  return F::mul(g, y);
}

Var DecoderLM::mlp(Builder& b, const Var& x, int64_t layer) const {
  const auto& c = config();
  if (o_.moe.sparse(layer)) {
    Var y = moe(b, x);
    const auto& m = o_.moe;
    return m.shared_intermediate > 0 && m.shared_beside ? F::add(y, shared_mlp(b, x)) : y;
  }
  std::optional<Scope> s;  // OPT: fc1 / fc2 sit on the layer itself (names.mlp "")
  if (!o_.names.mlp.empty()) s.emplace(b, o_.names.mlp);
  if (!o_.gated_mlp) {
    Var y = linear(b, *this, activation(linear(b, *this, x, o_.mlp_in, o_.mlp_bias), o_.act), o_.mlp_out,
                   o_.mlp_bias);
    if (s) b.name_output(y);
    return y;
  }
  Var gate, up;
  if (o_.fused_gate_up) {
    Var gu = linear(b, *this, x, "gate_up_proj", false);
    gate = F::slice(gu, -1, 0, c.intermediate_size);
    up = F::slice(gu, -1, c.intermediate_size, 2 * c.intermediate_size);
  } else {
    gate = linear(b, *this, x, "gate_proj", o_.mlp_bias);
    up = linear(b, *this, x, "up_proj", o_.mlp_bias);
  }
  Var y = linear(b, *this, F::mul(activation(gate, o_.act), up), o_.mlp_out, o_.mlp_bias);
  if (s) b.name_output(y);
  return y;
}

namespace {
// transformers multiplies by torch.tensor(sqrt(hidden), dtype=model dtype), in the model dtype.
Var embedding_scale(const ModelConfig& c, Var x) {
  const double norm = Tensor::scalar(std::sqrt(static_cast<double>(c.hidden_size)), c.dtype).item();
  x = F::mul(x, norm);
  return c.dtype != DType::F32 ? F::to(F::to(x, c.dtype), DType::F32) : x;
}
}  // namespace

Var DecoderLM::embed(Builder& b, const Var& input_ids) const {
  Scope se(b, o_.names.embed);
  const quant::QuantNames q = quant::quant_names(o_.names.embed_weight());
  Var h;
  if (weights().has(weight_name(q.qweight))) {  // quantize_model with QuantOptions::embedding
    Var codes = w(b, q.qweight);
    const int64_t group = config().hidden_size / codes.size(1).value();
    h = F::embedding_q(codes, w(b, q.scales), w_opt(b, q.zero_points), input_ids,
                       codes.size(2).value() * 8 / group, group);
  } else {
    h = F::embedding(w(b, o_.names.embed_weight()), input_ids);
  }
  if (o_.scale_embeddings && o_.scale_in_embedding) h = embedding_scale(config(), F::to(h, DType::F32));
  b.name_output(h);
  return h;
}

Var DecoderLM::norm(Builder& b, const Var& x, const std::string& local) const {
  const auto& c = config();
  if (o_.norm == NormKind::rms) return rms_norm(b, *this, x, local, c.norm_eps, o_.norm_offset);
  Scope s(b, local);
  const std::string n = b.scope();
  Var w, bias;
  if (o_.norm != NormKind::layer_no_affine) w = W(b, *this, n + ".weight");
  if (o_.norm == NormKind::layer || o_.norm == NormKind::layer_1p) bias = W(b, *this, n + ".bias");
  if (o_.norm == NormKind::layer_1p) w = F::add(w, 1.0);  // Nemotron's LayerNorm1P: weight + 1
  Var y = F::layer_norm(x, w, bias, c.norm_eps);
  b.name_output(y);
  return y;
}

// One decoder layer on the residual stream h, the norms where o_.norms puts them (transformers' order of
// adds: residual + branch, the parallel form residual + attention + MLP).
Var DecoderLM::layer(Builder& b, Var h, int64_t i, const LayerRope& r, const Var& mask, KVCache* cache,
                     bool full_mask) const {
  const NormPlacement& n = o_.norms;
  const auto norm_or = [&](const Var& x, const std::string& name) {
    return name.empty() ? x : norm(b, x, name);
  };
  Var x = norm_or(h, n.input);
  Var att = attention(b, x, static_cast<int>(i), r.cos, r.sin, mask, cache, full_mask);
  att = norm_or(att, n.post_attn);
  if (o_.residual_multiplier != 1.0) att = F::mul(att, o_.residual_multiplier);
  if (o_.parallel_residual) {  // Phi, Cohere: both branches read the same normed input (GPT-NeoX: its own)
    Var m = mlp(b, n.pre_mlp.empty() ? x : norm(b, h, n.pre_mlp), i);
    return F::add(F::add(h, att), m);
  }
  h = F::add(h, att);
  Var m = norm_or(mlp(b, norm_or(h, n.pre_mlp), i), n.post_mlp);
  if (o_.residual_multiplier != 1.0) m = F::mul(m, o_.residual_multiplier);
  return F::add(h, m);
}

// The padding mask [B, 1, 1, T] (or none) plus ALiBi's slope_h · j for key j: [B|1, H, 1, T], f32.
// Per layer (each sees its own cache's keys); small next to the attention itself.
Var DecoderLM::with_alibi(Builder& b, const Var& mask, const Sym& T) const {
  const auto H = static_cast<int64_t>(o_.alibi_slopes.size());
  Tensor t = Tensor::empty({1, H, 1, 1}, DType::F32);
  for (int64_t h = 0; h < H; h++)
    t.data<float>()[h] = static_cast<float>(o_.alibi_slopes[static_cast<size_t>(h)]);
  Var bias = F::mul(b.constant(std::move(t)), F::to(F::arange(b, Sym(0), T), DType::F32));
  b.name_output(bias, "alibi");
  return mask.defined() ? F::add(mask, bias) : bias;
}

// The learned (or fairseq sinusoidal) position rows of `pos` + position_offset, under names.model.
Var DecoderLM::position_embedding(Builder& b, const Var& pos) const {
  const auto& c = config();
  Scope sp(b, o_.position_embedding);
  Var p = o_.position_offset
              ? F::add(pos, b.constant(Tensor::scalar(static_cast<double>(o_.position_offset), DType::I64)))
              : pos;
  Var table = o_.sinusoidal_positions
                  ? b.constant(fairseq_sinusoidal_table(c.max_position_embeddings + o_.position_offset,
                                                        c.hidden_size, c.pad_token_id.value_or(1)))
                  : W(b, *this, b.scope() + ".weight");
  Var pe = F::embedding(table, p);
  b.name_output(pe);
  return pe;
}

ForwardOut DecoderLM::forward(Builder& b, const ForwardArgs& a) const {
  const auto& c = config();
  Sym S = (a.inputs_embeds.defined() ? a.inputs_embeds : a.input_ids).size(1);
  Sym past = a.cache ? a.cache->past_length() : Sym(0);
  Var h = a.inputs_embeds;
  {
    Scope sm(b, o_.names.model);
    if (!h.defined()) h = embed(b, a.input_ids);
    h = F::to(h, DType::F32);
    if (o_.embedding_multiplier != 1.0) h = F::mul(h, o_.embedding_multiplier);
    if (o_.scale_embeddings && !o_.scale_in_embedding) h = embedding_scale(c, h);
    if (!o_.embed_norm.empty()) h = norm(b, h, o_.embed_norm);
    Var pos = positions(b, a, past);
    // A table of positions (learned, or GPT-J's sin/cos rows) ends at max_position_embeddings: past + S must
    // stay inside it. When tracing, the ranges cannot tell, so this records a guard that export turns into a
    // runtime check (and the contract into a relation).
    if ((o_.bounded_positions || !o_.position_embedding.empty()) &&
        !b.env().le(past + S, Sym(c.max_position_embeddings)))
      HFX_THROW("model", "expected past + sequence <= max_position_embeddings = {} for {}, got {}",
                c.max_position_embeddings, c.model_type, b.env().hint(past + S));
    if (!o_.position_embedding.empty()) h = F::add(h, position_embedding(b, pos));
    Var cos, sin;
    if (o_.rotary) std::tie(cos, sin) = rope_cos_sin(b, o_.rope, pos, past + S);
    Var cos_local = cos, sin_local = sin;
    if (o_.rope_local) std::tie(cos_local, sin_local) = rope_cos_sin(b, *o_.rope_local, pos, past + S);
    Var mask = padding_mask(b, a.attention_mask), mask_local;
    const bool full = a.token_type_ids.defined();  // Gemma 3 image-text: the whole mask is built here
    if (full)
      std::tie(mask, mask_local) =
          image_text_masks(b, a.token_type_ids, a.attention_mask, past, c.sliding_window);
    for (int64_t i = 0; i < c.num_hidden_layers; i++) {
      Scope sl(b, o_.names.layers + "." + std::to_string(i));
      const bool local = c.layer_types.at(i) == "sliding_attention";
      const bool nope = !o_.nope_layers.empty() && o_.nope_layers.at(static_cast<size_t>(i));
      LayerRope r{nope ? Var() : local ? cos_local : cos, nope ? Var() : local ? sin_local : sin};
      h = layer(b, h, i, r, full && local ? mask_local : mask, a.cache, full);
      b.name_output(h);
    }
    h = norm(b, h, o_.final_norm);
  }
  h = keep_last(h, a.logits_to_keep);
  Var logits;
  {
    const DecoderNames& n = o_.names;
    Scope sl(b, n.lm_head);
    // A quantized tied head has codes of its own under lm_head.weight (hfx/quant/quantize.h), or reads the
    // embedding's when the table itself is quantized (QuantOptions::embedding).
    const bool own = !c.tie_word_embeddings ||
                     weights().has(weight_name(quant::quant_names(n.lm_head + ".weight").qweight));
    logits = matmul_weight(b, *this, h, own ? n.lm_head + ".weight" : n.embed_weight());
    if (o_.lm_head_bias) logits = F::add(logits, W(b, *this, n.lm_head + ".bias"));
    b.name_output(logits);
  }
  if (o_.logits_scaling != 1.0) {
    logits =
        F::div(logits, b.constant(Tensor::scalar(o_.logits_scaling)));  // GraniteMoE: logits / logits_scaling
    b.name_output(logits, "logits");
  }
  if (o_.logits_multiplier != 1.0) {
    logits = F::mul(logits, o_.logits_multiplier);  // Cohere: logits * logit_scale
    b.name_output(logits, "logits");
  }
  if (o_.final_softcap > 0) {
    // logits / cap → tanh → × cap, as Gemma2ForCausalLM does.
    logits = F::div(logits, b.constant(Tensor::scalar(o_.final_softcap)));
    logits = F::mul(F::tanh(logits), o_.final_softcap);
    b.name_output(logits, "logits");
  }
  return {logits};
}

}  // namespace hfx::models
