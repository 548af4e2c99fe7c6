// lfm2: Lfm2ForCausalLM (Liquid AI's LFM2), a hybrid decoder whose layers are either a gated short
// convolution (`conv`) or grouped-query attention with per-head q/k RMSNorm (`full_attention`), each
// followed by a SwiGLU feed_forward. Layer types come from config.json's `layer_types`, or, in older
// configs, from `full_attn_idxs` (the attention layers; the rest convolve), as Lfm2Config reads them.
//
// The cache is one leaf per layer type, named as Transformers.js 4.3.1 names them for lfm2
// (configs.js getCacheNames): a conv layer carries past_conv.N [B, hidden, conv_L_cache] (the last
// conv_L_cache inputs of its depthwise convolution, as transformers' Lfm2HybridConvCache keeps them) to
// present_conv.N; an attention layer carries past_key_values.N.key/value [B, Hkv, past, D] to
// present.N.key/value. The empty past is the all-zero conv state and zero-length keys/values, so one graph
// serves prefill and decode.
//
// Masks are dispatched by layer type: attention layers take the causal + padding mask; conv layers zero
// the masked positions of their input (transformers' apply_mask_to_padding_states) and of the
// convolution's input B·x, so left padding never reaches a real token through the convolution window.
// transformers masks only the input; without biases (every released LFM2) B·x is then already zero and
// both agree exactly; with conv_bias the second mask keeps in_proj's bias of a pad out of the window.
#include <algorithm>
#include <cmath>

#include "blocks.h"
#include "hfx/core/error.h"

