// qwen3: Qwen3ForCausalLM — RMSNorm per head on q and k (q_norm / k_norm over head_dim) before rope,
// attention_bias for q/k/v/o (default off), head_dim default 128, sliding window as Qwen2.
#include "blocks.h"

namespace hfx::models {
namespace {

ModelConfig parse(const json& j) {
  ConfigDefaults d;
  d.vocab_size = 151936;
  d.intermediate_size = 22016;
  d.max_position_embeddings = 32768;
  d.head_dim = 128;
  d.bos = std::nullopt;
  d.eos = std::nullopt;
  ModelConfig c = parse_common(j, "qwen3", d);
  bool use = jget<bool>(j, "use_sliding_window", false);
  c.sliding_window = use ? sliding_window_of(j, 4096) : 0;
  int64_t max_window_layers = jget<int64_t>(j, "max_window_layers", 28);
  set_layer_types(c, [&](int64_t i) { return c.sliding_window > 0 && i >= max_window_layers; });
  return c;
}

DecoderOptions options(const ModelConfig& c) {
  DecoderOptions o;
  o.act = jget<std::string>(c.raw, "hidden_act", "silu");
  o.qkv_bias = o.o_bias = jget<bool>(c.raw, "attention_bias", false);
  o.qk_norm = true;
  o.rope = rope_config(c);
  return o;
}

json tiny(const std::string& preset) {
  if (preset != "tiny") unknown_preset("qwen3", preset, "tiny");
  json j = tiny_decoder_config("Qwen3ForCausalLM", "qwen3");
  j["hidden_act"] = "silu";
  j["attention_bias"] = false;
  j["use_sliding_window"] = false;
  j["sliding_window"] = nullptr;
  j["max_window_layers"] = 2;
  j["rope_theta"] = 1000000.0;
  j["tie_word_embeddings"] = true;
  return j;
}

}  // namespace

const Architecture& qwen3_architecture() {
  static const Architecture a = decoder_architecture<parse, options>("qwen3", tiny, "byte_level", 1.0,
                                                                     {R"(model\.rotary_emb\.inv_freq)"});
  return a;
}

}  // namespace hfx::models
