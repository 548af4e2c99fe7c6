// nemotron: NemotronForCausalLM — LayerNorm1P norms (LayerNorm with bias, scale weight + 1; norm_epsilon),
// a plain MLP down_proj(relu²(up_proj(x))), rotary on the first partial_rotary_factor (default 0.5) of each
// head; attention_bias on q/k/v/o, mlp_bias on the MLP.
#include "blocks.h"

namespace hfx::models {
namespace {

ModelConfig parse(const json& j) {
  ConfigDefaults d;
  d.vocab_size = 256000;
  d.hidden_size = 6144;
  d.intermediate_size = 24576;
  d.num_attention_heads = 48;
  d.max_position_embeddings = 4096;
  d.norm_eps = 1e-5;
  d.norm_eps_key = "norm_epsilon";
  d.bos = 2;
  d.eos = 3;
  ModelConfig c = parse_common(j, "nemotron", d);
  set_layer_types(c, [](int64_t) { return false; }, {"full_attention"});
  return c;
}

DecoderOptions options(const ModelConfig& c) {
  DecoderOptions o;
  o.act = jget<std::string>(c.raw, "hidden_act", "relu2");
  o.norm = NormKind::layer_1p;
  o.qkv_bias = o.o_bias = jget<bool>(c.raw, "attention_bias", false);
  o.mlp_bias = jget<bool>(c.raw, "mlp_bias", false);
  o.gated_mlp = false;
  o.rope = rope_config_partial(c, 0.5);
  return o;
}

json tiny(const std::string& preset) {
  if (preset != "tiny") unknown_preset("nemotron", preset, "tiny");
  json j = tiny_decoder_config("NemotronForCausalLM", "nemotron");
  j.erase("rms_norm_eps");
  j["norm_epsilon"] = 1e-5;
  j["hidden_act"] = "relu2";
  j["partial_rotary_factor"] = 0.5;
  j["bos_token_id"] = 1;
  j["eos_token_id"] = 2;
  return j;
}

}  // namespace

const Architecture& nemotron_architecture() {
  static const Architecture a = decoder_architecture<parse, options>("nemotron", tiny, "sentencepiece", 0.0);
  return a;
}

}  // namespace hfx::models
