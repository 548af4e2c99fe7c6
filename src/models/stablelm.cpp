// stablelm: StableLmForCausalLM — LayerNorms with bias (layer_norm_eps), rotary on the first
// partial_rotary_factor (default 0.25) of each head, q/k/v biases with use_qkv_bias, and with
// use_parallel_residual one shared input_layernorm feeding attention and MLP in parallel (no
// post_attention_layernorm). head_dim is hidden_size / num_attention_heads (the attention ignores the key).
#include "blocks.h"

namespace hfx::models {
namespace {

ModelConfig parse(const json& j) {
  ConfigDefaults d;
  d.vocab_size = 50304;
  d.hidden_size = 2560;
  d.intermediate_size = 6912;
  d.max_position_embeddings = 4096;
  d.norm_eps = 1e-5;
  d.norm_eps_key = "layer_norm_eps";
  d.bos = 0;
  d.eos = 0;
  ModelConfig c = parse_common(j, "stablelm", d);
  const int64_t per_head = c.hidden_size / c.num_attention_heads;
  if (c.head_dim != per_head)
    HFX_THROW("model",
              "expected config.json.head_dim to be hidden_size / num_attention_heads = {} for stablelm (its "
              "attention splits heads that way), got {}",
              per_head, c.head_dim);
  set_layer_types(c, [](int64_t) { return false; }, {"full_attention"});
  return c;
}

DecoderOptions options(const ModelConfig& c) {
  refuse_knob(c, "qk_layernorm", false, "StableLM's per-head q/k LayerNorms");
  DecoderOptions o;
  o.act = jget<std::string>(c.raw, "hidden_act", "silu");
  o.norm = NormKind::layer;
  o.qkv_bias = jget<bool>(c.raw, "use_qkv_bias", false);
  o.parallel_residual = jget<bool>(c.raw, "use_parallel_residual", false);
  if (o.parallel_residual) o.norms.pre_mlp = "";
  o.rope = rope_config_partial(c, 0.25);
  return o;
}

json tiny(const std::string& preset) {
  if (preset != "tiny") unknown_preset("stablelm", preset, "tiny");
  json j = tiny_decoder_config("StableLmForCausalLM", "stablelm");
  j.erase("rms_norm_eps");
  j["layer_norm_eps"] = 1e-5;
  j["use_qkv_bias"] = true;
  j["partial_rotary_factor"] = 0.25;
  j["bos_token_id"] = 0;
  j["eos_token_id"] = 0;
  return j;
}

}  // namespace

const Architecture& stablelm_architecture() {
  static const Architecture a = decoder_architecture<parse, options>("stablelm", tiny, "byte_level", 1.0);
  return a;
}

}  // namespace hfx::models
