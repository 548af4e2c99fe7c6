// llama.cpp's state-space and hybrid archs as convert_hf_to_gguf.py writes them: mamba, mamba2, granitehybrid
// (granitemoehybrid) and lfm2.
#include <cmath>

#include "export/gguf/gguf_archs.h"
#include "hfx/core/error.h"

namespace hfx::gguf {

namespace {

Tensor neg_exp(Tensor t) {  // A = -exp(A_log): llama.cpp's ssm_a
  std::vector<float> a = t.to_floats();
  for (float& x : a) x = -std::exp(x);
  return Tensor::from_floats(t.shape(), a);
}

// t[..., from:from+n, ...] along dim, as its own f32 tensor.
Tensor log_neg(Tensor t) {  // A_log = log(-A): read-back's inverse of neg_exp
  std::vector<float> a = t.to_floats();
  for (float& x : a) x = std::log(-x);
  return Tensor::from_floats(t.shape(), a);
}

// One Mamba-2 mixer as convert_hf_to_gguf.py's Mamba2Model writes it: conv1d.weight [C, 1, K] squeezed to
// [C, K], dt_bias as ssm_dt.bias, A = -exp(A_log) and D as [heads, 1], the gated norm's weight as
// [n_groups, inner / n_groups] (llama.cpp normalizes per group, as transformers 5's MambaRMSNormGated does).
void add_ssd_mixer(Out& o, const std::string& p, const std::string& q, int64_t inner, int64_t groups,
                   bool conv_bias) {
  const Shape cw = o.W.info(p + "conv1d.weight").shape;
  const int64_t heads = o.W.info(p + "A_log").shape.at(0);
  o.copy(q + "ssm_in.weight", p + "in_proj.weight");
  o.reshaped(q + "ssm_conv1d.weight", p + "conv1d.weight", {cw[0], cw[2]});
  if (conv_bias) o.copy(q + "ssm_conv1d.bias", p + "conv1d.bias");
  o.copy(q + "ssm_dt.bias", p + "dt_bias");
  o.put(
      q + "ssm_a", {heads, 1},
      [w = &o.W, p, heads] {
        return neg_exp(w->get(p + "A_log")).reshape({heads, 1});
      },
      [p](const Tensor& t, Into& in) { in.set(p + "A_log", log_neg(t)); });
  o.reshaped(q + "ssm_d", p + "D", {heads, 1});
  o.reshaped(q + "ssm_norm.weight", p + "norm.weight", {groups, inner / groups});
  o.copy(q + "ssm_out.weight", p + "out_proj.weight");
}

// One Mamba (selective scan) mixer as convert_hf_to_gguf.py's MambaModel writes it: conv1d [I, 1, K] squeezed
// to [I, K], A = -exp(A_log) as ssm_a; Jamba's dt/B/C RMS norms where the mixer has them.
void add_selective_mixer(Out& o, const std::string& p, const std::string& q, int64_t I, int64_t K) {
  o.copy(q + "ssm_in.weight", p + "in_proj.weight");
  o.reshaped(q + "ssm_conv1d.weight", p + "conv1d.weight", {I, K});
  o.copy(q + "ssm_conv1d.bias", p + "conv1d.bias");
  o.copy(q + "ssm_x.weight", p + "x_proj.weight");
  if (o.W.has(p + "dt_layernorm.weight"))
    for (const char* n : {"dt", "b", "c"})
      o.copy(q + "ssm_" + n + "_norm.weight", p + n + "_layernorm.weight");
  o.copy(q + "ssm_dt.weight", p + "dt_proj.weight");
  o.copy(q + "ssm_dt.bias", p + "dt_proj.bias");
  o.map(q + "ssm_a", p + "A_log", neg_exp, log_neg);
  o.copy(q + "ssm_d", p + "D");
  o.copy(q + "ssm_out.weight", p + "out_proj.weight");
}

struct SsmSizes {
  int64_t conv_kernel, inner, state, time_step_rank;
};

// The keys llama.cpp's mamba and mamba2 read: no attention (head count and feed-forward 0), the ssm sizes.
void ssm_keys(File& f, const std::string& arch, const ModelConfig& c, const SsmSizes& z) {
  f.kv_u32(arch + ".context_length", 1u << 20);
  f.kv_u32(arch + ".feed_forward_length", 0);
  f.kv_u32(arch + ".attention.head_count", 0);
  f.kv_u32(arch + ".ssm.conv_kernel", static_cast<uint32_t>(z.conv_kernel));
  f.kv_u32(arch + ".ssm.inner_size", static_cast<uint32_t>(z.inner));
  f.kv_u32(arch + ".ssm.state_size", static_cast<uint32_t>(z.state));
  f.kv_u32(arch + ".ssm.time_step_rank", static_cast<uint32_t>(z.time_step_rank));
  f.kv_f32(arch + ".attention.layer_norm_rms_epsilon", static_cast<float>(c.norm_eps));
}

}  // namespace

// Mamba: no attention keys (head counts 0), the ssm sizes, conv1d [I, 1, K] squeezed to [I, K],
// A = -exp(A_log) as ssm_a (convert_hf_to_gguf.py's MambaModel).
void add_mamba(Out& o, const ModelConfig& c) {
  const int64_t H = c.hidden_size, I = c.intermediate_size;
  const int64_t N = c.raw.value("state_size", int64_t{16}), K = c.raw.value("conv_kernel", int64_t{4});
  const int64_t R = c.raw.contains("time_step_rank") && c.raw["time_step_rank"].is_number_integer()
                        ? c.raw["time_step_rank"].get<int64_t>()
                        : (H + 15) / 16;
  ssm_keys(o.f, "mamba", c, {K, I, N, R});
  // FalconMamba's weightless RMS norms of dt, B and C: llama.cpp's mamba graph takes them with the layers'
  // eps (one key for both; the converter writes FalconMamba-7B's 1e-5 where its mixer says 1e-6): the
  // read-back's model does the same, and verify's precision check reports what it costs.
  if (c.model_type == "falcon_mamba") o.f.kv_bool("mamba.ssm.dt_b_c_rms", true);
  o.copy("token_embd.weight", "backbone.embeddings.weight");
  for (int64_t i = 0; i < c.num_hidden_layers; i++) {
    const std::string p = "backbone.layers." + std::to_string(i) + ".", q = "blk." + std::to_string(i) + ".";
    o.copy(q + "attn_norm.weight", p + "norm.weight");
    add_selective_mixer(o, p + "mixer.", q, I, K);
  }
  o.copy("output_norm.weight", "backbone.norm_f.weight");
  if (!c.tie_word_embeddings) o.copy("output.weight", "lm_head.weight");
}

// Jamba as convert_hf_to_gguf.py's JambaModel writes it: Mamba layers and attention layers (no rotary) told
// by a per-layer head_count_kv of 0, every expert_layer_period-th feed-forward a mixture of experts (its
// experts stacked), the dense ones as ffn_{gate,up,down}.
void add_jamba(Out& o, const ModelConfig& c) {
  const nlohmann::json& j = c.raw;
  const int64_t H = c.hidden_size, I = j.value("mamba_expand", int64_t{2}) * H,
                K = j.value("mamba_d_conv", int64_t{4});
  const nlohmann::json rank = j.value("mamba_dt_rank", nlohmann::json("auto"));
  const int64_t R = rank.is_number_integer() ? rank.get<int64_t>() : (H + 15) / 16;
  HFX_CHECK(
      I == 2 * H && !j.value("mamba_proj_bias", false) && j.value("mamba_conv_bias", true), "gguf",
      "expected mamba_expand 2, no in/out projection biases and conv biases for llama.cpp's jamba arch (what "
      "its graph runs), got mamba_expand {}, mamba_proj_bias {}, mamba_conv_bias {}",
      I / H, j.value("mamba_proj_bias", false), j.value("mamba_conv_bias", true));
  File& f = o.f;
  f.kv_u32("jamba.context_length", static_cast<uint32_t>(c.max_position_embeddings));
  f.kv_u32("jamba.feed_forward_length", static_cast<uint32_t>(c.intermediate_size));
  f.kv_u32("jamba.attention.head_count", static_cast<uint32_t>(c.num_attention_heads));
  std::vector<int32_t> kv;
  for (const auto& t : c.layer_types)
    kv.push_back(t == "mamba" ? 0 : static_cast<int32_t>(c.num_key_value_heads));
  f.kv_i32s("jamba.attention.head_count_kv", kv);
  f.kv_u32("jamba.ssm.conv_kernel", static_cast<uint32_t>(K));
  f.kv_u32("jamba.ssm.inner_size", static_cast<uint32_t>(I));
  f.kv_u32("jamba.ssm.state_size", j.value("mamba_d_state", uint32_t{16}));
  f.kv_u32("jamba.ssm.time_step_rank", static_cast<uint32_t>(R));
  f.kv_f32("jamba.attention.layer_norm_rms_epsilon", static_cast<float>(c.norm_eps));
  const int64_t E = j.value("num_experts", int64_t{16});
  f.kv_u32("jamba.expert_count", static_cast<uint32_t>(E));
  f.kv_u32("jamba.expert_used_count", j.value("num_experts_per_tok", uint32_t{2}));
  o.copy("token_embd.weight", "model.embed_tokens.weight");
  for (int64_t i = 0; i < c.num_hidden_layers; i++) {
    const std::string p = "model.layers." + std::to_string(i) + ".", q = "blk." + std::to_string(i) + ".";
    o.copy(q + "attn_norm.weight", p + "input_layernorm.weight");
    if (c.layer_types[static_cast<size_t>(i)] == "mamba") {
      add_selective_mixer(o, p + "mamba.", q, I, K);
    } else {
      for (const auto& [hf, gg] : std::vector<std::pair<std::string, std::string>>{
               {"q_proj", "attn_q"}, {"k_proj", "attn_k"}, {"v_proj", "attn_v"}, {"o_proj", "attn_output"}})
        o.copy(q + gg + ".weight", p + "self_attn." + hf + ".weight");
    }
    o.copy(q + "ffn_norm.weight", p + "pre_ff_layernorm.weight");
    const std::string ff = p + "feed_forward.";
    if (o.W.has(ff + "router.weight")) {
      o.copy(q + "ffn_gate_inp.weight", ff + "router.weight");
      for (const char* w : {"gate", "up", "down"})
        stack_experts(o, q + "ffn_" + w + "_exps.weight", E, [ff, w](int64_t e) {
          return ff + "experts." + std::to_string(e) + "." + w + "_proj.weight";
        });
    } else {
      for (const char* w : {"gate", "up", "down"})
        o.copy(q + "ffn_" + w + ".weight", ff + w + "_proj.weight");
    }
  }
  o.copy("output_norm.weight", "model.final_layernorm.weight");
  if (!c.tie_word_embeddings) o.copy("output.weight", "lm_head.weight");
}

// mamba2 as convert_hf_to_gguf.py's Mamba2Model writes it (time_step_rank = the head count).
void add_mamba2(Out& o, const ModelConfig& c) {
  const int64_t I = c.intermediate_size, G = c.raw.at("n_groups").get<int64_t>();
  ssm_keys(o.f, "mamba2", c,
           {c.raw.at("conv_kernel").get<int64_t>(), I, c.raw.at("state_size").get<int64_t>(),
            c.raw.at("num_heads").get<int64_t>()});
  o.f.kv_u32("mamba2.ssm.group_count", static_cast<uint32_t>(G));
  o.copy("token_embd.weight", "backbone.embeddings.weight");
  for (int64_t i = 0; i < c.num_hidden_layers; i++) {
    const std::string p = "backbone.layers." + std::to_string(i) + ".", q = "blk." + std::to_string(i) + ".";
    o.copy(q + "attn_norm.weight", p + "norm.weight");
    add_ssd_mixer(o, p + "mixer.", q, I, G, c.raw.value("use_conv_bias", true));
  }
  o.copy("output_norm.weight", "backbone.norm_f.weight");
  if (!c.tie_word_embeddings) o.copy("output.weight", "lm_head.weight");
}

namespace {

// Bamba (granitehybrid without experts): rotary on the attention layers, no multipliers (llama.cpp's
// 1/sqrt(d) query scale), a dense MLP.
void granitehybrid_keys(Out& o, const ModelConfig& c, int64_t inner, int64_t G) {
  File& f = o.f;
  const nlohmann::json& j = c.raw;
  const bool bamba = c.model_type == "bamba";
  const std::string a = "granitehybrid.";
  f.kv_u32(a + "context_length", bamba ? static_cast<uint32_t>(c.max_position_embeddings) : 1u << 20);
  f.kv_u32(a + "feed_forward_length", static_cast<uint32_t>(c.intermediate_size));
  f.kv_u32(a + "attention.head_count", static_cast<uint32_t>(c.num_attention_heads));
  std::vector<int32_t> kv;
  for (const auto& t : c.layer_types)
    kv.push_back(t == "mamba" ? 0 : static_cast<int32_t>(c.num_key_value_heads));
  f.kv_i32s(a + "attention.head_count_kv", kv);
  f.kv_f32(a + "attention.layer_norm_rms_epsilon", static_cast<float>(c.norm_eps));
  if (!bamba) {
    granite_keys(f, "granitehybrid", j);
    f.kv_u32(a + "expert_count", j.at("num_local_experts").get<uint32_t>());
    f.kv_u32(a + "expert_used_count", j.at("num_experts_per_tok").get<uint32_t>());
    f.kv_u32(a + "expert_shared_feed_forward_length", j.at("shared_intermediate_size").get<uint32_t>());
  }
  f.kv_u32(a + "ssm.conv_kernel", j.at("mamba_d_conv").get<uint32_t>());
  f.kv_u32(a + "ssm.state_size", j.at("mamba_d_state").get<uint32_t>());
  f.kv_u32(a + "ssm.group_count", static_cast<uint32_t>(G));
  f.kv_u32(a + "ssm.inner_size", static_cast<uint32_t>(inner));
  f.kv_u32(a + "ssm.time_step_rank", j.at("mamba_n_heads").get<uint32_t>());
  // NoPE: llama.cpp's granitehybrid applies rotary unless rope.scaling.finetuned says false (the converter
  // writes it from position_embedding_type; Bamba rotates).
  const bool rope = bamba || j.value("position_embedding_type", std::string("nope")) == "rope";
  f.kv_bool(a + "rope.scaling.finetuned", rope);
  if (bamba) rope_keys(o, "granitehybrid", c);
}

}  // namespace

// granitemoehybrid (and bamba) as convert_hf_to_gguf.py's GraniteHybridModel writes it: the Mamba-2 layers as
// mamba2's, the attention layers' q/k/v/o unpermuted (NoPE), the stacked experts' input_linear [E, 2I, H]
// split into gate and up, the shared MLP's input_linear [2S, H] likewise, Granite's multipliers as scales.
void add_granitehybrid(Out& o, const ModelConfig& c) {
  const nlohmann::json& j = c.raw;
  const bool bamba = c.model_type == "bamba";
  const int64_t H = c.hidden_size, I = c.intermediate_size,
                S = bamba ? 0 : j.at("shared_intermediate_size").get<int64_t>();
  const int64_t inner = j.value("mamba_expand", int64_t{2}) * H, G = j.value("mamba_n_groups", int64_t{1});
  granitehybrid_keys(o, c, inner, G);
  auto split = [&o](const std::string& name, const std::string& hf, int64_t dim, int64_t from, int64_t n) {
    o.slice(name, hf, dim, from, n);
  };
  o.copy("token_embd.weight", "model.embed_tokens.weight");
  for (int64_t i = 0; i < c.num_hidden_layers; i++) {
    const std::string p = "model.layers." + std::to_string(i) + ".", q = "blk." + std::to_string(i) + ".";
    o.copy(q + "attn_norm.weight", p + "input_layernorm.weight");
    if (c.layer_types[static_cast<size_t>(i)] == "mamba") {
      add_ssd_mixer(o, p + "mamba.", q, inner, G, j.value("mamba_conv_bias", true));
    } else if (bamba) {  // q/k in llama.cpp's rope order over the rotated half of each head
      rope_ordered_qk(o, c, p + "self_attn.", q, rotary_dims(c));
      o.copy(q + "attn_v.weight", p + "self_attn.v_proj.weight");
      o.copy(q + "attn_output.weight", p + "self_attn.o_proj.weight");
    } else {
      for (const auto& [hf, gg] : std::vector<std::pair<std::string, std::string>>{
               {"q_proj", "attn_q"}, {"k_proj", "attn_k"}, {"v_proj", "attn_v"}, {"o_proj", "attn_output"}})
        o.copy(q + gg + ".weight", p + "self_attn." + hf + ".weight");
    }
    if (bamba) {
      o.copy(q + "ffn_norm.weight", p + "pre_ff_layernorm.weight");
      for (const char* w : {"gate", "up", "down"})
        o.copy(q + "ffn_" + w + ".weight", p + "feed_forward." + w + "_proj.weight");
      continue;
    }
    o.copy(q + "ffn_norm.weight", p + "post_attention_layernorm.weight");
    o.copy(q + "ffn_gate_inp.weight", p + "block_sparse_moe.router.layer.weight");
    split(q + "ffn_gate_exps.weight", p + "block_sparse_moe.input_linear.weight", 1, 0, I);
    split(q + "ffn_up_exps.weight", p + "block_sparse_moe.input_linear.weight", 1, I, I);
    o.copy(q + "ffn_down_exps.weight", p + "block_sparse_moe.output_linear.weight");
    split(q + "ffn_gate_shexp.weight", p + "shared_mlp.input_linear.weight", 0, 0, S);
    split(q + "ffn_up_shexp.weight", p + "shared_mlp.input_linear.weight", 0, S, S);
    o.copy(q + "ffn_down_shexp.weight", p + "shared_mlp.output_linear.weight");
  }
  o.copy("output_norm.weight", bamba ? "model.final_layernorm.weight" : "model.norm.weight");
  if (!c.tie_word_embeddings) o.copy("output.weight", "lm_head.weight");
}

// lfm2 as convert_hf_to_gguf.py's LFM2Model writes it: conv layers told by a per-layer head_count_kv of 0,
// the final norm (model.embedding_norm) as token_embd_norm, the depthwise conv [H, 1, L] squeezed to [H, L],
// NEOX rope (q/k rows in HF order).
void add_lfm2(Out& o, const ModelConfig& c) {
  const int64_t H = c.hidden_size, L = c.raw.value("conv_L_cache", int64_t{3});
  File& f = o.f;
  std::vector<int32_t> kv_heads;
  for (const auto& t : c.layer_types)
    kv_heads.push_back(t == "conv" ? 0 : static_cast<int32_t>(c.num_key_value_heads));
  f.kv_u32("lfm2.context_length", static_cast<uint32_t>(c.max_position_embeddings));
  f.kv_u32("lfm2.feed_forward_length",
           static_cast<uint32_t>(o.W.info("model.layers.0.feed_forward.w1.weight").shape.at(0)));
  f.kv_u32("lfm2.attention.head_count", static_cast<uint32_t>(c.num_attention_heads));
  f.kv_i32s("lfm2.attention.head_count_kv", kv_heads);
  f.kv_u32("lfm2.attention.key_length", static_cast<uint32_t>(c.head_dim));
  f.kv_u32("lfm2.attention.value_length", static_cast<uint32_t>(c.head_dim));
  f.kv_u32("lfm2.rope.dimension_count", static_cast<uint32_t>(c.head_dim));
  f.kv_f32("lfm2.rope.freq_base", static_cast<float>(c.rope_theta));
  f.kv_f32("lfm2.attention.layer_norm_rms_epsilon", static_cast<float>(c.norm_eps));
  f.kv_u32("lfm2.shortconv.l_cache", static_cast<uint32_t>(L));
  o.copy("token_embd.weight", "model.embed_tokens.weight");
  for (int64_t i = 0; i < c.num_hidden_layers; i++) {
    const std::string p = "model.layers." + std::to_string(i) + ".", q = "blk." + std::to_string(i) + ".";
    o.copy(q + "attn_norm.weight", p + "operator_norm.weight");
    if (c.layer_types.at(static_cast<size_t>(i)) == "conv") {
      o.reshaped(q + "shortconv.conv.weight", p + "conv.conv.weight", {H, L});
      o.copy(q + "shortconv.in_proj.weight", p + "conv.in_proj.weight");
      o.copy(q + "shortconv.out_proj.weight", p + "conv.out_proj.weight");
    } else {
      for (const auto& [hf, gg] :
           std::vector<std::pair<std::string, std::string>>{{"q_proj", "attn_q"},
                                                            {"k_proj", "attn_k"},
                                                            {"v_proj", "attn_v"},
                                                            {"out_proj", "attn_output"},
                                                            {"q_layernorm", "attn_q_norm"},
                                                            {"k_layernorm", "attn_k_norm"}})
        o.copy(q + gg + ".weight", p + "self_attn." + hf + ".weight");
    }
    o.copy(q + "ffn_norm.weight", p + "ffn_norm.weight");
    o.copy(q + "ffn_gate.weight", p + "feed_forward.w1.weight");
    o.copy(q + "ffn_up.weight", p + "feed_forward.w3.weight");
    o.copy(q + "ffn_down.weight", p + "feed_forward.w2.weight");
  }
  o.copy("token_embd_norm.weight", "model.embedding_norm.weight");
  if (!c.tie_word_embeddings) o.copy("output.weight", "lm_head.weight");
}

}  // namespace hfx::gguf
