// gpt_neo: GPTNeoForCausalLM (GPT-Neo 125M–2.7B) — GPT-2's layout under GPT-Neo's names
// (transformer.wte / wpe, transformer.h.N.ln_1, attn.attention.q_proj / k_proj / v_proj (no bias) /
// out_proj, ln_2, mlp.c_fc / c_proj as nn.Linear, transformer.ln_f, lm_head tied): learned positions,
// attention scores not scaled by head_dim^-0.5, and its attention_types pattern (global / local) as
// full_attention / sliding_attention layers with window_size keys.
#include "blocks.h"
#include "hfx/core/error.h"

namespace hfx::models {
namespace {

// attention_layers (one entry per layer) from config.json, else expanded from attention_types
// ([[pattern, repeats], ...], as GPTNeoConfig.expand_attention_types_params does); each entry checked.
std::vector<std::string> attention_layers(const json& j) {
  auto bad = [](const char* key, const json& v) {
    HFX_THROW("model", "expected config.json.{} of gpt_neo to be {}, got {}; fix config.json", key,
              std::string(key) == "attention_layers" ? "a list of 'global' / 'local'"
                                                     : "a list of [[\"global\" | \"local\", ...], repeats]",
              v.dump());
  };
  std::vector<std::string> r;
  auto add = [&](const json& t, const char* key, const json& whole) {
    if (!t.is_string() || (t != "global" && t != "local")) bad(key, whole);
    r.push_back(t.get<std::string>());
  };
  if (j.contains("attention_layers")) {
    const json& l = j["attention_layers"];
    if (!l.is_array()) bad("attention_layers", l);
    for (const auto& t : l) add(t, "attention_layers", l);
    return r;
  }
  const json types =
      j.contains("attention_types") ? j["attention_types"] : json::parse(R"([[["global","local"],12]])");
  if (!types.is_array()) bad("attention_types", types);
  for (const auto& item : types) {
    if (!item.is_array() || item.size() != 2 || !item[0].is_array() || !item[1].is_number_integer() ||
        item[1].get<int64_t>() < 0)
      bad("attention_types", types);
    for (int64_t n = 0; n < item[1].get<int64_t>(); n++)
      for (const auto& t : item[0]) add(t, "attention_types", types);
  }
  return r;
}

ModelConfig parse(const json& j) {
  ConfigDefaults d;
  d.vocab_size = 50257;
  d.hidden_size = 2048;
  d.num_hidden_layers = 24;
  d.num_attention_heads = 16;
  d.norm_eps = 1e-5;
  d.norm_eps_key = "layer_norm_epsilon";
  d.tie_word_embeddings = true;
  d.bos = 50256;
  d.eos = 50256;
  json k = j;
  if (jhas(j, "num_layers")) k["num_hidden_layers"] = j["num_layers"];
  if (jhas(j, "num_heads")) k["num_attention_heads"] = j["num_heads"];
  const int64_t hidden = jget<int64_t>(k, "hidden_size", d.hidden_size);
  k["intermediate_size"] = jget<int64_t>(j, "intermediate_size", 4 * hidden);  // null → 4 · hidden
  for (const char* x : {"num_key_value_heads", "head_dim", "sliding_window", "layer_types"}) k.erase(x);
  ModelConfig c = parse_common(k, "gpt_neo", d);
  c.raw = k;
  c.sliding_window = jget<int64_t>(j, "window_size", 256);
  const std::vector<std::string> types = attention_layers(j);
  if (static_cast<int64_t>(types.size()) != c.num_hidden_layers)
    HFX_THROW("model", "expected one attention type per layer ({}), got {}", c.num_hidden_layers,
              types.size());
  set_layer_types(c, [&](int64_t i) { return types[static_cast<size_t>(i)] == "local"; });
  return c;
}

DecoderOptions options(const ModelConfig& c) {
  DecoderOptions o;
  o.names.model = "transformer";
  o.names.embed = "wte";
  o.names.layers = "h";
  o.names.attn = "attn.attention";
  o.norms.input = "ln_1";
  o.norms.pre_mlp = "ln_2";
  o.act = jget<std::string>(c.raw, "activation_function", "gelu_new");
  o.norm = NormKind::layer;
  o.o_proj = "out_proj";
  o.o_bias = o.mlp_bias = true;
  o.gated_mlp = false;
  o.mlp_in = "c_fc";
  o.mlp_out = "c_proj";
  o.final_norm = "ln_f";
  o.attn_scale = 1.0;  // GPTNeoSelfAttention does not scale q·k
  o.rotary = false;
  o.position_embedding = "wpe";
  return o;
}

json tiny(const std::string& preset) {
  if (preset != "tiny") unknown_preset("gpt_neo", preset, "tiny");
  return json{{"architectures", {"GPTNeoForCausalLM"}},
              {"model_type", "gpt_neo"},
              {"vocab_size", 512},
              {"hidden_size", 64},
              {"num_layers", 2},
              {"num_heads", 4},
              {"attention_types", {{{"global", "local"}, 1}}},
              {"window_size", 8},
              {"max_position_embeddings", 2048},
              {"layer_norm_epsilon", 1e-5},
              {"activation_function", "gelu_new"},
              {"initializer_range", 0.1},  // create-tiny's std
              {"bos_token_id", 510},
              {"eos_token_id", 511},
              {"tie_word_embeddings", true},
              {"use_cache", true},
              {"torch_dtype", "float32"},
              {"transformers_version", "5.23.0"}};
}

}  // namespace

const Architecture& gpt_neo_architecture() {
  static const Architecture a = decoder_architecture<parse, options>("gpt_neo", tiny, "byte_level", 1.0);
  return a;
}

}  // namespace hfx::models
