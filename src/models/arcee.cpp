// arcee: ArceeForCausalLM (AFM) — Llama with a plain MLP down_proj(relu²(up_proj(x))); attention_bias on
// q/k/v/o, mlp_bias on the MLP.
#include "blocks.h"

namespace hfx::models {
namespace {

ModelConfig parse(const json& j) {
  ConfigDefaults d;
  d.hidden_size = 2560;
  d.intermediate_size = 18432;
  d.max_position_embeddings = 4096;
  d.norm_eps = 1e-5;
  d.bos = 128000;
  d.eos = 128001;
  ModelConfig c = parse_common(j, "arcee", d);
  set_layer_types(c, [](int64_t) { return false; }, {"full_attention"});
  return c;
}

DecoderOptions options(const ModelConfig& c) {
  DecoderOptions o;
  o.act = jget<std::string>(c.raw, "hidden_act", "relu2");
  o.gated_mlp = false;
  o.qkv_bias = o.o_bias = jget<bool>(c.raw, "attention_bias", false);
  o.mlp_bias = jget<bool>(c.raw, "mlp_bias", false);
  o.rope = rope_config(c);
  return o;
}

json tiny(const std::string& preset) {
  if (preset != "tiny") unknown_preset("arcee", preset, "tiny");
  json j = tiny_decoder_config("ArceeForCausalLM", "arcee");
  j["hidden_act"] = "relu2";
  j["rms_norm_eps"] = 1e-5;
  j["bos_token_id"] = 1;
  j["eos_token_id"] = 2;
  return j;
}

}  // namespace

const Architecture& arcee_architecture() {
  static const Architecture a = decoder_architecture<parse, options>("arcee", tiny, "byte_level", 1.0);
  return a;
}

}  // namespace hfx::models
