// olmo2: Olmo2ForCausalLM — post-norm layers (no input_layernorm: RMSNorms post_attention_layernorm and
// post_feedforward_layernorm on the sublayer outputs, before each residual add) and q_norm / k_norm over
// the whole q / k projections (all heads at once) before the head split and rope.
#include "blocks.h"

namespace hfx::models {
namespace {

ModelConfig parse(const json& j) {
  ConfigDefaults d;
  d.vocab_size = 50304;
  d.norm_eps = 1e-5;
  d.bos = std::nullopt;
  d.eos = 50279;
  ModelConfig c = parse_common(j, "olmo2", d);
  set_layer_types(c, [](int64_t) { return false; }, {"full_attention"});
  return c;
}

DecoderOptions options(const ModelConfig& c) {
  DecoderOptions o;
  o.act = jget<std::string>(c.raw, "hidden_act", "silu");
  o.norms = post_norms();
  o.qk_norm_flat = true;
  o.qkv_bias = o.o_bias = jget<bool>(c.raw, "attention_bias", false);
  o.rope = rope_config(c);
  return o;
}

json tiny(const std::string& preset) {
  if (preset != "tiny") unknown_preset("olmo2", preset, "tiny");
  json j = tiny_decoder_config("Olmo2ForCausalLM", "olmo2");
  j["rms_norm_eps"] = 1e-5;
  j["pad_token_id"] = 1;
  return j;
}

}  // namespace

const Architecture& olmo2_architecture() {
  static const Architecture a = decoder_architecture<parse, options>("olmo2", tiny, "byte_level", 1.0);
  return a;
}

}  // namespace hfx::models
