// cohere: CohereForCausalLM (Command-R) and cohere2 (Command-R7B). Parallel residual on one
// input_layernorm (CohereLayerNorm: mean-subtracting, weight only), GPT-J-style interleaved rotary pairs,
// logits × logit_scale, tied head by default. cohere2 adds layer_types (default: every
// sliding_window_pattern-th layer, 4, is full attention, the rest slide) and rotates only its sliding
// layers: full-attention layers use no position embedding.
#include "blocks.h"

namespace hfx::models {
namespace {

ConfigDefaults cohere_defaults(double theta) {
  ConfigDefaults d;
  d.vocab_size = 256000;
  d.hidden_size = 8192;
  d.intermediate_size = 22528;
  d.num_hidden_layers = 40;
  d.num_attention_heads = 64;
  d.max_position_embeddings = 8192;
  d.norm_eps = 1e-5;
  d.norm_eps_key = "layer_norm_eps";
  d.rope_theta = theta;
  d.tie_word_embeddings = true;
  d.bos = 5;
  d.eos = 255001;
  return d;
}

ModelConfig parse(const json& j) {
  ModelConfig c = parse_common(j, "cohere", cohere_defaults(500000.0));
  set_layer_types(c, [](int64_t) { return false; }, {"full_attention"});
  return c;
}

ModelConfig parse2(const json& j) {
  ModelConfig c = parse_common(j, "cohere2", cohere_defaults(10000.0));
  c.sliding_window = sliding_window_of(j, 4096);
  const int64_t pattern = jget<int64_t>(j, "sliding_window_pattern", 4);
  if (pattern <= 0) HFX_THROW("model", "expected config.json.sliding_window_pattern > 0, got {}", pattern);
  set_layer_types(c, [&](int64_t i) { return c.sliding_window > 0 && (i + 1) % pattern != 0; });
  return c;
}

DecoderOptions options(const ModelConfig& c) {
  refuse_knob(c, "use_qk_norm", false, "Cohere's per-head q/k LayerNorms");
  DecoderOptions o;
  o.act = jget<std::string>(c.raw, "hidden_act", "silu");
  o.norm = NormKind::layer_no_bias;
  o.norms.pre_mlp = "";
  o.parallel_residual = true;
  o.qkv_bias = o.o_bias = jget<bool>(c.raw, "attention_bias", false);
  o.logits_multiplier = jget<double>(c.raw, "logit_scale", 0.0625);
  o.rope = rope_config(c);
  o.rope.interleaved = true;
  return o;
}

DecoderOptions options2(const ModelConfig& c) {
  DecoderOptions o = options(c);
  for (const auto& t : c.layer_types) o.nope_layers.push_back(t != "sliding_attention");
  return o;
}

json tiny_config(const std::string& preset, const char* cls, const char* type) {
  if (preset != "tiny") unknown_preset(type, preset, "tiny");
  json j = tiny_decoder_config(cls, type);
  j.erase("rms_norm_eps");
  j["layer_norm_eps"] = 1e-5;
  j["logit_scale"] = 0.5;
  j["tie_word_embeddings"] = true;
  j["bos_token_id"] = 1;
  j["eos_token_id"] = 2;
  j["pad_token_id"] = 0;
  return j;
}
json tiny(const std::string& preset) { return tiny_config(preset, "CohereForCausalLM", "cohere"); }
json tiny2(const std::string& preset) {
  json j = tiny_config(preset, "Cohere2ForCausalLM", "cohere2");
  j["num_hidden_layers"] = 3;
  j["sliding_window"] = 8;
  j["sliding_window_pattern"] = 3;  // layers 0, 1 slide (rotary), layer 2 full (NoPE)
  return j;
}

}  // namespace

const Architecture& cohere_architecture() {
  static const Architecture a = decoder_architecture<parse, options>("cohere", tiny, "byte_level", 1.0);
  return a;
}

const Architecture& cohere2_architecture() {
  static const Architecture a = decoder_architecture<parse2, options2>("cohere2", tiny2, "byte_level", 1.0);
  return a;
}

}  // namespace hfx::models
