// Encoder-decoder architectures (t5 relu/tied, t5 gated-gelu/untied, bart, marian) against goldens from
// the real transformers 4.47 (tests/data/goldens/*-lm.json, made by tools/hf_goldens/make_from_hfx.sh on
// the very checkpoints create-tiny writes here; the weights' sha256 is checked first). Per case (three
// batch-1 rows of lengths 6, 13, 2 and the right-padded batch of all three):
//   * encoder last_hidden_state at the unpadded positions,
//   * decoder logits under teacher forcing (a use_cache=false call over the whole decoder row),
//   * greedy tokens, 32 steps with the caches: plain argmax (no processors) and transformers' default
//     generate() with the checkpoint's generation config (decoder start, forced BOS/EOS, bad words, EOS).
// Tolerance 1e-4 absolute at f32: the measured worst differences are printed (about 1e-6 on these
// checkpoints; HF's own batch-vs-single difference, max_abs_diff_vs_batch1, is of the same order).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "hfx/io/safetensors.h"
#include "hfx/runtime/text2text.h"
#include "models/model_test_util.h"

namespace hfx::test {
namespace {

using nlohmann::json;
constexpr double kTol = 1e-4;

struct GoldenCase {
  std::string file, arch, preset;
};

void PrintTo(const GoldenCase& c, std::ostream* os) { *os << c.file; }

json load_golden(const std::string& file) {
  std::string path = std::string(HFX_SOURCE_DIR) + "/tests/data/goldens/" + file;
  return json::parse(io::read_file(path));
}

std::vector<int64_t> flat_ints(const json& rows) {
  std::vector<int64_t> r;
  for (const auto& row : rows)
    for (const auto& x : row) r.push_back(x.get<int64_t>());
  return r;
}

// Worst |got - want| over the stored values of a TENSOR (per_token: the first lengths[b] positions).
double worst_diff(const Tensor& got, const json& want, const std::vector<int64_t>& lengths) {
  Tensor g = got.contiguous();
  const float* p = g.data<float>();
  const int64_t B = g.size(0), T = g.size(1), D = g.size(2);
  const bool per_token = want.at("per_token").get<bool>();
  double worst = 0;
  for (int64_t b = 0; b < B; b++) {
    const auto& vals = want.at("values")[b];
    const int64_t n = per_token ? lengths[b] : T;
    EXPECT_EQ(static_cast<int64_t>(vals.size()), n * D) << "row " << b;
    for (int64_t i = 0; i < n * D && i < static_cast<int64_t>(vals.size()); i++)
      worst = std::max(worst, std::fabs(static_cast<double>(p[b * T * D + i]) - vals[i].get<double>()));
  }
  return worst;
}

class Seq2SeqGoldens : public ::testing::TestWithParam<GoldenCase> {};

TEST_P(Seq2SeqGoldens, EagerMatchesTransformers) {
  const GoldenCase& gc = GetParam();
  json g = load_golden(gc.file);
  TempDir dir("s2s_" + gc.arch + gc.preset);
  TinyOptions o;
  o.preset = gc.preset;
  create_tiny(gc.arch, dir.path.string(), o);
  ASSERT_EQ(io::sha256_file((dir.path / "model.safetensors").string()),
            g["checkpoint"]["weights_sha256"].get<std::string>())
      << "create-tiny " << gc.arch
      << " no longer writes the checkpoint the golden was made from; regenerate it";
  std::shared_ptr<const Model> m(load_model(dir.path.string()));
  ASSERT_EQ(m->structure(), Structure::EncoderDecoder);

  const int64_t steps = g["generation"]["max_new_tokens"].get<int64_t>();
  const std::string cfg_text = io::read_file((dir.path / "config.json").string());
  const std::string gen_text = io::read_file((dir.path / "generation_config.json").string());
  double worst_enc = 0, worst_dec = 0;
  for (const auto& c : g["cases"]) {
    SCOPED_TRACE(c["name"].get<std::string>());
    const int64_t B = static_cast<int64_t>(c["input_ids"].size()),
                  S = static_cast<int64_t>(c["input_ids"][0].size());
    std::vector<int64_t> lengths = c["lengths"].get<std::vector<int64_t>>();
    EagerBuilder b;
    Var ids = b.wrap(ints({B, S}, flat_ints(c["input_ids"])));
    Var mask = b.wrap(ints({B, S}, flat_ints(c["attention_mask"])));
    Var hidden =
        get(m->call("encoder", b, {{"input_ids", ids}, {"attention_mask", mask}}), "last_hidden_state");
    double e = worst_diff(hidden.tensor(), c["encoder_last_hidden_state"], lengths);
    EXPECT_LE(e, kTol) << "encoder last_hidden_state";
    worst_enc = std::max(worst_enc, e);

    const int64_t Td = static_cast<int64_t>(c["decoder_input_ids"][0].size());
    Var dids = b.wrap(ints({B, Td}, flat_ints(c["decoder_input_ids"])));
    NamedVars dout =
        m->call("decoder", b,
                {{"input_ids", dids}, {"encoder_attention_mask", mask}, {"encoder_hidden_states", hidden}},
                CallOptions{0, false});
    double d = worst_diff(get(dout, "logits").tensor(), c["decoder_logits"],
                          std::vector<int64_t>(B, Td));  // no decoder padding
    EXPECT_LE(d, kTol) << "decoder logits";
    worst_dec = std::max(worst_dec, d);

    std::vector<std::vector<int64_t>> rows;
    for (int64_t r = 0; r < B; r++)
      rows.emplace_back(c["input_ids"][r].begin(), c["input_ids"][r].begin() + lengths[r]);
    // Plain argmax: no processors, EOS not special.
    Text2TextSettings plain;
    plain.decoder_start_token_id = c["greedy"]["decoder_start_token_id"].get<int64_t>();
    plain.pad_token_id = g["pad_token_id"].get<int64_t>();
    Text2TextGenerator argmax(make_eager_seq2seq_engine(m), nullptr, plain);
    EXPECT_EQ(argmax.generate_ids(rows, steps).ids,
              c["greedy"]["argmax"]["tokens"].get<std::vector<std::vector<int64_t>>>())
        << "greedy argmax";
    // transformers' default generate() with the checkpoint's generation config.
    ASSERT_FALSE(c["greedy"]["hf_default"].contains("error")) << c["greedy"]["hf_default"].dump();
    Text2TextGenerator dflt(make_eager_seq2seq_engine(m), nullptr,
                            text2text_settings(json::parse(cfg_text), json::parse(gen_text)));
    EXPECT_EQ(dflt.settings().decoder_start_token_id,
              c["greedy"]["hf_default"]["decoder_start_token_id"].get<int64_t>());
    EXPECT_EQ(dflt.generate_ids(rows, steps).ids,
              c["greedy"]["hf_default"]["tokens"].get<std::vector<std::vector<int64_t>>>())
        << "hf_default greedy; settings " << c["greedy"]["hf_default"]["settings"].dump();
  }
  std::printf("  [%s] worst |hfx - transformers|: encoder %.3g, decoder logits %.3g\n", gc.file.c_str(),
              worst_enc, worst_dec);
}

INSTANTIATE_TEST_SUITE_P(Archs, Seq2SeqGoldens,
                         ::testing::Values(GoldenCase{"t5-lm.json", "t5", "tiny"},
                                           GoldenCase{"t5-gated-lm.json", "t5", "tiny-gated"},
                                           GoldenCase{"bart-lm.json", "bart", "tiny"},
                                           GoldenCase{"marian-lm.json", "marian", "tiny"}),
                         [](const auto& i) {
                           std::string n = i.param.file.substr(0, i.param.file.find('.'));
                           for (auto& ch : n)
                             if (ch == '-') ch = '_';
                           return n;
                         });

// A checkpoint whose config names an encoder-decoder but lacks the decoder weights is refused with the
// first missing decoder tensor named.
TEST(Seq2SeqLoad, MissingDecoderWeightsAreNamed) {
  for (const char* arch : {"t5", "bart", "marian"}) {
    TinyOptions o;
    json cfg = tiny_model_config(arch, o);
    ModelConfig mc = parse_model_config(cfg);
    auto all = tiny_weights(mc, DType::F32, 0);
    std::map<std::string, Tensor> enc_only;
    for (auto& [n, t] : all)
      if (n.find("decoder.") == std::string::npos && n != "lm_head.weight") enc_only[n] = t;
    try {
      make_model(cfg, io::WeightStore::from_tensors(enc_only));
      ADD_FAILURE() << arch << ": loaded without decoder weights";
    } catch (const Error& e) {
      std::string msg = e.what();
      EXPECT_NE(msg.find("[model] expected tensor '"), std::string::npos) << msg;
      EXPECT_NE(msg.find("decoder."), std::string::npos) << msg;
      EXPECT_NE(msg.find("got none"), std::string::npos) << msg;
    }
  }
}

}  // namespace
}  // namespace hfx::test
