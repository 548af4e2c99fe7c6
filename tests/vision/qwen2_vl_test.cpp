// qwen2_vl (Qwen2VLForConditionalGeneration) against goldens of the real transformers 4.47
// (tests/data/goldens/qwen2_vl-tiny.json, tools/hf_goldens/make_qwen2_vl_goldens.py on the checkpoint `hfx
// create-tiny qwen2_vl` writes): pixel_values [patches, 96] from a fixed pattern for two images of grids
// (1, 4, 6) and (1, 6, 4).
//   * image_features of the vision_encoder component (2-D rotary attention within each image, PatchMerger),
//     eagerly and in ONNX Runtime, for both images in one call;
//   * get_rope_index's multimodal positions (hfx::mrope_positions) for one and two images;
//   * the prefill's last logits and 32 greedy tokens through the components with the decoder's KV cache
//     (the ImageTextEngine of `hfx generate --image`), eagerly and over the ONNX export;
//   * Transformers.js 4.3.1's Qwen2VLForConditionalGeneration loads the export folder as it is and gives the
//     same tokens from the same input_ids, pixel_values and image_grid_thw (it computes the positions
//     itself);
//   * the image processor: hfx's Qwen2VLImageProcessor on 11 PNGs of varied sizes (smart_resize up, down and
//     not at all) equals transformers 4.47's; against Transformers.js's processor: equal where nothing is
//     resampled, the sharp-vs-Pillow difference measured and printed elsewhere; `hfx generate --image` on the
//     checkpoint and the export gives the prompt ids and tokens of Transformers.js's processor + generate();
//   * bad input: more image markers than images, an image under the processor's minimum side.
// Tolerance 1e-4 absolute at f32; measured worst differences printed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>

#include <nlohmann/json.hpp>

#include "hfx/io/safetensors.h"
#include "hfx/models/rope.h"
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
constexpr int64_t kPatchDim = 3 * 2 * 4 * 4;  // C·T·P·P of the tiny checkpoint

using Folder = hfx::test::TempFolder;
using hfx::test::max_diff;
using hfx::test::pattern_pixels;

const json& golden() {
  static const json g =
      json::parse(hfx::io::read_file(std::string(HFX_SOURCE_DIR) + "/tests/data/goldens/qwen2_vl-tiny.json"));
  return g;
}

// The checkpoint (ckpt/) and its ONNX export (out/), made once.
const fs::path& folder() {
  static std::unique_ptr<Folder> f;
  if (!f) {
    f = std::make_unique<Folder>("qwen2_vl_model");
    hfx::create_tiny("qwen2_vl", (f->path / "ckpt").string());
    auto p = hfx::testsupport::sh(std::string(HFX_CLI) + " export " + (f->path / "ckpt").string() +
                                  " --format onnx -o " + (f->path / "out").string());
    EXPECT_EQ(p.rc, 0) << p.out;
  }
  return f->path;
}

const json& config() {
  static const json c = json::parse(hfx::io::read_file((folder() / "ckpt" / "config.json").string()));
  return c;
}

std::vector<std::array<int64_t, 3>> grids_of(const json& j) {
  std::vector<std::array<int64_t, 3>> g;
  for (const json& x : j) g.push_back({x[0].get<int64_t>(), x[1].get<int64_t>(), x[2].get<int64_t>()});
  return g;
}

int64_t patches(const std::vector<std::array<int64_t, 3>>& grids) {
  int64_t n = 0;
  for (const auto& g : grids) n += g[0] * g[1] * g[2];
  return n;
}