namespace hfx::models {
namespace {

struct Lfm2Dims {
  int64_t H, I, L;  // hidden, feed_forward intermediate (after block_auto_adjust_ff_dim), conv_L_cache
  bool conv_bias;
};

// Lfm2MLP's intermediate size: with block_auto_adjust_ff_dim, int(2·I/3), then (when a multiplier is set)
// int(multiplier·I) rounded up to block_multiple_of.
int64_t ff_dim(const json& j, int64_t I) {
  if (!jget<bool>(j, "block_auto_adjust_ff_dim", true)) return I;
  I = static_cast<int64_t>(2.0 * static_cast<double>(I) / 3.0);
  if (jhas(j, "block_ffn_dim_multiplier")) {
    const int64_t m = jget<int64_t>(j, "block_multiple_of", 256);
    if (m <= 0) HFX_THROW("model", "expected block_multiple_of > 0 for lfm2, got {}", m);
    if (m >= (int64_t{1} << 40))
      HFX_THROW("model", "expected block_multiple_of below 2^40 for lfm2, got {}", m);
    I = scaled_size(jget<double>(j, "block_ffn_dim_multiplier", 1.0), I, "block_ffn_dim_multiplier");
    I = m * ((I + m - 1) / m);
  }
  return I;
}

Lfm2Dims dims_of(const ModelConfig& c) {
  return {c.hidden_size, ff_dim(c.raw, c.intermediate_size), jget<int64_t>(c.raw, "conv_L_cache", 3),
          jget<bool>(c.raw, "conv_bias", false)};
}

ModelConfig parse(const json& j) {
  json m = j;
  // Lfm2Config's aliases for the original config keys.
  if (jhas(j, "block_ff_dim")) m["intermediate_size"] = j["block_ff_dim"];
  if (jhas(j, "theta")) m["rope_theta"] = j["theta"];
  if (jhas(j, "tie_embedding")) m["tie_word_embeddings"] = j["tie_embedding"];
  m.erase("layer_types");  // checked below against lfm2's two types
  ConfigDefaults d;
  d.vocab_size = 65536;
  d.hidden_size = 2560;
  d.intermediate_size = 12288;
  d.num_attention_heads = 32;
  d.max_position_embeddings = 128000;
  d.norm_eps = 1e-5;
  d.norm_eps_key = "norm_eps";
  d.rope_theta = 1000000.0;
  d.tie_word_embeddings = true;
  d.bos = 1;
  d.eos = 2;
  if (!jhas(j, "num_key_value_heads")) m["num_key_value_heads"] = 8;  // Lfm2Config's default, not the heads
  ModelConfig c = parse_common(m, "lfm2", d);
  c.raw = j;
  if (!c.pad_token_id) c.pad_token_id = jget<int64_t>(j, "pad_token_id", 0);
  if (jhas(j, "layer_types")) {
    set_layer_types(c, [](int64_t) { return false; }, {"conv", "full_attention"});
  } else {
    // full_attn_idxs: the attention layers (absent: all of them, as Lfm2Config defaults).
    std::vector<int64_t> full;
    try {
      full = jget<std::vector<int64_t>>(j, "full_attn_idxs", {});
    } catch (const json::exception&) {
      HFX_THROW("model", "expected full_attn_idxs to be a list of layer indices for lfm2, got {}",
                j["full_attn_idxs"].dump());
    }
    const bool all = !jhas(j, "full_attn_idxs");
    for (int64_t i : full)
      if (i < 0 || i >= c.num_hidden_layers)
        HFX_THROW("model", "expected full_attn_idxs in [0, {}) (num_hidden_layers), got {}",
                  c.num_hidden_layers, i);
    c.layer_types.clear();
    for (int64_t i = 0; i < c.num_hidden_layers; i++)
      c.layer_types.push_back(all || std::find(full.begin(), full.end(), i) != full.end() ? "full_attention"
                                                                                          : "conv");
  }
  if (std::find(c.layer_types.begin(), c.layer_types.end(), "full_attention") == c.layer_types.end())
    HFX_THROW(
        "model",
        "expected at least one full_attention layer for lfm2 (transformers' Lfm2HybridConvCache counts the "
        "past length on the first one), got layer_types all 'conv'; add an attention layer to layer_types");
  const Lfm2Dims dd = dims_of(c);
  if (dd.L < 1 || dd.I <= 0)
    HFX_THROW("model", "expected conv_L_cache >= 1 and a positive feed_forward size for lfm2, got {} and {}",
              dd.L, dd.I);
  return c;
}

bool is_conv(const ModelConfig& c, int64_t i) { return c.layer_types.at(static_cast<size_t>(i)) == "conv"; }

WeightSpecs specs(const ModelConfig& c) {
  const Lfm2Dims d = dims_of(c);
  const int64_t H = c.num_attention_heads, K = c.num_key_value_heads, D = c.head_dim;
  WeightSpecs s{{"model.embed_tokens.weight", {c.vocab_size, d.H}}};
  for (int64_t i = 0; i < c.num_hidden_layers; i++) {
    std::string p = "model.layers." + std::to_string(i) + ".";
    s.push_back({p + "operator_norm.weight", {d.H}});
    if (is_conv(c, i)) {
      s.push_back({p + "conv.conv.weight", {d.H, 1, d.L}});
      if (d.conv_bias) s.push_back({p + "conv.conv.bias", {d.H}});
      s.push_back({p + "conv.in_proj.weight", {3 * d.H, d.H}});
      if (d.conv_bias) s.push_back({p + "conv.in_proj.bias", {3 * d.H}});
      s.push_back({p + "conv.out_proj.weight", {d.H, d.H}});
      if (d.conv_bias) s.push_back({p + "conv.out_proj.bias", {d.H}});
    } else {
      s.push_back({p + "self_attn.q_proj.weight", {H * D, d.H}});
      s.push_back({p + "self_attn.k_proj.weight", {K * D, d.H}});
      s.push_back({p + "self_attn.v_proj.weight", {K * D, d.H}});
      s.push_back({p + "self_attn.out_proj.weight", {d.H, H * D}});
      s.push_back({p + "self_attn.q_layernorm.weight", {D}});
      s.push_back({p + "self_attn.k_layernorm.weight", {D}});
    }
    s.push_back({p + "ffn_norm.weight", {d.H}});
    s.push_back({p + "feed_forward.w1.weight", {d.I, d.H}});
    s.push_back({p + "feed_forward.w3.weight", {d.I, d.H}});
    s.push_back({p + "feed_forward.w2.weight", {d.H, d.I}});
  }
  s.push_back({"model.embedding_norm.weight", {d.H}});
  if (!c.tie_word_embeddings) s.push_back({"lm_head.weight", {c.vocab_size, d.H}});
  return s;
}

// Per layer: the conv state (conv layers) or key/value (attention layers); absent = the empty past.
struct LayerCache {
  Var conv, key, value;
};

class Lfm2LM : public CausalLM {
 public:
  using CausalLM::CausalLM;

