// src/processors/pixel_common.h — what the image processors share (CLIP / SigLIP, Idefics3, Qwen2-VL):
// reading image_mean / image_std from a preprocessor_config.json, and transformers' rescale + normalize of
// one 8-bit sample.
#pragma once
#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

namespace hfx::processors::detail {

/// image_mean and image_std of `j` when present (3 numbers each, R G B), into mean / std; else they keep
/// their defaults. Throws hfx::Error("image processor", "expected 3 values (R, G, B) in <where>.<key>, …").
void read_mean_std(const nlohmann::json& j, std::string_view where, float mean[3], float std[3]);

/// transformers' rescale (float64 multiply, then float32) and normalize (float32) of sample `v` of channel
/// `c`.
inline float rescale_normalize(uint8_t v, int64_t c, bool do_rescale, double factor, bool do_normalize,
                               const float* mean, const float* std) {
  float x = do_rescale ? static_cast<float>(v * factor) : static_cast<float>(v);
  if (do_normalize) x = (x - mean[c]) / std[c];
  return x;
}

}  // namespace hfx::processors::detail
