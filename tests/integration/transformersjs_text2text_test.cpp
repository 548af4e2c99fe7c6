// Transformers.js 4.3.1 loads an hfx ONNX export folder of each encoder-decoder family as it is
// (encoder_model.onnx + decoder_model_merged.onnx, config, generation config, tokenizer) and generates
// the same greedy tokens as hfx (eager, from the checkpoint) with the checkpoint's own generation config
// (decoder start, forced BOS/EOS, bad words, EOS): model.generate() on a padded batch of 3 prompts, and
// the text2text-generation (t5, mt5, bart, mbart, m2m_100, blenderbot, blenderbot-small) / translation
// (marian) pipeline's text for each prompt.
#include <gtest/gtest.h>

#include <unistd.h>
#include <array>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "hfx/runtime/text2text.h"
#include "support/oracle.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string run(const std::string& cmd) {
  std::array<char, 4096> buf;
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return out;
  while (size_t n = fread(buf.data(), 1, buf.size(), p)) out.append(buf.data(), n);
  int rc = pclose(p);
  if (rc != 0) out = "ERROR rc=" + std::to_string(rc) + ": " + out;
  return out;
}

struct T2T {
  std::string name, arch, preset, task;
};
void PrintTo(const T2T& t, std::ostream* os) { *os << t.name; }

class TransformersJsText2Text : public ::testing::TestWithParam<T2T> {};

}  // namespace

TEST_P(TransformersJsText2Text, SameGreedyTokensAsHfx) {
  const T2T& t = GetParam();
  HFX_REQUIRE_ORACLE(hfx::test::kTransformersJs);
  fs::path dir = fs::temp_directory_path() / ("hfx_tjs_t2t_" + t.name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string cli = HFX_CLI;
  ASSERT_EQ(system((cli + " create-tiny " + t.arch + " --preset " + t.preset + " -o " +
                    (dir / "ckpt").string() + " > /dev/null")
                       .c_str()),
            0);
  ASSERT_EQ(system((cli + " export " + (dir / "ckpt").string() + " --format onnx -o " +
                    (dir / "out").string() + " > /dev/null")
                       .c_str()),
            0);

  const std::vector<std::string> prompts = {"the quick brown fox jumps over the lazy dog", "hello world",
                                            "translate English to German: the house is wonderful and small"};
  const int64_t steps = 32;
  auto gen = hfx::Text2TextGenerator::open((dir / "ckpt").string(), "eager");
  auto ref = gen.generate(prompts, steps);
  const auto& eos = gen.settings().eos_token_ids;
  std::string out =
      run("node " + std::string(HFX_SOURCE_DIR) + "/tests/integration/transformersjs_text2text.mjs " +
          HFX_NODE_MODULES + " " + (dir / "out").string() + " " + t.task + " " + std::to_string(steps) +
          " '" + json(prompts).dump() + "' 2>&1");
  ASSERT_EQ(out.rfind("ERROR", 0), std::string::npos) << out;
  json j = json::parse(out.substr(out.find('{')));
  for (size_t b = 0; b < prompts.size(); b++) {
    std::vector<int64_t> tjs = j["sequences"][b].get<std::vector<int64_t>>();
    for (size_t i = 0; i < tjs.size();
         i++)  // rows that finished early are padded by generate(): cut after EOS
      if (std::find(eos.begin(), eos.end(), tjs[i]) != eos.end()) {
        tjs.resize(i + 1);
        break;
      }
    EXPECT_EQ(tjs, ref.ids[b]) << t.name << " row " << b;
    EXPECT_EQ(j["texts"][b].get<std::string>(), ref.texts[b]) << t.name << " pipeline text, row " << b;
  }
  std::printf("  [%s] %zu rows, %zu/%zu/%zu tokens equal\n", t.name.c_str(), prompts.size(),
              ref.ids[0].size(), ref.ids[1].size(), ref.ids[2].size());
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Archs, TransformersJsText2Text,
                         ::testing::Values(T2T{"t5", "t5", "tiny", "text2text-generation"},
                                           T2T{"t5_gated", "t5", "tiny-gated", "text2text-generation"},
                                           T2T{"bart", "bart", "tiny", "text2text-generation"},
                                           T2T{"marian", "marian", "tiny", "translation"},
                                           T2T{"mt5", "mt5", "tiny", "text2text-generation"},
                                           T2T{"mbart", "mbart", "tiny", "text2text-generation"},
                                           T2T{"m2m_100", "m2m_100", "tiny", "text2text-generation"},
                                           T2T{"blenderbot", "blenderbot", "tiny", "text2text-generation"},
                                           T2T{"blenderbot_small", "blenderbot-small", "tiny",
                                               "text2text-generation"}),
                         [](const auto& info) { return info.param.name; });
