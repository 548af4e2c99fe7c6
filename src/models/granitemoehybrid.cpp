// granitemoehybrid: GraniteMoeHybridForCausalLM (IBM Granite 4.0 "H") — a stack whose layers are either a
// Mamba-2 mixer (`mamba`, src/models/ssd.cpp) or GraniteMoE attention (config.json's "attention", hfx's
// layer type `full_attention`), each followed by the GraniteMoE sparse MoE (block_sparse_moe, as
// granitemoe.cpp) plus an always-on shared MLP (shared_mlp: input_linear [2S, H] → act(gate)·up →
// output_linear). Granite's multipliers: embeddings × embedding_multiplier, attention scaled by
// attention_multiplier, each residual branch × residual_multiplier, logits / logits_scaling. Rotary
// embeddings only when position_embedding_type is "rope" (Granite 4.0 H uses none).
//
// bamba (BambaForCausalLM, IBM's Bamba-9B) is the same stack with a dense MLP (feed_forward: gate, up,
// down) after pre_ff_layernorm instead of the MoE, no multipliers, rotary embeddings on every attention layer
// (partial_rotary_factor 0.5 unless rope_parameters says otherwise: BambaConfig's backward-compatible
// default), the attention layers listed by attn_layer_indices, final_layernorm, and config.json's
// time_step_limit.
//
// jamba (JambaForCausalLM) interleaves Mamba-1 mixers (src/models/mamba1.h, with weighted RMS norms on dt,
// B and C) with attention layers that have no positional encoding at all (attn_layer_period/offset), each
// followed by feed_forward: a dense MLP, or on expert_layer_period/offset a Mixtral-style MoE (router,
// experts.N.gate/up/down_proj; softmax, top-k, not renormalized). Its mamba layers keep past_conv.N
// [B, d_inner, K-1] and past_ssm.N [B, d_inner, d_state].
//
// Per-layer-type caches with the names Transformers.js reads for granitemoehybrid: a mamba layer keeps
// past_conv.N [B, conv_dim, K-1] and past_ssm.N [B, heads, head_dim, state]; an attention layer keeps
// past_key_values.N.key/value [B, kv_heads, past, head_dim] (present_* / present.N.* out). Each layer type
// gets its mask: attention layers the causal padding mask over past + new tokens, mamba layers the
// attention mask's last S columns, zeroing padded inputs (apply_mask_to_padding_states).
#include <cmath>

#include "blocks.h"
#include "hfx/core/error.h"
#include "mamba1.h"
#include "ssd.h"

