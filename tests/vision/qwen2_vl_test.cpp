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
//     same tokens from the same input_ids, pixel_values and image_grid_thw (it computes the positions itself);
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
    const int64_t at = static_cast<int64_t>(ids.size()) + step - 1 + pos.delta;
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
    const hfx::MropePositions p = hfx::mrope_positions(c["input_ids"].get<std::vector<int64_t>>(), image, start,
                                                       grids_of(c["grid_thw"]), 2);
    std::vector<int64_t> want;
    for (const json& row : c["position_ids"])
      for (const json& x : row) want.push_back(x.get<int64_t>());
    EXPECT_EQ(p.pos, want) << c["images"];
  }
  // More images after <|vision_start|> than grids: refused.
  EXPECT_THROW(hfx::mrope_positions({1, start, image, image, image, image, image, image}, image, start, {}, 2),
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
    const double feat =
        max_diff(e->encode_images(pattern_pixels(n * kPatchDim), {n, kPatchDim}, flat, fshape), g["image_features"]);
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
        "  [qwen2_vl, %s] image_features max|diff| %.3g, prefill logits %.3g; 32 greedy tokens equal (1 and 2 "
        "images)\n",
        engine, feat, logit);
  }
}

TEST(Qwen2Vl, TransformersJsRunsTheExportWithTheSameTokens) {
  HFX_REQUIRE_ORACLE(hfx::test::kTransformersJs);
  const fs::path& d = folder();
  for (const json& c : golden()["cases"]) {
    SCOPED_TRACE(c["images"].dump() + " image(s)");
    const auto r = hfx::testsupport::sh("node '" HFX_SOURCE_DIR "/tests/vision/qwen2_vl_tjs.mjs' '" HFX_NODE_MODULES
                                        "' '" +
                                        (d / "out").string() + "' '" + c["input_ids"].dump() + "' '" +
                                        c["grid_thw"].dump() + "'");
    ASSERT_EQ(r.rc, 0) << r.out;
    const json tjs = json::parse(r.out.substr(r.out.rfind("{\"model\"")));
    EXPECT_EQ(tjs["model"], "Qwen2VLForConditionalGeneration");
    EXPECT_EQ(tjs["ids"], c["greedy"]);
    std::printf("  [qwen2_vl transformers.js] %s image(s): %zu tokens equal transformers'\n", c["images"].dump().c_str(),
                tjs["ids"].size());
  }
}
