// Transformers.js 4.3.1 (npm @huggingface/transformers, the real consumer) loads the ONNX export folder
// that `hfx export` writes for each encoder architecture as it is, and its pipelines agree with hfx's
// eager model on the checkpoint the export came from:
//   feature-extraction {pooling: 'mean', normalize: true} on a --sentence-transformers base model = hfx
//     embed (eager on the checkpoint, ONNX Runtime on the export, and the `hfx embed --json` CLI), ≤ 1e-4;
//   text-classification (all labels), token-classification (every non-special token) and fill-mask
//     (top 5): same labels / tokens in the same order, scores ≤ 1e-4.
// Both sides must see the same token ids (checked first, so a tokenizer difference is not mistaken for
// a numerics one). Texts are one at a time for the classification pipelines and also batched (padded)
// for feature-extraction.
// Measured (the 5 archs before camembert): embeddings ≤ 7.1e-8, text-classification scores ≤ 9.4e-8,
// token-classification ≤ 2.0e-7, fill-mask ≤ 1.5e-8 — printed per test.
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <numeric>

#include <nlohmann/json.hpp>

#include "hfx/io/safetensors.h"
#include "hfx/runtime/embed.h"
#include "hfx/tokenizers/tokenizer.h"
#include "models/encoder_test_util.h"
#include "support/oracle.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace hfx::test {
namespace {

constexpr double kTol = 1e-4;

std::string run(const std::string& cmd, int* rc = nullptr) {
  std::array<char, 4096> buf;
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return out;
  while (size_t n = fread(buf.data(), 1, buf.size(), p)) out.append(buf.data(), n);
  int r = pclose(p);
  if (rc) *rc = r;
  return out;
}

std::vector<double> softmax(const float* x, int64_t n) {
  double m = *std::max_element(x, x + n), s = 0;
  std::vector<double> p(n);
  for (int64_t i = 0; i < n; i++) s += p[i] = std::exp(static_cast<double>(x[i]) - m);
  for (auto& v : p) v /= s;
  return p;
}

struct Fixture {
  fs::path dir, ckpt, out;
  std::unique_ptr<Model> model;
  std::unique_ptr<tok::Tokenizer> tk;
};

// create-tiny (+ options) and `hfx export --format onnx`, both through the CLI as a user runs them.
void make(Fixture& f, const std::string& arch, const std::string& tag, const std::string& create_opts) {
  f.dir = fs::temp_directory_path() /
          ("hfx_tjs_enc_" + param_name(arch + "_" + tag) + "_" + std::to_string(::getpid()));
  fs::remove_all(f.dir);
  fs::create_directories(f.dir);
  f.ckpt = f.dir / "ckpt";
  f.out = f.dir / "out";
  std::string cli = HFX_CLI;
  ASSERT_EQ(
      system((cli + " create-tiny " + arch + " -o " + f.ckpt.string() + " " + create_opts + " > /dev/null")
                 .c_str()),
      0);
  ASSERT_EQ(system((cli + " export " + f.ckpt.string() + " --format onnx --opset 23 -o " + f.out.string() +
                    " > /dev/null")
                       .c_str()),
            0);
  f.model = load_model(f.ckpt.string());
  f.tk = std::make_unique<tok::Tokenizer>(tok::Tokenizer::from_dir(f.ckpt.string()));
}

const std::vector<std::string> kTextsOne = {"hello world"};

json tjs(const Fixture& f, const std::string& task, const std::vector<std::string>& texts,
         const json& options) {
  json args = {{"texts", texts}, {"options", options}};
  std::string cmd = "node " + std::string(HFX_SOURCE_DIR) +
                    "/tests/integration/transformersjs_encoders.mjs " + HFX_NODE_MODULES + " " +
                    f.out.string() + " " + task + " '" + args.dump() + "'";
  int rc = 0;
  std::string out = run(cmd + " 2>&1", &rc);
  EXPECT_EQ(rc, 0) << out;
  try {
    return json::parse(out.substr(out.rfind("\n{") == std::string::npos ? 0 : out.rfind("\n{") + 1));
  } catch (const json::exception& e) {
    ADD_FAILURE() << "Transformers.js output is not JSON: " << out;
    return json::object();
  }
}

// Transformers.js 4.3.1 has task-head classes for these encoder families only; for the others (ernie,
// data2vec-text, roberta-prelayernorm; albert's token classification) its pipelines refuse the folder
// ("Unsupported model type"), which the head tests check instead (its feature-extraction falls back to the
// plain encoder for every type).
bool tjs_has_head(const std::string& arch, const std::string& task) {
  if (arch == "albert") return task != "token-classification";  // no AlbertForTokenClassification there
  for (const char* a : {"bert", "electra", "roberta", "xlm-roberta", "camembert", "distilbert", "modernbert",
                        "mpnet", "deberta-v2"})
    if (arch == a) return true;
  return false;
}

// Expects Transformers.js to refuse `task` on the export naming the model type; true when it did.
bool tjs_refuses(const Fixture& f, const std::string& arch, const std::string& task) {
  if (tjs_has_head(arch, task)) return false;
  json args = {{"texts", kTextsOne}, {"options", json::object()}};
  std::string cmd = "node " + std::string(HFX_SOURCE_DIR) +
                    "/tests/integration/transformersjs_encoders.mjs " + HFX_NODE_MODULES + " " +
                    f.out.string() + " " + task + " '" + args.dump() + "' 2>&1";
  int rc = 0;
  std::string out = run(cmd, &rc);
  EXPECT_NE(rc, 0) << out;
  EXPECT_NE(out.find("Unsupported model type: " + arch), std::string::npos) << out;
  std::printf("  [%s] Transformers.js refuses %s: Unsupported model type\n", arch.c_str(), task.c_str());
  return true;
}

// The eager output of one text (batch 1) and the ids hfx's tokenizer gives it.
Tensor eager_one(const Fixture& f, const std::string& text, std::vector<int64_t>* ids) {
  auto enc = f.tk->encode(text, true);
  ids->assign(enc.begin(), enc.end());
  return encoder_forward(*f.model, right_pad({*ids}, 0));
}

std::string label(const Model& m, int64_t i) {
  return m.config().raw["id2label"][std::to_string(i)].get<std::string>();
}

const std::vector<std::string> kTexts = {"The quick brown fox jumps over the lazy dog.", "hello world",
                                         "Sentence embeddings compare meaning, not spelling; 42 times."};

class TjsEncoders : public ::testing::TestWithParam<std::string> {};

TEST_P(TjsEncoders, FeatureExtractionMeanNormalized) {
  HFX_REQUIRE_ORACLE(test::kTransformersJs);
  const std::string arch = GetParam();
  Fixture f;
  make(f, arch, "st", "--sentence-transformers --pooling mean");
  ASSERT_TRUE(fs::exists(f.out / "modules.json"));
  ASSERT_TRUE(fs::exists(f.out / "1_Pooling/config.json"));
  json r = tjs(f, "feature-extraction", kTexts, {{"pooling", "mean"}, {"normalize", true}});
  rt::EmbedResult eager = rt::embed(f.ckpt.string(), kTexts);
#ifdef HFX_HAVE_ORT
  rt::EmbedResult ort = rt::embed(f.out.string(), kTexts);
  EXPECT_EQ(ort.engine, "ort");
#else
  rt::EmbedResult ort = eager;  // hfx without ONNX Runtime embeds checkpoints only
#endif
  EXPECT_EQ(eager.engine, "eager");
  EXPECT_EQ(eager.settings.source, "modules.json");
  for (size_t i = 0; i < kTexts.size(); i++) {
    std::vector<int64_t> ids(eager.tokens.input_ids.begin() + i * eager.tokens.seq,
                             eager.tokens.input_ids.begin() + (i + 1) * eager.tokens.seq);
    ids.resize(std::accumulate(eager.tokens.attention_mask.begin() + i * eager.tokens.seq,
                               eager.tokens.attention_mask.begin() + (i + 1) * eager.tokens.seq, int64_t{0}));
    ASSERT_EQ(r["ids"][i].get<std::vector<int64_t>>(), ids) << "text " << i;
  }
  const int64_t E = static_cast<int64_t>(eager.vectors[0].size());
  double d_single = 0, d_batch = 0, d_ort = 0;
  for (size_t i = 0; i < kTexts.size(); i++) {
    const json& one = r["results"][i]["data"];
    const json& batch = r["batch"]["data"];
    ASSERT_EQ(static_cast<int64_t>(one.size()), E);
    for (int64_t e = 0; e < E; e++) {
      d_single = std::max(d_single, std::fabs(one[e].get<double>() - eager.vectors[i][e]));
      d_batch = std::max(d_batch, std::fabs(batch[i * E + e].get<double>() - eager.vectors[i][e]));
      d_ort = std::max(d_ort, static_cast<double>(std::fabs(ort.vectors[i][e] - eager.vectors[i][e])));
    }
  }
  EXPECT_LE(d_single, kTol);
  EXPECT_LE(d_batch, kTol);
  EXPECT_LE(d_ort, kTol);
  std::printf(
      "  [%s feature-extraction] max |TJS - hfx eager| single %.3g, batch %.3g; |hfx ORT - eager| %.3g\n",
      arch.c_str(), d_single, d_batch, d_ort);
#ifdef HFX_HAVE_ORT
  // The CLI on the export folder prints the same vectors.
  int rc = 0;
  std::string cli = std::string(HFX_CLI) + " embed " + f.out.string() + " --json";
  for (const auto& t : kTexts) cli += " --text '" + t + "'";
  json c = json::parse(run(cli, &rc));
  ASSERT_EQ(rc, 0);
  EXPECT_EQ(c["engine"], "ort");
  EXPECT_EQ(c["pooling"], "mean");
  EXPECT_EQ(c["normalize"], true);
  double d_cli = 0;
  for (size_t i = 0; i < kTexts.size(); i++)
    for (int64_t e = 0; e < E; e++)
      d_cli = std::max(d_cli, std::fabs(c["embeddings"][i][e].get<double>() - eager.vectors[i][e]));
  EXPECT_LE(d_cli, kTol);
  std::printf("  [%s feature-extraction] max |hfx embed CLI on the export - eager| %.3g\n", arch.c_str(),
              d_cli);
#endif
  fs::remove_all(f.dir);
}

TEST_P(TjsEncoders, TextClassification) {
  HFX_REQUIRE_ORACLE(test::kTransformersJs);
  const std::string arch = GetParam();
  Fixture f;
  make(f, arch, "seqcls", "--head sequence_classification");
  if (tjs_refuses(f, arch, "text-classification")) return;
  json r = tjs(f, "text-classification", kTexts, {{"top_k", 3}});
  double worst = 0;
  for (size_t i = 0; i < kTexts.size(); i++) {
    std::vector<int64_t> ids;
    Tensor logits = eager_one(f, kTexts[i], &ids);
    ASSERT_EQ(r["ids"][i].get<std::vector<int64_t>>(), ids);
    auto p = softmax(logits.data<float>(), logits.size(1));
    std::vector<int64_t> order(p.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return p[a] > p[b]; });
    const json& got = r["results"][i];
    ASSERT_EQ(got.size(), p.size());
    for (size_t k = 0; k < p.size(); k++) {
      EXPECT_EQ(got[k]["label"].get<std::string>(), label(*f.model, order[k]))
          << "text " << i << " rank " << k;
      worst = std::max(worst, std::fabs(got[k]["score"].get<double>() - p[order[k]]));
    }
  }
  EXPECT_LE(worst, kTol);
  std::printf("  [%s text-classification] max |TJS score - hfx| = %.3g\n", arch.c_str(), worst);
  fs::remove_all(f.dir);
}