// Greedy decoding of golden case `c` through an engine, as generate_with_images drives it: the image features
// over the image tokens, the prompt's multimodal positions, then each new token at its cache length plus the
// rope delta. Stops at eos; `last_logits` gets the prefill's last logits.
std::vector<int64_t> greedy(hfx::rt::ImageTextEngine& e, const json& c, std::vector<float>* last_logits) {
  const auto grids = grids_of(c["grid_thw"]);
  const int64_t n = patches(grids);
  const std::vector<float> px = pattern_pixels(n * kPatchDim);
  std::vector<int64_t> flat, fshape;
  for (const auto& g : grids) flat.insert(flat.end(), g.begin(), g.end());
  const std::vector<float> feats = e.encode_images(px, {n, kPatchDim}, flat, fshape);
  const int64_t hidden = fshape[1], image = config()["image_token_id"].get<int64_t>();
  const auto ids = c["input_ids"].get<std::vector<int64_t>>();
  std::vector<float> emb = e.embed(ids);
  for (size_t i = 0, k = 0; i < ids.size(); i++)
    if (ids[i] == image) {
      std::copy_n(feats.begin() + static_cast<std::ptrdiff_t>(k++ * hidden), hidden,
                  emb.begin() + static_cast<std::ptrdiff_t>(i * hidden));
    }
  const hfx::MropePositions pos =
      hfx::mrope_positions(ids, image, config()["vision_start_token_id"].get<int64_t>(), grids, 2);
  e.reset();
  std::vector<int64_t> out;
  int64_t seq = static_cast<int64_t>(ids.size());
  const int64_t eos = config()["eos_token_id"].is_number() ? config()["eos_token_id"].get<int64_t>() : -1;
  for (int step = 0; step < 32; step++) {
    const int64_t at = pos.decode_position(static_cast<int64_t>(ids.size()) + step - 1);
    const std::vector<int64_t> p = step == 0 ? pos.pos : std::vector<int64_t>(3, at);
    const std::vector<float> l = e.step(emb, seq, {}, p);
    if (step == 0 && last_logits) *last_logits = l;
    out.push_back(std::max_element(l.begin(), l.end()) - l.begin());
    if (out.back() == eos) break;
    const int64_t one[1] = {out.back()};
    emb = e.embed(one);
    seq = 1;
  }
  return out;
}

}  // namespace

TEST(Qwen2Vl, MultimodalPositionsEqualGetRopeIndex) {
  const int64_t image = config()["image_token_id"].get<int64_t>();
  const int64_t start = config()["vision_start_token_id"].get<int64_t>();
  for (const json& c : golden()["cases"]) {
    const hfx::MropePositions p = hfx::mrope_positions(c["input_ids"].get<std::vector<int64_t>>(), image,
                                                       start, grids_of(c["grid_thw"]), 2);
    std::vector<int64_t> want;
    for (const json& row : c["position_ids"])
      for (const json& x : row) want.push_back(x.get<int64_t>());
    EXPECT_EQ(p.pos, want) << c["images"];
  }
  // More images after <|vision_start|> than grids: refused.
  EXPECT_THROW(
      hfx::mrope_positions({1, start, image, image, image, image, image, image}, image, start, {}, 2),
      std::exception);
}

TEST(Qwen2Vl, ComponentsEqualTransformersEagerAndOrt) {
  const auto& g = golden();
  const fs::path& d = folder();
  for (const char* engine : {"eager", "ort"}) {
    SCOPED_TRACE(engine);
    auto e = std::string(engine) == "eager" ? hfx::rt::make_eager_image_text_engine((d / "ckpt").string())
                                            : hfx::rt::make_ort_image_text_engine((d / "out").string());
    const auto grids = grids_of(g["grid_thw"]);
    std::vector<int64_t> flat, fshape;
    for (const auto& x : grids) flat.insert(flat.end(), x.begin(), x.end());
    const int64_t n = patches(grids);
    const double feat = max_diff(
        e->encode_images(pattern_pixels(n * kPatchDim), {n, kPatchDim}, flat, fshape), g["image_features"]);
    EXPECT_EQ(fshape, g["image_features_shape"].get<std::vector<int64_t>>());
    EXPECT_LE(feat, kTol);
    double logit = 0;
    for (const json& c : g["cases"]) {
      SCOPED_TRACE(c["images"].dump() + " image(s)");
      std::vector<float> last;
      EXPECT_EQ(greedy(*e, c, &last), c["greedy"].get<std::vector<int64_t>>());
      logit = std::max(logit, max_diff(last, c["last_logits"].back()));
    }
    EXPECT_LE(logit, kTol);
    std::printf(
        "  [qwen2_vl, %s] image_features max|diff| %.3g, prefill logits %.3g; 32 greedy tokens equal (1 and "
        "2 "
        "images)\n",
        engine, feat, logit);
  }
}

