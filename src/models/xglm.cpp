// xglm: XGLMForCausalLM — fairseq's decoder-only LM: token embeddings scaled by sqrt(d_model)
// (scale_embedding), plus fairseq's sinusoidal positions (computed, row position + 2, the pad row zero),
// pre-norm self_attn_layer_norm / final_layer_norm per layer (nn.LayerNorm's default eps), q/k/v/out_proj
// and a plain gelu MLP fc1 / fc2 with biases, model.layer_norm, lm_head tied. Config names as XGLMConfig
// reads them (d_model, ffn_dim, num_layers, attention_heads).
#include <cmath>

#include "blocks.h"

namespace hfx::models {
namespace {

ModelConfig parse(const json& j) {
  ConfigDefaults d;
  d.vocab_size = 256008;
  d.norm_eps = 1e-5;  // nn.LayerNorm's default: XGLMConfig has no eps
  d.norm_eps_key = "layer_norm_eps_unused";
  d.tie_word_embeddings = true;
  d.bos = 0;
  d.eos = 2;
  json k = j;
  k["hidden_size"] = jget<int64_t>(j, "d_model", 1024);
  k["intermediate_size"] = jget<int64_t>(j, "ffn_dim", 4096);
  k["num_hidden_layers"] = jget<int64_t>(j, "num_layers", 24);
  k["num_attention_heads"] = jget<int64_t>(j, "attention_heads", 16);
  if (!jhas(k, "pad_token_id")) k["pad_token_id"] = 1;
  for (const char* x : {"num_key_value_heads", "head_dim", "rope_theta", "rope_parameters"}) k.erase(x);
  ModelConfig c = parse_common(k, "xglm", d);
  set_layer_types(c, [](int64_t) { return false; }, {"full_attention"});
  return c;
}

DecoderOptions options(const ModelConfig& c) {
  DecoderOptions o;
  o.names.mlp = "";
  o.act = jget<std::string>(c.raw, "activation_function", "gelu");
  o.norm = NormKind::layer;
  o.norms.input = "self_attn_layer_norm";
  o.norms.pre_mlp = "final_layer_norm";
  o.final_norm = "layer_norm";
  o.qkv_bias = o.o_bias = o.mlp_bias = true;
  o.o_proj = "out_proj";
  o.gated_mlp = false;
  o.mlp_in = "fc1";
  o.mlp_out = "fc2";
  o.rotary = false;
  o.position_embedding = "embed_positions";
  o.position_offset = 2;
  o.sinusoidal_positions = true;
  if (jget<bool>(c.raw, "scale_embedding", true))
    o.embedding_multiplier = std::sqrt(static_cast<double>(c.hidden_size));
  return o;
}

json tiny(const std::string& preset) {
  if (preset != "tiny") unknown_preset("xglm", preset, "tiny");
  return json{{"architectures", {"XGLMForCausalLM"}},
              {"model_type", "xglm"},
              {"vocab_size", 512},
              {"d_model", 64},
              {"ffn_dim", 128},
              {"num_layers", 2},
              {"attention_heads", 4},
              {"max_position_embeddings", 2048},
              {"activation_function", "gelu"},
              {"scale_embedding", true},
              {"initializer_range", 0.1},  // create-tiny's std
              {"init_std", 0.1},
              {"pad_token_id", 1},
              {"bos_token_id", 0},
              {"eos_token_id", 2},
              {"tie_word_embeddings", true},
              {"use_cache", true},
              {"torch_dtype", "float32"},
              {"transformers_version", "5.23.0"}};
}

}  // namespace

const Architecture& xglm_architecture() {
  static const Architecture a = decoder_architecture<parse, options>("xglm", tiny, "byte_level", 1.0);
  return a;
}

}  // namespace hfx::models
