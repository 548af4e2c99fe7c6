// cwm: CwmForCausalLM (Code World Model) — Llama 3 with layer_types (default: every 4th layer from the
// first full attention, the rest slide in a sliding_window of 8192), rope_theta 1e6 with the llama3 rope
// (factor 16) when config.json names none, and three eos ids by default.
#include "blocks.h"

namespace hfx::models {
namespace {

ModelConfig parse(const json& j) {
  ConfigDefaults d;
  d.vocab_size = 128256;
  d.hidden_size = 6144;
  d.intermediate_size = 21504;
  d.num_hidden_layers = 64;
  d.num_attention_heads = 48;
  d.head_dim = 128;
  d.max_position_embeddings = 131072;
  d.norm_eps = 1e-5;
  d.rope_theta = 1000000.0;
  d.bos = 128000;
  json k = j;
  if (!k.contains("num_key_value_heads")) k["num_key_value_heads"] = 8;  // CwmConfig's defaults
  if (!jhas(k, "rope_parameters") && !jhas(k, "rope_scaling"))
    k["rope_parameters"] = {
        {"rope_type", "llama3"},   {"rope_theta", jget<double>(j, "rope_theta", 1000000.0)},
        {"factor", 16.0},          {"low_freq_factor", 1.0},
        {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 8192}};
  ModelConfig c = parse_common(k, "cwm", d);
  if (!jhas(j, "eos_token_id")) c.eos_token_ids = {128001, 128008, 128009};
  const json& w = j.contains("sliding_window") ? j["sliding_window"] : json(8192);
  c.sliding_window = w.is_number_integer() ? w.get<int64_t>() : 0;  // a falsy window is none
  set_layer_types(c, [&](int64_t i) { return c.sliding_window > 0 && i % 4 != 0; });
  return c;
}

DecoderOptions options(const ModelConfig& c) {
  DecoderOptions o;
  o.act = jget<std::string>(c.raw, "hidden_act", "silu");
  o.mlp_bias = jget<bool>(c.raw, "mlp_bias", false);
  o.rope = rope_config(c);
  return o;
}

json tiny(const std::string& preset) {
  if (preset != "tiny") unknown_preset("cwm", preset, "tiny");
  json j = tiny_decoder_config("CwmForCausalLM", "cwm");
  j["rms_norm_eps"] = 1e-5;
  j["sliding_window"] = 8;
  j["layer_types"] = {"full_attention", "sliding_attention"};
  j["bos_token_id"] = 1;
  j["eos_token_id"] = 2;
  return j;
}

}  // namespace

const Architecture& cwm_architecture() {
  static const Architecture a = decoder_architecture<parse, options>("cwm", tiny, "byte_level", 1.0);
  return a;
}

}  // namespace hfx::models
