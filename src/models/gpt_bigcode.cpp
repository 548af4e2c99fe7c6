// gpt_bigcode: GPTBigCodeForCausalLM (StarCoder, SantaCoder) — GPT-2's layout with nn.Linear weights:
// transformer.wte + learned transformer.wpe, per layer ln_1, attn.c_attn (multi_query, default: rows
// [q; k; v] with one key/value head; else per head [q_h; k_h; v_h]), attn.c_proj, ln_2, mlp.c_fc / c_proj
// (gelu_pytorch_tanh), biases everywhere, transformer.ln_f, tied head; scale_attn_weights false means no
// 1/sqrt(head_dim).
#include "blocks.h"

namespace hfx::models {
namespace {

ModelConfig parse(const json& j) {
  ConfigDefaults d;
  d.vocab_size = 50257;
  d.hidden_size = 768;
  d.num_hidden_layers = 12;
  d.num_attention_heads = 12;
  d.max_position_embeddings = 1024;
  d.norm_eps = 1e-5;
  d.norm_eps_key = "layer_norm_epsilon";
  d.tie_word_embeddings = true;
  d.bos = 50256;
  d.eos = 50256;
  json k = with_common_names(j, d.hidden_size);  // the config class's attribute_map
  for (const char* x : {"head_dim", "rope_theta", "rope_parameters", "rope_scaling"}) k.erase(x);
  k["num_key_value_heads"] = jget<bool>(j, "multi_query", true) ? json(1) : k["num_attention_heads"];
  ModelConfig c = parse_common(k, "gpt_bigcode", d);
  set_layer_types(c, [](int64_t) { return false; }, {"full_attention"});
  return c;
}

DecoderOptions options(const ModelConfig& c) {
  DecoderOptions o;
  o.names.model = "transformer";
  o.names.embed = "wte";
  o.names.layers = "h";
  o.names.attn = "attn";
  o.names.qkv = "c_attn";
  o.act = jget<std::string>(c.raw, "activation_function", "gelu_pytorch_tanh");
  o.norm = NormKind::layer;
  o.norms.input = "ln_1";
  o.norms.pre_mlp = "ln_2";
  o.final_norm = "ln_f";
  o.qkv = c.num_key_value_heads == 1 && c.num_attention_heads > 1 ? QkvLayout::concat : QkvLayout::per_head;
  o.qkv_bias = o.o_bias = o.mlp_bias = true;
  o.o_proj = "c_proj";
  o.gated_mlp = false;
  o.mlp_in = "c_fc";
  o.mlp_out = "c_proj";
  o.rotary = false;
  o.position_embedding = "wpe";
  if (!jget<bool>(c.raw, "scale_attn_weights", true)) o.attn_scale = 1.0;
  return o;
}

json tiny(const std::string& preset) {
  if (preset != "tiny") unknown_preset("gpt_bigcode", preset, "tiny");
  return json{{"architectures", {"GPTBigCodeForCausalLM"}},
              {"model_type", "gpt_bigcode"},
              {"vocab_size", 512},
              {"n_embd", 64},
              {"n_layer", 2},
              {"n_head", 4},
              {"n_inner", 128},
              {"n_positions", 2048},
              {"multi_query", true},
              {"activation_function", "gelu_pytorch_tanh"},
              {"layer_norm_epsilon", 1e-5},
              {"initializer_range", 0.1},
              {"bos_token_id", 1},
              {"eos_token_id", 2},
              {"tie_word_embeddings", true},
              {"torch_dtype", "float32"},
              {"transformers_version", "4.56.0"}};
}

}  // namespace

const Architecture& gpt_bigcode_architecture() {
  static const Architecture a =
      decoder_architecture<parse, options>("gpt_bigcode", tiny, "byte_level", 1.0, {});
  return a;
}

}  // namespace hfx::models
