// tests/models/model_test_util.h — helpers shared by the model tests: tiny models in memory or on disk,
// eager forward on host vectors, HF-style left padding.
#pragma once
#include <gtest/gtest.h>
#include <unistd.h>

#include <cctype>
#include <filesystem>
#include <string>
#include <vector>

#include "hfx/io/safetensors.h"
#include "hfx/models/model.h"
#include "hfx/models/tiny.h"
#include "hfx/ops/builder.h"

namespace hfx::test {

/// A decoder-only causal LM architecture: no heads declared, or causal_lm as the default head.
inline bool is_decoder_only(const Architecture& a) {
  return a.heads.empty() || a.heads.front().first == "causal_lm";
}
/// An encoder-only architecture: its heads include masked_lm (bert, roberta, ...).
inline bool is_encoder_only(const Architecture& a) {
  for (const auto& h : a.heads)
    if (h.first == "masked_lm") return true;
  return false;
}

/// A decoder-only architecture whose layers all keep a KV cache (full or sliding attention).
inline bool has_kv_cache_only(const Architecture& a) {
  for (const std::string& t : a.parse_config(a.tiny_config("tiny")).layer_types)
    if (t != "full_attention" && t != "sliding_attention") return false;
  return true;
}

/// The decoder-only model types with a KV cache: the suites written for causal LMs run over these. They
/// drive CausalLM::forward with a DynamicCache (past_key_values.N.key/value), or the ExecuTorch static
/// KV cache; a state-space model (mamba) carries conv/ssm leaves instead and is covered by its own
/// tests (tests/models/mamba_test.cpp, tests/export/onnx/ort_mamba_test.cpp).
inline std::vector<std::string> all_model_types() {
  std::vector<std::string> r;
  for (const Architecture* a : all_architectures())
    if (is_decoder_only(*a) && has_kv_cache_only(*a)) r.push_back(a->model_type);
  return r;
}

/// The encoder-only model types.
inline std::vector<std::string> encoder_model_types() {
  std::vector<std::string> r;
  for (const Architecture* a : all_architectures())
    if (is_encoder_only(*a)) r.push_back(a->model_type);
  return r;
}

/// Whether create-tiny's checkpoint of an encoder type takes token_type_ids (type_vocab_size 2: the
/// BERT-style configs; RoBERTa-style ones have 1 type and export input_ids and attention_mask only).
inline bool tiny_takes_token_types(const std::string& arch) {
  return arch == "bert" || arch == "ernie" || arch == "electra" || arch == "albert";
}

/// A gtest parameter name from a model type ("xlm-roberta" → "xlm_roberta").
inline std::string param_name(std::string s) {
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

/// A fresh folder under the temp dir, removed on destruction.
struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string& tag) {
    path = std::filesystem::temp_directory_path() / ("hfx_models_" + tag + "_" + std::to_string(::getpid()));
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

/// A tiny model over in-memory weights (f32 unless `dt`).
inline std::unique_ptr<CausalLM> tiny_in_memory(const std::string& model_type, uint64_t seed = 0,
                                                nlohmann::json overrides = nlohmann::json::object(),
                                                DType dt = DType::F32) {
  TinyOptions o;
  o.seed = seed;
  nlohmann::json cfg = tiny_model_config(model_type, o);
  cfg.update(overrides);
  cfg["torch_dtype"] = dtype_name(dt);
  ModelConfig mc = parse_model_config(cfg);
  auto w = io::WeightStore::from_tensors(tiny_weights(mc, dt, seed));
  return make_causal_lm(cfg, w);
}

/// Left-pads `rows` with `pad` into input_ids/attention_mask [B, T] and HF position ids
/// (cumsum(mask) - 1, 1 where masked).
struct Batch {
  int64_t B = 0, T = 0;
  std::vector<int64_t> ids, mask, pos;
};
inline Batch left_pad(const std::vector<std::vector<int64_t>>& rows, int64_t pad = 0) {
  Batch b;
  b.B = static_cast<int64_t>(rows.size());
  for (const auto& r : rows) b.T = std::max<int64_t>(b.T, static_cast<int64_t>(r.size()));
  for (const auto& r : rows) {
    int64_t n = static_cast<int64_t>(r.size()), p = b.T - n;
    for (int64_t i = 0; i < b.T; i++) {
      bool real = i >= p;
      b.ids.push_back(real ? r[i - p] : pad);
      b.mask.push_back(real ? 1 : 0);
      b.pos.push_back(real ? i - p : 1);
    }
  }
  return b;
}

inline Tensor ints(const Shape& s, const std::vector<int64_t>& v) { return Tensor::from_ints(s, v); }

}  // namespace hfx::test
