// vaultgemma: VaultGemmaForCausalLM — Gemma 2 without the sublayer-output norms (input_layernorm and
// pre_feedforward_layernorm only): norms x·(1 + w), sqrt(hidden)-scaled embeddings, query_pre_attn_scalar,
// soft-capped attention (50) and logits (30), alternating sliding (window 4096) and full layers.
#include <cmath>

#include "blocks.h"

namespace hfx::models {
namespace {

ModelConfig parse(const json& j) {
  ConfigDefaults d;
  d.vocab_size = 256000;
  d.hidden_size = 2304;
  d.intermediate_size = 9216;
  d.num_hidden_layers = 26;
  d.num_attention_heads = 8;
  d.head_dim = 256;
  d.max_position_embeddings = 8192;
  d.tie_word_embeddings = true;
  d.bos = 2;
  d.eos = 1;
  json k = j;
  if (!k.contains("num_key_value_heads")) k["num_key_value_heads"] = 4;  // VaultGemmaConfig's default
  ModelConfig c = parse_common(k, "vaultgemma", d);
  c.sliding_window = sliding_window_of(j, 4096);
  set_layer_types(c, [&](int64_t i) { return c.sliding_window > 0 && (i + 1) % 2 != 0; });
  return c;
}

DecoderOptions options(const ModelConfig& c) {
  DecoderOptions o;
  o.act = jget<std::string>(c.raw, "hidden_activation",
                            jget<std::string>(c.raw, "hidden_act", "gelu_pytorch_tanh"));
  o.qkv_bias = o.o_bias = jget<bool>(c.raw, "attention_bias", false);
  o.norm_offset = 1.0;
  o.scale_embeddings = o.scale_in_embedding = true;
  o.norms.pre_mlp = "pre_feedforward_layernorm";
  o.attn_softcap = softcap_of(c.raw, "attn_logit_softcapping", 50.0);
  o.final_softcap = softcap_of(c.raw, "final_logit_softcapping", 30.0);
  o.attn_scale = 1.0 / std::sqrt(jget<double>(c.raw, "query_pre_attn_scalar", 256.0));
  o.rope = rope_config(c);
  return o;
}

json tiny(const std::string& preset) {
  if (preset != "tiny") unknown_preset("vaultgemma", preset, "tiny");
  json j = tiny_decoder_config("VaultGemmaForCausalLM", "vaultgemma");
  j["hidden_activation"] = "gelu_pytorch_tanh";
  j["tie_word_embeddings"] = true;
  j["query_pre_attn_scalar"] = 16;
  j["sliding_window"] = 8;
  j["bos_token_id"] = 1;
  j["eos_token_id"] = 2;
  j["pad_token_id"] = 0;
  return j;
}

}  // namespace

const Architecture& vaultgemma_architecture() {
  static const Architecture a =
      decoder_architecture<parse, options>("vaultgemma", tiny, "sentencepiece", 0.0);
  return a;
}

}  // namespace hfx::models
