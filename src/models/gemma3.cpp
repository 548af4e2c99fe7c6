// gemma3_text: Gemma3ForCausalLM (transformers 4.51 layout; google/gemma-3-1b-it) — Gemma 2's decoder
// (norms x·(1 + w), sandwich norms, query_pre_attn_scalar, optional softcaps) plus q_norm / k_norm over
// head_dim, local and global layers (layer_types, else sliding_window_pattern, default 6: layer i slides
// when (i + 1) % pattern != 0) with their own rotary embeddings: global layers use rope_theta and
// rope_scaling, local layers rope_local_base_freq with the default rope (transformers 5 writes both as
// rope_parameters.{full,sliding}_attention). The embedding scale sqrt(hidden) lives in embed_tokens
// (Gemma3TextScaledWordEmbedding), so inputs_embeds given by a caller (gemma3's image-text model) are not
// scaled again.
#include "blocks.h"

#include <cmath>

namespace hfx::models {
namespace {

ModelConfig parse(const json& j) {
  ConfigDefaults d;  // Gemma3TextConfig's defaults
  d.vocab_size = 262208;
  d.hidden_size = 2304;
  d.intermediate_size = 9216;
  d.num_hidden_layers = 26;
  d.num_attention_heads = 8;
  d.head_dim = 256;
  d.max_position_embeddings = 131072;
  d.rope_theta = 1000000.0;
  d.tie_word_embeddings = true;
  d.bos = 2;
  d.eos = 1;
  ModelConfig c = parse_common(j, "gemma3_text", d);
  if (!jhas(j, "num_key_value_heads")) c.num_key_value_heads = 4;  // Gemma3TextConfig's default, not heads
  HFX_CHECK(c.num_attention_heads % c.num_key_value_heads == 0, "model",
            "expected num_attention_heads divisible by num_key_value_heads, got {} and {}",
            c.num_attention_heads, c.num_key_value_heads);
  c.sliding_window = sliding_window_of(j, 4096);
  const int64_t pattern = jget<int64_t>(j, "sliding_window_pattern", 6);
  set_layer_types(c, [&](int64_t i) { return pattern > 0 && (i + 1) % pattern != 0; });
  return c;
}

// The local layers' rope: transformers 4 copies the config with rope_theta = rope_local_base_freq and the
// default rope type; transformers 5 writes rope_parameters.sliding_attention.
RopeConfig local_rope(const ModelConfig& c) {
  ModelConfig local = c;
  json& raw = local.raw;
  if (jhas(raw, "rope_parameters") && raw["rope_parameters"].is_object() &&
      raw["rope_parameters"].contains("sliding_attention")) {
    raw["rope_parameters"] = raw["rope_parameters"]["sliding_attention"];
  } else {
    raw.erase("rope_parameters");
    raw["rope_scaling"] = json{{"rope_type", "default"}};
    raw["rope_theta"] = jget<double>(c.raw, "rope_local_base_freq", 10000.0);
  }
  local.rope_theta = jget<double>(raw, "rope_theta", 10000.0);
  return rope_config(local);
}

DecoderOptions options(const ModelConfig& c) {
  DecoderOptions o;
  o.act = jget<std::string>(c.raw, "hidden_activation",
                            jget<std::string>(c.raw, "hidden_act", "gelu_pytorch_tanh"));
  o.qkv_bias = o.o_bias = jget<bool>(c.raw, "attention_bias", false);
  o.norm_offset = 1.0;
  o.scale_embeddings = true;
  o.scale_in_embedding = true;
  o.norms = sandwich_norms();
  o.qk_norm = true;
  o.attn_softcap = jget<double>(c.raw, "attn_logit_softcapping", 0.0);
  o.final_softcap = jget<double>(c.raw, "final_logit_softcapping", 0.0);
  o.attn_scale = 1.0 / std::sqrt(jget<double>(c.raw, "query_pre_attn_scalar", 256.0));
  o.rope = rope_config(c);
  o.rope_local = local_rope(c);
  return o;
}

// Local and global layers alternate (pattern 2) over 4 layers, the window (8) is crossed by the tests'
// prompts, and the global layers' linear rope scaling (factor 8, as gemma-3-4b) differs from the local rope.
json tiny(const std::string& preset) {
  if (preset != "tiny") unknown_preset("gemma3_text", preset, "tiny");
  json j = tiny_decoder_config("Gemma3ForCausalLM", "gemma3_text");
  j["hidden_activation"] = "gelu_pytorch_tanh";
  j["attention_bias"] = false;
  j["tie_word_embeddings"] = true;
  j["query_pre_attn_scalar"] = 16;
  j["sliding_window"] = 8;
  j["sliding_window_pattern"] = 2;
  j["rope_theta"] = 1000000.0;
  j["rope_local_base_freq"] = 10000.0;
  j["rope_scaling"] = json{{"rope_type", "linear"}, {"factor", 8.0}};
  j["final_logit_softcapping"] = nullptr;
  j["attn_logit_softcapping"] = nullptr;
  j["num_hidden_layers"] = 4;
  return j;
}

}  // namespace

const Architecture& gemma3_text_architecture() {
  static const Architecture a =
      decoder_architecture<parse, options>("gemma3_text", tiny, "sentencepiece", 0.0);
  return a;
}

}  // namespace hfx::models
