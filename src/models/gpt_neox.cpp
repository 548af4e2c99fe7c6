// gpt_neox: GPTNeoXForCausalLM (Pythia, GPT-NeoX-20B) — the shared decoder under GPT-NeoX's module names
// (gpt_neox.embed_in, gpt_neox.layers.N.attention.query_key_value / dense, mlp.dense_h_to_4h /
// dense_4h_to_h, gpt_neox.final_layer_norm, lm_head — embed_out in older files): LayerNorms with bias, one
// fused q/k/v projection stored per head ([q_h; k_h; v_h] rows), rotary on the first rotary_pct (0.25) of
// each head with base rotary_emb_base, a plain gelu MLP, biases everywhere, and with
// use_parallel_residual (default) h + attention(input_layernorm(h)) + mlp(post_attention_layernorm(h)).
#include "blocks.h"

namespace hfx::models {
namespace {

ModelConfig parse(const json& j) {
  ConfigDefaults d;
  d.vocab_size = 50432;
  d.hidden_size = 6144;
  d.intermediate_size = 24576;
  d.num_hidden_layers = 44;
  d.num_attention_heads = 64;
  d.norm_eps = 1e-5;
  d.norm_eps_key = "layer_norm_eps";
  d.bos = 0;
  d.eos = 2;
  json k = j;
  // GPTNeoXConfig: rope_parameters win; else the legacy rotary_emb_base / rotary_pct (top-level rope_theta
  // and partial_rotary_factor are not read).
  json rp = j.contains("rope_parameters") && j["rope_parameters"].is_object() ? j["rope_parameters"]
                                                                              : json::object();
  if (!jhas(rp, "rope_theta")) rp["rope_theta"] = jget<double>(j, "rotary_emb_base", 10000.0);
  if (!jhas(rp, "partial_rotary_factor")) rp["partial_rotary_factor"] = jget<double>(j, "rotary_pct", 0.25);
  if (!jhas(rp, "rope_type")) rp["rope_type"] = "default";
  k["rope_parameters"] = rp;
  k.erase("rope_theta");
  k.erase("partial_rotary_factor");
  k.erase("num_key_value_heads");  // multi-head attention only
  k.erase("head_dim");             // the attention splits hidden_size by num_attention_heads
  ModelConfig c = parse_common(k, "gpt_neox", d);
  set_layer_types(c, [](int64_t) { return false; }, {"full_attention"});
  return c;
}

DecoderOptions options(const ModelConfig& c) {
  DecoderOptions o;
  o.names.model = "gpt_neox";
  o.names.embed = "embed_in";
  o.names.attn = "attention";
  o.names.qkv = "query_key_value";
  o.act = jget<std::string>(c.raw, "hidden_act", "gelu");
  o.norm = NormKind::layer;
  o.parallel_residual = jget<bool>(c.raw, "use_parallel_residual", true);
  o.qkv = QkvLayout::per_head;
  o.qkv_bias = o.o_bias = jget<bool>(c.raw, "attention_bias", true);
  o.mlp_bias = true;
  o.gated_mlp = false;
  o.mlp_in = "dense_h_to_4h";
  o.mlp_out = "dense_4h_to_h";
  o.o_proj = "dense";
  o.final_norm = "final_layer_norm";
  o.rope = rope_config(c);
  return o;
}

json tiny(const std::string& preset) {
  if (preset != "tiny") unknown_preset("gpt_neox", preset, "tiny");
  json j = tiny_decoder_config("GPTNeoXForCausalLM", "gpt_neox");
  for (const char* k : {"rms_norm_eps", "head_dim", "num_key_value_heads", "rope_theta"}) j.erase(k);
  j["layer_norm_eps"] = 1e-5;
  j["hidden_act"] = "gelu";
  j["rotary_pct"] = 0.25;
  j["rotary_emb_base"] = 10000;
  j["use_parallel_residual"] = true;
  j["bos_token_id"] = 0;
  j["eos_token_id"] = 2;
  return j;
}

Architecture make() {
  Architecture a = decoder_architecture<parse, options>("gpt_neox", tiny, "byte_level", 1.0, {});
  a.weight_layouts = {{"embed_out.", "lm_head."}};  // the Hub's Pythia files; transformers 5 saves lm_head
  a.optional_weights = {R"(gpt_neox\.layers\.\d+\.attention\.(bias|masked_bias|rotary_emb\.inv_freq))"};
  return a;
}

}  // namespace

const Architecture& gpt_neox_architecture() {
  static const Architecture a = make();
  return a;
}

}  // namespace hfx::models
