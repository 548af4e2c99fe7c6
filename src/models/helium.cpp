// helium: HeliumForCausalLM — Llama with GPT-J-style interleaved rotary pairs, an o_proj that never has a
// bias (attention_bias is q/k/v only), rms_norm_eps 1e-8 and rope_theta 100000 by default.
#include "blocks.h"

namespace hfx::models {
namespace {

ModelConfig parse(const json& j) {
  ConfigDefaults d;
  d.vocab_size = 48000;
  d.hidden_size = 2560;
  d.intermediate_size = 7040;
  d.num_hidden_layers = 24;
  d.num_attention_heads = 20;
  d.max_position_embeddings = 4096;
  d.norm_eps = 1e-8;
  d.rope_theta = 100000.0;
  d.head_dim = 128;
  ModelConfig c = parse_common(j, "helium", d);
  set_layer_types(c, [](int64_t) { return false; }, {"full_attention"});
  return c;
}

DecoderOptions options(const ModelConfig& c) {
  DecoderOptions o;
  o.act = jget<std::string>(c.raw, "hidden_act", "silu");
  o.qkv_bias = jget<bool>(c.raw, "attention_bias", false);
  o.mlp_bias = jget<bool>(c.raw, "mlp_bias", false);
  o.rope = rope_config(c);
  o.rope.interleaved = true;
  return o;
}

json tiny(const std::string& preset) {
  if (preset != "tiny") unknown_preset("helium", preset, "tiny");
  json j = tiny_decoder_config("HeliumForCausalLM", "helium");
  j["rms_norm_eps"] = 1e-8;
  j["rope_theta"] = 100000.0;
  j["pad_token_id"] = 3;
  return j;
}

}  // namespace

const Architecture& helium_architecture() {
  static const Architecture a = decoder_architecture<parse, options>("helium", tiny, "sentencepiece", 1.0);
  return a;
}

}  // namespace hfx::models
