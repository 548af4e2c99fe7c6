// qwen3_moe: Qwen3MoeForCausalLM — Qwen3 attention (q_norm / k_norm per head, attention_bias default off)
// with a sparse MoE MLP on the layers decoder_sparse_step / mlp_only_layers select: mlp.gate routes to
// num_experts_per_tok of num_experts experts mlp.experts.N.{gate,up,down}_proj of moe_intermediate_size
// (softmax, top-k, renormalized when norm_topk_prob); no shared expert.
#include "blocks.h"

namespace hfx::models {
namespace {

ModelConfig parse(const json& j) {
  ConfigDefaults d;
  d.vocab_size = 151936;
  d.hidden_size = 2048;
  d.intermediate_size = 6144;
  d.num_hidden_layers = 24;
  d.num_attention_heads = 32;
  d.max_position_embeddings = 32768;
  d.bos = std::nullopt;
  d.eos = std::nullopt;
  ModelConfig c = parse_common(j, "qwen3_moe", d);
  if (!jhas(j, "num_key_value_heads")) c.num_key_value_heads = 4;  // Qwen3MoeConfig's default
  bool use = jget<bool>(j, "use_sliding_window", false);
  c.sliding_window = use ? sliding_window_of(j, 4096) : 0;
  int64_t max_window_layers = jget<int64_t>(j, "max_window_layers", 28);
  set_layer_types(c, [&](int64_t i) { return c.sliding_window > 0 && i >= max_window_layers; });
  parse_moe(c, "num_experts", 128, 8);
  sparse_layers_by_step(c);
  return c;
}

DecoderOptions options(const ModelConfig& c) {
  DecoderOptions o;
  o.act = jget<std::string>(c.raw, "hidden_act", "silu");
  o.qkv_bias = o.o_bias = jget<bool>(c.raw, "attention_bias", false);
  o.qk_norm = true;
  o.rope = rope_config(c);
  o.moe = parse_moe(c, "num_experts", 128, 8);
  o.moe.intermediate = jget<int64_t>(c.raw, "moe_intermediate_size", 768);
  o.moe.norm_topk_prob = jget<bool>(c.raw, "norm_topk_prob", false);
  o.moe.sparse_layers = sparse_layers_by_step(c);
  return o;
}

json tiny(const std::string& preset) {
  if (preset != "tiny") unknown_preset("qwen3_moe", preset, "tiny");
  json j = tiny_decoder_config("Qwen3MoeForCausalLM", "qwen3_moe");
  j["hidden_act"] = "silu";
  j["attention_bias"] = false;
  j["use_sliding_window"] = false;
  j["sliding_window"] = nullptr;
  j["max_window_layers"] = 2;
  j["rope_theta"] = 1000000.0;
  j["num_experts"] = 8;
  j["num_experts_per_tok"] = 2;
  j["moe_intermediate_size"] = 32;
  j["norm_topk_prob"] = true;  // as the released Qwen3-MoE checkpoints set it
  j["decoder_sparse_step"] = 1;
  j["mlp_only_layers"] = json::array();
  return j;
}

}  // namespace

const Architecture& qwen3_moe_architecture() {
  static const Architecture a = decoder_architecture<parse, options>("qwen3_moe", tiny, "byte_level", 1.0,
                                                                     {R"(model\.rotary_emb\.inv_freq)"});
  return a;
}

}  // namespace hfx::models
