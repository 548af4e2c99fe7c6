// ministral: MinistralForCausalLM — Mistral with layer_types (default: every layer slides when
// sliding_window is set, else full attention) and 8 key/value heads by default.
#include "blocks.h"

namespace hfx::models {
namespace {

ModelConfig parse(const json& j) {
  ConfigDefaults d;
  d.intermediate_size = 14336;
  d.max_position_embeddings = 131072;
  json k = j;
  if (!k.contains("num_key_value_heads")) k["num_key_value_heads"] = 8;  // MinistralConfig's default
  ModelConfig c = parse_common(k, "ministral", d);
  c.sliding_window = sliding_window_of(j, 4096);
  set_layer_types(c, [&](int64_t) { return c.sliding_window > 0; });
  return c;
}

DecoderOptions options(const ModelConfig& c) {
  DecoderOptions o;
  o.act = jget<std::string>(c.raw, "hidden_act", "silu");
  o.rope = rope_config(c);
  return o;
}

json tiny(const std::string& preset) {
  if (preset != "tiny") unknown_preset("ministral", preset, "tiny");
  json j = tiny_decoder_config("MinistralForCausalLM", "ministral");
  j["sliding_window"] = 8;
  j["layer_types"] = {"sliding_attention", "full_attention"};
  return j;
}

}  // namespace

const Architecture& ministral_architecture() {
  static const Architecture a = decoder_architecture<parse, options>("ministral", tiny, "sentencepiece", 1.0);
  return a;
}

}  // namespace hfx::models