  std::vector<CacheLayerSpec> cache_layout() const override {
    std::vector<CacheLayerSpec> r;
    for (const auto& t : config().layer_types)
      r.push_back({config().num_key_value_heads, config().head_dim, t, 0});
    return r;
  }

  std::vector<ComponentDecl> components() const override {
    const auto& c = config();
    const Lfm2Dims d = dims_of(c);
    ComponentDecl m;
    m.name = "model";
    m.inputs = {{"input_ids", DType::I64, {"batch_size", "sequence_length"}},
                {"attention_mask", DType::I64, {"batch_size", "past_sequence_length+sequence_length"}},
                {"position_ids", DType::I64, {"batch_size", "sequence_length"}}};
    m.outputs = {"logits"};
    // The conv leaves first, then the key/value leaves as one block: torch.export's treespec
    // (src/export/dynamo/program.cpp) lists past_key_values as one entry, so its leaves must be adjacent.
    for (int64_t i = 0; i < c.num_hidden_layers; i++) {
      if (!is_conv(c, i)) continue;
      std::string past = fmt::format("past_conv.{}", i), present = fmt::format("present_conv.{}", i);
      m.inputs.push_back({past, DType::F32, {"batch_size", std::to_string(d.H), std::to_string(d.L)}, true});
      m.outputs.push_back(present);
      m.cache.push_back({static_cast<int>(i), "conv", "conv", 0, past, present});
    }
    for (int64_t i = 0; i < c.num_hidden_layers; i++) {
      if (is_conv(c, i)) continue;
      for (const char* kind : {"key", "value"}) {
        std::string past = fmt::format("past_key_values.{}.{}", i, kind),
                    present = fmt::format("present.{}.{}", i, kind);
        m.inputs.push_back({past,
                            DType::F32,
                            {"batch_size", std::to_string(c.num_key_value_heads), "past_sequence_length",
                             std::to_string(c.head_dim)},
                            true});
        m.outputs.push_back(present);
        m.cache.push_back({static_cast<int>(i), kind, "full_attention", 0, past, present});
      }
    }
    return {m};
  }

  NamedVars call(const std::string& component, Builder& b, const NamedVars& in,
                 const CallOptions& opts) const override {
    if (component != "model") (void)this->component(component);
    const auto& c = config();
    ForwardArgs a;
    a.input_ids = get(in, "input_ids");
    if (!a.input_ids)
      HFX_THROW("model", "expected input 'input_ids' for component 'model' of lfm2, got none");
    a.attention_mask = get(in, "attention_mask");
    a.position_ids = get(in, "position_ids");
    a.logits_to_keep = opts.logits_to_keep;
    std::vector<LayerCache> cache(static_cast<size_t>(c.num_hidden_layers));
    for (int64_t i = 0; i < c.num_hidden_layers; i++) {
      auto& l = cache[static_cast<size_t>(i)];
      if (is_conv(c, i)) {
        l.conv = get(in, fmt::format("past_conv.{}", i));
      } else {
        l.key = get(in, fmt::format("past_key_values.{}.key", i));
        l.value = get(in, fmt::format("past_key_values.{}.value", i));
      }
    }
    NamedVars r{{"logits", run(b, a, cache)}};
    if (!opts.use_cache) return r;
    for (const CacheLeafDecl& l : Model::component("model").cache) {  // in signature order
      const LayerCache& lc = cache[static_cast<size_t>(l.layer)];
      r.emplace_back(l.present_output, l.kind == "conv" ? lc.conv : l.kind == "key" ? lc.key : lc.value);
    }
    return r;
  }

  // A full recomputation from the empty past; a KV cache cannot hold the conv states.
  ForwardOut forward(Builder& b, const ForwardArgs& a) const override {
    if (a.cache)
      HFX_THROW("model",
                "expected no KV cache for lfm2 (its cache is the conv and key/value leaves of component "
                "'model'), got one");
    std::vector<LayerCache> cache(static_cast<size_t>(config().num_hidden_layers));
    return {run(b, a, cache)};
  }

