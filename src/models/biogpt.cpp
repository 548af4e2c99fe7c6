// biogpt: BioGptForCausalLM — OPT's layout under BioGPT's names (biogpt.embed_tokens scaled by
// sqrt(hidden_size) with scale_embedding, biogpt.embed_positions (row position + 2), pre-norm
// self_attn_layer_norm / final_layer_norm, q/k/v/out_proj and a plain gelu MLP fc1 / fc2 with biases,
// biogpt.layer_norm, output_projection tied to the embeddings). Its nn.LayerNorms use torch's default eps
// (1e-5): layer_norm_eps in the config is not read by the modules, so hfx does not read it either.
#include <cmath>

#include "blocks.h"

namespace hfx::models {
namespace {

ModelConfig parse(const json& j) {
  ConfigDefaults d;
  d.vocab_size = 42384;
  d.hidden_size = 1024;
  d.intermediate_size = 4096;
  d.num_hidden_layers = 24;
  d.num_attention_heads = 16;
  d.max_position_embeddings = 1024;
  d.norm_eps = 1e-5;  // nn.LayerNorm's default (BioGptConfig.layer_norm_eps is unused by the modules)
  d.norm_eps_key = "layer_norm_eps_unused";
  d.tie_word_embeddings = true;
  d.bos = 0;
  d.eos = 2;
  json k = j;
  for (const char* x : {"num_key_value_heads", "head_dim", "rope_theta", "rope_parameters"}) k.erase(x);
  ModelConfig c = parse_common(k, "biogpt", d);
  set_layer_types(c, [](int64_t) { return false; }, {"full_attention"});
  return c;
}

DecoderOptions options(const ModelConfig& c) {
  DecoderOptions o;
  o.names.model = "biogpt";
  o.names.mlp = "";
  o.names.lm_head = "output_projection";
  o.act = jget<std::string>(c.raw, "hidden_act", "gelu");
  o.norm = NormKind::layer;
  o.norms.input = "self_attn_layer_norm";
  o.norms.pre_mlp = "final_layer_norm";
  o.final_norm = "layer_norm";
  o.qkv_bias = o.o_bias = o.mlp_bias = true;
  o.o_proj = "out_proj";
  o.gated_mlp = false;
  o.mlp_in = "fc1";
  o.mlp_out = "fc2";
  o.rotary = false;
  o.position_embedding = "embed_positions";
  o.position_offset = 2;
  if (jget<bool>(c.raw, "scale_embedding", true))
    o.embedding_multiplier = std::sqrt(static_cast<double>(c.hidden_size));
  return o;
}

json tiny(const std::string& preset) {
  if (preset != "tiny") unknown_preset("biogpt", preset, "tiny");
  json j = tiny_decoder_config("BioGptForCausalLM", "biogpt");
  for (const char* x : {"rms_norm_eps", "head_dim", "num_key_value_heads", "rope_theta"}) j.erase(x);
  j["max_position_embeddings"] = 1024;
  j["hidden_act"] = "gelu";
  j["scale_embedding"] = true;
  j["tie_word_embeddings"] = true;
  j["pad_token_id"] = 1;
  j["bos_token_id"] = 0;
  j["eos_token_id"] = 2;
  return j;
}

}  // namespace

const Architecture& biogpt_architecture() {
  static const Architecture a = decoder_architecture<parse, options>("biogpt", tiny, "byte_level", 1.0);
  return a;
}

}  // namespace hfx::models
