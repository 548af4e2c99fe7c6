// llava's vision encoder (CLIP vision tower, vision_feature_layer -2, 'default' strategy, projector) on the
// `hfx create-tiny llava` checkpoint against transformers 4.47's LlavaForConditionalGeneration
// .get_image_features on the same checkpoint and pixel_values (tests/data/goldens/llava-image-features.json,
// made by tools/hf_goldens/make_llava_goldens.py).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "hfx/io/safetensors.h"
#include "hfx/models/tiny.h"
#include "hfx/ops/builder.h"
#include "models/llava_vision.h"

namespace fs = std::filesystem;

TEST(LlavaVision, ImageFeaturesEqualTransformers) {
  const fs::path dir = fs::temp_directory_path() / ("hfx_llava_vision_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  hfx::create_tiny("llava", dir.string());
  const auto golden = nlohmann::json::parse(hfx::io::read_file(HFX_TEST_DATA "/goldens/llava-image-features.json"));
  const hfx::Shape shape = golden["pixel_values_shape"].get<hfx::Shape>();
  std::vector<float> pv(static_cast<size_t>(hfx::shape_numel(shape)));
  for (size_t i = 0; i < pv.size(); i++) pv[i] = static_cast<float>(1.5 * std::sin(0.37 * static_cast<double>(i)));

  const auto config = nlohmann::json::parse(hfx::io::read_file((dir / "config.json").string()));
  const auto weights = hfx::io::WeightStore::open_dir(dir.string());
  hfx::EagerBuilder b;
  const hfx::Var feats =
      hfx::models::llava_image_features(b, *weights, config, b.wrap(hfx::Tensor::from_floats(shape, pv)));
  const hfx::Tensor& t = feats.tensor();
  ASSERT_EQ(t.shape(), golden["image_features_shape"].get<hfx::Shape>());
  const auto& want = golden["image_features"];
  double max_diff = 0;
  for (int64_t i = 0; i < t.numel(); i++)
    max_diff = std::max(max_diff, std::fabs(double(t.data<float>()[i]) - want[size_t(i)].get<double>()));
  std::printf("[llava vision] image_features %s max |hfx - transformers| = %.3g\n",
              golden["image_features_shape"].dump().c_str(), max_diff);
  EXPECT_LE(max_diff, 1e-4);
  fs::remove_all(dir);
}
