// flex_olmo: FlexOlmoForCausalLM — OLMo 2's post-norm layers and q/k norms over all heads, with OLMoE's
// sparse MLP on every layer (mlp.gate scores num_experts experts, softmax then the top
// num_experts_per_tok, optionally renormalized; each expert intermediate_size wide).
#include "blocks.h"

namespace hfx::models {
namespace {

ModelConfig parse(const json& j) {
  ConfigDefaults d;
  d.vocab_size = 100352;
  d.max_position_embeddings = 4096;
  d.rope_theta = 500000.0;
  d.bos = std::nullopt;
  d.eos = 100257;
  ModelConfig c = parse_common(j, "flex_olmo", d);
  set_layer_types(c, [](int64_t) { return false; }, {"full_attention"});
  parse_moe(c, "num_experts", 7, 5);
  return c;
}

DecoderOptions options(const ModelConfig& c) {
  DecoderOptions o;
  o.act = jget<std::string>(c.raw, "hidden_act", "silu");
  o.norms = post_norms();
  o.qk_norm_flat = true;
  o.qkv_bias = o.o_bias = jget<bool>(c.raw, "attention_bias", false);
  o.rope = rope_config(c);
  o.moe = parse_moe(c, "num_experts", 7, 5);
  o.moe.intermediate = c.intermediate_size;
  o.moe.norm_topk_prob = jget<bool>(c.raw, "norm_topk_prob", false);
  return o;
}

json tiny(const std::string& preset) {
  if (preset != "tiny") unknown_preset("flex_olmo", preset, "tiny");
  json j = tiny_decoder_config("FlexOlmoForCausalLM", "flex_olmo");
  j["intermediate_size"] = 32;
  j["num_experts"] = 4;
  j["num_experts_per_tok"] = 2;
  j["pad_token_id"] = 1;
  return j;
}

}  // namespace

const Architecture& flex_olmo_architecture() {
  static const Architecture a = decoder_architecture<parse, options>("flex_olmo", tiny, "byte_level", 1.0);
  return a;
}

}  // namespace hfx::models
