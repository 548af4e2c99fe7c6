// phi3: Phi3ForCausalLM — fused self_attn.qkv_proj ([q; k; v] rows) and mlp.gate_up_proj ([gate; up]),
// partial_rotary_factor (rope on the first dims of each head), sliding_window on every layer when set.
#include "blocks.h"

namespace hfx::models {
namespace {

ModelConfig parse(const json& j) {
  ConfigDefaults d;
  d.vocab_size = 32064;
  d.hidden_size = 3072;
  d.intermediate_size = 8192;
  d.max_position_embeddings = 4096;
  d.norm_eps = 1e-5;
  d.eos = 32000;
  ModelConfig c = parse_common(j, "phi3", d);
  c.sliding_window = sliding_window_of(j, 0);
  set_layer_types(c, [&](int64_t) { return c.sliding_window > 0; });
  return c;
}

DecoderOptions options(const ModelConfig& c) {
  DecoderOptions o;
  o.act = jget<std::string>(c.raw, "hidden_act", "silu");
  o.qkv = QkvLayout::concat;
  o.fused_gate_up = true;
  o.rope = rope_config(c);
  return o;
}

json tiny(const std::string& preset) {
  if (preset != "tiny") unknown_preset("phi3", preset, "tiny");
  json j = tiny_decoder_config("Phi3ForCausalLM", "phi3");
  j["hidden_act"] = "silu";
  j["rms_norm_eps"] = 1e-5;
  j["partial_rotary_factor"] = 0.5;
  j["sliding_window"] = 8;
  j["original_max_position_embeddings"] = 2048;
  j["rope_scaling"] = nullptr;
  // Phi3Config defaults pad_token_id to 32000, past a tiny vocabulary: transformers then refuses the
  // checkpoint (nn.Embedding: "Padding_idx must be within num_embeddings"). The tiny model has no pad.
  j["pad_token_id"] = nullptr;
  return j;
}

}  // namespace

const Architecture& phi3_architecture() {
  static const Architecture a = decoder_architecture<parse, options>("phi3", tiny, "sentencepiece", 1.0);
  return a;
}

}  // namespace hfx::models
