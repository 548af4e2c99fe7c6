// Sentence embeddings (hfx/runtime/embed.h): pooling and normalization against hand-computed values,
// the settings read from a sentence-transformers folder, the eager path against the model's own
// last_hidden_state, and bad input (`hfx embed` without text, an unknown or unsupported pooling mode,
// a non-base model) refused with "[embed] expected ..., got ..." and a non-zero exit.
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "hfx/core/error.h"
#include "hfx/io/safetensors.h"
#include "hfx/runtime/embed.h"
#include "models/encoder_test_util.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace hfx::test {
namespace {

TEST(Embed, PoolingByHand) {
  // B=1, T=3 (the last token is padding), E=2.
  std::vector<float> h = {1, 2, 3, 6, 100, -100};
  std::vector<int64_t> mask = {1, 1, 0};
  auto mean = rt::pool(h, 1, 3, 2, mask, rt::Pooling::Mean, false);
  EXPECT_FLOAT_EQ(mean[0][0], 2.0f);
  EXPECT_FLOAT_EQ(mean[0][1], 4.0f);
  auto mx = rt::pool(h, 1, 3, 2, mask, rt::Pooling::Max, false);
  EXPECT_FLOAT_EQ(mx[0][0], 3.0f);
  EXPECT_FLOAT_EQ(mx[0][1], 6.0f);
  auto cls = rt::pool(h, 1, 3, 2, mask, rt::Pooling::Cls, true);
  EXPECT_FLOAT_EQ(cls[0][0], static_cast<float>(1 / std::sqrt(5.0)));
  EXPECT_FLOAT_EQ(cls[0][1], static_cast<float>(2 / std::sqrt(5.0)));
}

TEST(Embed, SettingsFromSentenceTransformersFolder) {
  TempDir dir("embed_settings");
  TinyOptions o;
  o.sentence_pooling = "max";
  create_tiny("bert", dir.path.string(), o);
  rt::EmbedSettings s = rt::read_embed_settings(dir.path.string());
  EXPECT_EQ(s.source, "modules.json");
  EXPECT_EQ(s.pooling, rt::Pooling::Max);
  EXPECT_TRUE(s.normalize);
  EXPECT_TRUE(fs::is_directory(dir.path / "2_Normalize"));
  // Unsupported and multiple modes name what they found.
  json p = json::parse(io::read_file((dir.path / "1_Pooling/config.json").string()));
  p["pooling_mode_max_tokens"] = false;
  p["pooling_mode_weightedmean_tokens"] = true;
  io::write_file_atomic((dir.path / "1_Pooling/config.json").string(), p.dump());
  try {
    rt::read_embed_settings(dir.path.string());
    FAIL() << "weightedmean accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[embed] expected pooling mode mean, cls or max"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("weightedmean"), std::string::npos) << e.what();
  }
  // A folder without modules.json: mean + normalize (Transformers.js' feature-extraction settings).
  TempDir plain("embed_plain");
  create_tiny("bert", plain.path.string());
  s = rt::read_embed_settings(plain.path.string());
  EXPECT_EQ(s.source, "default");
  EXPECT_EQ(s.pooling, rt::Pooling::Mean);
  EXPECT_TRUE(s.normalize);
}

TEST(Embed, EagerEqualsPooledLastHiddenState) {
  TempDir dir("embed_eager");
  TinyOptions o;
  o.sentence_pooling = "mean";
  create_tiny("distilbert", dir.path.string(), o);
  std::vector<std::string> texts = {"a short one", "and a somewhat longer sentence to pad the first"};
  rt::EmbedResult r = rt::embed(dir.path.string(), texts);
  ASSERT_EQ(r.vectors.size(), 2u);
  auto m = load_model(dir.path.string());
  Padded p;
  p.B = r.tokens.batch;
  p.T = r.tokens.seq;
  p.ids = r.tokens.input_ids;
  p.mask = r.tokens.attention_mask;
  Tensor h = encoder_forward(*m, p);
  const int64_t E = h.size(2);
  for (int64_t b = 0; b < p.B; b++) {
    std::vector<double> mean(E, 0.0);
    double n = 0;
    for (int64_t t = 0; t < p.T; t++)
      if (p.mask[b * p.T + t]) {
        n += 1;
        for (int64_t e = 0; e < E; e++) mean[e] += h.data<float>()[(b * p.T + t) * E + e];
      }
    double norm = 0;
    for (auto& x : mean) norm += (x / n) * (x / n);
    norm = std::sqrt(norm);
    for (int64_t e = 0; e < E; e++) EXPECT_NEAR(r.vectors[b][e], mean[e] / n / norm, 1e-6);
  }
}

std::string run(const std::string& cmd, int* rc) {
  std::array<char, 4096> buf;
  std::string out;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  while (size_t n = fread(buf.data(), 1, buf.size(), p)) out.append(buf.data(), n);
  *rc = pclose(p);
  return out;
}

TEST(Embed, BadInputIsRefused) {
  TempDir dir("embed_bad");
  TinyOptions o;
  o.sentence_pooling = "mean";
  create_tiny("bert", (dir.path / "st").string(), o);
  TinyOptions mlm;
  mlm.head = "masked_lm";
  create_tiny("bert", (dir.path / "mlm").string(), mlm);
  const std::string cli = HFX_CLI;
  struct Case {
    std::string args, want;
  };
  const std::vector<Case> cases = {
      {" embed " + (dir.path / "st").string(), "[embed] expected at least one --text, got none"},
      {" embed " + (dir.path / "st").string() + " --text hi --pooling median",
       "[embed] expected a pooling mode among [mean, cls, max], got 'median'"},
      {" embed " + (dir.path / "mlm").string() + " --text hi", "[embed] expected an encoder-only base model"},
      {" embed " + dir.path.string() + " --text hi", "[embed] expected a model folder with config.json"},
      {" create-tiny bert -o " + (dir.path / "x").string() + " --sentence-transformers --pooling median",
       "[model] expected sentence-transformers pooling mean, cls or max, got 'median'"},
      {" create-tiny bert -o " + (dir.path / "y").string() + " --sentence-transformers --head masked_lm",
       "[model] expected an encoder base model (head base) for a sentence-transformers checkpoint"},
  };
  for (const auto& c : cases) {
    int rc = 0;
    std::string out = run(cli + c.args, &rc);
    EXPECT_NE(rc, 0) << c.args;
    EXPECT_NE(out.find(c.want), std::string::npos) << c.args << "\n" << out;
  }
  EXPECT_FALSE(fs::exists(dir.path / "x"));
  EXPECT_FALSE(fs::exists(dir.path / "y"));
}

}  // namespace
}  // namespace hfx::test
