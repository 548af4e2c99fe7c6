// phi: PhiForCausalLM (Phi-1/1.5/2) — parallel residual: one input_layernorm (LayerNorm with bias) feeds
// attention and a plain MLP fc2(gelu_new(fc1(x))), h + attention + MLP; biases everywhere (the output
// projection is self_attn.dense, the head has lm_head.bias); rotary on the first partial_rotary_factor
// (default 0.5) of each head; optional per-head q/k LayerNorms (qk_layernorm) shared by all heads; the
// final norm is model.final_layernorm.
#include "blocks.h"

namespace hfx::models {
namespace {

ModelConfig parse(const json& j) {
  ConfigDefaults d;
  d.vocab_size = 51200;
  d.hidden_size = 2048;
  d.intermediate_size = 8192;
  d.num_hidden_layers = 24;
  d.norm_eps = 1e-5;
  d.norm_eps_key = "layer_norm_eps";
  ModelConfig c = parse_common(j, "phi", d);
  set_layer_types(c, [](int64_t) { return false; }, {"full_attention"});
  return c;
}

DecoderOptions options(const ModelConfig& c) {
  DecoderOptions o;
  o.act = jget<std::string>(c.raw, "hidden_act", "gelu_new");
  o.norm = NormKind::layer;
  o.norms.pre_mlp = "";
  o.parallel_residual = true;
  o.qkv_bias = o.o_bias = o.mlp_bias = o.lm_head_bias = true;
  o.gated_mlp = false;
  o.mlp_in = "fc1";
  o.mlp_out = "fc2";
  o.o_proj = "dense";
  o.final_norm = "final_layernorm";
  o.qk_norm = jget<bool>(c.raw, "qk_layernorm", false);
  o.q_norm = "q_layernorm";
  o.k_norm = "k_layernorm";
  o.rope = rope_config_partial(c, 0.5);
  return o;
}

json tiny(const std::string& preset) {
  if (preset != "tiny") unknown_preset("phi", preset, "tiny");
  json j = tiny_decoder_config("PhiForCausalLM", "phi");
  j.erase("rms_norm_eps");
  j.erase("head_dim");
  j["layer_norm_eps"] = 1e-5;
  j["hidden_act"] = "gelu_new";
  j["partial_rotary_factor"] = 0.5;
  j["qk_layernorm"] = true;
  j["bos_token_id"] = 1;
  j["eos_token_id"] = 2;
  return j;
}

}  // namespace

const Architecture& phi_architecture() {
  static const Architecture a = decoder_architecture<parse, options>("phi", tiny, "byte_level", 1.0);
  return a;
}

}  // namespace hfx::models
