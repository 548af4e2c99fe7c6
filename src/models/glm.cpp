// glm (GLM-4 0414's predecessor line) and glm4: Llama with a fused mlp.gate_up_proj ([gate; up] rows),
// q/k/v biases by default (attention_bias, never on o_proj), and GPT-J-style interleaved rotary pairs on
// the first partial_rotary_factor (default 0.5) of each head. glm4 adds norms on the sublayer outputs:
// post_self_attn_layernorm after attention and post_mlp_layernorm after the MLP.
#include "blocks.h"

namespace hfx::models {
namespace {

ModelConfig parse_as(const json& j, const char* type) {
  ConfigDefaults d;
  d.vocab_size = 151552;
  d.intermediate_size = 13696;
  d.num_hidden_layers = 40;
  d.max_position_embeddings = 131072;
  d.norm_eps = 1.5625e-07;
  d.head_dim = 128;
  d.bos = std::nullopt;
  d.eos = 151329;
  ModelConfig c = parse_common(j, type, d);
  set_layer_types(c, [](int64_t) { return false; }, {"full_attention"});
  return c;
}
ModelConfig parse(const json& j) { return parse_as(j, "glm"); }
ModelConfig parse4(const json& j) { return parse_as(j, "glm4"); }

DecoderOptions options(const ModelConfig& c) {
  DecoderOptions o;
  o.act = jget<std::string>(c.raw, "hidden_act", "silu");
  o.qkv_bias = jget<bool>(c.raw, "attention_bias", true);
  o.fused_gate_up = true;
  o.rope = rope_config_partial(c, 0.5);
  o.rope.interleaved = true;
  return o;
}

DecoderOptions options4(const ModelConfig& c) {
  DecoderOptions o = options(c);
  o.norms.post_attn = "post_self_attn_layernorm";
  o.norms.post_mlp = "post_mlp_layernorm";
  return o;
}

json tiny_as(const std::string& preset, const char* cls, const char* type) {
  if (preset != "tiny") unknown_preset(type, preset, "tiny");
  json j = tiny_decoder_config(cls, type);
  j["rms_norm_eps"] = 1e-5;
  j["partial_rotary_factor"] = 0.5;
  j["bos_token_id"] = 1;
  j["eos_token_id"] = 2;
  j["pad_token_id"] = 0;
  return j;
}
json tiny(const std::string& preset) { return tiny_as(preset, "GlmForCausalLM", "glm"); }
json tiny4(const std::string& preset) { return tiny_as(preset, "Glm4ForCausalLM", "glm4"); }

}  // namespace

const Architecture& glm_architecture() {
  static const Architecture a = decoder_architecture<parse, options>("glm", tiny, "byte_level", 1.0);
  return a;
}

const Architecture& glm4_architecture() {
  static const Architecture a = decoder_architecture<parse4, options4>("glm4", tiny4, "byte_level", 1.0);
  return a;
}

}  // namespace hfx::models
