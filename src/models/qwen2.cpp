// qwen2: Qwen2ForCausalLM — Llama with q/k/v biases; sliding window only when use_sliding_window, on
// layers i >= max_window_layers (or as layer_types says), as Qwen2Config computes it.
#include "blocks.h"

namespace hfx::models {
namespace {

ModelConfig parse(const json& j) {
  ConfigDefaults d;
  d.vocab_size = 151936;
  d.intermediate_size = 22016;
  d.max_position_embeddings = 32768;
  d.bos = std::nullopt;
  d.eos = std::nullopt;
  ModelConfig c = parse_common(j, "qwen2", d);
  bool use = jget<bool>(j, "use_sliding_window", false);
  c.sliding_window = use ? sliding_window_of(j, 4096) : 0;
  int64_t max_window_layers = jget<int64_t>(j, "max_window_layers", 28);
  set_layer_types(c, [&](int64_t i) { return c.sliding_window > 0 && i >= max_window_layers; });
  return c;
}

DecoderOptions options(const ModelConfig& c) {
  DecoderOptions o;
  o.act = jget<std::string>(c.raw, "hidden_act", "silu");
  o.qkv_bias = true;
  o.rope = rope_config(c);
  return o;
}

json tiny(const std::string& preset) {
  if (preset != "tiny") unknown_preset("qwen2", preset, "tiny");
  json j = tiny_decoder_config("Qwen2ForCausalLM", "qwen2");
  j["hidden_act"] = "silu";
  j["use_sliding_window"] = false;
  j["sliding_window"] = 8;
  j["max_window_layers"] = 2;
  j["rope_theta"] = 1000000.0;
  return j;
}

}  // namespace

const Architecture& qwen2_architecture() {
  static const Architecture a = decoder_architecture<parse, options>("qwen2", tiny, "byte_level", 1.0);
  return a;
}

}  // namespace hfx::models
