// llava eager (src/models/llava_vision.h) on the `hfx create-tiny llava` checkpoint against transformers
// 4.47's LlavaForConditionalGeneration on the same checkpoint and pixel_values (tests/data/goldens/
// llava-tiny.json, made by tools/hf_goldens/make_llava_goldens.py): image features (vision tower,
// vision_feature_layer -2, 'default' strategy, projector), logits of the merged forward and 32 greedy tokens
// with one and with two images; and the error for more image tokens than images.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "hfx/core/error.h"
#include "hfx/io/safetensors.h"
#include "hfx/models/tiny.h"
#include "hfx/ops/builder.h"
#include "models/llava_vision.h"

namespace fs = std::filesystem;

namespace {

class LlavaEager : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("hfx_llava_eager_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    hfx::create_tiny("llava", dir_.string());
    golden_ = nlohmann::json::parse(hfx::io::read_file(HFX_TEST_DATA "/goldens/llava-tiny.json"));
    config_ = nlohmann::json::parse(hfx::io::read_file((dir_ / "config.json").string()));
    weights_ = hfx::io::WeightStore::open_dir(dir_.string());
  }
  void TearDown() override { fs::remove_all(dir_); }

  // The golden's pixel_values pattern: p[i] = float32(1.5 sin(0.37 i)), first `n` images.
  hfx::Tensor pixel_values(int64_t n) const {
    hfx::Shape shape = golden_["pixel_values_shape"].get<hfx::Shape>();
    shape[0] = n;
    std::vector<float> pv(static_cast<size_t>(hfx::shape_numel(shape)));
    for (size_t i = 0; i < pv.size(); i++)
      pv[i] = static_cast<float>(1.5 * std::sin(0.37 * static_cast<double>(i)));
    return hfx::Tensor::from_floats(shape, pv);
  }

  fs::path dir_;
  nlohmann::json golden_, config_;
  std::shared_ptr<hfx::io::WeightStore> weights_;
};

double max_diff(const hfx::Tensor& t, const nlohmann::json& want) {
  const auto got = t.to_floats();
  double m = 0;
  for (size_t i = 0; i < got.size(); i++) m = std::max(m, std::fabs(double(got[i]) - want[i].get<double>()));
  return m;
}

TEST_F(LlavaEager, ImageFeaturesEqualTransformers) {
  hfx::EagerBuilder b;
  const hfx::Var feats = hfx::models::llava_image_features(b, *weights_, config_, b.wrap(pixel_values(2)));
  ASSERT_EQ(feats.tensor().shape(), golden_["image_features_shape"].get<hfx::Shape>());
  const double d = max_diff(feats.tensor(), golden_["image_features"]);
  std::printf("[llava eager] image_features %s max |hfx - transformers| = %.3g\n",
              golden_["image_features_shape"].dump().c_str(), d);
  EXPECT_LE(d, 1e-4);
}

TEST_F(LlavaEager, LogitsAndGreedyTokensEqualTransformersWithOneAndTwoImages) {
  for (const auto& c : golden_["cases"]) {
    const int64_t n = c["images"];
    SCOPED_TRACE(n);
    const std::vector<int64_t> ids = c["input_ids"];
    const hfx::Tensor logits = hfx::models::llava_logits(
        *weights_, config_, hfx::Tensor::from_ints({1, int64_t(ids.size())}, ids), pixel_values(n));
    const int64_t S = logits.shape()[1];
    ASSERT_EQ(logits.shape()[2], 514);
    const double d = max_diff(logits.slice(1, S - 4, S).contiguous(), c["last_logits"]);
    const auto greedy = hfx::models::llava_greedy(*weights_, config_, ids, pixel_values(n), 32);
    std::printf(
        "[llava eager] %lld image(s): last-4 logits max |hfx - transformers| = %.3g, greedy %zu tokens %s\n",
        (long long)n, d, greedy.size(),
        greedy == c["greedy"].get<std::vector<int64_t>>() ? "equal" : "DIFFER");
    EXPECT_LE(d, 1e-4);
    EXPECT_EQ(greedy, c["greedy"].get<std::vector<int64_t>>());
  }
}

TEST_F(LlavaEager, MoreImageTokensThanImagesIsAClearError) {
  const std::vector<int64_t> two_images = golden_["cases"][1]["input_ids"];
  try {
    hfx::models::llava_greedy(*weights_, config_, two_images, pixel_values(1), 4);
    ADD_FAILURE() << "ran with 50 image tokens and 1 image";
  } catch (const hfx::Error& e) {
    EXPECT_NE(
        std::string(e.what()).find("[llava] expected 25 image tokens (id 512) in input_ids — 1 image(s) × 25 "
                                   "features each — got 50"),
        std::string::npos)
        << e.what();
  }
}

}  // namespace
