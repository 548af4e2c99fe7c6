// `hfx generate TINY_LLAVA --image FILE [--image FILE2] --prompt TEXT`: image files through hfx's processor,
// the <image> markers expanded, 32 greedy tokens of the eager merged forward — equal to transformers 4.47's
// (CLIPImageProcessor on the same PNGs, LlavaForConditionalGeneration greedy by full recomputation:
// tests/data/goldens/llava-tiny.json "image_files", from tools/hf_goldens/make_llava_goldens.py) with one and
// with two images. A prompt with more <image> markers than images is a clear error (exit 1).
// The ONNX export (onnx/vision_encoder.onnx, embed_tokens.onnx, decoder_model_merged.onnx) gives the same
// 32 tokens in ONNX Runtime (`hfx generate OUT --image`), and Transformers.js 4.3.1's
// LlavaForConditionalGeneration over the same files gives the tokens hfx gives (llava_generate_tjs.mjs, on
// images whose shortest edge is already the processor's size: Transformers.js resizes with sharp, not
// Pillow, so resized pixels differ from transformers' by design — tests/vision/image_processor_test.cpp).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "hfx/io/safetensors.h"
#include "hfx/models/tiny.h"
#include "support/oracle.h"
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

  hfx::testsupport::Proc generate(const std::string& prompt, size_t n_images, const std::string& extra = "",
                                  const std::string& model = "llava",
                                  const std::vector<std::string>* images = nullptr) {
    if (!images) images = &images_;
    std::string cmd = std::string(HFX_CLI) + " generate '" + (dir_ / model).string() + "' --prompt '" +
                      prompt + "' --max-new-tokens 32 " + extra;
    for (size_t i = 0; i < n_images; i++) cmd += " --image '" + (*images)[i] + "'";
    return hfx::testsupport::sh(cmd);
  }
  nlohmann::json generate_json(const std::string& prompt, size_t n_images, const std::string& model,
                               const std::vector<std::string>* images = nullptr) {
    const auto r = generate(prompt, n_images, "--json 2>/dev/null", model, images);
    EXPECT_EQ(r.rc, 0) << r.out;
    return r.rc == 0 ? nlohmann::json::parse(r.out) : nlohmann::json();
  }
  void export_onnx() {
    const auto r = hfx::testsupport::sh(std::string(HFX_CLI) + " export '" + (dir_ / "llava").string() +
                                        "' --format onnx -o '" + (dir_ / "onnx-out").string() + "' 2>&1");
    ASSERT_EQ(r.rc, 0) << r.out;
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
  r = generate(kPrompts[0], 1, "--engine ort");  // a checkpoint has no ONNX components
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_NE(r.out.find("[generate] expected vision_encoder.onnx in"), std::string::npos) << r.out;
}

// --chat with --image: the processor's chat template (chat_template.json) places one <image> per image before
// the message's text, as LlavaProcessor.apply_chat_template renders [{"type": "image"}, ..., {"type":
// "text"}]; the ids get BOS (the rendered prompt does not start with it, so the processor adds special
// tokens) and the marker expansion. For this template the rendering is exactly the golden prompts, so the ids
// and the 32 greedy tokens must be transformers' again. --json has the schema of every mode.
TEST_F(LlavaGenerate, ChatPlacesTheImagesThroughTheProcessorTemplate) {
  const char* messages[] = {"What is this?", "Compare them."};
  for (size_t n = 1; n <= 2; n++) {
    SCOPED_TRACE(n);
    std::string cmd = std::string(HFX_CLI) + " generate '" + (dir_ / "llava").string() + "' --chat '" +
                      messages[n - 1] + "' --max-new-tokens 32 --json";
    for (size_t i = 0; i < n; i++) cmd += " --image '" + images_[i] + "'";
    const auto r = hfx::testsupport::sh_stdout(cmd);
    ASSERT_EQ(r.rc, 0) << r.out;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["mode"], "chat");
    EXPECT_EQ(j["message"], messages[n - 1]);
    EXPECT_EQ(j["images"].size(), n);
    const auto& row = j["rows"][0];
    EXPECT_EQ(row["prompt"], kPrompts[n - 1]);
    const auto& want = golden_["cases"][n - 1];
    EXPECT_EQ(row["prompt_ids"], want["prompt_ids"]);
    EXPECT_EQ(row["ids"], want["greedy"]);
    for (const char* k : {"total_s", "prefill_s", "decode_s", "prompt_tokens", "cached_tokens", "new_tokens"})
      EXPECT_TRUE(j["timings"][k].is_number()) << k;
    EXPECT_EQ(j["timings"]["new_tokens"], want["greedy"].size());
  }
}

