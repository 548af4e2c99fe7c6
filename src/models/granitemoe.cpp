// granitemoe: GraniteMoeForCausalLM — Llama attention scaled by attention_multiplier (not head_dim^-0.5),
// embeddings × embedding_multiplier, each residual branch × residual_multiplier, logits / logits_scaling,
// and a sparse MoE on every layer: block_sparse_moe.router.layer scores num_local_experts experts, the
// top num_experts_per_tok logits are softmaxed (= softmax then renormalized over the top-k), and expert e
// is row e of the stacked block_sparse_moe.input_linear [E, 2I, H] (gate | up) / output_linear [E, H, I].
#include "blocks.h"

namespace hfx::models {
namespace {

ModelConfig parse(const json& j) {
  ConfigDefaults d;
  d.intermediate_size = 1024;
  d.max_position_embeddings = 2048;
  ModelConfig c = parse_common(j, "granitemoe", d);
  set_layer_types(c, [](int64_t) { return false; }, {"full_attention"});
  parse_moe(c, "num_local_experts", 8, 2);
  return c;
}

DecoderOptions options(const ModelConfig& c) {
  DecoderOptions o;
  o.act = jget<std::string>(c.raw, "hidden_act", "silu");
  o.qkv_bias = o.o_bias = jget<bool>(c.raw, "attention_bias", false);
  o.attn_scale = jget<double>(c.raw, "attention_multiplier", 1.0);
  o.embedding_multiplier = jget<double>(c.raw, "embedding_multiplier", 1.0);
  o.residual_multiplier = jget<double>(c.raw, "residual_multiplier", 1.0);
  o.logits_scaling = jget<double>(c.raw, "logits_scaling", 1.0);
  o.rope = rope_config(c);
  o.moe = parse_moe(c, "num_local_experts", 8, 2);
  o.moe.intermediate = c.intermediate_size;
  o.moe.norm_topk_prob = true;
  o.moe.block = "block_sparse_moe";
  o.moe.stacked = true;
  o.moe.router = "router.layer";
  return o;
}

json tiny(const std::string& preset) {
  if (preset != "tiny") unknown_preset("granitemoe", preset, "tiny");
  json j = tiny_decoder_config("GraniteMoeForCausalLM", "granitemoe");
  j.erase("head_dim");
  j["hidden_act"] = "silu";
  j["attention_bias"] = false;
  j["intermediate_size"] = 32;
  j["num_local_experts"] = 4;
  j["num_experts_per_tok"] = 2;
  j["attention_multiplier"] = 0.2;
  j["embedding_multiplier"] = 2.0;
  j["residual_multiplier"] = 0.5;
  j["logits_scaling"] = 4.0;
  return j;
}

}  // namespace

const Architecture& granitemoe_architecture() {
  static const Architecture a = decoder_architecture<parse, options>("granitemoe", tiny, "byte_level", 1.0);
  return a;
}

}  // namespace hfx::models
