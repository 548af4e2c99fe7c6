// Encoder-only architectures against the real transformers: for every architecture and head, the
// checkpoint `hfx create-tiny ARCH --head H` writes (the test makes it again and checks that its
// safetensors hash equals the one the golden was made from) runs eagerly on the golden's inputs
// (3 single rows of lengths 6, 13, 2 and the right-padded batch of all three), and its output
// (last_hidden_state or logits, real positions only) is compared with the golden's numbers.
// Goldens: tests/data/goldens/ARCH-{base,mlm,seqcls,tokcls}.json, made by
// tools/hf_goldens/make_from_hfx.sh with transformers 4.47 (ModernBERT 4.51), eager attention, f32.
#include <gtest/gtest.h>
#include <openssl/evp.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "hfx/io/safetensors.h"
#include "models/encoder_test_util.h"

namespace hfx::test {
namespace {

// Measured (this machine, OpenBLAS): the largest difference over all 20 goldens is 2.2e-6 (distilbert
// masked_lm logits), 1.2e-6 to 2.0e-6 for the others; each case prints its figure. The goldens keep 7
// significant digits, so logits near 10 carry up to 5e-7 of rounding on their own. 2e-5 leaves room for
// summation-order differences between BLAS builds and torch without hiding a real error (a wrong mask,
// scale, position offset or pooling moves these outputs by more than 1e-2).
constexpr double kTol = 2e-5;

std::string sha256_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  std::string data = ss.str();
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_Digest(data.data(), data.size(), md, &n, EVP_sha256(), nullptr);
  std::string hex;
  static const char* kHex = "0123456789abcdef";
  for (unsigned int i = 0; i < n; i++) {
    hex += kHex[md[i] >> 4];
    hex += kHex[md[i] & 15];
  }
  return hex;
}

std::string golden_name(const std::string& head) {
  for (const auto& [h, g] : encoder_heads_and_golden_names())
    if (h == head) return g;
  return head;
}

class EncoderGolden : public ::testing::TestWithParam<EncoderParam> {};

TEST_P(EncoderGolden, EagerMatchesTransformers) {
  const auto& p = GetParam();
  std::string file = std::string(HFX_TEST_DATA) + "/goldens/" + p.arch + "-" + golden_name(p.head) + ".json";
  ASSERT_TRUE(std::filesystem::exists(file)) << file;
  nlohmann::json g = nlohmann::json::parse(io::read_file(file));
  ASSERT_EQ(g["format"], "hfx-hf-golden/1");
  TempDir dir(param_name(p.arch + "_" + p.head) + "_golden");
  create_tiny_encoder(p.arch, p.head, dir.path.string());
  ASSERT_EQ(sha256_file((dir.path / "model.safetensors").string()),
            g["checkpoint"]["weights_sha256"].get<std::string>())
      << "create-tiny no longer writes the checkpoint the golden was made from";
  auto m = load_model(dir.path.string());
  EXPECT_EQ(m->structure(), Structure::EncoderOnly);
  EXPECT_EQ(m->head(), p.head);
  double worst = 0;
  for (const auto& c : g["cases"]) {
    SCOPED_TRACE(c["name"].get<std::string>());
    Padded in;
    for (const auto& row : c["input_ids"]) {
      in.T = static_cast<int64_t>(row.size());
      for (const auto& x : row) in.ids.push_back(x.get<int64_t>());
    }
    for (const auto& row : c["attention_mask"])
      for (const auto& x : row) in.mask.push_back(x.get<int64_t>());
    in.B = static_cast<int64_t>(c["input_ids"].size());
    in.lengths = c["lengths"].get<std::vector<int64_t>>();
    ASSERT_EQ(c["output_name"].get<std::string>(), m->component("model").outputs.at(0));
    Tensor out = encoder_forward(*m, in);
    const auto& o = c["output"];
    ASSERT_EQ(out.shape(), o["shape"].get<Shape>());
    const bool per_token = o["per_token"].get<bool>();
    const int64_t row_size = out.numel() / in.B / (per_token ? in.T : 1);
    const float* y = out.data<float>();
    double diff = 0;
    for (int64_t b = 0; b < in.B; b++) {
      const auto& want = o["values"][b];
      const int64_t n = per_token ? in.lengths[b] * row_size : row_size;
      ASSERT_EQ(static_cast<int64_t>(want.size()), n) << "row " << b;
      const int64_t base = b * (per_token ? in.T * row_size : row_size);
      for (int64_t i = 0; i < n; i++)
        diff = std::max(diff, std::fabs(static_cast<double>(y[base + i]) - want[i].get<double>()));
    }
    EXPECT_LE(diff, kTol);
    worst = std::max(worst, diff);
  }
  std::printf("  [%s %s] max |hfx - transformers| = %.3g over %zu cases\n", p.arch.c_str(), p.head.c_str(),
              worst, g["cases"].size());
}

// The encoders these committed goldens cover. The later ones (camembert, data2vec-text,
// roberta-prelayernorm, ernie, electra) are judged against transformers 5.23 itself in the interop tier
// (tests/interop/cases.py ENCODERS), which replaces committed numbers with the live oracle.
std::vector<EncoderParam> golden_params() {
  std::vector<EncoderParam> v;
  for (const EncoderParam& p : encoder_params())
    for (const char* a : {"bert", "roberta", "xlm-roberta", "distilbert", "modernbert"})
      if (p.arch == a) v.push_back(p);
  return v;
}

INSTANTIATE_TEST_SUITE_P(Encoders, EncoderGolden, ::testing::ValuesIn(golden_params()), encoder_param_name);

}  // namespace
}  // namespace hfx::test
