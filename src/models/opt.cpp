// opt: OPTForCausalLM — learned positions (model.decoder.embed_positions, row position + 2) added to the
// token embeddings, no rotary; pre-norm LayerNorms self_attn_layer_norm / final_layer_norm per layer and
// model.decoder.final_layer_norm; q/k/v/out_proj and a plain relu MLP fc1 / fc2, biases with enable_bias;
// tied head. Refused: do_layer_norm_before false (OPT-350m's post-norm) and word_embed_proj_dim (its
// project_in / project_out).
#include "blocks.h"

namespace hfx::models {
namespace {

ModelConfig parse(const json& j) {
  ConfigDefaults d;
  d.vocab_size = 50272;
  d.hidden_size = 768;
  d.num_hidden_layers = 12;
  d.num_attention_heads = 12;
  d.norm_eps = 1e-5;  // nn.LayerNorm's default: OPTConfig has no eps
  d.norm_eps_key = "layer_norm_eps_unused";
  d.tie_word_embeddings = true;
  d.bos = 2;
  d.eos = 2;
  json k = j;
  k["intermediate_size"] = jget<int64_t>(j, "ffn_dim", 3072);
  for (const char* x : {"num_key_value_heads", "head_dim", "rope_theta", "rope_parameters", "rope_scaling"})
    k.erase(x);
  ModelConfig c = parse_common(k, "opt", d);
  if (jhas(j, "word_embed_proj_dim") && jget<int64_t>(j, "word_embed_proj_dim", 0) != c.hidden_size)
    HFX_THROW(
        "model",
        "expected config.json.word_embed_proj_dim to equal hidden_size ({}) for opt (hfx does not implement "
        "project_in / project_out yet), got {}; see docs/adding-an-architecture.md",
        c.hidden_size, j["word_embed_proj_dim"].dump());
  set_layer_types(c, [](int64_t) { return false; }, {"full_attention"});
  return c;
}

DecoderOptions options(const ModelConfig& c) {
  refuse_knob(c, "do_layer_norm_before", true, "OPT's post-norm layers (OPT-350m)");
  refuse_knob(c, "_remove_final_layer_norm", false, "OPT without its final LayerNorm");
  DecoderOptions o;
  o.names.model = "model.decoder";
  o.names.mlp = "";
  o.act = jget<std::string>(c.raw, "activation_function", "relu");
  o.norm =
      jget<bool>(c.raw, "layer_norm_elementwise_affine", true) ? NormKind::layer : NormKind::layer_no_affine;
  o.norms.input = "self_attn_layer_norm";
  o.norms.pre_mlp = "final_layer_norm";
  o.final_norm = "final_layer_norm";
  o.qkv_bias = o.o_bias = o.mlp_bias = jget<bool>(c.raw, "enable_bias", true);
  o.o_proj = "out_proj";
  o.gated_mlp = false;
  o.mlp_in = "fc1";
  o.mlp_out = "fc2";
  o.rotary = false;
  o.position_embedding = "embed_positions";
  o.position_offset = 2;
  return o;
}

json tiny(const std::string& preset) {
  if (preset != "tiny") unknown_preset("opt", preset, "tiny");
  return json{{"architectures", {"OPTForCausalLM"}},
              {"model_type", "opt"},
              {"vocab_size", 512},
              {"hidden_size", 64},
              {"ffn_dim", 128},
              {"num_hidden_layers", 2},
              {"num_attention_heads", 4},
              {"max_position_embeddings", 2048},
              {"word_embed_proj_dim", 64},
              {"activation_function", "relu"},
              {"do_layer_norm_before", true},
              {"enable_bias", true},
              {"initializer_range", 0.1},
              {"init_std", 0.1},
              {"pad_token_id", 1},
              {"bos_token_id", 2},
              {"eos_token_id", 2},
              {"tie_word_embeddings", true},
              {"torch_dtype", "float32"},
              {"transformers_version", "4.56.0"}};
}

}  // namespace

const Architecture& opt_architecture() {
  static const Architecture a = decoder_architecture<parse, options>("opt", tiny, "byte_level", 1.0, {});
  return a;
}

}  // namespace hfx::models
