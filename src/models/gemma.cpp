// gemma: GemmaForCausalLM — embeddings × sqrt(hidden) in the model dtype, RMSNorm x·(1 + w), GeGLU with
// the tanh GELU (hidden_activation, else hidden_act), explicit head_dim (256 by default), tied lm_head.
#include "blocks.h"

namespace hfx::models {
namespace {

ModelConfig parse(const json& j) {
  ConfigDefaults d;
  d.vocab_size = 256000;
  d.hidden_size = 3072;
  d.intermediate_size = 24576;
  d.num_hidden_layers = 28;
  d.num_attention_heads = 16;
  d.head_dim = 256;
  d.max_position_embeddings = 8192;
  d.tie_word_embeddings = true;
  d.bos = 2;
  d.eos = 1;
  ModelConfig c = parse_common(j, "gemma", d);
  set_layer_types(c, [](int64_t) { return false; });
  return c;
}

DecoderOptions options(const ModelConfig& c) {
  DecoderOptions o;
  o.act = jget<std::string>(c.raw, "hidden_activation",
                            jget<std::string>(c.raw, "hidden_act", "gelu_pytorch_tanh"));
  // transformers' Gemma forced the tanh approximation for the legacy "gelu" value of hidden_act.
  if (!jhas(c.raw, "hidden_activation") && o.act == "gelu") o.act = "gelu_pytorch_tanh";
  o.qkv_bias = o.o_bias = jget<bool>(c.raw, "attention_bias", false);
  o.norm_offset = 1.0;
  o.scale_embeddings = true;
  o.rope = rope_config(c);
  return o;
}

json tiny(const std::string& preset) {
  if (preset != "tiny") unknown_preset("gemma", preset, "tiny");
  json j = tiny_decoder_config("GemmaForCausalLM", "gemma");
  j["hidden_act"] = "gelu_pytorch_tanh";
  j["hidden_activation"] = "gelu_pytorch_tanh";
  j["attention_bias"] = false;
  j["tie_word_embeddings"] = true;
  return j;
}

}  // namespace

const Architecture& gemma_architecture() {
  static const Architecture a = decoder_architecture<parse, options>("gemma", tiny, "sentencepiece", 0.0);
  return a;
}

}  // namespace hfx::models
