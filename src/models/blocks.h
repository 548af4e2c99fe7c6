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

#include "hfx/core/json.h"
#include "hfx/models/model.h"
#include "hfx/models/rope.h"
#include "hfx/ops/functional.h"

namespace hfx::models {

using nlohmann::json;
using WeightSpecs = std::vector<std::pair<std::string, Shape>>;

// ---- config ----
/// j[key] of config.json when present and not null, else `def`; a wrong type is a clear "[model] expected
/// config.json.<key> to be ..., got ..." (hfx/core/json.h), never a raw JSON exception.
template <typename T>
T jget(const json& j, const char* key, T def) {
  return jsonc::get_or<T>(j, key, std::move(def), "model", "config.json");
}
bool jhas(const json& j, const char* key);
/// int(factor · base), as transformers computes sizes derived from a config float (mamba2's `expand`,
/// lfm2's `block_ffn_dim_multiplier`). A factor that is not finite and positive, or a product of 2^40 or
/// more, is "[model] expected config.json.<key> ..." instead of an undefined float-to-integer conversion.
int64_t scaled_size(double factor, int64_t base, const char* key);

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
/// The layer-type vocabulary config.json's `layer_types` may use (transformers' names), each run by some
/// architecture (tests/models/layer_types_test.cpp; linear_attention is granitemoehybrid's mamba layer in
/// transformers 5). transformers' chunked_attention (Llama 4) is left out until an architecture runs it.
inline const std::vector<std::string> kLayerTypes = {"full_attention", "sliding_attention",
                                                     "linear_attention", "mamba", "conv"};
/// Sets cfg.layer_types from config.json's layer_types, else from `fallback(i)`; checks the length. An entry
/// outside kLayerTypes, or one that is not in `supported` (what this architecture runs), is
/// `[model] expected …, got '<type>' at layer N`.
void set_layer_types(ModelConfig& cfg, const std::function<bool(int64_t)>& sliding_fallback,
                     const std::vector<std::string>& supported = {"full_attention", "sliding_attention"});

/// config.json with GPT-2-style keys (GPT-J, CodeGen, GPT-BigCode: n_embd, n_layer, n_head, n_positions,
/// n_inner) also under the common names parse_common reads (their config classes' attribute_map);
/// intermediate_size is n_inner, or 4 · hidden_size when it is absent or null.
json with_common_names(const json& j, int64_t default_hidden);
/// A soft-capping value as the config class reads it: absent → the class default `def`, null → none (0).
double softcap_of(const json& j, const char* key, double def);
/// rope_config(c) with `partial` as the partial_rotary_factor when config.json states none (Phi and
/// Nemotron 0.5, StableLM 0.25: their config classes' defaults).
RopeConfig rope_config_partial(const ModelConfig& c, double partial);
/// Refuses a config knob this architecture does not implement, naming it: throws "[model] expected
/// config.json.<key> to be <expected> (hfx does not implement <what>), got <value>" when config.json sets
/// `key` to a value other than `expected` (absent and null are the default and pass).
void refuse_knob(const ModelConfig& c, const char* key, const json& expected, const char* what);

// ---- blocks (every call names its output after the HF module of the current scope) ----
/// A weight cast to f32.
Var W(Builder& b, const Model& m, const std::string& name);
/// Scope(local) + linear (weight [out, in], optional bias) + name_output.
Var linear(Builder& b, const Model& m, const Var& x, const std::string& local, bool bias);
/// x @ weight^T for a weight [N, K] by its full name: hfx.linear_q when the store holds its quantized form
/// (quant::quantize_model), else aten.linear on the f32 weight (LM heads, tied or not).
Var matmul_weight(Builder& b, const Model& m, const Var& x, const std::string& weight);
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
/// Gemma 3's image-text attention masks (additive f32 [B, 1, S, past + S]; first the global layers', then the
/// sliding layers'), as transformers 4.51's Gemma3ForConditionalGeneration._update_causal_mask and the
/// sliding layers' tril build them: key k is visible to query q when k <= q, or when both are image tokens
/// (token_type_ids == 1) of this chunk; padding keys (attention_mask 0) never; on sliding layers only when
/// q - k < window.
std::pair<Var, Var> image_text_masks(Builder& b, const Var& token_type_ids, const Var& attention_mask,
                                     const Sym& past, int64_t window);

// ---- the Llama-family decoder ----
/// A sparse mixture-of-experts MLP (Mixtral, Qwen2-MoE, Qwen3-MoE, OLMoE). Routing is softmax over the
/// router logits, then the top-k experts per token (optionally renormalized to sum 1); every expert runs
/// densely on every token and the outputs are combined with a dense [tokens, experts] weight that is zero
/// off the top-k — no data-dependent control flow, so every backend exports it as it is.
struct MoeOptions {
  int64_t num_experts = 0;  ///< 0: a dense MLP on every layer
  int64_t top_k = 0;
  int64_t intermediate = 0;  ///< each expert's intermediate size
  bool norm_topk_prob = false;
  std::string block = "mlp";   ///< Mixtral: block_sparse_moe
  bool mixtral_names = false;  ///< experts.N.w1 (gate) / w3 (up) / w2 (down) instead of gate/up/down_proj
  bool stacked = false;  ///< GraniteMoE: input_linear [E, 2I, H] (gate | up) and output_linear [E, H, I]
  std::string router = "gate";  ///< GraniteMoE: router.layer
  int64_t shared_intermediate =
      0;  ///< Qwen2-MoE shared_expert (0: none), gated by sigmoid(shared_expert_gate)
  std::string shared_name = "shared_expert";  ///< HunYuan-MoE, GraniteMoeShared: shared_mlp
  bool shared_sigmoid_gate = true;            ///< false: the shared MLP's output is added as it is
  bool shared_stacked = false;  ///< GraniteMoeShared: input_linear [2S, H] (gate | up), output_linear [H, S]
  bool shared_beside = false;   ///< GraniteMoeShared: the shared MLP is the layer's, beside the sparse block
  std::vector<bool> sparse_layers;  ///< per layer: MoE (true) or the dense MLP of intermediate_size
  /// PhiMoE's sparsemixer routing (eval): top-1 and top-2 each weighted by a softmax over the logits within
  /// 2·jitter_eps (relative) of it, the top-1 expert masked out for the second; always two experts.
  bool sparsemixer = false;
  double jitter_eps = 0.01;  ///< router_jitter_noise
  bool sparse(int64_t layer) const {
    return num_experts > 0 && (sparse_layers.empty() || sparse_layers.at(static_cast<size_t>(layer)));
  }
};

/// The norm a decoder uses everywhere (layers, q/k norms, the final norm), as transformers' module computes
/// it.
enum class NormKind {
  rms,              ///< RMSNorm x·rsqrt(mean x² + eps)·(offset + w) (Llama; Gemma: offset 1)
  layer,            ///< LayerNorm with weight and bias (Phi, StarCoder2, StableLM)
  layer_no_bias,    ///< LayerNorm with a weight only (Cohere's mean-subtracting CohereLayerNorm)
  layer_no_affine,  ///< LayerNorm without parameters (OLMo)
  layer_1p,         ///< LayerNorm with bias and weight + 1 (Nemotron's LayerNorm1P)
};

/// Where a layer's norms sit, by their Hugging Face names ("" = that norm is absent). Pre-norm Llama:
/// input + pre_mlp. Gemma 2's sandwich adds post_attn / post_mlp on the sublayer outputs; OLMo 2 has only
/// those two (post-norm); GLM-4 all four under its own names.
struct NormPlacement {
  std::string input = "input_layernorm";             ///< on the residual stream, before attention
  std::string post_attn;                             ///< on the attention output, before the residual add
  std::string pre_mlp = "post_attention_layernorm";  ///< on the residual stream, before the MLP
  std::string post_mlp;                              ///< on the MLP output, before the residual add
};

/// Gemma 2 / 3: norms on both sides of each sublayer.
inline NormPlacement sandwich_norms() {
  return {.input = "input_layernorm",
          .post_attn = "post_attention_layernorm",
          .pre_mlp = "pre_feedforward_layernorm",
          .post_mlp = "post_feedforward_layernorm"};
}

/// The Hugging Face module names of a decoder's checkpoint (Llama's by default): weights are
/// `<model>.<layers>.N.<attn>.<q>.weight`, ... and every intermediate is named after the same modules.
struct DecoderNames {
  std::string model = "model";                           ///< GPT-NeoX: gpt_neox; GPT-J: transformer
  std::string embed = "embed_tokens";                    ///< GPT-NeoX: embed_in; GPT-J: wte
  std::string layers = "layers";                         ///< GPT-J: h
  std::string attn = "self_attn";                        ///< GPT-NeoX: attention; GPT-J: attn
  std::string q = "q_proj", k = "k_proj", v = "v_proj";  ///< separate projections
  std::string qkv = "qkv_proj";                          ///< the fused one (GPT-NeoX: query_key_value)
  std::string mlp = "mlp";
  std::string lm_head = "lm_head";
  /// The weight-name prefix of layer `i`: "<model>.<layers>.i.".
  std::string layer(int64_t i) const { return model + "." + layers + "." + std::to_string(i) + "."; }
  std::string embed_weight() const { return model + "." + embed + ".weight"; }
};

/// How q, k and v are stored.
enum class QkvLayout {
  separate,  ///< q_proj, k_proj, v_proj (Llama)
  concat,    ///< one projection, rows [q; k; v] (Phi-3 qkv_proj)
  per_head,  ///< one projection, rows per head [q_h; k_h; v_h] (GPT-NeoX query_key_value; no GQA)
  codegen,   ///< one projection in 4 model-parallel groups, each rows [q_g; v_g; k_g] (CodeGen qkv_proj)
};

/// OLMo 2 / OLMo 3 / EXAONE 4: norms on the sublayer outputs only (no input_layernorm).
inline NormPlacement post_norms() {
  return {.input = "",
          .post_attn = "post_attention_layernorm",
          .pre_mlp = "",
          .post_mlp = "post_feedforward_layernorm"};
}

struct DecoderOptions {
  DecoderNames names;
  std::string act = "silu";
  NormKind norm = NormKind::rms;
  double norm_offset = 0.0;  ///< RMSNorm x·(offset + w) (Gemma: 1)
  NormPlacement norms;
  /// h + attn(n(h)) + mlp(n'(h)) in one step (Phi, Cohere: n' = n, norms.pre_mlp ""; GPT-NeoX: two norms).
  bool parallel_residual = false;
  bool qkv_bias = false, o_bias = false, mlp_bias = false;
  QkvLayout qkv = QkvLayout::separate;
  bool fused_gate_up = false;  ///< Phi-3 mlp.gate_up_proj
  /// false: a plain MLP mlp_out(act(mlp_in(x))) (Phi fc1/fc2, StarCoder2 c_fc/c_proj, Nemotron up/down_proj).
  bool gated_mlp = true;
  std::string mlp_in = "up_proj", mlp_out = "down_proj";
  std::string o_proj = "o_proj";    ///< Phi: self_attn.dense
  std::string final_norm = "norm";  ///< Phi: model.final_layernorm
  bool lm_head_bias = false;        ///< Phi: lm_head.bias
  bool qk_norm = false;             ///< Qwen3 q_norm / k_norm over head_dim
  bool qk_norm_after_rope = false;  ///< HunYuan: the per-head q/k norms run on the rotated q/k
  std::string q_norm = "q_norm", k_norm = "k_norm";  ///< HunYuan: query_layernorm / key_layernorm
  bool qk_norm_flat = false;  ///< OLMoE q_norm [H·D] / k_norm [K·D] on the projections, before the head split
  double clip_qkv = 0.0;      ///< OLMoE: clamp q/k/v to ±clip_qkv (0: none)
  bool scale_embeddings = false;  ///< Gemma: × sqrt(hidden) rounded to the model dtype
  bool scale_in_embedding =
      false;  ///< Gemma 3: the scale is embed_tokens' own (inputs_embeds are not scaled)
  double attn_softcap = 0.0, final_softcap = 0.0;
  double attn_scale = 0.0;                                                             ///< 0: head_dim^-0.5
  double embedding_multiplier = 1.0, residual_multiplier = 1.0, logits_scaling = 1.0;  ///< Granite
  double logits_multiplier = 1.0;  ///< Cohere: logits × logit_scale
  RopeConfig rope;
  std::optional<RopeConfig> rope_local;  ///< Gemma 3: the rope of sliding_attention layers (else `rope`)
  /// Learned absolute positions added to the token embeddings (GPT-BigCode wpe, OPT embed_positions, under
  /// names.model): row position + position_offset (OPT: 2). "": none.
  std::string position_embedding;
  int64_t position_offset = 0;
  /// With position_embedding: the rows are fairseq's sinusoidal table (fairseq_sinusoidal_table, pad row
  /// pad_token_id), computed, not weights (XGLM).
  bool sinusoidal_positions = false;
  bool rotary = true;  ///< false: no rotary embedding on any layer (learned positions instead)
  /// Positions exist only below max_position_embeddings (GPT-J / CodeGen read sin/cos from a table of
  /// n_positions rows): past + sequence beyond it is refused (learned positions imply it).
  bool bounded_positions = false;
  /// Per layer: true where the layer applies no rotary embedding (SmolLM3's no_rope_layers 0, Cohere 2's
  /// full-attention layers). Empty: every layer rotates.
  std::vector<bool> nope_layers;
  /// ALiBi (BLOOM, MPT): slope_h · key position added to head h's scores, one slope per attention head
  /// (alibi_slopes_bloom / alibi_slopes_mpt); softmax's shift invariance makes the query's position moot.
  /// Empty: none.
  std::vector<double> alibi_slopes;
  /// A norm of the token embeddings before the first layer, under names.model (BLOOM's
  /// word_embeddings_layernorm); "": none.
  std::string embed_norm;
  MoeOptions moe;
};

/// fairseq's sinusoidal position table (M2M100, XGLM get_embedding), float32 as torch computes it: `rows` ×
/// `dim`, column j < dim/2 sin(pos · exp(-j · ln(10000) / (dim/2 - 1))), column dim/2 + j its cos; row `pad`
/// zero.
Tensor fairseq_sinusoidal_table(int64_t rows, int64_t dim, int64_t pad);
/// BLOOM's build_alibi_tensor slopes: 2^(-8i/n) for the largest power of two n <= heads, then the odd
/// powers of 2^(-4/n) for the rest.
std::vector<double> alibi_slopes_bloom(int64_t heads);
/// MPT's build_mpt_alibi_tensor slopes: 1 / 2^(i · bias_max / n) over the next power of two n >= heads,
/// the odd-indexed ones first when heads is not a power of two.
std::vector<double> alibi_slopes_mpt(int64_t heads, double bias_max);

/// Reads and checks the router sizes: `experts_key` (num_local_experts / num_experts) and
/// num_experts_per_tok, both positive with top-k <= experts; else `[model] expected …`.
MoeOptions parse_moe(const ModelConfig& c, const char* experts_key, int64_t def_experts, int64_t def_top_k);
/// Qwen2-MoE / Qwen3-MoE / sparse-step families: layer i is sparse when it is not in mlp_only_layers and
/// (i + 1) % decoder_sparse_step == 0.
std::vector<bool> sparse_layers_by_step(const ModelConfig& c);

WeightSpecs decoder_weight_specs(const ModelConfig& cfg, const DecoderOptions& o);

class DecoderLM : public CausalLM {
 public:
  DecoderLM(ModelConfig cfg, std::shared_ptr<io::WeightStore> w, DecoderOptions o)
      : CausalLM(std::move(cfg), std::move(w)), o_(std::move(o)) {}
  ForwardOut forward(Builder& b, const ForwardArgs& args) const override;
  const DecoderOptions& options() const { return o_; }
  /// model.embed_tokens on input_ids, in f32, with the scale the module itself applies (Gemma 3's
  /// sqrt(hidden) in the model dtype); the forward's own embedding.
  Var embed(Builder& b, const Var& input_ids) const;