namespace hfx::models {
namespace {

bool is_bamba(const ModelConfig& c) { return c.model_type == "bamba"; }
bool is_jamba(const ModelConfig& c) { return c.model_type == "jamba"; }
// bamba and jamba: feed_forward after pre_ff_layernorm, final_layernorm; no multipliers.
bool plain_ffn(const ModelConfig& c) { return is_bamba(c) || is_jamba(c); }

// JambaMambaMixer's sizes (mamba_* keys; dt rank "auto" = ceil(hidden / 16)).
Mamba1Dims jamba_dims(const ModelConfig& c) {
  const json& j = c.raw;
  Mamba1Dims d;
  d.H = c.hidden_size;
  d.I = jget<int64_t>(j, "mamba_expand", 2) * c.hidden_size;
  d.N = jget<int64_t>(j, "mamba_d_state", 16);
  d.K = jget<int64_t>(j, "mamba_d_conv", 4);
  d.R = jhas(j, "mamba_dt_rank") && j["mamba_dt_rank"].is_number_integer() ? j["mamba_dt_rank"].get<int64_t>()
                                                                           : (c.hidden_size + 15) / 16;
  d.conv_bias = jget<bool>(j, "mamba_conv_bias", true);
  d.bias = jget<bool>(j, "mamba_proj_bias", false);
  d.norms = Mamba1Dims::Norms::weighted;
  d.norm_eps = c.norm_eps;
  d.mask_input = true;
  return d;
}

// JambaConfig's layers_block_type / layers_num_experts: layer i is `kind` where i % period == offset.
std::vector<bool> every(const ModelConfig& c, const char* period_key, int64_t period_def,
                        const char* offset_key, int64_t offset_def) {
  const int64_t period = jget<int64_t>(c.raw, period_key, period_def),
                offset = jget<int64_t>(c.raw, offset_key, offset_def);
  if (period <= 0 || offset < 0 || offset >= period)
    HFX_THROW("model", "expected 0 <= {} < {} for jamba, got {} and {}", offset_key, period_key, offset,
              period);
  std::vector<bool> r;
  for (int64_t i = 0; i < c.num_hidden_layers; i++) r.push_back(i % period == offset);
  return r;
}

SsdDims dims_of(const ModelConfig& c) {
  const json& j = c.raw;
  SsdDims d;
  d.hidden = c.hidden_size;
  d.inner = jget<int64_t>(j, "mamba_expand", 2) * c.hidden_size;
  d.state = jget<int64_t>(j, "mamba_d_state", 256);
  d.kernel = jget<int64_t>(j, "mamba_d_conv", 4);
  d.heads = jget<int64_t>(j, "mamba_n_heads", 128);
  d.head_dim = j.contains("mamba_d_head") && j["mamba_d_head"].is_number_integer()
                   ? j["mamba_d_head"].get<int64_t>()
                   : d.inner / std::max<int64_t>(d.heads, 1);
  d.groups = jget<int64_t>(j, "mamba_n_groups", 1);
  d.chunk = jget<int64_t>(j, "mamba_chunk_size", 256);
  d.conv_bias = jget<bool>(j, "mamba_conv_bias", true);
  d.bias = jget<bool>(j, "mamba_proj_bias", false);
  d.eps = c.norm_eps;  // GraniteMoeHybridRMSNormGated(eps=rms_norm_eps); time_step_limit is (0, inf)
  if (is_bamba(c)) read_time_step_limit(d, j);
  return d;
}

bool rope_on(const ModelConfig& c) {
  return is_bamba(c) || jget<std::string>(c.raw, "position_embedding_type", "nope") == "rope";
}

// BambaConfig.layers_block_type: full_attention at attn_layer_indices, mamba elsewhere.
void bamba_layer_types(ModelConfig& c) {
  c.layer_types.assign(static_cast<size_t>(c.num_hidden_layers), "mamba");
  if (!jhas(c.raw, "attn_layer_indices") || c.raw["attn_layer_indices"].is_null()) return;
  if (!c.raw["attn_layer_indices"].is_array())
    HFX_THROW("model", "expected attn_layer_indices to be a list of layer numbers for bamba, got {}",
              c.raw["attn_layer_indices"].dump());
  for (const auto& i : c.raw["attn_layer_indices"]) {
    if (!i.is_number_integer() || i.get<int64_t>() < 0 || i.get<int64_t>() >= c.num_hidden_layers)
      HFX_THROW("model", "expected attn_layer_indices in [0, {}) for bamba, got {}", c.num_hidden_layers,
                i.dump());
    c.layer_types[i.get<size_t>()] = "full_attention";
  }
}

template <const char* Type>
ModelConfig parse(const json& j) {
  // transformers 4.x's layer_types say "mamba" / "attention", 5.x's "linear_attention" / "full_attention"
  // (configuration_granitemoehybrid.py, 5.23); hfx's vocabulary is mamba / full_attention.
  json m = j;
  if (jhas(j, "layer_types") && j["layer_types"].is_array())
    for (auto& t : m["layer_types"]) {
      if (t.is_string() && t.get<std::string>() == "attention") t = "full_attention";
      if (t.is_string() && t.get<std::string>() == "linear_attention") t = "mamba";
    }
  m.erase("head_dim");  // GraniteMoeHybridAttention: head_dim = hidden_size / num_attention_heads
  ConfigDefaults d;
  d.intermediate_size = 11008;
  d.max_position_embeddings = 2048;
  if (std::string(Type) == "jamba") {
    d.vocab_size = 65536;
    d.intermediate_size = 14336;
    d.max_position_embeddings = 262144;
    m.erase("layer_types");  // a read-only property of JambaConfig (attn_layer_period/offset)
  }
  if (std::string(Type) == "bamba") {
    d.norm_eps = 1e-5;
    d.max_position_embeddings = 262144;
    d.intermediate_size = 14336;
    m.erase("layer_types");  // a read-only property of BambaConfig, derived from attn_layer_indices
  }
  ModelConfig c = parse_common(m, Type, d);
  c.raw = j;
  if (is_jamba(c)) {
    const std::vector<bool> attn = every(c, "attn_layer_period", 8, "attn_layer_offset", 4);
    c.layer_types.clear();
    for (bool a : attn) c.layer_types.push_back(a ? "full_attention" : "mamba");
    (void)every(c, "expert_layer_period", 2, "expert_layer_offset", 1);
    const Mamba1Dims md = jamba_dims(c);
    if (md.N <= 0 || md.K < 1 || md.R <= 0 || md.I <= 0)
      HFX_THROW(
          "model",
          "expected positive mamba_d_state, mamba_d_conv, mamba_dt_rank and mamba_expand for jamba, got {}, "
          "{}, {} and {}",
          md.N, md.K, md.R, md.I);
    return c;  // the experts are checked by hybrid_options (parse_moe) at create
  }
  if (is_bamba(c)) {
    bamba_layer_types(c);
  } else if (jhas(m, "layer_types")) {
    ModelConfig t = c;
    t.raw = m;
    set_layer_types(t, [](int64_t) { return false; }, {"mamba", "full_attention"});
    c.layer_types = t.layer_types;
  } else {
    c.layer_types.assign(static_cast<size_t>(c.num_hidden_layers), "mamba");  // layers_block_type's default
  }
  if (!is_bamba(c)) parse_moe(c, "num_local_experts", 8, 2);
  check_ssd_dims(dims_of(c), Type);
  const std::string pe = jget<std::string>(j, "position_embedding_type", "nope");
  if (!is_bamba(c) && pe != "rope" && pe != "nope")
    HFX_THROW("model",
              "expected position_embedding_type 'rope' or 'nope' (or null) for granitemoehybrid, got '{}'",
              pe);
  return c;
}

DecoderOptions hybrid_options(const ModelConfig& c) {
  DecoderOptions o;
  o.act = jget<std::string>(c.raw, "hidden_act", "silu");
  o.qkv_bias = o.o_bias = jget<bool>(c.raw, "attention_bias", false);
  if (is_jamba(c)) {  // JambaMLP or JambaSparseMoeBlock under feed_forward; no rotary, no multipliers
    o.names.mlp = "feed_forward";
    if (jget<int64_t>(c.raw, "num_experts", 16) > 1) {
      o.moe = parse_moe(c, "num_experts", 16, 2);
      o.moe.intermediate = c.intermediate_size;
      o.moe.block = "feed_forward";
      o.moe.router = "router";
      o.moe.sparse_layers = every(c, "expert_layer_period", 2, "expert_layer_offset", 1);
    }
    return o;
  }
  if (is_bamba(c)) {  // BambaMLP under feed_forward; no experts, no multipliers
    o.mlp_bias = jget<bool>(c.raw, "mlp_bias", false);
    o.names.mlp = "feed_forward";
    o.rope = rope_config_partial(c, 0.5);
    return o;
  }
  o.attn_scale = jget<double>(c.raw, "attention_multiplier", 1.0);
  o.embedding_multiplier = jget<double>(c.raw, "embedding_multiplier", 1.0);
  o.residual_multiplier = jget<double>(c.raw, "residual_multiplier", 1.0);
  o.logits_scaling = jget<double>(c.raw, "logits_scaling", 1.0);
  o.rope = rope_config(c);
  o.moe = parse_moe(c, "num_local_experts", 8, 2);
  o.moe.intermediate = c.intermediate_size;
  o.moe.norm_topk_prob = true;
  o.moe.block = "block_sparse_moe";
  o.moe.stacked = true;
  o.moe.router = "router.layer";
  return o;
}

int64_t shared_size(const ModelConfig& c) { return jget<int64_t>(c.raw, "shared_intermediate_size", 1024); }

WeightSpecs specs(const ModelConfig& c) {
  const SsdDims d = dims_of(c);
  const MoeOptions moe = hybrid_options(c).moe;
  const bool bias = jget<bool>(c.raw, "attention_bias", false);
  const int64_t E = c.hidden_size, H = c.num_attention_heads, K = c.num_key_value_heads, D = c.head_dim,
                S = shared_size(c);
  WeightSpecs s{{"model.embed_tokens.weight", {c.vocab_size, E}}};
  for (int64_t i = 0; i < c.num_hidden_layers; i++) {
    std::string p = "model.layers." + std::to_string(i) + ".";
    s.push_back({p + "input_layernorm.weight", {E}});
    if (is_jamba(c) && c.layer_types[static_cast<size_t>(i)] == "mamba") {
      mamba1_weight_specs(s, p + "mamba.", jamba_dims(c));
    } else if (c.layer_types[static_cast<size_t>(i)] == "mamba") {
      ssd_weight_specs(s, p + "mamba.", d);
    } else {
      for (const auto& [proj, rows] : std::vector<std::pair<std::string, int64_t>>{
               {"q_proj", H * D}, {"k_proj", K * D}, {"v_proj", K * D}, {"o_proj", E}}) {
        s.push_back({p + "self_attn." + proj + ".weight", {rows, proj == "o_proj" ? H * D : E}});
        if (bias) s.push_back({p + "self_attn." + proj + ".bias", {rows}});
      }
    }
    if (plain_ffn(c)) s.push_back({p + "pre_ff_layernorm.weight", {E}});
    if (is_jamba(c) && moe.sparse(i)) {
      const std::string f = p + "feed_forward.";
      s.push_back({f + "router.weight", {moe.num_experts, E}});
      for (int64_t e = 0; e < moe.num_experts; e++) {
        const std::string x = f + "experts." + std::to_string(e) + ".";
        s.push_back({x + "gate_proj.weight", {c.intermediate_size, E}});
        s.push_back({x + "up_proj.weight", {c.intermediate_size, E}});
        s.push_back({x + "down_proj.weight", {E, c.intermediate_size}});
      }
      continue;
    }
    if (plain_ffn(c)) {
      const bool mb = jget<bool>(c.raw, "mlp_bias", false);
      for (const auto& [proj, shape] :
           std::vector<std::pair<std::string, Shape>>{{"gate_proj", {c.intermediate_size, E}},
                                                      {"up_proj", {c.intermediate_size, E}},
                                                      {"down_proj", {E, c.intermediate_size}}}) {
        s.push_back({p + "feed_forward." + proj + ".weight", shape});
        if (mb) s.push_back({p + "feed_forward." + proj + ".bias", {shape[0]}});
      }
      continue;
    }
    s.push_back({p + "post_attention_layernorm.weight", {E}});
    s.push_back({p + "block_sparse_moe.router.layer.weight", {moe.num_experts, E}});
    s.push_back({p + "block_sparse_moe.input_linear.weight", {moe.num_experts, 2 * moe.intermediate, E}});
    s.push_back({p + "block_sparse_moe.output_linear.weight", {moe.num_experts, E, moe.intermediate}});
    s.push_back({p + "shared_mlp.input_linear.weight", {2 * S, E}});
    s.push_back({p + "shared_mlp.output_linear.weight", {E, S}});
  }
  s.push_back({plain_ffn(c) ? "model.final_layernorm.weight" : "model.norm.weight", {E}});
  if (!c.tie_word_embeddings) s.push_back({"lm_head.weight", {c.vocab_size, E}});
  return s;
}

// The attention layers' KV leaves: concatenation along the sequence; the past length is the first
// attention layer's (a mamba layer has no KV).
class AttentionLayersCache : public KVCache {
 public:
  AttentionLayersCache(std::vector<CacheLayerSpec> layout, std::vector<Var> past_k, std::vector<Var> past_v)
      : layout_(std::move(layout)), k_(std::move(past_k)), v_(std::move(past_v)) {
    for (size_t i = 0; i < layout_.size() && !past_.has_value(); i++)
      if (layout_[i].layer_type != "mamba") past_ = k_[i] ? k_[i].size(2) : Sym(0);
  }
  std::pair<Var, Var> update(int layer, const Var& k, const Var& v) override {
    auto l = static_cast<size_t>(layer);
    k_[l] = k_[l] ? F::cat({F::to(k_[l], DType::F32), k}, 2) : k;
    v_[l] = v_[l] ? F::cat({F::to(v_[l], DType::F32), v}, 2) : v;
    return {k_[l], v_[l]};
  }
  Sym past_length() const override { return past_.value_or(Sym(0)); }
  const std::vector<CacheLayerSpec>& layout() const override { return layout_; }
  const Var& key(size_t i) const { return k_[i]; }
  const Var& value(size_t i) const { return v_[i]; }

