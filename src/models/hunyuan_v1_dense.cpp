// hunyuan_v1_dense: HunYuanDenseV1ForCausalLM — Llama with per-head RMSNorms query_layernorm /
// key_layernorm applied after rope, and attention_bias on q/k/v/o. The "ntk_alpha" rope (a dynamic rope
// with rope_parameters.alpha) is refused.
#include "blocks.h"

namespace hfx::models {
namespace {

ModelConfig parse(const json& j) {
  ConfigDefaults d;
  d.vocab_size = 290943;
  d.norm_eps = 1e-5;
  ModelConfig c = parse_common(j, "hunyuan_v1_dense", d);
  set_layer_types(c, [](int64_t) { return false; }, {"full_attention"});
  return c;
}

DecoderOptions options(const ModelConfig& c) {
  for (const char* block : {"rope_parameters", "rope_scaling"})
    if (jhas(c.raw, block) && c.raw[block].is_object() && jhas(c.raw[block], "alpha"))
      HFX_THROW("model",
                "expected config.json.{} without 'alpha' for hunyuan_v1_dense (hfx does not implement its "
                "ntk_alpha rope yet), got {}; see docs/adding-an-architecture.md",
                block, c.raw[block].dump());
  DecoderOptions o;
  o.act = jget<std::string>(c.raw, "hidden_act", "silu");
  o.qkv_bias = o.o_bias = jget<bool>(c.raw, "attention_bias", false);
  o.qk_norm = o.qk_norm_after_rope = true;
  o.q_norm = "query_layernorm";
  o.k_norm = "key_layernorm";
  o.rope = rope_config(c);
  return o;
}

json tiny(const std::string& preset) {
  if (preset != "tiny") unknown_preset("hunyuan_v1_dense", preset, "tiny");
  json j = tiny_decoder_config("HunYuanDenseV1ForCausalLM", "hunyuan_v1_dense");
  j["rms_norm_eps"] = 1e-5;
  j["attention_bias"] = true;
  j["pad_token_id"] = 0;
  return j;
}

}  // namespace

const Architecture& hunyuan_v1_dense_architecture() {
  static const Architecture a =
      decoder_architecture<parse, options>("hunyuan_v1_dense", tiny, "byte_level", 1.0);
  return a;
}

}  // namespace hfx::models
