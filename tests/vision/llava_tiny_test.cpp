// `hfx create-tiny llava`: a llava-1.5-shaped checkpoint (CLIP vision config, Llama text config, the
// <image> token, preprocessor_config.json / processor_config.json / chat_template.json) that the real
// consumers read as a llava checkpoint — here Transformers.js 4.3.1's AutoProcessor (LlavaProcessor over
// CLIPImageProcessor: same pixel_values as hfx's processor, the <image> marker tokenized to
// image_token_index) and hfx's own tokenizer and chat template; transformers' LlavaForConditionalGeneration
// loads it with no missing or unexpected weight (tools/hf_goldens/check_llava_tiny.py, run by hand: CI has no
// oracle). hfx cannot run the model yet: loading or exporting it is a clear error.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "hfx/core/error.h"
#include "hfx/io/safetensors.h"
#include "hfx/models/model.h"
#include "hfx/models/tiny.h"
#include "hfx/processors/image.h"
#include "hfx/tokenizers/chat_template.h"
#include "hfx/tokenizers/tokenizer.h"
#include "support/oracle.h"
#include "support/shell.h"
#include "support/verdict.h"
#include "vision/image_writers.h"

namespace fs = std::filesystem;
namespace hp = hfx::processors;

namespace {

class LlavaTiny : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("hfx_llava_tiny_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    hfx::create_tiny("llava", (dir_ / "llava").string());
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string model() const { return (dir_ / "llava").string(); }
  fs::path dir_;
};

TEST_F(LlavaTiny, CheckpointHasLlavaFilesTokenAndLoadsAsThreeComponents) {
  for (const char* f :
       {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json",
        "generation_config.json", "preprocessor_config.json", "processor_config.json", "chat_template.json"})
    EXPECT_TRUE(fs::exists(dir_ / "llava" / f)) << f;
  const auto cfg = nlohmann::json::parse(hfx::io::read_file(model() + "/config.json"));
  EXPECT_EQ(cfg["architectures"][0], "LlavaForConditionalGeneration");
  EXPECT_EQ(cfg["vision_feature_layer"], -2);
  EXPECT_EQ(cfg["vision_feature_select_strategy"], "default");
  EXPECT_EQ(cfg["vision_config"]["hidden_act"], "quick_gelu");
  const int64_t image_token = cfg["image_token_index"];
  EXPECT_EQ(cfg["text_config"]["vocab_size"].get<int64_t>(), image_token + 2);

  // Every weight transformers' LlavaForConditionalGeneration (4.47) has, with its shape.
  const auto st = hfx::io::SafetensorsFile::open(model() + "/model.safetensors");
  EXPECT_EQ(st->get("vision_tower.vision_model.embeddings.patch_embedding.weight").shape(),
            (hfx::Shape{32, 3, 6, 6}));
  EXPECT_EQ(st->get("vision_tower.vision_model.embeddings.position_embedding.weight").shape(),
            (hfx::Shape{26, 32}));
  EXPECT_EQ(st->get("multi_modal_projector.linear_1.weight").shape(), (hfx::Shape{64, 32}));
  EXPECT_EQ(st->get("language_model.model.embed_tokens.weight").shape(), (hfx::Shape{514, 64}));
  EXPECT_EQ(st->get("language_model.lm_head.weight").shape(), (hfx::Shape{514, 64}));

  // hfx's tokenizer: the marker is one token; the chat template renders llava-1.5's prompt.
  const auto tok = hfx::tok::Tokenizer::from_dir(model());
  const auto ids = tok.encode("USER: <image>\nWhat is this? ASSISTANT:");
  EXPECT_EQ(std::count(ids.begin(), ids.end(), int32_t(image_token)), 1);
  hfx::tok::ChatInputs in;
  in.messages = nlohmann::ordered_json::parse(
      R"([{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "What is this?"}]}])");
  in.add_generation_prompt = true;
  EXPECT_EQ(hfx::tok::ChatTemplate::from_dir(model()).render(in), "USER: <image>\nWhat is this? ASSISTANT:");

  // The model: vision_encoder, embed_tokens and a decoder on embeddings, as Transformers.js splits it.
  const auto m = hfx::load_model(model());
  EXPECT_EQ(m->structure(), hfx::Structure::VisionLanguage);
  EXPECT_EQ(m->component_names(), (std::vector<std::string>{"vision_encoder", "embed_tokens", "decoder"}));
  EXPECT_EQ(m->component("vision_encoder").inputs.at(0).axes,
            (std::vector<std::string>{"batch_size", "3", "30", "30"}));
  EXPECT_EQ(m->component("decoder").inputs.at(0).name, "inputs_embeds");
  EXPECT_EQ(m->component("decoder").cache.size(), 4u);
}

TEST_F(LlavaTiny, TransformersJsProcessorReadsTheFolder) {
  HFX_REQUIRE_ORACLE(hfx::test::kTransformersJs);
  const std::string image = (dir_ / "cat.png").string();
  hfx::testsupport::write_png(image, 64, 48, hfx::testsupport::PngKind::Rgb, 7);
  const std::string prompt = "USER: <image>\nWhat is this? ASSISTANT:";
  const auto r = hfx::testsupport::sh(
      "node " HFX_SOURCE_DIR "/tests/vision/llava_processor_tjs.mjs '" HFX_NODE_MODULES "' '" + model() +
      "' '" + image + "' '" + prompt + "' '" + (dir_ / "pv.f32").string() + "' 2>/dev/null");
  ASSERT_EQ(r.rc, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["processor"], "LlavaProcessor");
  EXPECT_EQ(j["image_processor"], "CLIPImageProcessor");
  EXPECT_EQ(j["dims"], nlohmann::json::parse("[1, 3, 30, 30]"));

  // pixel_values: hfx's processor on the folder's preprocessor_config.json, on a 30×30 image that neither
  // side resamples (resampled images differ by design: sharp vs Pillow, docs/vision.md).
  const std::string square = (dir_ / "square.png").string();
  hfx::testsupport::write_png(square, 30, 30, hfx::testsupport::PngKind::Rgb, 8);
  const auto r2 = hfx::testsupport::sh(
      "node " HFX_SOURCE_DIR "/tests/vision/llava_processor_tjs.mjs '" HFX_NODE_MODULES "' '" + model() +
      "' '" + square + "' '" + prompt + "' '" + (dir_ / "pv2.f32").string() + "' 2>/dev/null");
  ASSERT_EQ(r2.rc, 0) << r2.out;
  const auto cfg = hp::ClipImageProcessorConfig::load(model());
  const hfx::Tensor pv = hp::clip_pixel_values(cfg, {hp::read_image(square)});
  const std::string tjs = hfx::io::read_file((dir_ / "pv2.f32").string());
  ASSERT_EQ(tjs.size(), pv.nbytes());
  double max_diff = 0;
  for (int64_t k = 0; k < pv.numel(); k++) {
    float t;
    std::memcpy(&t, tjs.data() + 4 * k, 4);
    max_diff = std::max(max_diff, double(std::fabs(t - pv.data<float>()[k])));
  }
  EXPECT_LE(max_diff, 1e-6);

  // input_ids: the marker expanded to image tokens. Transformers.js 4.3.1 counts (30/6)² +
  // num_additional_image_tokens = 26 (it does not drop the CLS slot for the 'default' strategy, as
  // transformers 4.47 does: 25); outside them the ids are hfx's tokenization of the same text.
  const auto cfgj = nlohmann::json::parse(hfx::io::read_file(model() + "/config.json"));
  const int64_t image_token = cfgj["image_token_index"];
  std::vector<int64_t> tjs_ids = j["input_ids"];
  EXPECT_EQ(std::count(tjs_ids.begin(), tjs_ids.end(), image_token), 26);
  const auto tok = hfx::tok::Tokenizer::from_dir(model());
  auto ids = tok.encode(prompt);
  std::vector<int64_t> expanded;
  for (int32_t id : ids) {
    if (id == image_token)
      expanded.insert(expanded.end(), 26, image_token);
    else
      expanded.push_back(id);
  }
  EXPECT_EQ(tjs_ids, expanded);
}

// Every format exports llava's components and `hfx verify` replays the generation loop's real calls in the
// format's runtime or reader: ONNX Runtime (vision_encoder, embed_tokens and the decoders), hfx's .pte
// executor (the methods vision_encoder, token_embedding, text_decoder, ExecuTorch's multimodal runner's
// names), and for .pt2 the archive structure (numerics need PyTorch: tools/pt2_check).
// A line of `text` that holds every one of `parts`.
bool has_line(const std::string& text, const std::vector<std::string>& parts) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (std::all_of(parts.begin(), parts.end(),
                    [&](const std::string& p) { return line.find(p) != std::string::npos; }))
      return true;
  return false;
}

