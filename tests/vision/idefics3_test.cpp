// idefics3 (Idefics3ForConditionalGeneration) and smolvlm (SmolVLMForConditionalGeneration) against goldens
// of the real transformers, 4.47 and 4.51 (tests/data/goldens/{idefics3,smolvlm}-tiny.json,
// tools/hf_goldens/make_idefics3_goldens.py on the checkpoint `hfx create-tiny ARCH` writes): pixel_values
// [1, images, 3, 32, 32] from a fixed pattern, one and two whole images.
//   * image_features of the vision_encoder component (SigLIP under model.vision_model., pixel shuffle by
//     scale_factor 2, modality projection);
//   * the prefill's last logits and 32 greedy tokens through the components with the decoder's KV cache
//     (the ImageTextEngine of `hfx generate --image`), eagerly and over the ONNX export in ONNX Runtime;
//   * Transformers.js 4.3.1's Idefics3ForConditionalGeneration loads the export folder as it is and gives the
//     same tokens from the same input_ids and pixel_values;
//   * the image processor: hfx's Idefics3ImageProcessor on two PNGs (50×40, 24×30: resized to the longest
//   edge,
//     to multiples of the tile, cut into 2×2 tiles plus the global image) equals transformers 4.47's (rows,
//     cols, pixel_values; Pillow's filters, which hfx reproduces); `hfx generate --image` from the checkpoint
//     and the export gives the prompt ids of Transformers.js's Idefics3Processor (marker expansion with
//     <row_R_col_C> tokens, tokenization) and the same tokens. Transformers.js resamples with sharp, so its
//     pixel_values differ from Pillow's; the difference is measured and printed.
// Tolerance 1e-4 absolute at f32; measured worst differences printed.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>

#include <nlohmann/json.hpp>

#include "hfx/io/safetensors.h"
#include "hfx/models/tiny.h"
#include "hfx/processors/image.h"
#include "hfx/runtime/image_text.h"
#include "support/oracle.h"
#include "support/shell.h"
#include "vision/image_writers.h"
#include "vision/vlm_test_util.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr double kTol = 1e-4;

using Folder = hfx::test::TempFolder;
using hfx::test::max_diff;
using hfx::test::pattern_pixels;

std::string g_arch = "idefics3";  // the architecture of the running test (set by SetUp)

const json& golden() {
  static std::map<std::string, json> g;
  if (!g.count(g_arch))
    g[g_arch] = json::parse(
        hfx::io::read_file(std::string(HFX_SOURCE_DIR) + "/tests/data/goldens/" + g_arch + "-tiny.json"));
  return g[g_arch];
}

// The checkpoint (ckpt/) and its ONNX export (out/) of the running architecture, made once.
const fs::path& folder() {
  static std::map<std::string, std::unique_ptr<Folder>> made;
  auto& f = made[g_arch];
  if (!f) {
    f = std::make_unique<Folder>(g_arch + "_model");
    hfx::create_tiny(g_arch, (f->path / "ckpt").string());
    auto p = hfx::testsupport::sh(std::string(HFX_CLI) + " export " + (f->path / "ckpt").string() +
                                  " --format onnx -o " + (f->path / "out").string());
    EXPECT_EQ(p.rc, 0) << p.out;
  }
  return f->path;
}

class Idefics3 : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { g_arch = GetParam(); }
};

// Greedy decoding of golden case `c` through an engine: the first `images` images of the golden's pixel
// pattern over the image tokens; stops at the text model's eos (2).
std::vector<int64_t> greedy(hfx::rt::ImageTextEngine& e, const json& c, int64_t images, int64_t image_token,
                            std::vector<float>* last_logits) {
  auto shape = golden()["pixel_values_shape"].get<std::vector<int64_t>>();
  const int64_t per = shape[2] * shape[3] * shape[4];
  const std::vector<float> all = pattern_pixels(shape[1] * per);
  shape[1] = images;
  const auto ids = c["input_ids"].get<std::vector<int64_t>>();
  std::vector<int64_t> rows(ids.size());
  for (size_t i = 0; i < ids.size(); i++) rows[i] = ids[i] == image_token ? 1 : 0;
  return hfx::test::greedy_through(e, std::span<const float>(all.data(), static_cast<size_t>(images * per)),
                                   shape, ids, rows, false, 2, last_logits);
}

