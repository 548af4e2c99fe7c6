// gemma3 (Gemma3ForConditionalGeneration) against goldens of the real transformers 4.51
// (tests/data/goldens/gemma3-tiny.json, tools/hf_goldens/make_gemma3_goldens.py on the checkpoint
// `hfx create-tiny gemma3` writes): pixel_values from a fixed pattern, one and two images.
//   * image_features of the vision_encoder component (SigLIP, average pooling, RMSNorm, projection);
//   * the last 4 positions' logits of the decoder over the merged embeddings with token_type_ids (image
//   tokens
//     attend to each other in both directions, as transformers 4.51 builds the mask);
//   * 32 greedy tokens through the components with the decoder's KV cache (the ImageTextEngine of
//     `hfx generate --image`), eagerly and over the ONNX export in ONNX Runtime; and without token types (a
//     purely causal mask) against transformers called without token_type_ids;
//   * Transformers.js 4.3.1 loads the export folder as it is: Gemma3ForConditionalGeneration (its Llava
//     subclass) passes no token_type_ids, so the decoder's ONNX default (zeros) applies and its tokens equal
//     transformers' without token types — with two images they differ from transformers' own generate(), a
//     departure of Transformers.js that the test asserts; its Gemma3Processor expands <start_of_image> and
//     makes pixel_values as hfx does (a 32×32 image: no resampling, whose sharp/Pillow filters differ).
// Tolerance 1e-4 absolute at f32; measured worst differences printed.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "hfx/io/safetensors.h"
#include "hfx/models/model.h"
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

const json& golden() {
  static const json g =
      json::parse(hfx::io::read_file(std::string(HFX_SOURCE_DIR) + "/tests/data/goldens/gemma3-tiny.json"));
  return g;
}

// The checkpoint (ckpt/) and its ONNX export (out/), made once.
const fs::path& folder() {
  static Folder f("gemma3_model");
  static bool done = false;
  if (!done) {
    hfx::create_tiny("gemma3", (f.path / "ckpt").string());
    auto p = hfx::testsupport::sh(std::string(HFX_CLI) + " export " + (f.path / "ckpt").string() +
                                  " --format onnx -o " + (f.path / "out").string());
    EXPECT_EQ(p.rc, 0) << p.out;
    done = true;
  }
  return f.path;
}

// Greedy decoding of golden case `c` through an engine: the first `images` images of the golden's pixel
// pattern; with token types (transformers' mask) or without (a causal mask). Stops at the text model's eos
// (1).
std::vector<int64_t> greedy(hfx::rt::ImageTextEngine& e, const json& c, int64_t images, bool types,
                            std::vector<float>* last_logits = nullptr) {
  auto shape = golden()["pixel_values_shape"].get<std::vector<int64_t>>();
  const int64_t per = shape[1] * shape[2] * shape[3];
  const std::vector<float> all = pattern_pixels(2 * per);
  shape[0] = images;
  return hfx::test::greedy_through(e, std::span<const float>(all.data(), static_cast<size_t>(images * per)),
                                   shape, c["input_ids"].get<std::vector<int64_t>>(),
                                   c["token_type_ids"].get<std::vector<int64_t>>(), types, 1, last_logits);
}

TEST(Gemma3, ComponentsEqualTransformersEagerAndOrt) {
  const auto& g = golden();
  const fs::path& d = folder();
  for (const char* engine : {"eager", "ort"}) {
    SCOPED_TRACE(engine);
    auto e = std::string(engine) == "eager" ? hfx::rt::make_eager_image_text_engine((d / "ckpt").string())
                                            : hfx::rt::make_ort_image_text_engine((d / "out").string());
    // image_features of both images.
    auto shape = g["pixel_values_shape"].get<std::vector<int64_t>>();
    const std::vector<float> px = pattern_pixels(shape[0] * shape[1] * shape[2] * shape[3]);
    std::vector<int64_t> fshape;
    const double feat = max_diff(e->encode_images(px, shape, {}, fshape), g["image_features"]);
    EXPECT_EQ(fshape, g["image_features_shape"].get<std::vector<int64_t>>());
    EXPECT_LE(feat, kTol);
    double logit = 0;
    for (const json& c : g["cases"]) {
      const int64_t images = c["images"].get<int64_t>();
      SCOPED_TRACE(std::to_string(images) + " image(s)");
      std::vector<float> last;
      EXPECT_EQ(greedy(*e, c, images, true, &last), c["greedy"].get<std::vector<int64_t>>());
      logit = std::max(logit, max_diff(last, c["last_logits"].back()));
      EXPECT_EQ(greedy(*e, c, images, false), c["greedy_causal"].get<std::vector<int64_t>>());
    }
    EXPECT_LE(logit, kTol);
    std::printf(
        "  [gemma3, %s] image_features max|diff| %.3g, prefill logits %.3g; greedy tokens equal with "
        "and without token types (1 and 2 images)\n",
        engine, feat, logit);
  }
  // Every case's logits differ with and without token types: the bidirectional mask within an image is live
  // (transformers 5 keeps it within each image, so the tiny model's greedy tokens may no longer differ).
  for (const json& c : g["cases"])
    EXPECT_GT(max_diff(c["last_logits"].back().get<std::vector<float>>(), c["last_logits_causal"].back()),
              1e-3)
        << c["images"] << " image(s)";
}