// The decoding options of text models apply with --image: a stop string cuts the greedy text before it
// (finish reason "stop"), --ignore-eos runs to --max-new-tokens, a seeded sampling run repeats itself,
// --quantize int8 quantizes the eager model at load (a different model: its tokens may differ).
TEST_F(LlavaGenerate, DecodingOptionsApplyWithImages) {
  // An image whose greedy reply decodes to printable text (the golden images' is mostly byte tokens).
  images_[0] = (dir_ / "text.png").string();
  hfx::testsupport::write_png(images_[0], 30, 30, hfx::testsupport::PngKind::Rgb, 7);
  const auto greedy = generate_json(kPrompts[0], 1, "llava");
  ASSERT_FALSE(greedy.is_null());
  EXPECT_EQ(greedy["mode"], "image");
  const std::string text = greedy["rows"][0]["text"];
  ASSERT_GE(text.size(), 8u) << text;
  std::string stop;  // 3 printable ASCII bytes that first occur after the start of the text
  auto plain = [](const std::string& p) {
    return std::all_of(p.begin(), p.end(), [](char c) { return c > ' ' && c < 127 && c != '\''; });
  };
  for (size_t i = 3; stop.empty() && i + 3 <= text.size(); i++)
    if (plain(text.substr(i, 3)) && text.find(text.substr(i, 3)) == i) stop = text.substr(i, 3);
  ASSERT_FALSE(stop.empty()) << text;
  auto r = generate(kPrompts[0], 1, "--json --stop '" + stop + "' 2>/dev/null");
  ASSERT_EQ(r.rc, 0) << r.out;
  auto row = nlohmann::json::parse(r.out)["rows"][0];
  EXPECT_EQ(row["finish_reason"], "stop");
  EXPECT_EQ(row["text"], text.substr(0, text.find(stop)));
  // A stop string inside a character leaves the text ending mid-character: JSON still comes out (U+FFFD).
  const size_t bad = text.find("\xEF\xBF\xBD");
  ASSERT_NE(bad, std::string::npos) << text;
  r = generate(kPrompts[0], 1, "--json --stop '\xBF\xBD' 2>/dev/null");
  ASSERT_EQ(r.rc, 0) << r.out;
  row = nlohmann::json::parse(r.out)["rows"][0];
  EXPECT_EQ(row["text"], text.substr(0, bad) + "\xEF\xBF\xBD");
  r = generate(kPrompts[0], 1, "--json --ignore-eos 2>/dev/null");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_EQ(nlohmann::json::parse(r.out)["rows"][0]["ids"].size(), 32u);  // generate() asks for 32
  const std::string sampled = "--json --temperature 1.5 --top-k 20 --seed 7 --repetition-penalty 1.2";
  const auto s1 = generate(kPrompts[0], 1, sampled + " 2>/dev/null"),
             s2 = generate(kPrompts[0], 1, sampled + " 2>/dev/null");
  ASSERT_EQ(s1.rc, 0) << s1.out;
  EXPECT_EQ(nlohmann::json::parse(s1.out)["rows"][0]["ids"], nlohmann::json::parse(s2.out)["rows"][0]["ids"]);
  r = generate(kPrompts[0], 1, "--quantize int8 --json 2>/dev/null");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_EQ(nlohmann::json::parse(r.out)["rows"][0]["prompt_ids"], greedy["rows"][0]["prompt_ids"]);
  r = generate(kPrompts[0], 1, "--system 'Be brief.'");
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("expected --system together with --chat"), std::string::npos) << r.out;
}

