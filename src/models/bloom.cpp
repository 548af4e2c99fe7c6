// bloom: BloomForCausalLM — the shared decoder under BLOOM's names (transformer.word_embeddings,
// transformer.word_embeddings_layernorm, transformer.h.N.input_layernorm, self_attention.query_key_value
// (per head [q_h; k_h; v_h]) / dense, post_attention_layernorm, mlp.dense_h_to_4h / dense_4h_to_h,
// transformer.ln_f, lm_head tied): LayerNorms with bias, biases everywhere, tanh gelu, no rotary — ALiBi
// slopes on the attention scores instead. Refused by name: apply_residual_connection_post_layernorm.
#include "blocks.h"

namespace hfx::models {
namespace {

ModelConfig parse(const json& j) {
  ConfigDefaults d;
  d.vocab_size = 250880;
  d.hidden_size = 64;
  d.num_hidden_layers = 2;
  d.num_attention_heads = 8;
  d.norm_eps = 1e-5;
  d.norm_eps_key = "layer_norm_epsilon";
  d.tie_word_embeddings = true;
  d.bos = 1;
  d.eos = 2;
  json k = j;
  if (jhas(j, "n_embed")) k["hidden_size"] = j["n_embed"];
  if (jhas(j, "n_layer")) k["num_hidden_layers"] = j["n_layer"];
  if (jhas(j, "n_head")) k["num_attention_heads"] = j["n_head"];
  k["intermediate_size"] = 4 * jget<int64_t>(k, "hidden_size", d.hidden_size);
  for (const char* x : {"num_key_value_heads", "head_dim"}) k.erase(x);
  ModelConfig c = parse_common(k, "bloom", d);
  set_layer_types(c, [](int64_t) { return false; }, {"full_attention"});
  return c;
}

DecoderOptions options(const ModelConfig& c) {
  refuse_knob(c, "apply_residual_connection_post_layernorm", false,
              "BLOOM's residual taken after the layer norm");
  DecoderOptions o;
  o.names.model = "transformer";
  o.names.embed = "word_embeddings";
  o.names.layers = "h";
  o.names.attn = "self_attention";
  o.names.qkv = "query_key_value";
  // bloom_gelu_forward: the tanh approximation; "gelu_ggml" (not BloomConfig's key) is the GGUF read-back's,
  // the model llama.cpp computes (its tanh GELU from ggml's f16 table).
  o.act = jget<std::string>(c.raw, "hidden_act", "") == "gelu_ggml" ? "gelu_ggml" : "gelu_pytorch_tanh";
  o.norm = NormKind::layer;
  o.embed_norm = "word_embeddings_layernorm";
  o.qkv = QkvLayout::per_head;
  o.qkv_bias = o.o_bias = o.mlp_bias = true;
  o.o_proj = "dense";
  o.gated_mlp = false;
  o.mlp_in = "dense_h_to_4h";
  o.mlp_out = "dense_4h_to_h";
  o.final_norm = "ln_f";
  o.rotary = false;
  o.alibi_slopes = alibi_slopes_bloom(c.num_attention_heads);
  return o;
}

json tiny(const std::string& preset) {
  if (preset != "tiny") unknown_preset("bloom", preset, "tiny");
  json j = tiny_decoder_config("BloomForCausalLM", "bloom");
  for (const char* x : {"rms_norm_eps", "head_dim", "num_key_value_heads", "intermediate_size", "rope_theta",
                        "max_position_embeddings"})
    j.erase(x);
  // BloomConfig's own keys (its attribute_map), as save_pretrained writes them and Transformers.js reads
  // them.
  j["n_head"] = j["num_attention_heads"];
  j["n_layer"] = j["num_hidden_layers"];
  j.erase("num_attention_heads");
  j.erase("num_hidden_layers");
  j["layer_norm_epsilon"] = 1e-5;
  j["tie_word_embeddings"] = true;
  return j;
}

}  // namespace

const Architecture& bloom_architecture() {
  static const Architecture a = decoder_architecture<parse, options>("bloom", tiny, "byte_level", 1.0, {});
  return a;
}

}  // namespace hfx::models
