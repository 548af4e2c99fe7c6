// hunyuan_v1_dense: HunYuanDenseV1ForCausalLM — Llama with per-head RMSNorms query_layernorm /
// key_layernorm applied after rope, and attention_bias on q/k/v/o; hunyuan_v1_moe (HunYuanMoEV1ForCausalLM)
// the same attention with a sparse MLP and an ungated shared one on every layer. The "ntk_alpha" rope (a
// dynamic rope with rope_parameters.alpha) is refused.
#include "blocks.h"

namespace hfx::models {
namespace {

ModelConfig parse_as(const json& j, const char* model_type) {
  ConfigDefaults d;
  d.vocab_size = 290943;
  d.norm_eps = 1e-5;
  ModelConfig c = parse_common(j, model_type, d);
  set_layer_types(c, [](int64_t) { return false; }, {"full_attention"});
  return c;
}
ModelConfig parse(const json& j) { return parse_as(j, "hunyuan_v1_dense"); }

// HunYuanMoEV1Config: num_experts and moe_topk, each an int or a per-layer list (refused).
ModelConfig parse_moe_config(const json& j) {
  for (const char* key : {"num_experts", "moe_topk"})
    if (jhas(j, key) && !j[key].is_number_integer())
      HFX_THROW(
          "model",
          "expected config.json.{} to be one integer for hunyuan_v1_moe (hfx does not implement per-layer "
          "expert counts yet), got {}; see docs/adding-an-architecture.md",
          key, j[key].dump());
  json k = j;
  k["num_experts_per_tok"] = jget<int64_t>(j, "moe_topk", 1);
  ModelConfig c = parse_as(k, "hunyuan_v1_moe");
  parse_moe(c, "num_experts", 1, 1);
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

// Every layer's mlp is the sparse block: mlp.gate.wg routes (softmax, top moe_topk, renormalized) over
// experts of intermediate_size, and mlp.shared_mlp (ungated, intermediate_size) adds to their output.
DecoderOptions options_moe(const ModelConfig& c) {
  DecoderOptions o = options(c);
  o.moe = parse_moe(c, "num_experts", 1, 1);
  o.moe.intermediate = c.intermediate_size;
  o.moe.norm_topk_prob = true;
  o.moe.router = "gate.wg";
  o.moe.shared_intermediate = c.intermediate_size;
  o.moe.shared_name = "shared_mlp";
  o.moe.shared_sigmoid_gate = false;
  return o;
}

json tiny_as(const std::string& preset, const char* cls, const char* model_type) {
  if (preset != "tiny") unknown_preset(model_type, preset, "tiny");
  json j = tiny_decoder_config(cls, model_type);
  j["rms_norm_eps"] = 1e-5;
  j["attention_bias"] = true;
  j["pad_token_id"] = 0;
  return j;
}

json tiny(const std::string& preset) {
  return tiny_as(preset, "HunYuanDenseV1ForCausalLM", "hunyuan_v1_dense");
}
json tiny_moe(const std::string& preset) {
  json j = tiny_as(preset, "HunYuanMoEV1ForCausalLM", "hunyuan_v1_moe");
  j["intermediate_size"] = 32;
  j["num_experts"] = 4;
  j["moe_topk"] = 2;
  return j;
}

}  // namespace

const Architecture& hunyuan_v1_dense_architecture() {
  static const Architecture a =
      decoder_architecture<parse, options>("hunyuan_v1_dense", tiny, "byte_level", 1.0);
  return a;
}

const Architecture& hunyuan_v1_moe_architecture() {
  static const Architecture a =
      decoder_architecture<parse_moe_config, options_moe>("hunyuan_v1_moe", tiny_moe, "byte_level", 1.0);
  return a;
}

}  // namespace hfx::models
