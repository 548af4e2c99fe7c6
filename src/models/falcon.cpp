// falcon: FalconForCausalLM (Falcon-7B/RW layout) — the shared decoder under Falcon's names
// (transformer.word_embeddings, transformer.h.N.self_attention.query_key_value / dense, mlp.dense_h_to_4h /
// dense_4h_to_h, input_layernorm (+ post_attention_layernorm without parallel_attn), transformer.ln_f,
// lm_head): LayerNorms with bias, one fused q/k/v projection (multi_query: rows [q; k; v] with one key/value
// head; else per head [q_h; k_h; v_h]), rotary over the whole head, a plain gelu MLP, biases with `bias`,
// parallel attention and MLP on one norm by default, tied head. Refused by name: alibi and
// new_decoder_architecture (Falcon-40B/180B's grouped q/k/v and ln_attn / ln_mlp).
#include "blocks.h"

namespace hfx::models {
namespace {

ModelConfig parse(const json& j) {
  ConfigDefaults d;
  d.vocab_size = 65024;
  d.hidden_size = 4544;
  d.num_attention_heads = 71;
  d.norm_eps = 1e-5;
  d.norm_eps_key = "layer_norm_epsilon";
  d.tie_word_embeddings = true;
  d.bos = 11;
  d.eos = 11;
  json k = j;
  if (jhas(j, "n_embed")) k["hidden_size"] = j["n_embed"];
  const int64_t hidden = jget<int64_t>(k, "hidden_size", d.hidden_size);
  k["intermediate_size"] = jget<int64_t>(j, "ffn_hidden_size", 4 * hidden);
  const int64_t heads = jget<int64_t>(k, "num_attention_heads", d.num_attention_heads);
  k["num_key_value_heads"] = jget<bool>(j, "multi_query", true) ? 1 : heads;
  k.erase("head_dim");
  ModelConfig c = parse_common(k, "falcon", d);
  set_layer_types(c, [](int64_t) { return false; }, {"full_attention"});
  return c;
}

DecoderOptions options(const ModelConfig& c) {
  refuse_knob(c, "alibi", false, "Falcon's ALiBi attention bias");
  refuse_knob(c, "new_decoder_architecture", false, "Falcon-40B's grouped q/k/v with ln_attn / ln_mlp");
  DecoderOptions o;
  o.names.model = "transformer";
  o.names.embed = "word_embeddings";
  o.names.layers = "h";
  o.names.attn = "self_attention";
  o.names.qkv = "query_key_value";
  o.act = jget<std::string>(c.raw, "activation", "gelu");
  o.norm = NormKind::layer;
  o.parallel_residual = jget<bool>(c.raw, "parallel_attn", true);
  if (o.parallel_residual) o.norms.pre_mlp = "";
  o.qkv = c.num_key_value_heads == 1 && c.num_attention_heads > 1 ? QkvLayout::concat : QkvLayout::per_head;
  o.qkv_bias = o.o_bias = o.mlp_bias = jget<bool>(c.raw, "bias", false);
  o.o_proj = "dense";
  o.gated_mlp = false;
  o.mlp_in = "dense_h_to_4h";
  o.mlp_out = "dense_4h_to_h";
  o.final_norm = "ln_f";
  o.rope = rope_config(c);
  return o;
}

json tiny(const std::string& preset) {
  if (preset != "tiny") unknown_preset("falcon", preset, "tiny");
  json j = tiny_decoder_config("FalconForCausalLM", "falcon");
  for (const char* x : {"rms_norm_eps", "head_dim", "num_key_value_heads", "intermediate_size"}) j.erase(x);
  j["ffn_hidden_size"] = 128;
  j["layer_norm_epsilon"] = 1e-5;
  j["multi_query"] = true;
  j["parallel_attn"] = true;
  j["bias"] = true;
  j["tie_word_embeddings"] = true;
  j["bos_token_id"] = 1;
  j["eos_token_id"] = 2;
  return j;
}

}  // namespace

const Architecture& falcon_architecture() {
  static const Architecture a = decoder_architecture<parse, options>("falcon", tiny, "byte_level", 1.0, {});
  return a;
}

}  // namespace hfx::models
