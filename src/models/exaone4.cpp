// exaone4: Exaone4ForCausalLM — post-norm layers as OLMo 2 (post_attention_layernorm and
// post_feedforward_layernorm on the sublayer outputs, no input_layernorm), per-head q_norm / k_norm before
// rope, layer_types (default: every sliding_window_pattern-th layer, 4, full, the rest slide) and, when a
// sliding window is set, no position embedding on the full-attention layers.
#include "blocks.h"

namespace hfx::models {
namespace {

ModelConfig parse(const json& j) {
  ConfigDefaults d;
  d.vocab_size = 102400;
  d.intermediate_size = 16384;
  d.norm_eps = 1e-5;
  d.bos = 0;
  d.eos = 2;
  ModelConfig c = parse_common(j, "exaone4", d);
  c.sliding_window = sliding_window_of(j, 4096);
  const int64_t pattern = jget<int64_t>(j, "sliding_window_pattern", 4);
  if (pattern <= 0) HFX_THROW("model", "expected config.json.sliding_window_pattern > 0, got {}", pattern);
  set_layer_types(c, [&](int64_t i) { return c.sliding_window > 0 && (i + 1) % pattern != 0; });
  return c;
}

DecoderOptions options(const ModelConfig& c) {
  DecoderOptions o;
  o.act = jget<std::string>(c.raw, "hidden_act", "silu");
  o.norms = post_norms();
  o.qk_norm = true;
  o.rope = rope_config(c);
  for (const auto& t : c.layer_types)
    o.nope_layers.push_back(c.sliding_window > 0 && t != "sliding_attention");
  return o;
}

json tiny(const std::string& preset) {
  if (preset != "tiny") unknown_preset("exaone4", preset, "tiny");
  json j = tiny_decoder_config("Exaone4ForCausalLM", "exaone4");
  j["rms_norm_eps"] = 1e-5;
  j["num_hidden_layers"] = 3;
  j["sliding_window"] = 8;
  j["sliding_window_pattern"] = 3;  // layers 0, 1 slide (rotary), layer 2 full (NoPE)
  j["bos_token_id"] = 1;
  j["eos_token_id"] = 2;
  return j;
}

}  // namespace

const Architecture& exaone4_architecture() {
  static const Architecture a = decoder_architecture<parse, options>("exaone4", tiny, "byte_level", 1.0);
  return a;
}

}  // namespace hfx::models