TEST_P(Idefics3, ComponentsEqualTransformersEagerAndOrt) {
  const auto& g = golden();
  const fs::path& d = folder();
  const int64_t image_token =
      json::parse(hfx::io::read_file((d / "ckpt" / "config.json").string()))["image_token_id"].get<int64_t>();
  for (const char* engine : {"eager", "ort"}) {
    SCOPED_TRACE(engine);
    auto e = std::string(engine) == "eager" ? hfx::rt::make_eager_image_text_engine((d / "ckpt").string())
                                            : hfx::rt::make_ort_image_text_engine((d / "out").string());
    auto shape = g["pixel_values_shape"].get<std::vector<int64_t>>();
    const std::vector<float> px = pattern_pixels(shape[1] * shape[2] * shape[3] * shape[4]);
    std::vector<int64_t> fshape;
    const double feat = max_diff(e->encode_images(px, shape, {}, fshape), g["image_features"]);
    EXPECT_EQ(fshape, g["image_features_shape"].get<std::vector<int64_t>>());
    EXPECT_LE(feat, kTol);
    double logit = 0;
    for (const json& c : g["cases"]) {
      const int64_t images = c["images"].get<int64_t>();
      SCOPED_TRACE(std::to_string(images) + " image(s)");
      std::vector<float> last;
      EXPECT_EQ(greedy(*e, c, images, image_token, &last), c["greedy"].get<std::vector<int64_t>>());
      logit = std::max(logit, max_diff(last, c["last_logits"].back()));
    }
    EXPECT_LE(logit, kTol);
    std::printf(
        "  [%s, %s] image_features max|diff| %.3g, prefill logits %.3g; 32 greedy tokens equal "
        "(1 and 2 images)\n",
        g_arch.c_str(), engine, feat, logit);
  }
}

TEST_P(Idefics3, TransformersJsRunsTheExportWithTheSameTokens) {
  HFX_REQUIRE_ORACLE(hfx::test::kTransformersJs);
  const fs::path& d = folder();
  for (const json& c : golden()["cases"]) {
    const int64_t images = c["images"].get<int64_t>();
    SCOPED_TRACE(std::to_string(images) + " image(s)");
    const auto r = hfx::testsupport::sh(
        "node '" HFX_SOURCE_DIR "/tests/vision/idefics3_tjs.mjs' '" HFX_NODE_MODULES "' '" +
        (d / "out").string() + "' '" + c["input_ids"].dump() + "' " + std::to_string(images));
    ASSERT_EQ(r.rc, 0) << r.out;
    const json tjs = json::parse(r.out.substr(r.out.rfind("{\"model\"")));
    EXPECT_EQ(tjs["model"],
              g_arch == "smolvlm" ? "SmolVLMForConditionalGeneration" : "Idefics3ForConditionalGeneration");
    EXPECT_EQ(tjs["ids"], c["greedy"]);
    std::printf("  [%s transformers.js] %lld image(s): %zu tokens equal transformers'\n", g_arch.c_str(),
                static_cast<long long>(images), tjs["ids"].size());
  }
}

// The golden's images (make_idefics3_goldens.py IMAGES: width, height, seed), written as PNG.
std::vector<std::string> write_images(const fs::path& dir) {
  const int64_t sizes[2][3] = {{50, 40, 31}, {24, 30, 32}};
  std::vector<std::string> paths;
  for (const auto& s : sizes) {
    paths.push_back((dir / (std::to_string(s[2]) + ".png")).string());
    hfx::testsupport::write_png(paths.back(), s[0], s[1], hfx::testsupport::PngKind::Rgb,
                                static_cast<uint32_t>(s[2]));
  }
  return paths;
}

TEST_P(Idefics3, ImageProcessorEqualsTransformers) {
  const fs::path& d = folder();
  Folder f(g_arch + "_images");
  const std::vector<std::string> paths = write_images(f.path);
  const std::string pre = (d / "ckpt" / "preprocessor_config.json").string();
  const auto cfg =
      hfx::processors::Idefics3ImageProcessorConfig::from_json(json::parse(hfx::io::read_file(pre)), pre);
  for (const json& c : golden()["images"]) {
    const size_t n = c["images"].get<size_t>();
    SCOPED_TRACE(std::to_string(n) + " image(s)");
    std::vector<hfx::processors::Image> images;
    for (size_t i = 0; i < n; i++) images.push_back(hfx::processors::read_image(paths[i]));
    const hfx::processors::Idefics3Pixels px = hfx::processors::idefics3_pixel_values(cfg, images);
    EXPECT_EQ(std::vector<int64_t>(px.pixel_values.shape().begin(), px.pixel_values.shape().end()),
              c["pixel_values_shape"].get<std::vector<int64_t>>());
    EXPECT_EQ(px.rows, c["rows"].get<std::vector<int64_t>>());
    EXPECT_EQ(px.cols, c["cols"].get<std::vector<int64_t>>());
    const std::vector<float> v = px.pixel_values.contiguous().to_floats();
    double worst = 0, sum = 0, abs_sum = 0;
    for (size_t i = 0; i < v.size(); i++) {
      sum += v[i];
      abs_sum += std::fabs(v[i]);
      if (i % 7 == 0) worst = std::max(worst, std::fabs(v[i] - c["pixel_every_7th"][i / 7].get<double>()));
    }
    EXPECT_LE(worst, 1e-6);
    EXPECT_NEAR(sum, c["pixel_sum"].get<double>(), 1e-3);
    EXPECT_NEAR(abs_sum, c["pixel_abs_sum"].get<double>(), 1e-3);
    std::printf("  [%s processor] %zu image(s): %lld frames, rows/cols equal, pixel_values max|diff| %.3g\n",
                g_arch.c_str(), n, static_cast<long long>(px.pixel_values.shape()[1]), worst);
  }
}

