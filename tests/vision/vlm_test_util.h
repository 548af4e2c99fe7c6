// What the vision-language model tests (gemma3_test.cpp, idefics3_test.cpp) share: a temporary folder, the
// goldens' pixel pattern, the largest difference against golden numbers, and greedy decoding through an
// ImageTextEngine (the engine of `hfx generate --image`) from given input_ids and pixel_values.
#pragma once
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "hfx/runtime/image_text.h"

namespace hfx::test {

/// A fresh folder under the temp directory, removed with the object.
struct TempFolder {
  std::filesystem::path path;
  explicit TempFolder(const std::string& name)
      : path(std::filesystem::temp_directory_path() / ("hfx_" + name + "_" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempFolder() { std::filesystem::remove_all(path); }
};

/// The goldens' pixel_values: float32(1.5 · sin(0.37 · i)) over the flat index i.
inline std::vector<float> pattern_pixels(int64_t n) {
  std::vector<float> p(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; i++)
    p[static_cast<size_t>(i)] = static_cast<float>(1.5 * std::sin(0.37 * static_cast<double>(i)));
  return p;
}

/// max |got - want| over the values (their counts must agree).
inline double max_diff(const std::vector<float>& got, const nlohmann::json& want) {
  EXPECT_EQ(got.size(), want.size());
  double w = 0;
  for (size_t i = 0; i < got.size() && i < want.size(); i++)
    w = std::max(w, std::fabs(got[i] - want[i].get<double>()));
  return w;
}

/// Greedy decoding through `e`: the image features of `pixels` (shape `pixel_shape`) written over the rows
/// where `image_rows` is 1, a prefill (with those token types when `types`), then one token at a time over
/// the cache; at most 32 tokens, stopping at `eos`. `first_logits` gets the prefill's last logits.
inline std::vector<int64_t> greedy_through(rt::ImageTextEngine& e, std::span<const float> pixels,
                                           const std::vector<int64_t>& pixel_shape,
                                           const std::vector<int64_t>& ids,
                                           const std::vector<int64_t>& image_rows, bool types, int64_t eos,
                                           std::vector<float>* first_logits = nullptr) {
  std::vector<int64_t> fshape;
  const std::vector<float> feats = e.encode_images(pixels, pixel_shape, {}, fshape);
  const int64_t hidden = fshape[2];
  std::vector<float> emb = e.embed(ids);
  size_t k = 0;
  for (size_t i = 0; i < ids.size(); i++)
    if (image_rows[i] == 1) {
      std::copy_n(feats.begin() + static_cast<std::ptrdiff_t>(k * hidden), hidden,
                  emb.begin() + static_cast<std::ptrdiff_t>(i * hidden));
      k++;
    }
  EXPECT_EQ(static_cast<int64_t>(k * hidden), static_cast<int64_t>(feats.size()));
  e.reset();
  std::vector<int64_t> out;
  int64_t seq = static_cast<int64_t>(ids.size());
  for (int step = 0; step < 32; step++) {
    const std::vector<float> l = e.step(
        emb, seq, step == 0 && types ? std::span<const int64_t>(image_rows) : std::span<const int64_t>());
    if (step == 0 && first_logits) *first_logits = l;
    out.push_back(std::max_element(l.begin(), l.end()) - l.begin());
    if (out.back() == eos) break;
    const int64_t one[1] = {out.back()};
    emb = e.embed(one);
    seq = 1;
  }
  return out;
}

}  // namespace hfx::test
