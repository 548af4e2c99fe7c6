// starcoder2: Starcoder2ForCausalLM — LayerNorms with bias (norm_epsilon), a plain MLP
// c_proj(act(c_fc(x))) (gelu_pytorch_tanh), biases on every projection with use_bias (default true), a
// sliding window on every layer when sliding_window is set, tied head by default.
#include "blocks.h"

namespace hfx::models {
namespace {

ModelConfig parse(const json& j) {
  ConfigDefaults d;
  d.vocab_size = 49152;
  d.hidden_size = 3072;
  d.intermediate_size = 12288;
  d.num_hidden_layers = 30;
  d.num_attention_heads = 24;
  d.max_position_embeddings = 4096;
  d.norm_eps = 1e-5;
  d.norm_eps_key = "norm_epsilon";
  d.tie_word_embeddings = true;
  d.bos = 50256;
  d.eos = 50256;
  ModelConfig c = parse_common(j, "starcoder2", d);
  c.sliding_window = sliding_window_of(j, 0);
  set_layer_types(c, [&](int64_t) { return c.sliding_window > 0; });
  return c;
}

DecoderOptions options(const ModelConfig& c) {
  DecoderOptions o;
  o.act = jget<std::string>(c.raw, "hidden_act", "gelu_pytorch_tanh");
  o.norm = NormKind::layer;
  o.qkv_bias = o.o_bias = o.mlp_bias = jget<bool>(c.raw, "use_bias", true);
  o.gated_mlp = false;
  o.mlp_in = "c_fc";
  o.mlp_out = "c_proj";
  o.rope = rope_config(c);
  return o;
}

json tiny(const std::string& preset) {
  if (preset != "tiny") unknown_preset("starcoder2", preset, "tiny");
  json j = tiny_decoder_config("Starcoder2ForCausalLM", "starcoder2");
  j.erase("rms_norm_eps");
  j["norm_epsilon"] = 1e-5;
  j["hidden_act"] = "gelu_pytorch_tanh";
  j["sliding_window"] = 8;
  j["bos_token_id"] = 0;
  j["eos_token_id"] = 0;
  return j;
}

}  // namespace

const Architecture& starcoder2_architecture() {
  static const Architecture a = decoder_architecture<parse, options>("starcoder2", tiny, "byte_level", 1.0);
  return a;
}

}  // namespace hfx::models
