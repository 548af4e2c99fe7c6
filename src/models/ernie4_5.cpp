// ernie4_5: Ernie4_5ForCausalLM — Llama with GPT-J-style interleaved rotary pairs over the whole head
// (transformers ignores partial_rotary_factor here), use_bias on all seven projections, head_dim 128 and a
// tied head by default.
#include "blocks.h"

namespace hfx::models {
namespace {

ModelConfig parse(const json& j) {
  ConfigDefaults d;
  d.vocab_size = 103424;
  d.hidden_size = 1024;
  d.intermediate_size = 3072;
  d.num_hidden_layers = 18;
  d.num_attention_heads = 16;
  d.max_position_embeddings = 131072;
  d.norm_eps = 1e-5;
  d.rope_theta = 500000.0;
  d.head_dim = 128;
  d.tie_word_embeddings = true;
  ModelConfig c = parse_common(j, "ernie4_5", d);
  set_layer_types(c, [](int64_t) { return false; }, {"full_attention"});
  return c;
}

DecoderOptions options(const ModelConfig& c) {
  DecoderOptions o;
  o.act = jget<std::string>(c.raw, "hidden_act", "silu");
  o.qkv_bias = o.o_bias = o.mlp_bias = jget<bool>(c.raw, "use_bias", false);
  ModelConfig whole = c;  // the rotary covers the whole head whatever partial_rotary_factor says
  whole.raw.erase("partial_rotary_factor");
  if (jhas(whole.raw, "rope_parameters") && whole.raw["rope_parameters"].is_object())
    whole.raw["rope_parameters"].erase("partial_rotary_factor");
  o.rope = rope_config(whole);
  o.rope.interleaved = true;
  return o;
}

json tiny(const std::string& preset) {
  if (preset != "tiny") unknown_preset("ernie4_5", preset, "tiny");
  json j = tiny_decoder_config("Ernie4_5ForCausalLM", "ernie4_5");
  j["rms_norm_eps"] = 1e-5;
  j["use_bias"] = true;
  j["tie_word_embeddings"] = true;
  j["pad_token_id"] = 0;
  return j;
}

}  // namespace

const Architecture& ernie4_5_architecture() {
  static const Architecture a = decoder_architecture<parse, options>("ernie4_5", tiny, "sentencepiece", 1.0);
  return a;
}

}  // namespace hfx::models
