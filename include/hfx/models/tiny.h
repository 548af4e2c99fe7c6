// hfx/models/tiny.h — random checkpoints in the exact Hugging Face layout (`hfx create-tiny`).
//
// A folder with config.json, generation_config.json, model.safetensors, tokenizer.json and
// tokenizer_config.json. Weights are N(0, 0.02) (norm weights near 1, or near 0 for (1 + w) norms),
// deterministic from the seed and the tensor name. model.safetensors is streamed tensor by tensor, so a
// multi-GB preset never sits in memory; every file is written atomically (temp + rename).
#pragma once
#include <cstdint>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "hfx/core/tensor.h"
#include "hfx/models/model.h"

namespace hfx {

struct TinyOptions {
  std::string preset = "tiny";   ///< "tiny" or an architecture's real-shape preset (e.g. "llama-3.2-1b")
  std::optional<DType> dtype{};  ///< default: the preset's torch_dtype
  uint64_t seed = 0;
  int64_t layers = 0;  ///< 0 = the preset's layer count
  /// > 0: the weights' standard deviation, written to config.json as `initializer_range` (default: the
  /// preset's, else 0.02). Larger values give a random model a trained model's logit scale (|logits| in
  /// the tens), where errors that scale with the activations show.
  double initializer_range = 0;
  /// Task head (Architecture::heads: "base", "masked_lm", ...); empty = the architecture's default. Sets
  /// config.json's `architectures`; classification heads also get id2label/label2id.
  std::string head{};
  /// Non-empty: also write a sentence-transformers model around the checkpoint (modules.json,
  /// 1_Pooling/config.json with this pooling mode — "mean", "cls" or "max" —, an empty 2_Normalize/,
  /// sentence_bert_config.json, config_sentence_transformers.json). Encoder-only base models only.
  std::string sentence_pooling{};
};

/// The config.json create-tiny writes (vocab_size already matched to the fixture tokenizer).
nlohmann::json tiny_model_config(const std::string& model_type, const TinyOptions& opt);
/// One random tensor, deterministic from (seed, name).
Tensor tiny_random_tensor(const std::string& name, const Shape& shape, DType dt, uint64_t seed, double mean,
                          double std);
/// Every weight of `cfg` as create-tiny fills it (in memory; for tests and small models).
std::map<std::string, Tensor> tiny_weights(const ModelConfig& cfg, DType dt, uint64_t seed);
/// Writes the whole folder. Returns the config.json written.
nlohmann::json create_tiny(const std::string& model_type, const std::string& dir,
                           const TinyOptions& opt = {});

}  // namespace hfx