 private:
  std::vector<CacheLayerSpec> layout_;
  std::vector<Var> k_, v_;
  std::optional<Sym> past_;
};

// The attention mask spans past + new tokens. With attention layers its length is past_sequence_length +
// sequence_length (their KV leaves carry the past); a stack of mamba layers only has no past axis, so the
// length is a dim of its own, as mamba.cpp declares it.
std::string mask_axis(const ModelConfig& c) {
  for (const auto& t : c.layer_types)
    if (t != "mamba") return "past_sequence_length+sequence_length";
  return "total_sequence_length";
}

class GraniteMoeHybridLM : public DecoderLM {
 public:
  GraniteMoeHybridLM(ModelConfig c, std::shared_ptr<io::WeightStore> w)
      : DecoderLM(c, std::move(w), hybrid_options(c)) {}

  std::vector<ComponentDecl> components() const override {
    const auto& c = config();
    const SsdDims d = dims_of(c);
    ComponentDecl cd;
    cd.name = "model";
    cd.inputs = {{"input_ids", DType::I64, {"batch_size", "sequence_length"}},
                 {"attention_mask", DType::I64, {"batch_size", mask_axis(c)}}};
    if (rope_on(c)) cd.inputs.push_back({"position_ids", DType::I64, {"batch_size", "sequence_length"}});
    cd.outputs = {"logits"};
    for (int64_t i = 0; i < c.num_hidden_layers; i++) {
      const std::string& type = c.layer_types[static_cast<size_t>(i)];
      auto leaf = [&](const std::string& kind, const std::string& past, const std::string& present,
                      std::vector<std::string> axes) {
        cd.inputs.push_back({past, DType::F32, std::move(axes), true});
        cd.outputs.push_back(present);
        cd.cache.push_back({static_cast<int>(i), kind, type, 0, past, present});
      };
      if (type == "mamba" && is_jamba(c)) {
        const Mamba1Dims m = jamba_dims(c);
        leaf("conv", fmt::format("past_conv.{}", i), fmt::format("present_conv.{}", i),
             {"batch_size", std::to_string(m.I), std::to_string(m.K - 1)});
        leaf("ssm", fmt::format("past_ssm.{}", i), fmt::format("present_ssm.{}", i),
             {"batch_size", std::to_string(m.I), std::to_string(m.N)});
        continue;
      }
      if (type == "mamba") {
        leaf("conv", fmt::format("past_conv.{}", i), fmt::format("present_conv.{}", i),
             {"batch_size", std::to_string(d.conv_dim()), std::to_string(d.kernel - 1)});
        leaf("ssm", fmt::format("past_ssm.{}", i), fmt::format("present_ssm.{}", i),
             {"batch_size", std::to_string(d.heads), std::to_string(d.head_dim), std::to_string(d.state)});
        continue;
      }
      for (const char* kind : {"key", "value"})
        leaf(kind, fmt::format("past_key_values.{}.{}", i, kind), fmt::format("present.{}.{}", i, kind),
             {"batch_size", std::to_string(c.num_key_value_heads), "past_sequence_length",
              std::to_string(c.head_dim)});
    }
    return {cd};
  }