 protected:
  /// self_attn of `layer` in the current scope; rotary only when cos/sin are given (a NoPE layer passes
  /// none). `full_mask`: `mask` is the whole [B, 1, S, T] mask (image_text_masks); no causal or window rule
  /// is added.
  Var attention(Builder& b, const Var& x, int layer, const Var& cos, const Var& sin, const Var& mask,
                KVCache* cache, bool full_mask = false) const;
  Var mlp(Builder& b, const Var& x, int64_t layer) const;
  /// The decoder's norm (o_.norm) named `local` in the current scope; eps is config.norm_eps.
  Var norm(Builder& b, const Var& x, const std::string& local) const;
  /// Rotary cos/sin of one layer (both undefined on a NoPE layer).
  struct LayerRope {
    Var cos, sin;
  };
  /// Decoder layer `i` in the current scope on the residual stream `h`.
  Var layer(Builder& b, Var h, int64_t i, const LayerRope& r, const Var& mask, KVCache* cache,
            bool full_mask) const;
  /// The sparse MoE block (o_.moe) in the current scope.
  Var moe(Builder& b, const Var& x) const;
  /// The MoE's shared (always-on) MLP, o_.moe.shared_name in the current scope.
  Var shared_mlp(Builder& b, const Var& x) const;
  /// The position_embedding rows of `pos` (+ position_offset) in the current scope.
  Var position_embedding(Builder& b, const Var& pos) const;
  /// `mask` (or none) plus the ALiBi bias of o_.alibi_slopes over T keys.
  Var with_alibi(Builder& b, const Var& mask, const Sym& T) const;

