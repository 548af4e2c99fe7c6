// hfx/models/model.h — Hugging Face models defined once, for eager runs and every export.
//
// A model is a set of named components (hfx/models/component.h): a causal LM has one (`model`), an
// encoder-only model one (`model`), an encoder-decoder two (`encoder`, `decoder`). Each component is a
// function from named inputs to named outputs written against the functional API, so the same code runs
// eagerly and under capture. The model's generation structure says which generation loop drives the
// components (src/capture/generation_loops.cpp), and capture records those real calls to derive every
// exported signature.
//
// An architecture is a config mapping (config.json → ModelConfig, as transformers reads it), the list
// of its weights with shapes (used both to validate a checkpoint and to create a random one), and the
// model class. Architectures register themselves in one table (src/models/registry.cpp). Every
// intermediate is named after its Hugging Face module.
#pragma once
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "hfx/io/safetensors.h"
#include "hfx/models/component.h"
#include "hfx/ops/builder.h"
#include "hfx/quant/quantize.h"

namespace hfx {

/// What transformers reads from config.json (common fields; architecture extras stay in `raw`).
struct ModelConfig {
  nlohmann::json raw;
  std::string model_type;
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_hidden_layers = 0;
  int64_t num_attention_heads = 0;
  int64_t num_key_value_heads = 0;
  int64_t head_dim = 0;
  int64_t max_position_embeddings = 0;
  double norm_eps = 1e-6;
  double rope_theta = 10000.0;
  bool tie_word_embeddings = false;
  DType dtype = DType::F32;    ///< torch_dtype / dtype of the checkpoint
  int64_t sliding_window = 0;  ///< 0 = none
  /// Per layer: "full_attention" or "sliding_attention".
  std::vector<std::string> layer_types;
  std::optional<int64_t> bos_token_id, pad_token_id;
  std::vector<int64_t> eos_token_ids;
  /// A GPTQ / AWQ checkpoint's quantization (config.json's quantization_config, read by make_model): the
  /// linear weights are in the store as codes (hfx/models/quantize_model.h); none for a float checkpoint.
  quant::QuantOptions prequantized;
  /// The quantized linear layers round their activations to int8 per block (hfx.linear_q act_bits 8),
  /// set by quant::quantize_model for QuantOptions::int8_activations: eager's counterpart of ONNX Runtime's
  /// MatMulNBits accuracy_level 4.
  bool int8_activations = false;
};

/// Layout of one cache layer, as capture flattens it into named leaves.
struct CacheLayerSpec {
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  std::string layer_type = "full_attention";
  int64_t window = 0;
};

/// The KV cache as an explicit structure: per layer, key and value [B, Hkv, T, D] and the layer type.
class KVCache {
 public:
  virtual ~KVCache() = default;
  /// Appends this step's key/value for `layer` and returns the full key/value to attend over.
  virtual std::pair<Var, Var> update(int layer, const Var& k, const Var& v) = 0;
  /// Number of tokens already in the cache before this step (symbolic when tracing).
  virtual Sym past_length() const = 0;
  virtual const std::vector<CacheLayerSpec>& layout() const = 0;
};

/// Grows by concatenation along dim 2 (what generation and ONNX/dynamo graphs use). Sliding layers keep
/// their full history too: the window is enforced by the attention (hfx.sdpa's `window`, aligned
/// bottom-right on cache positions), exactly as transformers' DynamicCache + sliding mask behave, so a
/// cached step and a full recomputation see the same keys. past_length() is layer 0's length (0 when
/// empty), read before the step's first update.
class DynamicCache : public KVCache {
 public:
  explicit DynamicCache(std::vector<CacheLayerSpec> layout);
  /// Sets layer `i`'s past (absent Vars = empty past).
  void set_past(int layer, const Var& k, const Var& v);
  std::pair<Var, Var> update(int layer, const Var& k, const Var& v) override;
  Sym past_length() const override;
  const std::vector<CacheLayerSpec>& layout() const override { return layout_; }
  /// The key/value of layer i after the last update (the "present" leaves).
  const Var& key(int layer) const { return keys_.at(layer); }
  const Var& value(int layer) const { return values_.at(layer); }
  /// Drops all cache state (every layer becomes empty).
  void reset();