TEST_P(TjsEncoders, TokenClassification) {
  HFX_REQUIRE_ORACLE(test::kTransformersJs);
  const std::string arch = GetParam();
  Fixture f;
  make(f, arch, "tokcls", "--head token_classification");
  if (tjs_refuses(f, arch, "token-classification")) return;
  json r = tjs(f, "token-classification", kTexts, {{"ignore_labels", json::array()}});
  double worst = 0;
  size_t compared = 0;
  for (size_t i = 0; i < kTexts.size(); i++) {
    std::vector<int64_t> ids;
    Tensor logits = eager_one(f, kTexts[i], &ids);
    ASSERT_EQ(r["ids"][i].get<std::vector<int64_t>>(), ids);
    const int64_t L = logits.size(2);
    for (const auto& tok : r["results"][i]) {
      int64_t j = tok["index"].get<int64_t>();
      ASSERT_LT(j, static_cast<int64_t>(ids.size()));
      EXPECT_FALSE(f.tk->is_special(static_cast<int32_t>(ids[j])));
      auto p = softmax(logits.data<float>() + j * L, L);
      int64_t best = std::max_element(p.begin(), p.end()) - p.begin();
      EXPECT_EQ(tok["entity"].get<std::string>(), label(*f.model, best)) << "text " << i << " token " << j;
      worst = std::max(worst, std::fabs(tok["score"].get<double>() - p[best]));
      compared++;
    }
  }
  EXPECT_GT(compared, 10u);
  EXPECT_LE(worst, kTol);
  std::printf("  [%s token-classification] %zu tokens, max |TJS score - hfx| = %.3g\n", arch.c_str(),
              compared, worst);
  fs::remove_all(f.dir);
}

