// granite: GraniteForCausalLM — Llama scaled: attention by attention_multiplier (not head_dim^-0.5),
// embeddings × embedding_multiplier, each residual branch × residual_multiplier, logits / logits_scaling.
#include "blocks.h"

namespace hfx::models {
namespace {

ModelConfig parse(const json& j) {
  ModelConfig c = parse_common(j, "granite", ConfigDefaults{});
  set_layer_types(c, [](int64_t) { return false; }, {"full_attention"});
  return c;
}

DecoderOptions options(const ModelConfig& c) {
  DecoderOptions o;
  o.act = jget<std::string>(c.raw, "hidden_act", "silu");
  o.qkv_bias = o.o_bias = jget<bool>(c.raw, "attention_bias", false);
  o.mlp_bias = jget<bool>(c.raw, "mlp_bias", false);
  o.attn_scale = jget<double>(c.raw, "attention_multiplier", 1.0);
  o.embedding_multiplier = jget<double>(c.raw, "embedding_multiplier", 1.0);
  o.residual_multiplier = jget<double>(c.raw, "residual_multiplier", 1.0);
  o.logits_scaling = jget<double>(c.raw, "logits_scaling", 1.0);
  o.rope = rope_config(c);
  return o;
}

json tiny(const std::string& preset) {
  if (preset != "tiny") unknown_preset("granite", preset, "tiny");
  json j = tiny_decoder_config("GraniteForCausalLM", "granite");
  j.erase("head_dim");
  j["attention_multiplier"] = 0.2;
  j["embedding_multiplier"] = 2.0;
  j["residual_multiplier"] = 0.5;
  j["logits_scaling"] = 4.0;
  return j;
}

}  // namespace

const Architecture& granite_architecture() {
  static const Architecture a = decoder_architecture<parse, options>("granite", tiny, "byte_level", 1.0);
  return a;
}

}  // namespace hfx::models
