// olmoe: OlmoeForCausalLM — Llama attention with RMSNorm on the whole q and k projections (q_norm over
// hidden_size, k_norm over kv_heads·head_dim, before the head split), optional clip_qkv clamp, and a
// sparse MoE MLP on every layer: mlp.gate routes to num_experts_per_tok of num_experts experts
// mlp.experts.N.{gate,up,down}_proj of intermediate_size (softmax, top-k, renormalized when norm_topk_prob).
#include "blocks.h"

namespace hfx::models {
namespace {

ModelConfig parse(const json& j) {
  ConfigDefaults d;
  d.vocab_size = 50304;
  d.hidden_size = 2048;
  d.intermediate_size = 2048;
  d.num_hidden_layers = 16;
  d.num_attention_heads = 16;
  d.max_position_embeddings = 4096;
  d.norm_eps = 1e-5;
  d.bos = std::nullopt;
  d.eos = 50279;
  ModelConfig c = parse_common(j, "olmoe", d);
  c.head_dim = c.hidden_size / c.num_attention_heads;  // OlmoeAttention ignores any head_dim field
  if (!jhas(j, "pad_token_id")) c.pad_token_id = 1;
  set_layer_types(c, [](int64_t) { return false; }, {"full_attention"});
  parse_moe(c, "num_experts", 64, 8);
  return c;
}

DecoderOptions options(const ModelConfig& c) {
  DecoderOptions o;
  o.act = jget<std::string>(c.raw, "hidden_act", "silu");
  o.qkv_bias = o.o_bias = jget<bool>(c.raw, "attention_bias", false);
  o.qk_norm_flat = true;
  o.clip_qkv = jget<double>(c.raw, "clip_qkv", 0.0);
  o.rope = rope_config(c);
  o.moe = parse_moe(c, "num_experts", 64, 8);
  o.moe.intermediate = c.intermediate_size;
  o.moe.norm_topk_prob = jget<bool>(c.raw, "norm_topk_prob", false);
  return o;
}

json tiny(const std::string& preset) {
  if (preset != "tiny") unknown_preset("olmoe", preset, "tiny");
  json j = tiny_decoder_config("OlmoeForCausalLM", "olmoe");
  j.erase("head_dim");
  j["hidden_act"] = "silu";
  j["attention_bias"] = false;
  j["clip_qkv"] = nullptr;
  j["rms_norm_eps"] = 1e-5;
  j["intermediate_size"] = 32;
  j["num_experts"] = 8;
  j["num_experts_per_tok"] = 2;
  j["norm_topk_prob"] = false;
  return j;
}

}  // namespace

const Architecture& olmoe_architecture() {
  static const Architecture a = decoder_architecture<parse, options>("olmoe", tiny, "byte_level", 1.0);
  return a;
}

}  // namespace hfx::models
