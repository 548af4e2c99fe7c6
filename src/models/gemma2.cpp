// gemma2: Gemma2ForCausalLM — Gemma plus attention-logit softcapping (sdpa softcap), final-logit
// softcapping, scale query_pre_attn_scalar^-0.5, sliding and global layers alternating (layer_types, else
// sliding_window_pattern, default 2: layer i slides when (i + 1) % pattern != 0), and sandwich norms
// (post_attention, pre_feedforward, post_feedforward).
#include <cmath>

#include "blocks.h"

namespace hfx::models {
namespace {

ModelConfig parse(const json& j) {
  ConfigDefaults d;
  d.vocab_size = 256000;
  d.hidden_size = 2304;
  d.intermediate_size = 9216;
  d.num_hidden_layers = 26;
  d.num_attention_heads = 8;
  d.head_dim = 256;
  d.max_position_embeddings = 8192;
  d.tie_word_embeddings = true;
  d.bos = 2;
  d.eos = 1;
  ModelConfig c = parse_common(j, "gemma2", d);
  c.sliding_window = sliding_window_of(j, 4096);
  int64_t pattern = jget<int64_t>(j, "sliding_window_pattern", 2);
  set_layer_types(c, [&](int64_t i) { return pattern > 0 && (i + 1) % pattern != 0; });
  return c;
}

DecoderOptions options(const ModelConfig& c) {
  DecoderOptions o;
  o.act = jget<std::string>(c.raw, "hidden_activation",
                            jget<std::string>(c.raw, "hidden_act", "gelu_pytorch_tanh"));
  o.qkv_bias = o.o_bias = jget<bool>(c.raw, "attention_bias", false);
  o.norm_offset = 1.0;
  o.scale_embeddings = true;
  o.norms = sandwich_norms();
  o.attn_softcap = softcap_of(c.raw, "attn_logit_softcapping", 50.0);
  o.final_softcap = softcap_of(c.raw, "final_logit_softcapping", 30.0);
  o.attn_scale = 1.0 / std::sqrt(jget<double>(c.raw, "query_pre_attn_scalar", 256.0));
  o.rope = rope_config(c);
  return o;
}

json tiny(const std::string& preset) {
  if (preset != "tiny") unknown_preset("gemma2", preset, "tiny");
  json j = tiny_decoder_config("Gemma2ForCausalLM", "gemma2");
  j["hidden_act"] = "gelu_pytorch_tanh";
  j["hidden_activation"] = "gelu_pytorch_tanh";
  j["attention_bias"] = false;
  j["tie_word_embeddings"] = true;
  j["query_pre_attn_scalar"] = 16;
  j["sliding_window"] = 8;  // small so that tests cross it
  j["attn_logit_softcapping"] = 50.0;
  j["final_logit_softcapping"] = 30.0;
  j["num_hidden_layers"] = 4;
  return j;
}

}  // namespace

const Architecture& gemma2_architecture() {
  static const Architecture a = decoder_architecture<parse, options>("gemma2", tiny, "sentencepiece", 0.0);
  return a;
}

}  // namespace hfx::models
