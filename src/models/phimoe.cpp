// phimoe: PhimoeForCausalLM (Phi-3.5-MoE) — Mixtral's layout (block_sparse_moe.gate, experts.N.w1/w3/w2)
// with LayerNorms that have biases (input_layernorm, post_attention_layernorm, model.norm; eps
// rms_norm_eps), optional attention and lm_head biases, and sparsemixer routing: in eval, always the top-2
// experts, each weighted by a softmax over the logits within 2·router_jitter_noise of it (MoeOptions::
// sparsemixer). num_experts_per_tok is not read by that routing (transformers' sparsemixer picks two).
#include "blocks.h"

namespace hfx::models {
namespace {

ModelConfig parse(const json& j) {
  ConfigDefaults d;
  d.vocab_size = 32064;
  d.intermediate_size = 6400;
  d.num_attention_heads = 32;
  d.max_position_embeddings = 4096 * 32;
  d.norm_eps = 1e-5;
  d.rope_theta = 1e6;
  ModelConfig c = parse_common(j, "phimoe", d);
  c.sliding_window = sliding_window_of(j, 0);
  set_layer_types(c, [&](int64_t) { return c.sliding_window > 0; });
  MoeOptions m = parse_moe(c, "num_local_experts", 16, 2);
  if (m.num_experts < 2)
    HFX_THROW("model", "expected num_local_experts >= 2 for phimoe (sparsemixer routes to two), got {}",
              m.num_experts);
  if (jget<double>(j, "router_jitter_noise", 0.01) < 0)
    HFX_THROW("model", "expected router_jitter_noise >= 0 for phimoe, got {}",
              j["router_jitter_noise"].dump());
  return c;
}

DecoderOptions options(const ModelConfig& c) {
  DecoderOptions o;
  o.act = jget<std::string>(c.raw, "hidden_act", "silu");
  o.norm = NormKind::layer;
  o.qkv_bias = o.o_bias = jget<bool>(c.raw, "attention_bias", false);
  o.lm_head_bias = jget<bool>(c.raw, "lm_head_bias", false);
  o.rope = rope_config(c);
  o.moe = parse_moe(c, "num_local_experts", 16, 2);
  o.moe.top_k = 2;
  o.moe.intermediate = c.intermediate_size;
  o.moe.block = "block_sparse_moe";
  o.moe.mixtral_names = true;
  o.moe.sparsemixer = true;
  o.moe.jitter_eps = jget<double>(c.raw, "router_jitter_noise", 0.01);
  return o;
}

json tiny(const std::string& preset) {
  if (preset != "tiny") unknown_preset("phimoe", preset, "tiny");
  json j = tiny_decoder_config("PhimoeForCausalLM", "phimoe");
  j["hidden_act"] = "silu";
  j["sliding_window"] = nullptr;
  j["num_local_experts"] = 4;
  j["num_experts_per_tok"] = 2;
  j["router_jitter_noise"] = 0.01;
  j["attention_bias"] = true;
  j["lm_head_bias"] = true;
  j["rms_norm_eps"] = 1e-5;
  return j;
}

}  // namespace

const Architecture& phimoe_architecture() {
  static const Architecture a = decoder_architecture<parse, options>("phimoe", tiny, "sentencepiece", 1.0);
  return a;
}

}  // namespace hfx::models