TEST_P(Idefics3, GenerateWithImagesMatchesTransformersJsProcessor) {
  HFX_REQUIRE_ORACLE(hfx::test::kTransformersJs);
  const fs::path& d = folder();
  Folder f(g_arch + "_generate");
  const std::vector<std::string> paths = write_images(f.path);
  const std::string prompts[2] = {"User:<image>Describe this.", "User:<image>and<image>Compare them."};
  for (size_t n = 1; n <= 2; n++) {
    SCOPED_TRACE(std::to_string(n) + " image(s)");
    std::string files;
    for (size_t i = 0; i < n; i++) files += " '" + paths[i] + "'";
    const auto r = hfx::testsupport::sh(
        "node '" HFX_SOURCE_DIR "/tests/vision/idefics3_tjs.mjs' '" HFX_NODE_MODULES "' '" +
        (d / "out").string() + "' processor '" + prompts[n - 1] + "'" + files);
    ASSERT_EQ(r.rc, 0) << r.out;
    const json tjs = json::parse(r.out.substr(r.out.rfind("{\"prompt_ids\"")));
    json rows[2];
    const char* models[2] = {"ckpt", "out"};
    for (int i = 0; i < 2; i++) {
      std::string cmd = std::string(HFX_CLI) + " generate '" + (d / models[i]).string() + "' --prompt '" +
                        prompts[n - 1] + "' --max-new-tokens 16 --json";
      for (size_t k = 0; k < n; k++) cmd += " --image '" + paths[k] + "'";
      const auto g = hfx::testsupport::sh_stdout(cmd);
      ASSERT_EQ(g.rc, 0) << g.out;
      rows[i] = json::parse(g.out)["rows"][0];
      EXPECT_EQ(rows[i]["prompt_ids"], tjs["prompt_ids"]) << models[i];
    }
    EXPECT_EQ(rows[0]["ids"], rows[1]["ids"]);
    // Transformers.js' pixel_values (sharp's resampling) against hfx's (Pillow's): measured, not bounded.
    const std::string pre = (d / "out" / "preprocessor_config.json").string();
    const auto cfg =
        hfx::processors::Idefics3ImageProcessorConfig::from_json(json::parse(hfx::io::read_file(pre)), pre);
    std::vector<hfx::processors::Image> images;
    for (size_t i = 0; i < n; i++) images.push_back(hfx::processors::read_image(paths[i]));
    const auto px = hfx::processors::idefics3_pixel_values(cfg, images);
    EXPECT_EQ(tjs["shape"].get<std::vector<int64_t>>(),
              std::vector<int64_t>(px.pixel_values.shape().begin(), px.pixel_values.shape().end()));
    double mean = 0;
    const std::vector<float> v = px.pixel_values.contiguous().to_floats();
    for (size_t i = 0; i < v.size() && i < tjs["pixel_values"].size(); i++)
      mean += std::fabs(v[i] - tjs["pixel_values"][i].get<double>()) / static_cast<double>(v.size());
    std::printf(
        "  [%s generate] %zu image(s): %zu prompt ids equal Transformers.js's; eager = ort (%zu tokens); "
        "pixel_values vs Transformers.js (sharp): mean |diff| %.3g\n",
        g_arch.c_str(), n, tjs["prompt_ids"].size(), rows[0]["ids"].size(), mean);
  }
}

INSTANTIATE_TEST_SUITE_P(Archs, Idefics3, ::testing::Values("idefics3", "smolvlm"),
                         [](const auto& i) { return i.param; });

}  // namespace
