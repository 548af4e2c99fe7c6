// mpt: MptForCausalLM — the shared decoder under MPT's names (transformer.wte, transformer.blocks.N.norm_1,
// attn.Wqkv ([q; k; v] rows) / out_proj, norm_2, ffn.up_proj / down_proj, transformer.norm_f, lm_head
// tied): LayerNorms without bias, no linear biases, erf gelu MLP of 4 · d_model, no rotary —
// ALiBi slopes on the scores, which stop at max_seq_len keys, attn_config's clip_qkv and softmax_scale.
// Refused by name: the attn_config knobs transformers' MPT does not run (qk_ln, prefix_lm,
// multiquery_attention, alibi false, alibi_bias_max other than 8), so no checkpoint that needs them is
// exported wrong.
#include "blocks.h"
#include "hfx/core/error.h"

namespace hfx::models {
namespace {

ModelConfig parse(const json& j) {
  ConfigDefaults d;
  d.vocab_size = 50368;
  d.norm_eps = 1e-5;
  d.norm_eps_key = "layer_norm_epsilon";
  d.tie_word_embeddings = true;
  d.bos = std::nullopt;
  d.eos = std::nullopt;
  json k = j;
  k["hidden_size"] = jget<int64_t>(j, "d_model", 2048);
  k["num_hidden_layers"] = jget<int64_t>(j, "n_layers", 24);
  k["num_attention_heads"] = jget<int64_t>(j, "n_heads", 16);
  k["max_position_embeddings"] = jget<int64_t>(j, "max_seq_len", 2048);
  k["intermediate_size"] = 4 * k["hidden_size"].get<int64_t>();  // MptMLP: 4 · d_model, whatever the ratio
  for (const char* x : {"num_key_value_heads", "head_dim"}) k.erase(x);
  ModelConfig c = parse_common(k, "mpt", d);
  c.raw = j;
  set_layer_types(c, [](int64_t) { return false; }, {"full_attention"});
  return c;
}

DecoderOptions options(const ModelConfig& c) {
  refuse_knob(c, "expansion_ratio", 4, "an MLP width other than 4 · d_model (transformers' MptMLP has none)");
  const json attn = c.raw.contains("attn_config") && c.raw["attn_config"].is_object() ? c.raw["attn_config"]
                                                                                      : json::object();
  for (const auto& [key, want] :
       std::vector<std::pair<const char*, json>>{{"qk_ln", false},
                                                 {"prefix_lm", false},
                                                 {"alibi", true},
                                                 {"alibi_bias_max", 8},
                                                 {"attn_type", "multihead_attention"}})
    if (jhas(attn, key) && attn[key] != want)
      HFX_THROW(
          "model",
          "expected config.json.attn_config.{} to be {} for mpt (transformers' MptAttention does not run "
          "it, nor does hfx), got {}; see docs/adding-an-architecture.md",
          key, want.dump(), attn[key].dump());
  DecoderOptions o;
  o.names.model = "transformer";
  o.names.embed = "wte";
  o.names.layers = "blocks";
  o.names.attn = "attn";
  o.names.qkv = "Wqkv";
  o.names.mlp = "ffn";
  o.norms.input = "norm_1";
  o.norms.pre_mlp = "norm_2";
  // "gelu_ggml" (not MptConfig's key) is the GGUF read-back's: llama.cpp runs ggml's tanh GELU table
  o.act = jget<std::string>(c.raw, "hidden_act", "") == "gelu_ggml" ? "gelu_ggml" : "gelu";
  o.norm = NormKind::layer_no_bias;
  o.qkv = QkvLayout::concat;
  o.o_proj = "out_proj";
  o.gated_mlp = false;
  o.final_norm = "norm_f";
  o.rotary = false;
  o.bounded_positions = true;  // the ALiBi table has max_seq_len keys
  o.clip_qkv =
      attn.contains("clip_qkv") && attn["clip_qkv"].is_number() ? attn["clip_qkv"].get<double>() : 0.0;
  if (attn.contains("softmax_scale") && attn["softmax_scale"].is_number())
    o.attn_scale = attn["softmax_scale"].get<double>();
  o.alibi_slopes = alibi_slopes_mpt(c.num_attention_heads, 8.0);
  return o;
}

json tiny(const std::string& preset) {
  if (preset != "tiny") unknown_preset("mpt", preset, "tiny");
  return json{{"architectures", {"MptForCausalLM"}},
              {"model_type", "mpt"},
              {"vocab_size", 512},
              {"d_model", 64},
              {"n_heads", 4},
              {"n_layers", 2},
              {"expansion_ratio", 4},
              {"max_seq_len", 2048},
              {"layer_norm_epsilon", 1e-5},
              {"no_bias", true},
              {"attn_config", {{"alibi", true}, {"clip_qkv", nullptr}}},
              {"initializer_range", 0.1},  // create-tiny's std
              {"tie_word_embeddings", true},
              {"use_cache", true},
              {"torch_dtype", "float32"},
              {"transformers_version", "5.23.0"}};
}

}  // namespace

const Architecture& mpt_architecture() {
  static const Architecture a = decoder_architecture<parse, options>("mpt", tiny, "byte_level", 1.0, {});
  return a;
}

}  // namespace hfx::models
