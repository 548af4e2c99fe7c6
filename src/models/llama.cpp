// llama: LlamaForCausalLM. Config as LlamaConfig reads it (attention_bias covers q/k/v/o, mlp_bias the
// MLP, explicit head_dim, rope_scaling linear/dynamic/llama3/yarn); presets with real shapes for benches.
#include "blocks.h"

namespace hfx::models {
namespace {

ModelConfig parse(const json& j) {
  ConfigDefaults d;
  d.intermediate_size = 11008;
  ModelConfig c = parse_common(j, "llama", d);
  set_layer_types(c, [](int64_t) { return false; });
  return c;
}

DecoderOptions options(const ModelConfig& c) {
  DecoderOptions o;
  o.act = jget<std::string>(c.raw, "hidden_act", "silu");
  o.qkv_bias = o.o_bias = jget<bool>(c.raw, "attention_bias", false);
  o.mlp_bias = jget<bool>(c.raw, "mlp_bias", false);
  o.rope = rope_config(c);
  return o;
}

json tiny(const std::string& preset) {
  json j = tiny_decoder_config("LlamaForCausalLM", "llama");
  j["hidden_act"] = "silu";
  j["attention_bias"] = false;
  j["mlp_bias"] = false;
  j["rope_scaling"] = nullptr;
  if (preset == "tiny") return j;
  if (preset == "llama-3.2-1b") {
    j.update(json{{"vocab_size", 128256},
                  {"hidden_size", 2048},
                  {"intermediate_size", 8192},
                  {"num_hidden_layers", 16},
                  {"num_attention_heads", 32},
                  {"num_key_value_heads", 8},
                  {"head_dim", 64},
                  {"max_position_embeddings", 131072},
                  {"rms_norm_eps", 1e-5},
                  {"rope_theta", 500000.0},
                  {"tie_word_embeddings", true},
                  {"torch_dtype", "bfloat16"},
                  {"initializer_range", 0.02},
                  {"rope_scaling",
                   {{"factor", 32.0},
                    {"high_freq_factor", 4.0},
                    {"low_freq_factor", 1.0},
                    {"original_max_position_embeddings", 8192},
                    {"rope_type", "llama3"}}}});
    return j;
  }
  if (preset == "llama-100m") {  // ~100M parameters (tied): 24.6M embeddings + 12 × 6.3M
    j.update(json{{"vocab_size", 32000},
                  {"hidden_size", 768},
                  {"intermediate_size", 2048},
                  {"num_hidden_layers", 12},
                  {"num_attention_heads", 12},
                  {"num_key_value_heads", 4},
                  {"head_dim", 64},
                  {"max_position_embeddings", 4096},
                  {"rms_norm_eps", 1e-5},
                  {"tie_word_embeddings", true},
                  {"initializer_range", 0.02}});
    return j;
  }
  unknown_preset("llama", preset, "tiny, llama-3.2-1b, llama-100m");
}

}  // namespace

const Architecture& llama_architecture() {
  static const Architecture a = decoder_architecture<parse, options>("llama", tiny, "byte_level", 1.0);
  return a;
}

}  // namespace hfx::models