  NamedVars call(const std::string& component, Builder& b, const NamedVars& in,
                 const CallOptions& opts) const override {
    if (component != "model") (void)this->component(component);
    ForwardArgs a;
    a.input_ids = get(in, "input_ids");
    if (!a.input_ids)
      HFX_THROW("model", "expected input 'input_ids' for component 'model' of {}, got none",
                config().model_type);
    a.attention_mask = get(in, "attention_mask");
    a.position_ids = get(in, "position_ids");
    a.logits_to_keep = opts.logits_to_keep;
    const auto L = static_cast<size_t>(config().num_hidden_layers);
    std::vector<Var> conv(L), ssm(L), pk(L), pv(L);
    for (size_t i = 0; i < L; i++) {
      conv[i] = get(in, fmt::format("past_conv.{}", i));
      ssm[i] = get(in, fmt::format("past_ssm.{}", i));
      pk[i] = get(in, fmt::format("past_key_values.{}.key", i));
      pv[i] = get(in, fmt::format("past_key_values.{}.value", i));
    }
    AttentionLayersCache cache(cache_layout(), pk, pv);
    a.cache = &cache;
    NamedVars r{{"logits", run(b, a, conv, ssm)}};
    if (!opts.use_cache) return r;
    for (size_t i = 0; i < L; i++) {
      if (config().layer_types[i] == "mamba") {
        r.emplace_back(fmt::format("present_conv.{}", i), conv[i]);
        r.emplace_back(fmt::format("present_ssm.{}", i), ssm[i]);
      } else {
        r.emplace_back(fmt::format("present.{}.key", i), cache.key(i));
        r.emplace_back(fmt::format("present.{}.value", i), cache.value(i));
      }
    }
    return r;
  }