TEST_F(LlavaTiny, EveryFormatExportsTheComponentsAndVerifies) {
  const std::map<std::string, std::vector<std::string>> files = {
      {"onnx",
       {"onnx/vision_encoder.onnx", "onnx/embed_tokens.onnx", "onnx/decoder_model_merged.onnx",
        "onnx/decoder_model.onnx", "onnx/decoder_with_past_model.onnx"}},
      {"executorch", {"model.pte"}},
      {"dynamo",
       {"vision_encoder.pt2", "embed_tokens.pt2", "decoder_model.pt2", "decoder_with_past_model.pt2"}}};
  for (const auto& [format, want] : files) {
    SCOPED_TRACE(format);
    const fs::path out = dir_ / ("out_" + format);
    auto r = hfx::testsupport::sh(std::string(HFX_CLI) + " export '" + model() + "' --format " + format +
                                  " -o '" + out.string() + "' 2>&1");
    ASSERT_EQ(r.rc, 0) << r.out;
    for (const auto& f : want) EXPECT_TRUE(fs::exists(out / f)) << f;
    for (const char* f : {"preprocessor_config.json", "processor_config.json", "chat_template.json"})
      EXPECT_TRUE(fs::exists(out / f)) << f;
    r = hfx::testsupport::sh(std::string(HFX_CLI) + " verify '" + out.string() + "' 2>&1");
    EXPECT_TRUE(hfx::testsupport::verified_or_judge_off(r.rc, r.out)) << r.out;
    if (format == "executorch") {
      for (const char* method :
           {"model.pte:vision_encoder", "model.pte:token_embedding", "model.pte:text_decoder"})
        EXPECT_TRUE(has_line(r.out, {method, "numerics", "PASS"})) << method << r.out;
    }
    if (format == "onnx") {
      for (const char* c : {"vision_encoder ", "embed_tokens ", "decoder_model_merged "})
        EXPECT_TRUE(has_line(r.out, {c, "numerics", "PASS", "ONNX Runtime"})) << c << r.out;
    }
  }
}

}  // namespace
