// persimmon: PersimmonForCausalLM (Persimmon-8B, the text model of Fuyu) — one fused q/k/v projection
// stored per head ([q_h; k_h; v_h] rows, self_attn.query_key_value), per-head q/k LayerNorms
// (qk_layernorm, default on) before a rotary on the first half of each head, the output projection
// self_attn.dense, a plain relu² MLP dense_h_to_4h / dense_4h_to_h, LayerNorms with bias, biases
// everywhere but the untied lm_head, the final norm model.final_layernorm.
#include "blocks.h"

namespace hfx::models {
namespace {

ModelConfig parse(const json& j) {
  ConfigDefaults d;
  d.vocab_size = 262144;
  d.hidden_size = 4096;
  d.intermediate_size = 16384;
  d.num_hidden_layers = 36;
  d.num_attention_heads = 64;
  d.max_position_embeddings = 16384;
  d.norm_eps = 1e-5;
  d.norm_eps_key = "layer_norm_eps";
  json k = j;
  for (const char* x : {"num_key_value_heads", "head_dim"}) k.erase(x);  // multi-head, hidden / heads
  ModelConfig c = parse_common(k, "persimmon", d);
  set_layer_types(c, [](int64_t) { return false; }, {"full_attention"});
  return c;
}

DecoderOptions options(const ModelConfig& c) {
  DecoderOptions o;
  o.act = jget<std::string>(c.raw, "hidden_act", "relu2");
  o.norm = NormKind::layer;
  o.qkv = QkvLayout::per_head;
  o.names.qkv = "query_key_value";
  o.qkv_bias = o.o_bias = o.mlp_bias = true;
  o.o_proj = "dense";
  o.gated_mlp = false;
  o.mlp_in = "dense_h_to_4h";
  o.mlp_out = "dense_4h_to_h";
  o.final_norm = "final_layernorm";
  o.qk_norm = jget<bool>(c.raw, "qk_layernorm", true);
  o.q_norm = "q_layernorm";
  o.k_norm = "k_layernorm";
  o.rope = rope_config_partial(c, 0.5);
  return o;
}

json tiny(const std::string& preset) {
  if (preset != "tiny") unknown_preset("persimmon", preset, "tiny");
  json j = tiny_decoder_config("PersimmonForCausalLM", "persimmon");
  for (const char* x : {"rms_norm_eps", "head_dim", "num_key_value_heads"}) j.erase(x);
  j["layer_norm_eps"] = 1e-5;
  j["hidden_act"] = "relu2";
  j["partial_rotary_factor"] = 0.5;
  j["qk_layernorm"] = true;
  j["bos_token_id"] = 1;
  j["eos_token_id"] = 2;
  return j;
}

}  // namespace

const Architecture& persimmon_architecture() {
  static const Architecture a = decoder_architecture<parse, options>("persimmon", tiny, "byte_level", 1.0);
  return a;
}

}  // namespace hfx::models