TEST_F(LlavaGenerate, OnnxExportGreedyTokensEqualTransformersWithOneAndTwoImages) {
  export_onnx();
  for (const char* f : {"vision_encoder.onnx", "embed_tokens.onnx", "decoder_model_merged.onnx"})
    EXPECT_TRUE(fs::exists(dir_ / "onnx-out" / "onnx" / f)) << f;
  for (const char* f : {"preprocessor_config.json", "processor_config.json", "chat_template.json"})
    EXPECT_TRUE(fs::exists(dir_ / "onnx-out" / f)) << f;
  for (size_t n = 1; n <= 2; n++) {
    SCOPED_TRACE(n);
    const auto j = generate_json(kPrompts[n - 1], n, "onnx-out");
    ASSERT_FALSE(j.is_null());
    EXPECT_EQ(j["engine"], "ort");
    const auto& want = golden_["cases"][n - 1];
    EXPECT_EQ(j["rows"][0]["prompt_ids"], want["prompt_ids"]);
    EXPECT_EQ(j["rows"][0]["ids"], want["greedy"]);
    std::printf("[llava onnx] %zu image(s): greedy %zu tokens from ONNX Runtime %s transformers'\n", n,
                j["rows"][0]["ids"].size(),
                j["rows"][0]["ids"] == want["greedy"] ? "equal to" : "DIFFER from");
  }
}

TEST_F(LlavaGenerate, TransformersJsRunsTheOnnxExportWithTheSameTokens) {
  HFX_REQUIRE_ORACLE(hfx::test::kTransformersJs);
  export_onnx();
  // 40×30 and 30×30: the shortest edge is the processor's 30, so no resampling (see the file comment).
  std::vector<std::string> images;
  const std::pair<int64_t, int64_t> sizes[] = {{40, 30}, {30, 30}};
  for (size_t i = 0; i < 2; i++) {
    images.push_back((dir_ / ("unresized" + std::to_string(i) + ".png")).string());
    hfx::testsupport::write_png(images.back(), sizes[i].first, sizes[i].second,
                                hfx::testsupport::PngKind::Rgb, uint32_t(7 + i));
  }
  for (size_t n = 1; n <= 2; n++) {
    SCOPED_TRACE(n);
    std::string cmd = "node '" HFX_SOURCE_DIR "/tests/vision/llava_generate_tjs.mjs' '" HFX_NODE_MODULES
                      "' '" +
                      (dir_ / "onnx-out").string() + "' 32 '" + kPrompts[n - 1] + "'";
    for (size_t i = 0; i < n; i++) cmd += " '" + images[i] + "'";
    const auto r = hfx::testsupport::sh(cmd + " 2>&1");
    ASSERT_EQ(r.rc, 0) << r.out;
    const auto tjs = nlohmann::json::parse(r.out.substr(r.out.find('{')));
    EXPECT_EQ(tjs["model"], "LlavaForConditionalGeneration");
    const auto ort = generate_json(kPrompts[n - 1], n, "onnx-out", &images);
    const auto eager = generate_json(kPrompts[n - 1], n, "llava", &images);
    ASSERT_FALSE(ort.is_null() || eager.is_null());
    EXPECT_EQ(tjs["prompt_ids"], ort["rows"][0]["prompt_ids"]);
    EXPECT_EQ(tjs["ids"], ort["rows"][0]["ids"]);
    EXPECT_EQ(eager["rows"][0]["ids"], ort["rows"][0]["ids"]);
    EXPECT_EQ(tjs["ids"].size(), 32u);
    std::printf(
        "[llava transformers.js] %zu image(s): %zu tokens, Transformers.js %s hfx (ONNX Runtime), eager %s\n",
        n, tjs["ids"].size(), tjs["ids"] == ort["rows"][0]["ids"] ? "equals" : "DIFFERS from",
        eager["rows"][0]["ids"] == ort["rows"][0]["ids"] ? "equal" : "DIFFERENT");
  }
}

}  // namespace