 private:
  std::vector<CacheLayerSpec> layout_;
  std::vector<Var> keys_, values_;
};

struct ForwardArgs {
  Var input_ids;  ///< int64 [B, S]
  /// float32 [B, S, hidden]: the token embeddings instead of input_ids (a vision-language model's
  /// decoder, after the image features replaced the image tokens' rows); scaling the architecture applies
  /// to embeddings (Gemma's sqrt(hidden), Granite's multiplier) still applies.
  Var inputs_embeds;
  Var attention_mask;  ///< int64 [B, past + S] (1 = token, 0 = padding); absent = all ones
  Var position_ids;    ///< int64 [B, S]; absent = past .. past + S - 1
  /// int64 [B, S], Gemma 3's image-text model: tokens of type 1 (image tokens) attend to every image token
  /// of the chunk, also ahead of them (transformers 4.51's bidirectional image attention); absent = causal.
  Var token_type_ids;
  KVCache* cache = nullptr;  ///< absent = no cache (full recomputation)
  /// Compute logits only for the last `logits_to_keep` positions (0 = all).
  int64_t logits_to_keep = 0;
};

struct ForwardOut {
  Var logits;  ///< float32 [B, S or logits_to_keep, V]
};

/// Base of every model: config, weights and the component interface.
class Model {
 public:
  Model(ModelConfig cfg, std::shared_ptr<io::WeightStore> w) : cfg_(std::move(cfg)), weights_(std::move(w)) {}
  virtual ~Model() = default;
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  /// Which generation loop drives the components.
  virtual Structure structure() const = 0;
  /// The task head, as transformers names the class suffix: "causal_lm", "base", "masked_lm",
  /// "sequence_classification", "token_classification", "seq2seq_lm", "image_text_to_text".
  virtual std::string head() const = 0;
  /// Every component with its declared inputs and cache leaves.
  virtual std::vector<ComponentDecl> components() const = 0;
  /// Runs `component` on named inputs (a subset of its declared inputs: optional ones may be absent)
  /// and returns its named outputs in signature order. Throws hfx::Error("<component>", ...) for an
  /// unknown component or a missing required input.
  virtual NamedVars call(const std::string& component, Builder& b, const NamedVars& inputs,
                         const CallOptions& opts = {}) const = 0;

  /// The declaration of `name`; throws hfx::Error("model", ...) listing the components otherwise.
  ComponentDecl component(const std::string& name) const;
  std::vector<std::string> component_names() const;

  const ModelConfig& config() const { return cfg_; }
  const io::WeightStore& weights() const { return *weights_; }
  std::shared_ptr<io::WeightStore> weights_ptr() const { return weights_; }
  /// A weight by its Hugging Face name, as a Var of `b` (stored dtype; blocks cast it to f32 at use).
  Var w(Builder& b, const std::string& name) const;
  Var w_opt(Builder& b, const std::string& name) const;  ///< absent if the checkpoint lacks it
  /// This model is part of a larger checkpoint whose weights carry `prefix` (llava's language model:
  /// "language_model."): w() and w_opt() read `prefix + name`, and the graphs name the weights so.
  void set_weight_prefix(std::string prefix) { set_weight_rename("", std::move(prefix)); }
  /// Names that start with `from` are read as `to` + the rest (idefics3's text model: "model." →
  /// "model.text_model.", its lm_head unchanged); set_weight_prefix(p) is set_weight_rename("", p).
  void set_weight_rename(std::string from, std::string to) {
    rename_from_ = std::move(from);
    rename_to_ = std::move(to);
  }
  /// The checkpoint's name of the weight this model calls `name`.
  std::string weight_name(const std::string& name) const;

 private:
  ModelConfig cfg_;
  std::shared_ptr<io::WeightStore> weights_;
  std::string rename_from_, rename_to_;
};

/// A decoder-only causal LM: one component `model` (input_ids, attention_mask, position_ids,
/// past_key_values.N.key/value → logits, present.N.key/value) driven by the decoder-only loop.
class CausalLM : public Model {
 public:
  using Model::Model;
  virtual ForwardOut forward(Builder& b, const ForwardArgs& args) const = 0;
  /// The cache this architecture needs, layer by layer.
  virtual std::vector<CacheLayerSpec> cache_layout() const;

