// olmo3: Olmo3ForCausalLM — OLMo 2's post-norm layers and q/k norms over all heads, with sliding and full
// layers (layer_types; default: every 4th layer full, the rest slide in a sliding_window of 4096), each
// type with its own rope: rope_parameters.{full,sliding}_attention (Olmo3Config: rope_scaling and a
// top-level rope_theta go to the full layers only; every rope_theta not given is 500000).
#include "blocks.h"

namespace hfx::models {
namespace {

// Olmo3Config.convert_rope_params_to_dict, so that both layer types have their rope block.
json olmo3_rope(const json& j) {
  json rp = jhas(j, "rope_parameters") && j["rope_parameters"].is_object()
                ? j["rope_parameters"]
                : json{{"sliding_attention", {{"rope_type", "default"}}},
                       {"full_attention", {{"rope_type", "default"}}}};
  if (!jhas(rp, "full_attention")) rp["full_attention"] = {{"rope_type", "default"}};
  if (jhas(j, "rope_scaling") && j["rope_scaling"].is_object())
    rp["full_attention"].update(j["rope_scaling"]);
  bool theta_used = false;
  for (const char* t : {"full_attention", "sliding_attention"}) {
    if (!jhas(rp, t)) rp[t] = {{"rope_type", "default"}};
    if (jhas(rp[t], "rope_theta")) continue;
    const bool take = jhas(j, "rope_theta") && !theta_used;  // kwargs.pop: the first block takes it
    rp[t]["rope_theta"] = take ? jget<double>(j, "rope_theta", 500000.0) : 500000.0;
    theta_used = theta_used || take;
  }
  return rp;
}

ModelConfig parse(const json& j) {
  ConfigDefaults d;
  d.vocab_size = 50304;
  d.norm_eps = 1e-5;
  d.rope_theta = 500000.0;
  d.bos = std::nullopt;
  d.eos = 50279;
  json k = j;
  k["rope_parameters"] = olmo3_rope(j);
  k.erase("rope_scaling");
  k.erase("rope_theta");
  ModelConfig c = parse_common(k, "olmo3", d);
  c.sliding_window = sliding_window_of(j, 4096);
  set_layer_types(c, [&](int64_t i) { return c.sliding_window > 0 && (i + 1) % 4 != 0; });
  return c;
}

DecoderOptions options(const ModelConfig& c) {
  DecoderOptions o;
  o.act = jget<std::string>(c.raw, "hidden_act", "silu");
  o.norms = post_norms();
  o.qk_norm_flat = true;
  o.qkv_bias = o.o_bias = jget<bool>(c.raw, "attention_bias", false);
  o.rope = rope_config(c);  // rope_parameters.full_attention
  ModelConfig local = c;
  local.raw["rope_parameters"] = c.raw["rope_parameters"]["sliding_attention"];
  local.rope_theta = jget<double>(local.raw["rope_parameters"], "rope_theta", 500000.0);
  o.rope_local = rope_config(local);
  return o;
}

json tiny(const std::string& preset) {
  if (preset != "tiny") unknown_preset("olmo3", preset, "tiny");
  json j = tiny_decoder_config("Olmo3ForCausalLM", "olmo3");
  j.erase("rope_theta");
  j["rms_norm_eps"] = 1e-5;
  j["sliding_window"] = 8;
  j["layer_types"] = {"sliding_attention", "full_attention"};
  j["rope_parameters"] = {
      {"full_attention", {{"rope_type", "linear"}, {"factor", 2.0}, {"rope_theta", 10000.0}}},
      {"sliding_attention", {{"rope_type", "default"}, {"rope_theta", 5000.0}}}};
  j["pad_token_id"] = 1;
  return j;
}

}  // namespace

const Architecture& olmo3_architecture() {
  static const Architecture a = decoder_architecture<parse, options>("olmo3", tiny, "byte_level", 1.0);
  return a;
}

}  // namespace hfx::models