TEST(Qwen2Vl, TransformersJsRunsTheExportWithTheSameTokens) {
  HFX_REQUIRE_ORACLE(hfx::test::kTransformersJs);
  const fs::path& d = folder();
  for (const json& c : golden()["cases"]) {
    SCOPED_TRACE(c["images"].dump() + " image(s)");
    const auto r = hfx::testsupport::sh(
        "node '" HFX_SOURCE_DIR "/tests/vision/qwen2_vl_tjs.mjs' '" HFX_NODE_MODULES "' '" +
        (d / "out").string() + "' '" + c["input_ids"].dump() + "' '" + c["grid_thw"].dump() + "'");
    ASSERT_EQ(r.rc, 0) << r.out;
    const json tjs = json::parse(r.out.substr(r.out.rfind("{\"model\"")));
    EXPECT_EQ(tjs["model"], "Qwen2VLForConditionalGeneration");
    EXPECT_EQ(tjs["ids"], c["greedy"]);
    std::printf("  [qwen2_vl transformers.js] %s image(s): %zu tokens equal transformers'\n",
                c["images"].dump().c_str(), tjs["ids"].size());
  }
}

namespace {

// The golden's processor images (make_qwen2_vl_goldens.py PROCESSOR_IMAGES: width, height, seed) as PNG.
std::vector<std::string> write_images(const fs::path& dir) {
  std::vector<std::string> paths;
  for (const json& c : golden()["images"]) {
    paths.push_back((dir / (c["seed"].dump() + ".png")).string());
    hfx::testsupport::write_png(paths.back(), c["width"].get<int64_t>(), c["height"].get<int64_t>(),
                                hfx::testsupport::PngKind::Rgb, c["seed"].get<uint32_t>());
  }
  return paths;
}

hfx::processors::Qwen2VlImageProcessorConfig processor_config() {
  const std::string pre = (folder() / "ckpt" / "preprocessor_config.json").string();
  return hfx::processors::Qwen2VlImageProcessorConfig::from_json(json::parse(hfx::io::read_file(pre)), pre);
}

}  // namespace

TEST(Qwen2Vl, ImageProcessorEqualsTransformers) {
  Folder f("qwen2_vl_images");
  const std::vector<std::string> paths = write_images(f.path);
  const auto cfg = processor_config();
  size_t i = 0, errors = 0;
  double worst = 0;
  for (const json& c : golden()["images"]) {
    SCOPED_TRACE(c["width"].dump() + "x" + c["height"].dump());
    const std::vector<hfx::processors::Image> images{hfx::processors::read_image(paths[i++])};
    if (c.contains("error")) {  // transformers refuses it (a side under patch_size × merge_size): so does hfx
      EXPECT_THROW(hfx::processors::qwen2_vl_pixel_values(cfg, images), std::exception);
      errors++;
      continue;
    }
    const hfx::processors::Qwen2VlPixels px = hfx::processors::qwen2_vl_pixel_values(cfg, images);
    EXPECT_EQ(std::vector<int64_t>(px.grid_thw[0].begin(), px.grid_thw[0].end()),
              c["grid_thw"].get<std::vector<int64_t>>());
    EXPECT_EQ(std::vector<int64_t>(px.pixel_values.shape().begin(), px.pixel_values.shape().end()),
              c["pixel_values_shape"].get<std::vector<int64_t>>());
    const std::vector<float> v = px.pixel_values.contiguous().to_floats();
    double sum = 0, abs_sum = 0;
    for (size_t k = 0; k < v.size(); k++) {
      sum += v[k];
      abs_sum += std::fabs(v[k]);
      if (k % 7 == 0) worst = std::max(worst, std::fabs(v[k] - c["pixel_every_7th"][k / 7].get<double>()));
    }
    EXPECT_NEAR(sum, c["pixel_sum"].get<double>(), 1e-3);
    EXPECT_NEAR(abs_sum, c["pixel_abs_sum"].get<double>(), 1e-3);
  }
  EXPECT_LE(worst, 1e-6);
  EXPECT_GE(golden()["images"].size(), 10u);
  std::printf(
      "  [qwen2_vl processor] %zu images (%zu refused as transformers refuses them): grid_thw equal, "
      "pixel_values max|diff| %.3g\n",
      golden()["images"].size(), errors, worst);
}

