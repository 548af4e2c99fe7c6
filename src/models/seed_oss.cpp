// seed_oss: SeedOssForCausalLM — Llama with q/k/v biases by default (attention_bias), an o_proj bias of its
// own (attention_out_bias), mlp_bias, head_dim 128 by default.
#include "blocks.h"

namespace hfx::models {
namespace {

ModelConfig parse(const json& j) {
  ConfigDefaults d;
  d.vocab_size = 155136;
  d.intermediate_size = 27648;
  d.num_hidden_layers = 64;
  d.num_attention_heads = 80;
  d.max_position_embeddings = 524288;
  d.head_dim = 128;
  d.bos = 0;
  d.eos = 2;
  json k = j;
  if (!k.contains("num_key_value_heads")) k["num_key_value_heads"] = 8;  // SeedOssConfig's default
  ModelConfig c = parse_common(k, "seed_oss", d);
  set_layer_types(c, [](int64_t) { return false; }, {"full_attention"});
  return c;
}

DecoderOptions options(const ModelConfig& c) {
  DecoderOptions o;
  o.act = jget<std::string>(c.raw, "hidden_act", "silu");
  o.qkv_bias = jget<bool>(c.raw, "attention_bias", true);
  o.o_bias = jget<bool>(c.raw, "attention_out_bias", false);
  o.mlp_bias = jget<bool>(c.raw, "mlp_bias", false);
  o.rope = rope_config(c);
  return o;
}

json tiny(const std::string& preset) {
  if (preset != "tiny") unknown_preset("seed_oss", preset, "tiny");
  json j = tiny_decoder_config("SeedOssForCausalLM", "seed_oss");
  j["attention_out_bias"] = true;
  j["bos_token_id"] = 1;
  j["eos_token_id"] = 2;
  j["pad_token_id"] = 0;
  return j;
}

}  // namespace

const Architecture& seed_oss_architecture() {
  static const Architecture a = decoder_architecture<parse, options>("seed_oss", tiny, "byte_level", 1.0);
  return a;
}

}  // namespace hfx::models
