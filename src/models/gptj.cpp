// gptj: GPTJForCausalLM — the shared decoder under GPT-J's names (transformer.wte, transformer.h.N.ln_1,
// attn.q_proj / k_proj / v_proj / out_proj without biases, mlp.fc_in / fc_out, transformer.ln_f, lm_head
// with a bias) and config keys (n_embd, n_layer, n_head, n_inner, n_positions, layer_norm_epsilon,
// activation_function): parallel residual on one LayerNorm, GPT-J-style interleaved rotary pairs on the
// first rotary_dim (64) dims of each head with base 10000. codegen: CodeGenForCausalLM, the same model with
// q/k/v in one qkv_proj stored in 4 model-parallel groups of [q; v; k] rows.
#include "blocks.h"

namespace hfx::models {
namespace {

ModelConfig parse_as(const json& j, const char* model_type) {
  ConfigDefaults d;
  d.vocab_size = 50400;
  d.hidden_size = 4096;
  d.num_hidden_layers = 28;
  d.num_attention_heads = 16;
  d.norm_eps = 1e-5;
  d.norm_eps_key = "layer_norm_epsilon";
  d.bos = 50256;
  d.eos = 50256;
  json k = with_common_names(j, d.hidden_size);  // the config class's attribute_map
  for (const char* x : {"num_key_value_heads", "head_dim", "rope_theta", "rope_parameters", "rope_scaling"})
    k.erase(x);
  ModelConfig c = parse_common(k, model_type, d);
  if (std::string(model_type) == "codegen" && (c.num_attention_heads % 4 || c.hidden_size % 4))
    HFX_THROW("model", "expected n_head divisible by CodeGen's 4 model-parallel groups, got {}",
              c.num_attention_heads);
  const int64_t rotary = jget<int64_t>(j, "rotary_dim", 64);
  if (rotary <= 0 || rotary > c.head_dim || rotary % 2)
    HFX_THROW("model", "expected config.json.rotary_dim to be even and in (0, head_dim = {}], got {}",
              c.head_dim, rotary);
  c.raw["partial_rotary_factor"] = static_cast<double>(rotary) / static_cast<double>(c.head_dim);
  set_layer_types(c, [](int64_t) { return false; }, {"full_attention"});
  return c;
}

ModelConfig parse(const json& j) { return parse_as(j, "gptj"); }
ModelConfig parse_codegen(const json& j) { return parse_as(j, "codegen"); }

DecoderOptions options(const ModelConfig& c) {
  DecoderOptions o;
  o.names.model = "transformer";
  o.names.embed = "wte";
  o.names.layers = "h";
  o.names.attn = "attn";
  o.act = jget<std::string>(c.raw, "activation_function", "gelu_new");
  o.norm = NormKind::layer;
  o.norms.input = "ln_1";
  o.norms.pre_mlp = "";
  o.parallel_residual = true;
  o.mlp_bias = o.lm_head_bias = true;
  o.gated_mlp = false;
  o.mlp_in = "fc_in";
  o.mlp_out = "fc_out";
  o.o_proj = "out_proj";
  o.final_norm = "ln_f";
  o.rope = rope_config(c);
  o.rope.interleaved = true;
  o.bounded_positions = true;  // sin/cos come from a table of n_positions rows
  return o;
}

DecoderOptions options_codegen(const ModelConfig& c) {
  DecoderOptions o = options(c);
  o.qkv = QkvLayout::codegen;
  o.names.qkv = "qkv_proj";
  return o;
}

json tiny_as(const std::string& preset, const char* cls, const char* model_type) {
  if (preset != "tiny") unknown_preset(model_type, preset, "tiny");
  return json{{"architectures", {cls}},
              {"model_type", model_type},
              {"vocab_size", 512},
              {"n_embd", 64},
              {"n_layer", 2},
              {"n_head", 4},
              {"n_inner", 128},
              {"n_positions", 2048},
              {"rotary_dim", 8},
              {"activation_function", "gelu_new"},
              {"layer_norm_epsilon", 1e-5},
              {"initializer_range", 0.1},
              {"bos_token_id", 1},
              {"eos_token_id", 2},
              {"tie_word_embeddings", false},
              {"torch_dtype", "float32"},
              {"transformers_version", "4.56.0"}};
}

json tiny(const std::string& preset) { return tiny_as(preset, "GPTJForCausalLM", "gptj"); }
json tiny_codegen(const std::string& preset) { return tiny_as(preset, "CodeGenForCausalLM", "codegen"); }

const std::vector<std::string> kCausalMaskBuffers = {R"(transformer\.h\.\d+\.attn\.(bias|masked_bias))"};

}  // namespace

const Architecture& gptj_architecture() {
  static const Architecture a =
      decoder_architecture<parse, options>("gptj", tiny, "byte_level", 1.0, kCausalMaskBuffers);
  return a;
}

const Architecture& codegen_architecture() {
  static const Architecture a = decoder_architecture<parse_codegen, options_codegen>(
      "codegen", tiny_codegen, "byte_level", 1.0, kCausalMaskBuffers);
  return a;
}

}  // namespace hfx::models