// Transformers.js's Qwen2VLImageProcessor on the same files: equal where smart_resize keeps the size (no
// resampling); elsewhere sharp resamples and Pillow's filters differ by design — measured and printed.
TEST(Qwen2Vl, ImageProcessorAgainstTransformersJs) {
  HFX_REQUIRE_ORACLE(hfx::test::kTransformersJs);
  Folder f("qwen2_vl_tjs_images");
  const std::vector<std::string> paths = write_images(f.path);
  const auto cfg = processor_config();
  size_t i = 0, exact = 0;
  for (const json& c : golden()["images"]) {
    const std::string path = paths[i++];
    if (c.contains("error")) continue;
    SCOPED_TRACE(c["width"].dump() + "x" + c["height"].dump());
    const auto r = hfx::testsupport::sh(
        "node '" HFX_SOURCE_DIR "/tests/vision/qwen2_vl_tjs.mjs' '" HFX_NODE_MODULES "' '" +
        (folder() / "out").string() + "' processor '<|image_pad|>' '" + path + "'");
    ASSERT_EQ(r.rc, 0) << r.out;
    const json tjs = json::parse(r.out.substr(r.out.rfind("{\"prompt_ids\"")));
    const auto px = hfx::processors::qwen2_vl_pixel_values(cfg, {hfx::processors::read_image(path)});
    const json grid = std::vector<int64_t>(px.grid_thw[0].begin(), px.grid_thw[0].end());
    const bool resized = c["grid_thw"][1].get<int64_t>() * 4 != c["height"].get<int64_t>() ||
                         c["grid_thw"][2].get<int64_t>() * 4 != c["width"].get<int64_t>();
    if (tjs["grid_thw"] != grid) {
      // smart_resize's round(): Python rounds halves to even (transformers, hfx), Transformers.js's
      // Math.round up (100×20: width 12.5 × 8 → 96 there, 104 here).
      EXPECT_TRUE(resized);
      std::printf(
          "  [qwen2_vl processor vs transformers.js] %sx%s: grid %s (transformers, hfx) vs %s (Math.round)\n",
          c["width"].dump().c_str(), c["height"].dump().c_str(), grid.dump().c_str(),
          tjs["grid_thw"].dump().c_str());
      continue;
    }
    const std::vector<float> v = px.pixel_values.contiguous().to_floats();
    ASSERT_EQ(v.size(), tjs["pixel_values"].size());
    double worst = 0, mean = 0;
    for (size_t k = 0; k < v.size(); k++) {
      const double d = std::fabs(v[k] - tjs["pixel_values"][k].get<double>());
      worst = std::max(worst, d);
      mean += d / static_cast<double>(v.size());
    }
    if (!resized) {
      EXPECT_LE(worst, kTol);
      exact++;
    }
    std::printf("  [qwen2_vl processor vs transformers.js] %sx%s -> grid %s: %s max|diff| %.3g, mean %.3g\n",
                c["width"].dump().c_str(), c["height"].dump().c_str(), c["grid_thw"].dump().c_str(),
                resized ? "resampled (sharp vs Pillow)," : "not resampled,", worst, mean);
  }
  EXPECT_GE(exact, 3u);
}

