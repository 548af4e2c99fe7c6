// olmo: OlmoForCausalLM — Llama with parameterless LayerNorms (eps 1e-5, fixed: no config key) for the
// layer and final norms, optional clip_qkv on the q/k/v projections, attention_bias on q/k/v/o.
#include "blocks.h"

namespace hfx::models {
namespace {

ModelConfig parse(const json& j) {
  ConfigDefaults d;
  d.vocab_size = 50304;
  d.bos = std::nullopt;
  d.eos = 50279;
  ModelConfig c = parse_common(j, "olmo", d);
  c.norm_eps = 1e-5;  // OlmoLayerNorm's eps is not read from the config
  set_layer_types(c, [](int64_t) { return false; }, {"full_attention"});
  return c;
}

DecoderOptions options(const ModelConfig& c) {
  DecoderOptions o;
  o.act = jget<std::string>(c.raw, "hidden_act", "silu");
  o.norm = NormKind::layer_no_affine;
  o.qkv_bias = o.o_bias = jget<bool>(c.raw, "attention_bias", false);
  o.clip_qkv = jget<double>(c.raw, "clip_qkv", 0.0);
  o.rope = rope_config(c);
  return o;
}

json tiny(const std::string& preset) {
  if (preset != "tiny") unknown_preset("olmo", preset, "tiny");
  json j = tiny_decoder_config("OlmoForCausalLM", "olmo");
  j["clip_qkv"] = 8.0;
  j["pad_token_id"] = 1;
  return j;
}

}  // namespace

const Architecture& olmo_architecture() {
  static const Architecture a = decoder_architecture<parse, options>("olmo", tiny, "byte_level", 1.0);
  return a;
}

}  // namespace hfx::models