  Structure structure() const override { return Structure::DecoderOnly; }
  std::string head() const override { return "causal_lm"; }
  std::vector<ComponentDecl> components() const override;
  NamedVars call(const std::string& component, Builder& b, const NamedVars& inputs,
                 const CallOptions& opts = {}) const override;
};

/// Whether every cache leaf of the model's first component is a KV pair (layer type full_attention or
/// sliding_attention): the paths written for KV caches (ExecuTorch's static cache, verify's causal-LM
/// checks) take these; a state-space model's conv/ssm leaves go the structure-independent way.
bool kv_cache_only(const Model& m);

/// One architecture, registered once in src/models/registry.cpp.
struct Architecture {
  std::string model_type;
  /// config.json → ModelConfig (architecture-specific defaults and checks).
  ModelConfig (*parse_config)(const nlohmann::json& config);
  /// Every weight the architecture needs with its shape (used to validate and to create).
  std::vector<std::pair<std::string, Shape>> (*weight_specs)(const ModelConfig& cfg);
  std::unique_ptr<Model> (*create)(ModelConfig cfg, std::shared_ptr<io::WeightStore> w);
  /// config.json of a tiny random model (for create-tiny), by preset name ("tiny" or a real model's shape).
  /// Throws hfx::Error("model", ...) listing the presets for an unknown name.
  nlohmann::json (*tiny_config)(const std::string& preset);
  /// Fixture tokenizer kind for create-tiny, by tok::tiny_tokenizer_kind_name: "byte_level"
  /// (GPT-2/Llama-3/Qwen), "sentencepiece" (Llama-2/Mistral/Gemma), "wordpiece", "roberta_bpe",
  /// "modernbert_bpe", "t5_unigram", "xlmr_unigram", "marian_unigram".
  const char* tiny_tokenizer = "byte_level";
  /// Mean of create-tiny's random 1-d norm weights: 1 for x·w norms, 0 for x·(1 + w) norms (Gemma).
  double tiny_norm_mean = 1.0;
  /// Weights a checkpoint may carry that the model ignores (regexes over names, e.g. rotary inv_freq).
  std::vector<std::string> optional_weights = {};
  /// Linear weights stored [in, out] (GPT-2's Conv1D; regexes over names): quant::quantize_model
  /// quantizes their transpose, so the codes hold [out, in] as for every other linear weight.
  std::vector<std::string> transposed_weights = {};
  /// The task heads the architecture supports: head name ("causal_lm", "base", "masked_lm",
  /// "sequence_classification", "token_classification", "seq2seq_lm", "image_text_to_text") → the
  /// transformers class that config.json's `architectures` names for it. The first is the default
  /// (create-tiny, and configs without `architectures`). Empty: one head, "causal_lm".
  std::vector<std::pair<std::string, std::string>> heads = {};
  /// Other layouts of the same weights that checkpoints carry: {from, to} prefix pairs. A checkpoint that
  /// has names under `from` and none under `to` is read as if each `from...` were `to...` (transformers 5's
  /// save_pretrained writes llava's CLIP tower as vision_tower.* where the Hub's files say
  /// vision_tower.vision_model.*; transformers loads both).
  std::vector<std::pair<std::string, std::string>> weight_layouts = {};
  /// The token embedding table a decoder gathers from and a tied head reads (quantize_model's
  /// QuantOptions::embedding quantizes it; the forward reads its codes). Empty: the forward has no quantized
  /// gather, and --quantize-embedding is refused.
  std::string embedding_weight = "";
  /// The LM head's weight (BioGPT: output_projection.weight): where quantize_model puts a tied head's own
  /// codes, the name the forward looks them up by.
  std::string lm_head_weight = "lm_head.weight";
};

/// The head a config selects: the head whose class is config.json's architectures[0] (the default head
/// when absent). Throws hfx::Error("model", "expected one of the classes [...] of MODEL_TYPE, got 'X'").
std::string head_of(const Architecture& arch, const nlohmann::json& config);
/// The generation structure a config.json gives (its model_type's architecture and head), without loading
/// weights: causal_lm → decoder-only, seq2seq_lm → encoder-decoder, image_text_to_text → vision-language,
/// any other head → encoder-only. Throws hfx::Error("model", ...) for an unknown model_type or class.
Structure structure_of_config(const nlohmann::json& config);

/// The architecture of `model_type`. An unknown one throws hfx::Error("model", "expected a supported
/// model_type, got 'X' (nearest: a, b, c); ... docs/adding-an-architecture.md").
const Architecture& architecture(const std::string& model_type);
const Architecture* find_architecture(const std::string& model_type);
std::vector<const Architecture*> all_architectures();
/// The `n` supported model types nearest to `model_type` by edit distance (ties in registry order).
std::vector<std::string> nearest_model_types(const std::string& model_type, size_t n);

/// Loads config.json + safetensors from a folder, validates every weight name and shape.
std::unique_ptr<Model> load_model(const std::string& dir);
/// Builds a model over given weights (validated).
std::unique_ptr<Model> make_model(const nlohmann::json& config, std::shared_ptr<io::WeightStore> w);
/// The same for the callers that need a decoder-only causal LM: throws hfx::Error("model", "expected a
/// decoder-only model ..., got <structure> <model_type>") otherwise.
std::unique_ptr<CausalLM> load_causal_lm(const std::string& dir);
std::unique_ptr<CausalLM> make_causal_lm(const nlohmann::json& config, std::shared_ptr<io::WeightStore> w);
/// `m` as a CausalLM, or the same error.
const CausalLM& as_causal_lm(const Model& m);
/// Checks `w` against the architecture's weight_specs: every tensor present with its shape, no surplus
/// (beyond `optional_weights` and lm_head.weight when tied). Throws hfx::Error("model",
/// "expected tensor 'NAME' of shape [..], got [..] in FILE").
void validate_weights(const Architecture& arch, const ModelConfig& cfg, const io::WeightStore& w,
                      const std::string& where);
/// config.json → ModelConfig through the architecture of its model_type (error lists the supported ones).
ModelConfig parse_model_config(const nlohmann::json& config);

}  // namespace hfx
