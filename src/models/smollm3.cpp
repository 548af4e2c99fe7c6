// smollm3: SmolLM3ForCausalLM — Llama with NoPE layers: no_rope_layers[i] is 1 where layer i rotates and 0
// where it uses no position embedding (default: every no_rope_layer_interval-th layer, 4, is NoPE). With
// use_sliding_window, the NoPE layers slide (transformers' default layer_types); tied head by default.
#include "blocks.h"

namespace hfx::models {
namespace {

// transformers' default: [int((i + 1) % interval != 0) for i in range(num_hidden_layers)].
std::vector<int64_t> rope_layers(const ModelConfig& c) {
  if (jhas(c.raw, "no_rope_layers")) {
    auto r = jget<std::vector<int64_t>>(c.raw, "no_rope_layers", {});
    if (static_cast<int64_t>(r.size()) != c.num_hidden_layers)
      HFX_THROW("model", "expected config.json.no_rope_layers to have {} entries (one per layer), got {}",
                c.num_hidden_layers, r.size());
    return r;
  }
  const int64_t every = jget<int64_t>(c.raw, "no_rope_layer_interval", 4);
  if (every <= 0) HFX_THROW("model", "expected config.json.no_rope_layer_interval > 0, got {}", every);
  std::vector<int64_t> r;
  for (int64_t i = 0; i < c.num_hidden_layers; i++) r.push_back((i + 1) % every != 0);
  return r;
}

ModelConfig parse(const json& j) {
  ConfigDefaults d;
  d.vocab_size = 128256;
  d.hidden_size = 2048;
  d.num_hidden_layers = 36;
  d.num_attention_heads = 16;
  d.max_position_embeddings = 32768;
  d.rope_theta = 2000000.0;
  d.tie_word_embeddings = true;
  d.bos = 128000;
  d.eos = 128001;
  ModelConfig c = parse_common(j, "smollm3", d);
  c.sliding_window = jget<bool>(j, "use_sliding_window", false) ? sliding_window_of(j, 0) : 0;
  const auto rope = rope_layers(c);
  set_layer_types(c, [&](int64_t i) { return c.sliding_window > 0 && rope.at(static_cast<size_t>(i)) == 0; });
  return c;
}

DecoderOptions options(const ModelConfig& c) {
  DecoderOptions o;
  o.act = jget<std::string>(c.raw, "hidden_act", "silu");
  o.qkv_bias = o.o_bias = jget<bool>(c.raw, "attention_bias", false);
  o.mlp_bias = jget<bool>(c.raw, "mlp_bias", false);
  o.rope = rope_config(c);
  for (int64_t r : rope_layers(c)) o.nope_layers.push_back(r == 0);
  return o;
}

json tiny(const std::string& preset) {
  if (preset != "tiny") unknown_preset("smollm3", preset, "tiny");
  json j = tiny_decoder_config("SmolLM3ForCausalLM", "smollm3");
  j["no_rope_layer_interval"] = 2;  // layer 1 of 2 is NoPE
  j["tie_word_embeddings"] = true;
  j["pad_token_id"] = nullptr;
  return j;
}

}  // namespace

const Architecture& smollm3_architecture() {
  static const Architecture a = decoder_architecture<parse, options>("smollm3", tiny, "byte_level", 1.0);
  return a;
}

}  // namespace hfx::models
