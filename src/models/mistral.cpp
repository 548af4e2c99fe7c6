// mistral: MistralForCausalLM — Llama with a sliding window on every layer (sliding_window, default 4096
// as MistralConfig; null = none) and no biases.
#include "blocks.h"

namespace hfx::models {
namespace {

ModelConfig parse(const json& j) {
  ConfigDefaults d;
  d.intermediate_size = 14336;
  d.max_position_embeddings = 4096 * 32;
  ModelConfig c = parse_common(j, "mistral", d);
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
  if (preset != "tiny") unknown_preset("mistral", preset, "tiny");
  json j = tiny_decoder_config("MistralForCausalLM", "mistral");
  j["hidden_act"] = "silu";
  j["sliding_window"] = 8;  // small so that tests cross it
  return j;
}

}  // namespace

const Architecture& mistral_architecture() {
  static const Architecture a = decoder_architecture<parse, options>("mistral", tiny, "sentencepiece", 1.0);
  return a;
}

}  // namespace hfx::models