// hfx generate --image on the checkpoint (eager) and on the export (ONNX Runtime) against Transformers.js's
// processor + generate() on the same files: the same prompt ids and the same 32 tokens, with one and two
// images whose sizes smart_resize keeps (so both sides see the same pixels). Two images are of one size:
// Transformers.js 4.3.1's Qwen2VLImageProcessor stacks the images' pixel_values and throws ("offset is out
// of bounds") for two sizes; hfx takes any mix (ImageProcessorEqualsTransformers, the golden's two grids).
TEST(Qwen2Vl, GenerateWithImagesMatchesTransformersJs) {
  HFX_REQUIRE_ORACLE(hfx::test::kTransformersJs);
  Folder f("qwen2_vl_generate");
  const std::vector<std::string> all = write_images(f.path);
  const std::string second = (f.path / "second.png").string();
  hfx::testsupport::write_png(second, 24, 40, hfx::testsupport::PngKind::Rgb, 77);
  const std::vector<std::string> paths = {all[4], second};  // 24×40: not resampled
  const std::string prompts[2] = {
      "user: <|vision_start|><|image_pad|><|vision_end|>Describe this.\nassistant: ",
      "user: <|vision_start|><|image_pad|><|vision_end|>and "
      "<|vision_start|><|image_pad|><|vision_end|>Compare.\nassistant: "};
  for (size_t n = 1; n <= 2; n++) {
    SCOPED_TRACE(std::to_string(n) + " image(s)");
    std::string files;
    for (size_t i = 0; i < n; i++) files += " '" + paths[i] + "'";
    const auto r = hfx::testsupport::sh(
        "node '" HFX_SOURCE_DIR "/tests/vision/qwen2_vl_tjs.mjs' '" HFX_NODE_MODULES "' '" +
        (folder() / "out").string() + "' generate '" + prompts[n - 1] + "'" + files);
    ASSERT_EQ(r.rc, 0) << r.out;
    const json tjs = json::parse(r.out.substr(r.out.rfind("{\"prompt_ids\"")));
    for (const char* model : {"ckpt", "out"}) {
      std::string cmd = std::string(HFX_CLI) + " generate '" + (folder() / model).string() + "' --prompt '" +
                        prompts[n - 1] + "' --max-new-tokens 32 --json";
      for (size_t k = 0; k < n; k++) cmd += " --image '" + paths[k] + "'";
      const auto g = hfx::testsupport::sh_stdout(cmd);
      ASSERT_EQ(g.rc, 0) << hfx::testsupport::sh(cmd).out;
      const json row = json::parse(g.out)["rows"][0];
      EXPECT_EQ(row["prompt_ids"], tjs["prompt_ids"]) << model;
      EXPECT_EQ(row["ids"], tjs["ids"]) << model;
    }
    std::printf(
        "  [qwen2_vl generate] %zu image(s): %zu prompt ids and %zu tokens equal Transformers.js's (eager "
        "and ort)\n",
        n, tjs["prompt_ids"].size(), tjs["ids"].size());
  }
}

TEST(Qwen2Vl, BadInputIsAClearError) {
  Folder f("qwen2_vl_bad");
  const std::vector<std::string> paths = write_images(f.path);
  const std::string ckpt = (folder() / "ckpt").string();
  const std::string one = "<|vision_start|><|image_pad|><|vision_end|>";
  const std::string small = (f.path / "small.png").string();  // under patch_size × merge_size: refused
  hfx::testsupport::write_png(small, 6, 20, hfx::testsupport::PngKind::Rgb, 5);
  struct Case {
    std::string args, want;
  } cases[] = {
      {"--prompt '" + one + one + "' --image '" + paths[2] + "'",
       "expected one <|image_pad|> marker per image"},
      {"--prompt '" + one + "' --image '" + small + "'", "expected an image of at least 8x8 pixels"},
      {"--prompt '" + one + "' --image '" + (f.path / "missing.png").string() + "'", "missing.png"},
  };
  for (const Case& c : cases) {
    const auto g =
        hfx::testsupport::sh(std::string(HFX_CLI) + " generate '" + ckpt + "' " + c.args + " 2>&1");
    EXPECT_NE(g.rc, 0) << c.args;
    EXPECT_NE(g.out.find(c.want), std::string::npos) << g.out;
  }
}

// `hfx preprocess` dispatches on the folder's image_processor_type: for Qwen2VLImageProcessor it writes
// pixel_values [patches, C·T·P·P] and image_grid_thw [images, 3], equal to the library call.
TEST(Qwen2Vl, PreprocessCliWritesPatchesAndGrids) {
  Folder f("qwen2_vl_preprocess");
  const std::vector<std::string> paths = write_images(f.path);
  const std::string out = (f.path / "pv.safetensors").string();
  const auto g =
      hfx::testsupport::sh(std::string(HFX_CLI) + " preprocess '" + (folder() / "ckpt").string() +
                           "' --image '" + paths[0] + "' --image '" + paths[3] + "' -o '" + out + "'");
  ASSERT_EQ(g.rc, 0) << g.out;
  const auto file = hfx::io::SafetensorsFile::open(out);
  const auto px = hfx::processors::qwen2_vl_pixel_values(
      processor_config(), {hfx::processors::read_image(paths[0]), hfx::processors::read_image(paths[3])});
  EXPECT_EQ(file->get("pixel_values").contiguous().to_floats(), px.pixel_values.contiguous().to_floats());
  const hfx::Tensor grid = file->get("image_grid_thw").contiguous();
  ASSERT_EQ(grid.numel(), 6);
  for (int64_t i = 0; i < 6; i++) EXPECT_EQ(grid.data<int64_t>()[i], px.grid_thw[i / 3][i % 3]);
}