TEST_P(TjsEncoders, FillMask) {
  HFX_REQUIRE_ORACLE(test::kTransformersJs);
  const std::string arch = GetParam();
  Fixture f;
  make(f, arch, "mlm", "--head masked_lm");
  if (tjs_refuses(f, arch, "fill-mask")) return;
  const std::string mask = f.tk->token_to_id("<mask>") ? "<mask>" : "[MASK]";
  auto mask_id = f.tk->token_to_id(mask);
  ASSERT_TRUE(mask_id.has_value()) << mask;
  std::vector<std::string> texts = {"The capital of France is " + mask + ".", "hello " + mask + " world"};
  json r = tjs(f, "fill-mask", texts, {{"top_k", 5}});
  double worst = 0;
  for (size_t i = 0; i < texts.size(); i++) {
    std::vector<int64_t> ids;
    Tensor logits = eager_one(f, texts[i], &ids);
    ASSERT_EQ(r["ids"][i].get<std::vector<int64_t>>(), ids);
    int64_t pos = std::find(ids.begin(), ids.end(), *mask_id) - ids.begin();
    ASSERT_LT(pos, static_cast<int64_t>(ids.size()));
    const int64_t V = logits.size(2);
    auto p = softmax(logits.data<float>() + pos * V, V);
    std::vector<int64_t> order(V);
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + 5, order.end(),
                      [&](int64_t a, int64_t b) { return p[a] > p[b]; });
    const json& got = r["results"][i];
    ASSERT_EQ(got.size(), 5u);
    for (size_t k = 0; k < 5; k++) {
      EXPECT_EQ(got[k]["token"].get<int64_t>(), order[k]) << "text " << i << " rank " << k;
      worst = std::max(worst, std::fabs(got[k]["score"].get<double>() - p[order[k]]));
    }
  }
  EXPECT_LE(worst, kTol);
  std::printf("  [%s fill-mask] max |TJS score - hfx| = %.3g\n", arch.c_str(), worst);
  fs::remove_all(f.dir);
}

INSTANTIATE_TEST_SUITE_P(Encoders, TjsEncoders, ::testing::ValuesIn(encoder_model_types()),
                         [](const ::testing::TestParamInfo<std::string>& i) { return param_name(i.param); });

}  // namespace
}  // namespace hfx::test
