// mistral: MistralForCausalLM — Llama with a sliding window on every layer (sliding_window, default 4096
// as MistralConfig; null = none) and no biases.
#include "blocks.h"

namespace hfx::models {
namespace {

ModelConfig parse(const json& j) {
  ConfigDefaults d;
  d.intermediate_size = 14336;
  d.max_position_embeddings = 4096 * 32;
  ModelConfig c = parse_common(j, "mistral", d);
  c.sliding_window = sliding_window_of(j, 4096);
  set_layer_types(c, [&](int64_t) { return c.sliding_window > 0; });
  return c;
}

DecoderOptions options(const ModelConfig& c) {
  DecoderOptions o;
  o.act = jget<std::string>(c.raw, "hidden_act", "silu");
  o.rope = rope_config(c);
  return o;
}

json tiny(const std::string& preset) {
  if (preset != "tiny") unknown_preset("mistral", preset, "tiny");
  json j = tiny_decoder_config("MistralForCausalLM", "mistral");
  j["hidden_act"] = "silu";
  j["sliding_window"] = 8;  // small so that tests cross it
  return j;
}

}  // namespace

const Architecture& mistral_architecture() {
  static const Architecture a{
      .model_type = "mistral",
      .parse_config = parse,
      .weight_specs = [](const ModelConfig& c) { return decoder_weight_specs(c, options(c)); },
      .create = [](ModelConfig c, std::shared_ptr<io::WeightStore> w) -> std::unique_ptr<CausalLM> {
        auto o = options(c);
        return std::make_unique<DecoderLM>(std::move(c), std::move(w), std::move(o));
      },
      .tiny_config = tiny,
      .tiny_tokenizer = "sentencepiece",
      .tiny_norm_mean = 1.0,
      .optional_weights = {R"(model\.rotary_emb\.inv_freq)", R"(model\.layers\.\d+\.self_attn\.rotary_emb\.inv_freq)"},
  };
  return a;
}

}  // namespace hfx::models
