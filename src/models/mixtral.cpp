// mixtral: MixtralForCausalLM — Mistral attention (sliding_window default null) with a sparse MoE MLP on
// every layer: block_sparse_moe.gate routes each token to num_experts_per_tok of num_local_experts experts
// (softmax, top-k, always renormalized to sum 1); expert N is block_sparse_moe.experts.N.{w1 (gate),
// w3 (up), w2 (down)}. router_jitter_noise only applies in training.
#include "blocks.h"

namespace hfx::models {
namespace {

ModelConfig parse(const json& j) {
  ConfigDefaults d;
  d.intermediate_size = 14336;
  d.max_position_embeddings = 4096 * 32;
  d.norm_eps = 1e-5;
  d.rope_theta = 1e6;
  ModelConfig c = parse_common(j, "mixtral", d);
  c.sliding_window = sliding_window_of(j, 0);
  set_layer_types(c, [&](int64_t) { return c.sliding_window > 0; });
  parse_moe(c, "num_local_experts", 8, 2);
  return c;
}

DecoderOptions options(const ModelConfig& c) {
  DecoderOptions o;
  o.act = jget<std::string>(c.raw, "hidden_act", "silu");
  o.rope = rope_config(c);
  o.moe = parse_moe(c, "num_local_experts", 8, 2);
  o.moe.intermediate = c.intermediate_size;
  o.moe.norm_topk_prob = true;
  o.moe.block = "block_sparse_moe";
  o.moe.mixtral_names = true;
  return o;
}

json tiny(const std::string& preset) {
  if (preset != "tiny") unknown_preset("mixtral", preset, "tiny");
  json j = tiny_decoder_config("MixtralForCausalLM", "mixtral");
  j["hidden_act"] = "silu";
  j["sliding_window"] = nullptr;
  j["num_local_experts"] = 4;
  j["num_experts_per_tok"] = 2;
  j["router_jitter_noise"] = 0.0;
  j["rope_theta"] = 1000000.0;
  j["rms_norm_eps"] = 1e-5;
  return j;
}

}  // namespace

const Architecture& mixtral_architecture() {
  static const Architecture a = decoder_architecture<parse, options>("mixtral", tiny, "sentencepiece", 1.0);
  return a;
}

}  // namespace hfx::models