TEST(Gemma3, TransformersJsRunsTheExportWithoutTokenTypes) {
  HFX_REQUIRE_ORACLE(hfx::test::kTransformersJs);
  const fs::path& d = folder();
  for (const json& c : golden()["cases"]) {
    const int64_t images = c["images"].get<int64_t>();
    SCOPED_TRACE(std::to_string(images) + " image(s)");
    const auto r = hfx::testsupport::sh(
        "node '" HFX_SOURCE_DIR "/tests/vision/gemma3_tjs.mjs' '" HFX_NODE_MODULES "' '" +
        (d / "out").string() + "' generate '" + c["input_ids"].dump() + "' " + std::to_string(images));
    ASSERT_EQ(r.rc, 0) << r.out;
    const json tjs = json::parse(r.out.substr(r.out.rfind("{\"model\"")));
    EXPECT_EQ(tjs["model"], "Gemma3ForConditionalGeneration");
    EXPECT_EQ(tjs["ids"], c["greedy_causal"]);

    std::printf(
        "  [gemma3 transformers.js] %lld image(s): %zu tokens equal transformers' without token types\n",
        static_cast<long long>(images), tjs["ids"].size());
  }
}

TEST(Gemma3, GenerateWithAnImageMatchesTransformersJsProcessor) {
  HFX_REQUIRE_ORACLE(hfx::test::kTransformersJs);
  const fs::path& d = folder();
  Folder f("gemma3_image");
  const std::string image = (f.path / "cat.png").string(), prompt = "<start_of_image>Describe this.";
  hfx::testsupport::write_png(image, 32, 32, hfx::testsupport::PngKind::Rgb, 5);
  const auto r =
      hfx::testsupport::sh("node '" HFX_SOURCE_DIR "/tests/vision/gemma3_tjs.mjs' '" HFX_NODE_MODULES "' '" +
                           (d / "out").string() + "' processor '" + prompt + "' '" + image + "'");
  ASSERT_EQ(r.rc, 0) << r.out;
  const json tjs = json::parse(r.out.substr(r.out.rfind("{\"prompt_ids\"")));
  // hfx's image processor on the same file.
  const auto cfg = hfx::processors::ClipImageProcessorConfig::load((d / "out").string());
  const hfx::Tensor px = hfx::processors::clip_pixel_values(cfg, {hfx::processors::read_image(image)});
  EXPECT_EQ(tjs["shape"].get<std::vector<int64_t>>(), (std::vector<int64_t>{1, 3, 32, 32}));
  const double pixels = max_diff(px.contiguous().to_floats(), tjs["pixel_values"]);
  EXPECT_LE(pixels, 1e-6);
  // `hfx generate`: the same prompt ids from the checkpoint (eager) and the export (ONNX Runtime), and the
  // same tokens.
  json rows[2];
  const char* models[2] = {"ckpt", "out"};
  for (int i = 0; i < 2; i++) {
    const auto g = hfx::testsupport::sh_stdout(std::string(HFX_CLI) + " generate '" +
                                               (d / models[i]).string() + "' --prompt '" + prompt +
                                               "' --image '" + image + "' --max-new-tokens 16 --json");
    ASSERT_EQ(g.rc, 0) << g.out;
    rows[i] = json::parse(g.out)["rows"][0];
    EXPECT_EQ(rows[i]["prompt_ids"], tjs["prompt_ids"]) << models[i];
  }
  EXPECT_EQ(rows[0]["ids"], rows[1]["ids"]);
  std::printf(
      "  [gemma3 processor] %zu prompt ids equal Transformers.js's, pixel_values max|diff| %.3g; eager = "
      "ort: %zu tokens\n",
      tjs["prompt_ids"].size(), pixels, rows[0]["ids"].size());
}

}  // namespace
