// src/models/blocks.h — shared pieces of the architectures: config parsing as transformers does it, the
// Llama-family decoder (attention, MLP, norms, masks) and its weight list, all on the functional API.
//
// An architecture file maps its config to `DecoderOptions` (what varies in the family) and hands the
// rest to `DecoderLM`; only GPT-2 has its own forward. Everything is computed in f32: weights are cast
// with F::to at use, logits are f32.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "hfx/models/model.h"
#include "hfx/models/rope.h"
#include "hfx/ops/functional.h"

namespace hfx::models {

using nlohmann::json;
using WeightSpecs = std::vector<std::pair<std::string, Shape>>;

// ---- config ----
/// j[key] when present and not null, else `def`.
template <typename T>
T jget(const json& j, const char* key, T def) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return def;
  return it->get<T>();
}
bool jhas(const json& j, const char* key);

/// Per-architecture defaults of the common fields (transformers' config class defaults).
struct ConfigDefaults {
  int64_t vocab_size = 32000, hidden_size = 4096, intermediate_size = 11008, num_hidden_layers = 32,
          num_attention_heads = 32, max_position_embeddings = 2048;
  double norm_eps = 1e-6;
  const char* norm_eps_key = "rms_norm_eps";
  double rope_theta = 10000.0;
  bool tie_word_embeddings = false;
  int64_t head_dim = 0;  ///< default head_dim when absent (0: hidden / heads)
  std::optional<int64_t> bos = 1, eos = 2;
};
/// Common fields: sizes, eps, rope_theta (top level or inside rope_parameters), tie, dtype (torch_dtype or
/// dtype), bos/pad/eos (int or list), num_key_value_heads (default heads), head_dim, layer_types
/// (explicit, else all full). Checks divisibility.
ModelConfig parse_common(const json& j, const std::string& model_type, const ConfigDefaults& d);
/// Sets cfg.layer_types from config.json's layer_types, else from `fallback(i)`; checks the length.
void set_layer_types(ModelConfig& cfg, const std::function<bool(int64_t)>& sliding_fallback);

// ---- blocks (every call names its output after the HF module of the current scope) ----
/// A weight cast to f32.
Var W(Builder& b, const Model& m, const std::string& name);
/// Scope(local) + linear (weight [out, in], optional bias) + name_output.
Var linear(Builder& b, const Model& m, const Var& x, const std::string& local, bool bias);
/// Scope(local) + hfx.rms_norm + name_output.
Var rms_norm(Builder& b, const Model& m, const Var& x, const std::string& local, double eps, double offset);
/// Activation by transformers' ACT2FN name (silu/swish, gelu, gelu_new, gelu_pytorch_tanh, relu, ...).
Var activation(const Var& x, const std::string& name);
/// Additive padding mask [B, 1, 1, T] from attention_mask [B, T]: 0 where 1, finfo(f32).min where 0.
Var padding_mask(Builder& b, const Var& attention_mask);
/// position_ids if given, else arange(past, past + S) expanded to [B, S].
Var positions(Builder& b, const ForwardArgs& a, const Sym& past);
/// x[:, -keep:, :] when keep > 0.
Var keep_last(const Var& h, int64_t keep);

// ---- the Llama-family decoder ----
struct DecoderOptions {
  std::string act = "silu";
  double norm_offset = 0.0;       ///< RMSNorm x·(offset + w) (Gemma: 1)
  bool qkv_bias = false, o_bias = false, mlp_bias = false;
  bool fused_qkv = false;         ///< Phi-3 self_attn.qkv_proj
  bool fused_gate_up = false;     ///< Phi-3 mlp.gate_up_proj
  bool qk_norm = false;           ///< Qwen3 q_norm / k_norm over head_dim
  bool sandwich_norms = false;    ///< Gemma-2 post_attention / pre_feedforward / post_feedforward norms
  bool scale_embeddings = false;  ///< Gemma: × sqrt(hidden) rounded to the model dtype
  double attn_softcap = 0.0, final_softcap = 0.0;
  double attn_scale = 0.0;        ///< 0: head_dim^-0.5
  RopeConfig rope;
};

WeightSpecs decoder_weight_specs(const ModelConfig& cfg, const DecoderOptions& o);

class DecoderLM : public CausalLM {
 public:
  DecoderLM(ModelConfig cfg, std::shared_ptr<io::WeightStore> w, DecoderOptions o)
      : CausalLM(std::move(cfg), std::move(w)), o_(std::move(o)) {}
  ForwardOut forward(Builder& b, const ForwardArgs& args) const override;
  const DecoderOptions& options() const { return o_; }

 private:
  Var attention(Builder& b, const Var& x, int layer, const Var& cos, const Var& sin, const Var& mask, KVCache* cache) const;
  Var mlp(Builder& b, const Var& x) const;
  DecoderOptions o_;
};

/// Rotary inv_freq buffers some checkpoints carry; never needed (hfx computes them from the config).
inline const std::vector<std::string> kRotaryBuffers = {R"(model\.rotary_emb\.inv_freq)",
                                                        R"(model\.layers\.\d+\.self_attn\.rotary_emb\.inv_freq)"};

/// The Architecture of a Llama-family decoder: `Parse` reads config.json, `Options` picks the decoder's
/// variant from the parsed config; weights and the forward are the shared DecoderLM's.
template <ModelConfig (*Parse)(const json&), DecoderOptions (*Options)(const ModelConfig&)>
Architecture decoder_architecture(const char* model_type, json (*tiny)(const std::string&), const char* tokenizer,
                                  double tiny_norm_mean, std::vector<std::string> optional = kRotaryBuffers) {
  return Architecture{
      .model_type = model_type,
      .parse_config = Parse,
      .weight_specs = [](const ModelConfig& c) { return decoder_weight_specs(c, Options(c)); },
      .create = [](ModelConfig c, std::shared_ptr<io::WeightStore> w) -> std::unique_ptr<Model> {
        auto o = Options(c);
        return std::make_unique<DecoderLM>(std::move(c), std::move(w), std::move(o));
      },
      .tiny_config = tiny,
      .tiny_tokenizer = tokenizer,
      .tiny_norm_mean = tiny_norm_mean,
      .optional_weights = std::move(optional),
  };
}

}  // namespace hfx::models

namespace hfx::models {
/// sliding_window as transformers reads it: absent → `def`, null → 0 (none).
int64_t sliding_window_of(const json& j, int64_t def);
/// A config.json skeleton for create-tiny's decoder presets (hidden 64, 2 layers, 4 heads, 2 kv heads,
/// head_dim 16, intermediate 128, vocab 512, f32, initializer_range 0.1); the architecture adds its own fields.
json tiny_decoder_config(const char* architecture_class, const char* model_type);  // initializer_range 0.1
/// Throws the unknown-preset error listing `known`.
[[noreturn]] void unknown_preset(const std::string& model_type, const std::string& preset, const std::string& known);
}  // namespace hfx::models