  std::vector<CacheLayerSpec> cache_layout() const override {
    std::vector<CacheLayerSpec> r = CausalLM::cache_layout();
    for (auto& s : r)
      if (s.layer_type == "mamba") s.num_kv_heads = s.head_dim = 0;
    return r;
  }

  // A full recomputation from the empty past; a KV cache cannot hold the mamba layers' conv/ssm states.
  ForwardOut forward(Builder& b, const ForwardArgs& a) const override {
    if (a.cache)
      HFX_THROW(
          "model",
          "expected no KV cache for {} (its cache is the per-layer leaves of component 'model'), got one",
          config().model_type);
    const auto L = static_cast<size_t>(config().num_hidden_layers);
    std::vector<Var> conv(L), ssm(L);
    AttentionLayersCache cache(cache_layout(), std::vector<Var>(L), std::vector<Var>(L));
    ForwardArgs with = a;
    with.cache = &cache;
    return {run(b, with, conv, ssm)};
  }

 private:
  Var shared_mlp(Builder& b, const Var& x) const {
    Scope s(b, "shared_mlp");
    const int64_t S = shared_size(config());
    Var h = linear(b, *this, x, "input_linear", false);  // [B, S, 2·shared]: gate | up
    Var y = F::mul(activation(F::slice(h, -1, 0, S), options().act), F::slice(h, -1, S, 2 * S));
    return linear(b, *this, y, "output_linear", false);
  }

