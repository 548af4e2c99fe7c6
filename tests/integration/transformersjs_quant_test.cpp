// Transformers.js (npm @huggingface/transformers 4.3.1 on onnxruntime-node) loads quantized hfx ONNX
// folders — com.microsoft.MatMulNBits (`--quantize int4|int8 --target ort`; with `--quantize-embedding`
// also the embedding table's gathered rows de-quantized by standard ops) — and generates the greedy tokens
// that hfx's eager engine generates on the same quantized weights (hfx generate --quantize; the export
// folder's own eager reference reads export_config.json). EOS is disabled on both sides so all 24 tokens are
// compared, batch 1 and batch 3 (left-padded). The standard (DequantizeLinear) form is not compared token for
// token: ONNX Runtime's default optimizations fuse it into MatMulNBits with int8 activations, other math than
// eager's (docs/quantization.md).
#include <gtest/gtest.h>

#include <unistd.h>
#include <array>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "hfx/io/safetensors.h"
#include "hfx/runtime/generator.h"

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

struct Case {
  std::string tag, flags;
};
class TransformersJsQuant : public ::testing::TestWithParam<Case> {};

}  // namespace

TEST_P(TransformersJsQuant, SameGreedyTokensAsEagerQuantized) {
  const Case c = GetParam();
  ASSERT_EQ(system("node --version > /dev/null 2>&1"), 0)
      << "node is not installed (scripts/setup.sh installs it)";
  ASSERT_TRUE(fs::exists(fs::path(HFX_NODE_MODULES) / "@huggingface/transformers"))
      << "deps/npm/node_modules lacks @huggingface/transformers (run scripts/setup.sh)";
  fs::path dir = fs::temp_directory_path() / ("hfx_tjsq_" + c.tag + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::string cli = HFX_CLI;
  ASSERT_EQ(system((cli + " create-tiny llama -o " + (dir / "ckpt").string() + " > /dev/null").c_str()), 0);
  ASSERT_EQ(system((cli + " export " + (dir / "ckpt").string() + " --format onnx " + c.flags + " -o " +
                    (dir / "out").string() + " > /dev/null")
                       .c_str()),
            0);
  drop_eos(dir / "out" / "generation_config.json");
  drop_eos(dir / "out" / "config.json");

  // The export folder holds the checkpoint files and export_config.json: its eager engine quantizes
  // the same way the export did.
  auto gen = hfx::Generator::open((dir / "out").string(), {.engine = "eager"});
  const std::vector<std::vector<int64_t>> prompts = {
      {5, 17, 33, 2, 8, 90, 41}, {7, 3}, {11, 12, 13, 14, 15, 16, 17}};
  hfx::GenerationOptions opt;
  opt.max_new_tokens = 24;
  opt.ignore_eos = true;
  for (size_t batch : {size_t{1}, size_t{3}}) {
    std::vector<std::vector<int64_t>> p(prompts.begin(), prompts.begin() + batch);
    auto ref = gen.generate_ids(p, opt);
    std::string out =
        run("node " + std::string(HFX_SOURCE_DIR) + "/tests/integration/transformersjs_generate.mjs " +
            HFX_NODE_MODULES + " " + (dir / "out").string() + " 24 '" + json(p).dump() + "' 2>&1");
    ASSERT_EQ(out.rfind("ERROR", 0), std::string::npos) << out;
    json j = json::parse(out.substr(out.find('{')));
    for (size_t b = 0; b < batch; b++)
      EXPECT_EQ(j["sequences"][b].get<std::vector<int64_t>>(), ref.ids[b])
          << c.tag << " batch " << batch << " row " << b;
  }
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(
    Modes, TransformersJsQuant,
    ::testing::Values(Case{"int4_ort", "--target ort --quantize int4 --group-size 32"},
                      Case{"int8_ort", "--target ort --quantize int8 --group-size 64 --symmetric"},
                      Case{"int4_ort_embedding",
                           "--target ort --quantize int4 --group-size 32 --quantize-embedding"}),
    [](const auto& info) { return info.param.tag; });
