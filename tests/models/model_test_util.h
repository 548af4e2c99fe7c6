// tests/models/model_test_util.h — helpers shared by the model tests: tiny models in memory or on disk,
// eager forward on host vectors, HF-style left padding.
#pragma once
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "hfx/io/safetensors.h"
#include "hfx/models/model.h"
#include "hfx/models/tiny.h"
#include "hfx/ops/builder.h"

namespace hfx::test {

/// The decoder-only causal LM architectures (default head causal_lm); encoder-only and encoder-decoder
/// families have their own tests.
inline std::vector<std::string> all_model_types() {
  std::vector<std::string> r;
  for (const Architecture* a : all_architectures())
    if (a->heads.empty() || a->heads.front().first == "causal_lm") r.push_back(a->model_type);
  return r;
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