  // One decoder layer's token mixer: the Mamba-2 mixer or attention, by layer type.
  Var mixer(Builder& b, const Var& x, size_t i, const Var& cos, const Var& sin, const Var& attn_mask,
            const Var& ssm_mask, KVCache* cache, Var& conv, Var& ssm) const {
    if (config().layer_types[i] != "mamba")
      return attention(b, x, static_cast<int>(i), cos, sin, attn_mask, cache);
    Scope sm(b, "mamba");
    Var y = is_jamba(config()) ? mamba1_mixer(b, *this, jamba_dims(config()), x, ssm_mask, conv, ssm)
                               : ssd_mixer(b, *this, dims_of(config()), x, ssm_mask, conv, ssm);
    b.name_output(y);
    return y;
  }

  Var run(Builder& b, const ForwardArgs& a, std::vector<Var>& conv, std::vector<Var>& ssm) const {
    const auto& c = config();
    const DecoderOptions& o = options();
    Sym S = a.input_ids.size(1), past = a.cache->past_length();
    Var ssm_mask;  // [B, S, 1]: the attention mask's last S columns
    if (a.attention_mask) {
      Sym T = a.attention_mask.size(1);
      ssm_mask = F::unsqueeze(F::to(F::slice(a.attention_mask, 1, T - S, T), DType::F32), 2);
    }
    Var h, cos, sin;
    {
      Scope sm(b, "model");
      {
        Scope se(b, "embed_tokens");
        h = F::to(F::embedding(w(b, "model.embed_tokens.weight"), a.input_ids), DType::F32);
        b.name_output(h);
      }
      if (o.embedding_multiplier != 1.0) h = F::mul(h, o.embedding_multiplier);
      if (rope_on(c)) std::tie(cos, sin) = rope_cos_sin(b, o.rope, positions(b, a, past), past + S);
      Var attn_mask = padding_mask(b, a.attention_mask);
      for (size_t i = 0; i < static_cast<size_t>(c.num_hidden_layers); i++) {
        Scope sl(b, "layers." + std::to_string(i));
        Var x = rms_norm(b, *this, h, "input_layernorm", c.norm_eps, 0.0);
        Var m = mixer(b, x, i, cos, sin, attn_mask, ssm_mask, a.cache, conv[i], ssm[i]);
        h = F::add(h, F::mul(m, o.residual_multiplier));
        if (plain_ffn(c)) {
          x = rms_norm(b, *this, h, "pre_ff_layernorm", c.norm_eps, 0.0);
          h = F::add(h, mlp(b, x, static_cast<int64_t>(i)));
        } else {
          x = rms_norm(b, *this, h, "post_attention_layernorm", c.norm_eps, 0.0);
          h = F::add(h, F::mul(F::add(moe(b, x), shared_mlp(b, x)), o.residual_multiplier));
        }
        b.name_output(h);
      }
      h = rms_norm(b, *this, h, plain_ffn(c) ? "final_layernorm" : "norm", c.norm_eps, 0.0);
    }
    h = keep_last(h, a.logits_to_keep);
    Scope sl(b, "lm_head");
    Var logits =
        matmul_weight(b, *this, h, c.tie_word_embeddings ? "model.embed_tokens.weight" : "lm_head.weight");
    logits = F::div(logits, b.constant(Tensor::scalar(o.logits_scaling)));  // logits / logits_scaling
    b.name_output(logits);
    return logits;
  }
};

json tiny_jamba(const std::string& preset) {
  if (preset != "tiny") unknown_preset("jamba", preset, "tiny");
  json j = tiny_decoder_config("JambaForCausalLM", "jamba");
  j.erase("head_dim");
  j["num_hidden_layers"] = 4;
  j["attn_layer_period"] = 4;
  j["attn_layer_offset"] = 2;
  j["expert_layer_period"] = 2;
  j["expert_layer_offset"] = 1;
  j["num_experts"] = 4;
  j["num_experts_per_tok"] = 2;
  j["intermediate_size"] = 96;
  j["hidden_act"] = "silu";
  j["mamba_d_state"] = 16;
  j["mamba_d_conv"] = 4;
  j["mamba_expand"] = 2;
  j["mamba_dt_rank"] = "auto";
  j["mamba_conv_bias"] = true;
  j["mamba_proj_bias"] = false;
  j["transformers_version"] = "4.52.0";
  return j;
}

json tiny_bamba(const std::string& preset) {
  if (preset != "tiny") unknown_preset("bamba", preset, "tiny");
  json j = tiny_decoder_config("BambaForCausalLM", "bamba");
  j.erase("head_dim");
  j["num_hidden_layers"] = 3;
  j["attn_layer_indices"] = {1};
  j["hidden_act"] = "silu";
  j["intermediate_size"] = 96;
  j["mamba_n_heads"] = 4;
  j["mamba_n_groups"] = 2;
  j["mamba_d_state"] = 16;
  j["mamba_d_head"] = "auto";
  j["mamba_d_conv"] = 4;
  j["mamba_expand"] = 2;
  j["mamba_chunk_size"] = 8;
  j["time_step_limit"] = {0.0, nullptr};
  j["transformers_version"] = "4.52.0";
  return j;
}

json tiny(const std::string& preset) {
  if (preset != "tiny") unknown_preset("granitemoehybrid", preset, "tiny");
  json j = tiny_decoder_config("GraniteMoeHybridForCausalLM", "granitemoehybrid");
  j.erase("head_dim");
  j["num_hidden_layers"] = 4;
  j["layer_types"] = {"mamba", "attention", "mamba", "mamba"};
  j["hidden_act"] = "silu";
  j["attention_bias"] = false;
  j["intermediate_size"] = 32;
  j["shared_intermediate_size"] = 48;
  j["num_local_experts"] = 4;
  j["num_experts_per_tok"] = 2;
  j["attention_multiplier"] = 0.2;
  j["embedding_multiplier"] = 2.0;
  j["residual_multiplier"] = 0.5;
  j["logits_scaling"] = 4.0;
  j["position_embedding_type"] = "nope";
  j["mamba_n_heads"] = 4;
  j["mamba_n_groups"] = 1;
  j["mamba_d_state"] = 16;
  j["mamba_d_head"] = 32;
  j["mamba_d_conv"] = 4;
  j["mamba_expand"] = 2;
  j["mamba_chunk_size"] = 8;
  j["mamba_conv_bias"] = true;
  j["mamba_proj_bias"] = false;
  j["transformers_version"] = "4.52.0";
  return j;
}

constexpr char kGranite[] = "granitemoehybrid";
constexpr char kBamba[] = "bamba";
constexpr char kJamba[] = "jamba";

// One registry row per model type of this file; the rotary inv_freq buffers a checkpoint may carry are
// ignored (jamba has none, and none is required).
template <const char* Type>
Architecture hybrid_architecture(nlohmann::json (*tiny_config)(const std::string&)) {
  return Architecture{
      .model_type = Type,
      .parse_config = parse<Type>,
      .weight_specs = specs,
      .create = [](ModelConfig c, std::shared_ptr<io::WeightStore> w) -> std::unique_ptr<Model> {
        return std::make_unique<GraniteMoeHybridLM>(std::move(c), std::move(w));
      },
      .tiny_config = tiny_config,
      .tiny_tokenizer = "byte_level",
      .tiny_norm_mean = 1.0,
      .optional_weights = kRotaryBuffers,
  };
}

}  // namespace

const Architecture& jamba_architecture() {
  static const Architecture a = hybrid_architecture<kJamba>(tiny_jamba);
  return a;
}

const Architecture& bamba_architecture() {
  static const Architecture a = hybrid_architecture<kBamba>(tiny_bamba);
  return a;
}

const Architecture& granitemoehybrid_architecture() {
  static const Architecture a = hybrid_architecture<kGranite>(tiny);
  return a;
}

}  // namespace hfx::models
