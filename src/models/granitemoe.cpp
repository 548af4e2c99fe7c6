// granitemoe: GraniteMoeForCausalLM (and granitemoeshared: with the layer's shared_mlp) — Llama attention
// scaled by attention_multiplier (not head_dim^-0.5), embeddings × embedding_multiplier, each residual branch
// × residual_multiplier, logits / logits_scaling, and a sparse MoE on every layer:
// block_sparse_moe.router.layer scores num_local_experts experts, the top num_experts_per_tok logits are
// softmaxed (= softmax then renormalized over the top-k), and expert e is row e of the stacked
// block_sparse_moe.input_linear [E, 2I, H] (gate | up) / output_linear [E, H, I].
#include "blocks.h"

namespace hfx::models {
namespace {

ModelConfig parse_as(const json& j, const char* model_type) {
  ConfigDefaults d;
  d.intermediate_size = 1024;
  d.max_position_embeddings = 2048;
  ModelConfig c = parse_common(j, model_type, d);
  set_layer_types(c, [](int64_t) { return false; }, {"full_attention"});
  parse_moe(c, "num_local_experts", 8, 2);
  return c;
}

ModelConfig parse(const json& j) { return parse_as(j, "granitemoe"); }
ModelConfig parse_shared(const json& j) { return parse_as(j, "granitemoeshared"); }

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

// GraniteMoeShared: the layer's shared_mlp (input_linear [2S, H] gate | up, output_linear [H, S]) beside the
// sparse block, its output added to the experts' before × residual_multiplier.
DecoderOptions options_shared(const ModelConfig& c) {
  DecoderOptions o = options(c);
  o.moe.shared_intermediate = jget<int64_t>(c.raw, "shared_intermediate_size", 0);
  if (o.moe.shared_intermediate < 0)
    HFX_THROW("model", "expected config.json.shared_intermediate_size >= 0, got {}",
              o.moe.shared_intermediate);
  o.moe.shared_name = "shared_mlp";
  o.moe.shared_sigmoid_gate = false;
  o.moe.shared_stacked = o.moe.shared_beside = true;
  return o;
}

json tiny_as(const std::string& preset, const char* cls, const char* model_type) {
  if (preset != "tiny") unknown_preset(model_type, preset, "tiny");
  json j = tiny_decoder_config(cls, model_type);
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

json tiny(const std::string& preset) { return tiny_as(preset, "GraniteMoeForCausalLM", "granitemoe"); }
json tiny_shared(const std::string& preset) {
  json j = tiny_as(preset, "GraniteMoeSharedForCausalLM", "granitemoeshared");
  j["shared_intermediate_size"] = 48;
  return j;
}

}  // namespace

const Architecture& granitemoeshared_architecture() {
  static const Architecture a =
      decoder_architecture<parse_shared, options_shared>("granitemoeshared", tiny_shared, "byte_level", 1.0);
  return a;
}

const Architecture& granitemoe_architecture() {
  static const Architecture a = decoder_architecture<parse, options>("granitemoe", tiny, "byte_level", 1.0);
  return a;
}

}  // namespace hfx::models
