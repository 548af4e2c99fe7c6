// Transformers.js (the real consumer, npm @huggingface/transformers 4.3.1) loads an hfx ONNX export
// folder as it is and generates the same greedy tokens as hfx's eager reference, batch 1 and batch 3
// (left-padded). EOS is disabled on both sides so all 32 tokens are compared.
#include <gtest/gtest.h>

#include <unistd.h>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "hfx/io/safetensors.h"
#include "hfx/runtime/generator.h"
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

void drop_eos(const fs::path& file) {
  if (!fs::exists(file)) return;
  json j = json::parse(hfx::io::read_file(file.string()));
  j["eos_token_id"] = nullptr;
  hfx::io::write_file_atomic(file.string(), j.dump(2));
}

class TransformersJs : public ::testing::TestWithParam<std::string> {};

}  // namespace

TEST_P(TransformersJs, SameGreedyTokensAsEager) {
  const std::string arch = GetParam();
  HFX_REQUIRE_ORACLE(hfx::test::kTransformersJs);
  fs::path dir = fs::temp_directory_path() / ("hfx_tjs_" + arch + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::string cli = HFX_CLI;
  ASSERT_EQ(
      system((cli + " create-tiny " + arch + " -o " + (dir / "ckpt").string() + " > /dev/null").c_str()), 0);
  ASSERT_EQ(system((cli + " export " + (dir / "ckpt").string() + " --format onnx -o " +
                    (dir / "out").string() + " > /dev/null")
                       .c_str()),
            0);
  drop_eos(dir / "out" / "generation_config.json");
  drop_eos(dir / "out" / "config.json");

  const std::vector<std::vector<int64_t>> prompts = {
      {5, 17, 33, 2, 8, 90, 41}, {7, 3}, {11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21}};
  auto gen = hfx::Generator::open((dir / "ckpt").string(), {.engine = "eager"});
  hfx::GenerationOptions opt;
  opt.max_new_tokens = 32;
  opt.ignore_eos = true;
  for (size_t batch : {size_t{1}, size_t{3}}) {
    std::vector<std::vector<int64_t>> p(prompts.begin(), prompts.begin() + batch);
    auto ref = gen.generate_ids(p, opt);
    std::string out =
        run("node " + std::string(HFX_SOURCE_DIR) + "/tests/integration/transformersjs_generate.mjs " +
            HFX_NODE_MODULES + " " + (dir / "out").string() + " 32 '" + json(p).dump() + "' 2>&1");
    ASSERT_EQ(out.rfind("ERROR", 0), std::string::npos) << out;
    json j = json::parse(out.substr(out.find('{')));
    for (size_t b = 0; b < batch; b++) {
      std::vector<int64_t> tjs = j["sequences"][b].get<std::vector<int64_t>>();
      EXPECT_EQ(tjs, ref.ids[b]) << arch << " batch " << batch << " row " << b;
    }
  }
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Archs, TransformersJs,
                         ::testing::Values("llama", "qwen2", "gemma2", "gpt2", "mistral", "qwen3", "gemma",
                                           "phi3", "qwen2_moe", "qwen3_moe", "granitemoehybrid", "lfm2",
                                           "gemma3_text"),
                         [](const auto& info) { return info.param; });