 private:
  Var run(Builder& b, const ForwardArgs& a, std::vector<LayerCache>& cache) const;
  Var attention(Builder& b, const Var& x, const Var& cos, const Var& sin, const Var& mask,
                LayerCache& lc) const;
  Var short_conv(Builder& b, const Var& x, const Var& mask, Var& state) const;
  Var feed_forward(Builder& b, const Var& x) const;
};

// Lfm2Model.forward: embed_tokens → layers (operator_norm → conv | self_attn, + residual; ffn_norm →
// feed_forward, + residual) → embedding_norm (the final norm) → lm_head.
Var Lfm2LM::run(Builder& b, const ForwardArgs& a, std::vector<LayerCache>& cache) const {
  const auto& c = config();
  Sym S = a.input_ids.size(1);
  Sym past(0);
  for (const auto& l : cache)
    if (l.key) {
      past = l.key.size(2);
      break;
    }
  Var conv_mask;  // [B, S, 1] f32: the last S columns of the attention mask
  if (a.attention_mask) {
    Sym T = a.attention_mask.size(1);
    conv_mask = F::unsqueeze(F::to(F::slice(a.attention_mask, 1, T - S, T), DType::F32), 2);
  }
  Var h;
  {
    Scope sm(b, "model");
    {
      Scope se(b, "embed_tokens");
      h = F::to(F::embedding(w(b, "model.embed_tokens.weight"), a.input_ids), DType::F32);
      b.name_output(h);
    }
    Var pos = positions(b, a, past);
    auto [cos, sin] = rope_cos_sin(b, rope_config(c), pos, past + S);
    Var attn_mask = padding_mask(b, a.attention_mask);
    for (int64_t i = 0; i < c.num_hidden_layers; i++) {
      Scope sl(b, "layers." + std::to_string(i));
      auto& lc = cache[static_cast<size_t>(i)];
      Var x = rms_norm(b, *this, h, "operator_norm", c.norm_eps, 0.0);
      Var op =
          is_conv(c, i) ? short_conv(b, x, conv_mask, lc.conv) : attention(b, x, cos, sin, attn_mask, lc);
      h = F::add(h, op);
      h = F::add(h, feed_forward(b, rms_norm(b, *this, h, "ffn_norm", c.norm_eps, 0.0)));
      b.name_output(h);
    }
    h = rms_norm(b, *this, h, "embedding_norm", c.norm_eps, 0.0);
  }
  h = keep_last(h, a.logits_to_keep);
  Scope sl(b, "lm_head");
  Var logits =
      matmul_weight(b, *this, h, c.tie_word_embeddings ? "model.embed_tokens.weight" : "lm_head.weight");
  b.name_output(logits);
  return logits;
}

// Lfm2Attention: q/k/v projections, q_layernorm / k_layernorm over head_dim, rope, the past keys/values
// prepended, causal GQA attention, out_proj.
Var Lfm2LM::attention(Builder& b, const Var& x, const Var& cos, const Var& sin, const Var& mask,
                      LayerCache& lc) const {
  const auto& c = config();
  Scope s(b, "self_attn");
  const int64_t H = c.num_attention_heads, K = c.num_key_value_heads, D = c.head_dim;
  Sym B = x.size(0), S = x.size(1);
  Var q = F::reshape(linear(b, *this, x, "q_proj", false), {B, S, H, D});
  Var k = F::reshape(linear(b, *this, x, "k_proj", false), {B, S, K, D});
  Var v = F::reshape(linear(b, *this, x, "v_proj", false), {B, S, K, D});
  q = F::transpose(rms_norm(b, *this, q, "q_layernorm", c.norm_eps, 0.0), 1, 2);  // [B, H, S, D]
  k = F::transpose(rms_norm(b, *this, k, "k_layernorm", c.norm_eps, 0.0), 1, 2);
  v = F::transpose(v, 1, 2);
  q = F::rope(q, cos, sin);
  k = F::rope(k, cos, sin);
  lc.key = lc.key ? F::cat({F::to(lc.key, DType::F32), k}, 2) : k;
  lc.value = lc.value ? F::cat({F::to(lc.value, DType::F32), v}, 2) : v;
  Var o = F::sdpa(q, lc.key, lc.value, mask, 1.0 / std::sqrt(static_cast<double>(D)), /*causal=*/true);
  o = F::reshape(F::transpose(o, 1, 2), {B, S, H * D});
  return linear(b, *this, o, "out_proj", false);
}

// Lfm2ShortConv.slow_forward on x [B, S, hidden]: in_proj → B, C, x gates; a depthwise causal
// convolution of B·x over [the last L_cache inputs | the new ones]; C·conv; out_proj. `state` [B, hidden,
// L_cache] in (absent = zeros) and out (the last L_cache inputs, as Lfm2HybridConvCache keeps them).
Var Lfm2LM::short_conv(Builder& b, const Var& x, const Var& mask, Var& state) const {
  const Lfm2Dims d = dims_of(config());
  Scope sc(b, "conv");
  const std::string p = b.scope() + ".";
  Sym B = x.size(0), S = x.size(1);
  Var xin = mask ? F::mul(x, mask) : x;
  Var bcx = F::transpose(linear(b, *this, xin, "in_proj", d.conv_bias), 1, 2);  // [B, 3·hidden, S]
  Var gb = F::slice(bcx, 1, 0, d.H), gc = F::slice(bcx, 1, d.H, 2 * d.H),
      gx = F::slice(bcx, 1, 2 * d.H, 3 * d.H);
  Var bx = F::mul(gb, gx);
  if (mask) bx = F::mul(bx, F::transpose(mask, 1, 2));
  Var past = state ? F::to(state, DType::F32) : F::full(b, {B, Sym(d.H), Sym(d.L)}, 0.0);
  Var xc = F::cat({past, bx}, 2);  // [B, hidden, L + S]
  Var cw = F::reshape(W(b, *this, p + "conv.weight"), {Sym(d.H), Sym(d.L)});
  Var y;
  {
    Scope sk(b, "conv");
    // out[t] = Σ_k w[k]·xc[t + 1 + k]: the window ends at the new input t (index L + t of xc).
    for (int64_t k = 0; k < d.L; k++) {
      Var term = F::mul(F::slice(xc, 2, Sym(k + 1), S + Sym(k + 1)), F::slice(cw, 1, k, k + 1));
      y = y ? F::add(y, term) : term;
    }
    if (d.conv_bias) y = F::add(y, F::unsqueeze(W(b, *this, p + "conv.bias"), 1));
    b.name_output(y);
  }
  state = F::slice(xc, 2, S, S + Sym(d.L));
  Var out = F::transpose(F::mul(gc, y), 1, 2);  // [B, S, hidden]
  out = linear(b, *this, out, "out_proj", d.conv_bias);
  b.name_output(out);
  return out;
}

// Lfm2MLP: w2(silu(w1(x)) · w3(x)).
Var Lfm2LM::feed_forward(Builder& b, const Var& x) const {
  Scope s(b, "feed_forward");
  Var y =
      linear(b, *this, F::mul(F::silu(linear(b, *this, x, "w1", false)), linear(b, *this, x, "w3", false)),
             "w2", false);
  b.name_output(y);
  return y;
}

json tiny(const std::string& preset) {
  if (preset != "tiny") unknown_preset("lfm2", preset, "tiny");
  json j = tiny_decoder_config("Lfm2ForCausalLM", "lfm2");
  j.erase("head_dim");  // Lfm2Attention: hidden_size / num_attention_heads
  j.erase("rms_norm_eps");
  j.update(json{{"num_hidden_layers", 4},
                {"layer_types", {"conv", "full_attention", "conv", "full_attention"}},
                {"norm_eps", 1e-5},
                {"rope_theta", 1000000.0},
                // block_auto_adjust_ff_dim: int(2·200/3) = 133, rounded up to 160 (a multiple of 32).
                {"intermediate_size", 200},
                {"block_auto_adjust_ff_dim", true},
                {"block_ffn_dim_multiplier", 1.0},
                {"block_multiple_of", 32},
                {"conv_L_cache", 3},
                {"conv_bias", false},
                {"pad_token_id", 0},
                {"bos_token_id", 1},
                {"eos_token_id", 2},
                // Untied, as mamba's tiny: a tied std-0.1 head mostly echoes the input token.
                {"tie_word_embeddings", false},
                {"transformers_version", "4.56.2"}});
  return j;
}

}  // namespace

const Architecture& lfm2_architecture() {
  static const Architecture a{
      .model_type = "lfm2",
      .parse_config = parse,
      .weight_specs = specs,
      .create = [](ModelConfig c, std::shared_ptr<io::WeightStore> w) -> std::unique_ptr<Model> {
        return std::make_unique<Lfm2LM>(std::move(c), std::move(w));
      },
      .tiny_config = tiny,
      .tiny_tokenizer = "byte_level",
      .tiny_norm_mean = 1.0,
  };
  return a;
}

}  // namespace hfx::models
