// `hfx generate TINY_LLAVA --image FILE [--image FILE2] --prompt TEXT`: image files through hfx's processor,
// the <image> markers expanded, 32 greedy tokens of the eager merged forward — equal to transformers 4.47's
// (CLIPImageProcessor on the same PNGs, LlavaForConditionalGeneration greedy by full recomputation:
// tests/data/goldens/llava-tiny.json "image_files", from tools/hf_goldens/make_llava_goldens.py) with one and
// with two images. A prompt with more <image> markers than images is a clear error (exit 1).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "hfx/io/safetensors.h"
#include "hfx/models/tiny.h"
#include "support/shell.h"
#include "vision/image_writers.h"

namespace fs = std::filesystem;

namespace {

const char* kPrompts[] = {"USER: <image>\nWhat is this? ASSISTANT:",
                          "USER: <image>\n<image>\nCompare them. ASSISTANT:"};

class LlavaGenerate : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("hfx_llava_generate_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    hfx::create_tiny("llava", (dir_ / "llava").string());
    golden_ =
        nlohmann::json::parse(hfx::io::read_file(HFX_TEST_DATA "/goldens/llava-tiny.json"))["image_files"];
    for (size_t i = 0; i < golden_["images"].size(); i++) {
      const auto& im = golden_["images"][i];
      images_.push_back((dir_ / (std::to_string(i) + ".png")).string());
      hfx::testsupport::write_png(images_.back(), im[0], im[1], hfx::testsupport::PngKind::Rgb, im[2]);
    }
  }
  void TearDown() override { fs::remove_all(dir_); }

  hfx::testsupport::Proc generate(const std::string& prompt, size_t n_images, const std::string& extra = "") {
    std::string cmd = std::string(HFX_CLI) + " generate '" + (dir_ / "llava").string() + "' --prompt '" +
                      prompt + "' --max-new-tokens 32 " + extra;
    for (size_t i = 0; i < n_images; i++) cmd += " --image '" + images_[i] + "'";
    return hfx::testsupport::sh(cmd);
  }

  fs::path dir_;
  nlohmann::json golden_;
  std::vector<std::string> images_;
};

TEST_F(LlavaGenerate, GreedyTokensEqualTransformersWithOneAndTwoImages) {
  ASSERT_EQ(golden_["cases"].size(), 2u);
  for (size_t n = 1; n <= 2; n++) {
    SCOPED_TRACE(n);
    const auto r = generate(kPrompts[n - 1], n, "--json 2>/dev/null");
    ASSERT_EQ(r.rc, 0) << r.out;
    const auto row = nlohmann::json::parse(r.out)["rows"][0];
    const auto& want = golden_["cases"][n - 1];
    EXPECT_EQ(row["prompt_ids"], want["prompt_ids"]);
    EXPECT_EQ(row["ids"], want["greedy"]);
    std::printf("[llava generate] %zu image(s): %zu prompt ids, greedy %zu tokens %s transformers'\n", n,
                row["prompt_ids"].size(), row["ids"].size(),
                row["ids"] == want["greedy"] ? "equal to" : "DIFFER from");
  }
}

TEST_F(LlavaGenerate, MarkersAndImagesMustAgree) {
  auto r = generate(kPrompts[1], 1);  // two markers, one image
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_NE(
      r.out.find("[generate] expected one <image> marker per image in the prompt (1 image(s) given), got 2"),
      std::string::npos)
      << r.out;
  r = generate(kPrompts[0], 2);  // one marker, two images
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_NE(r.out.find("got 1 marker(s)"), std::string::npos) << r.out;
  r = generate(kPrompts[0], 1, "--engine ort");
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("llava's ONNX components"), std::string::npos) << r.out;
}

}  // namespace