 private:
  DecoderOptions o_;
};

/// The text model of a vision-language checkpoint: `ta` built on `text_config` over the model's weights
/// (weight prefixes are the caller's). Throws "[model] expected <owner>'s text model to be a decoder of the
/// shared blocks, got <model_type>" for an architecture with its own forward.
std::unique_ptr<DecoderLM> make_text_decoder(const Architecture& ta, const json& text_config,
                                             std::shared_ptr<io::WeightStore> w, const std::string& owner);
/// get(in, name), or "[model] expected input '<name>' for component '<component>' of <owner>, got none".
Var need_input(const NamedVars& in, const char* name, const std::string& component, const std::string& owner);

/// A vision-language model's `decoder` component: the text model's `model` component on inputs_embeds
/// [batch_size, sequence_length, hidden] instead of input_ids (llava, gemma3, idefics3).
ComponentDecl decoder_on_embeddings(const CausalLM& lm, int64_t hidden);

/// Rotary inv_freq buffers some checkpoints carry; never needed (hfx computes them from the config).
inline const std::vector<std::string> kRotaryBuffers = {
    R"(model\.rotary_emb\.inv_freq)", R"(model\.layers\.\d+\.self_attn\.rotary_emb\.inv_freq)"};

/// The Architecture of a Llama-family decoder: `Parse` reads config.json, `Options` picks the decoder's
/// variant from the parsed config; weights and the forward are the shared DecoderLM's.
template <ModelConfig (*Parse)(const json&), DecoderOptions (*Options)(const ModelConfig&)>
Architecture decoder_architecture(const char* model_type, json (*tiny)(const std::string&),
                                  const char* tokenizer, double tiny_norm_mean,
                                  std::vector<std::string> optional = kRotaryBuffers) {
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
      // module names do not depend on the config: the tiny one's are the architecture's
      .embedding_weight = Options(Parse(tiny("tiny"))).names.embed_weight(),
      .lm_head_weight = Options(Parse(tiny("tiny"))).names.lm_head + ".weight",
  };
}

}  // namespace hfx::models

namespace hfx::models {
/// sliding_window as transformers reads it: absent → `def`, null → 0 (none).
int64_t sliding_window_of(const json& j, int64_t def);
/// A config.json skeleton for create-tiny's decoder presets (hidden 64, 2 layers, 4 heads, 2 kv heads,
/// head_dim 16, intermediate 128, vocab 512, f32, initializer_range 0.1); the architecture adds its own
/// fields.
json tiny_decoder_config(const char* architecture_class, const char* model_type);  // initializer_range 0.1
/// Throws the unknown-preset error listing `known`.
[[noreturn]] void unknown_preset(const std::string& model_type, const std::string& preset,
                                 const std::string& known);
}  // namespace hfx::models
