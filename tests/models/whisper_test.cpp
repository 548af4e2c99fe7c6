// Whisper (WhisperForConditionalGeneration) against goldens from the real transformers 5.23
// (tests/data/goldens/whisper-lm.json, made by tools/hf_goldens/make_whisper_goldens.sh on the very
// checkpoint create-tiny writes here; the weights' sha256 is checked first). Two batch rows of
// input_features from the formula in the golden:
//   * encoder last_hidden_state: 30 stored frames (every d_model column), and sum / sum |x| of the whole,
//   * decoder logits under teacher forcing (a use_cache=false call over the prompt + 4 tokens),
//   * greedy tokens of transformers' Whisper generate() (language en, transcribe) against hfx's
//     Transcriber on the eager engine (cached decoder calls, suppress / begin-suppress tokens): 5.x runs
//     the clip through its window loop (the random model emits timestamp tokens, so the clip is decoded
//     again from its last timestamp pair) and returns the segments' tokens joined; hfx must give the same
//     first prompt, tokens and segments (tokens, start, end),
//   * the same with timestamps (return_timestamps=True, no <|notimestamps|> in the prompt),
//   * language detection (--language auto) against generate() without a language: the same detected
//     language token in the prompt and the same tokens and segments;
//   * single_call (transformers' force_unique_generate_call): the one call's prompt and tokens, equal to
//     generate(force_unique_generate_call=True), and not the window loop's (the runs above differ);
//   * long-form features: WhisperFeatureExtractor(truncation=False, padding="longest") on a 45-second wave
//     against audio::whisper_log_mel_long (frame count, 7 whole frames, sums). The long-form segments
//     are checked in tests/integration/whisper_export_test.cpp (eager and ONNX Runtime).
// Tolerance 1e-4 absolute at f32; the measured worst differences are printed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "hfx/audio/audio.h"
#include "hfx/io/safetensors.h"
#include "hfx/runtime/transcribe.h"
#include "models/model_test_util.h"

namespace hfx::test {
namespace {

using nlohmann::json;
constexpr double kTol = 1e-4;

// features[b, m, t] = 0.5 * sin(0.37 * (m * frames + t) + 1.3 * b), as make_whisper_goldens.py computes it.
// What transformers' generate() returns: the decoder prompt, then the generated tokens.
// hfx's result against one row of a golden run (make_whisper_goldens.py's record()): the first window's
// prompt, the joined tokens, and every segment.
void expect_run(const TranscribeResult& r, const json& run, int64_t b) {
  EXPECT_EQ(r.prompt, run["prompts"][b].get<std::vector<int64_t>>()) << "row " << b;
  EXPECT_EQ(r.ids, run["sequences"][b].get<std::vector<int64_t>>()) << "row " << b;
  const json& want = run["segments"][b];
  ASSERT_EQ(r.segments.size(), want.size()) << "row " << b;
  for (size_t i = 0; i < want.size(); i++) {
    EXPECT_EQ(r.segments[i].ids, want[i]["tokens"].get<std::vector<int64_t>>())
        << "row " << b << " seg " << i;
    EXPECT_NEAR(r.segments[i].start, want[i]["start"].get<double>(), 1e-6) << "row " << b << " seg " << i;
    EXPECT_NEAR(r.segments[i].end, want[i]["end"].get<double>(), 1e-6) << "row " << b << " seg " << i;
  }
}

std::vector<float> golden_features(int64_t b, int64_t mels, int64_t frames) {
  std::vector<float> f(static_cast<size_t>(mels * frames));
  for (int64_t m = 0; m < mels; m++)
    for (int64_t t = 0; t < frames; t++)
      f[static_cast<size_t>(m * frames + t)] = static_cast<float>(
          0.5 * std::sin(0.37 * static_cast<double>(m * frames + t) + 1.3 * static_cast<double>(b)));
  return f;
}

TEST(WhisperGoldens, EagerMatchesTransformers) {
  const json g =
      json::parse(io::read_file(std::string(HFX_SOURCE_DIR) + "/tests/data/goldens/whisper-lm.json"));
  TempDir dir("whisper_goldens");
  create_tiny("whisper", dir.path.string());
  ASSERT_EQ(io::sha256_file((dir.path / "model.safetensors").string()),
            g["weights_sha256"].get<std::string>())
      << "create-tiny whisper no longer writes the checkpoint the golden was made from; regenerate it";
  std::shared_ptr<const Model> m(load_model(dir.path.string()));
  ASSERT_EQ(m->structure(), Structure::EncoderDecoder);
  const int64_t mels = m->config().raw["num_mel_bins"].get<int64_t>(), frames = g["frames"].get<int64_t>();
  const json& ge = g["encoder"];
  const json& gd = g["decoder"];
  const auto rows = ge["rows"].get<std::vector<int64_t>>();
  const auto ids = gd["logit_ids"].get<std::vector<int64_t>>();
  double worst_enc = 0, worst_sum = 0, worst_dec = 0;
  for (int64_t b = 0; b < 2; b++) {
    EagerBuilder eb;
    Tensor x = Tensor::empty({1, mels, frames}, DType::F32);
    const std::vector<float> f = golden_features(b, mels, frames);
    std::copy(f.begin(), f.end(), x.data<float>());
    Var enc = get(m->call("encoder", eb, {{"input_features", eb.wrap(x)}}), "last_hidden_state");
    const Tensor h = enc.tensor().contiguous();
    const int64_t T = h.size(1), D = h.size(2);
    const float* p = h.data<float>();
    for (size_t i = 0; i < rows.size(); i++)
      for (int64_t d = 0; d < D; d++)
        worst_enc = std::max(worst_enc, std::fabs(p[rows[i] * D + d] - ge["values"][b][i][d].get<double>()));
    double sum = 0, abs_sum = 0;
    for (int64_t i = 0; i < T * D; i++) {
      sum += p[i];
      abs_sum += std::fabs(p[i]);
    }
    // Sums over 96k values: compared relative to sum |x|, so the bound is the per-value one on average.
    worst_sum = std::max({worst_sum, std::fabs(sum - ge["sum"][b].get<double>()) / (T * D),
                          std::fabs(abs_sum - ge["abs_sum"][b].get<double>()) / (T * D)});

    const auto dec_ids = gd["decoder_input_ids"][b].get<std::vector<int64_t>>();
    const int64_t S = static_cast<int64_t>(dec_ids.size());
    NamedVars out =
        m->call("decoder", eb,
                {{"input_ids", eb.wrap(Tensor::from_ints({1, S}, dec_ids))}, {"encoder_hidden_states", enc}},
                CallOptions{0, false});
    const Tensor l = get(out, "logits").tensor().contiguous();
    const int64_t V = l.size(2);
    const float* lp = l.data<float>();
    for (int64_t s = 0; s < S; s++)
      for (size_t k = 0; k < ids.size(); k++)
        worst_dec = std::max(worst_dec, std::fabs(lp[s * V + ids[k]] - gd["logits"][b][s][k].get<double>()));
    for (int64_t v = 0; v < V; v++)
      worst_dec = std::max(worst_dec, std::fabs(lp[(S - 1) * V + v] - gd["last_row"][b][v].get<double>()));
  }
  EXPECT_LE(worst_enc, kTol);
  EXPECT_LE(worst_sum, kTol);
  EXPECT_LE(worst_dec, kTol);
  std::printf("  [whisper] encoder max|diff| %.3g (mean-sum diff %.3g), decoder logits max|diff| %.3g\n",
              worst_enc, worst_sum, worst_dec);

  // Greedy, then with timestamps, then with the language detected: transformers 5.x generate().
  Transcriber t = Transcriber::open(dir.path.string(), "eager");
  const char* kRuns[] = {"greedy", "timestamps", "detected"};
  for (const char* name : kRuns) {
    const json& run = g[name];
    TranscribeOptions o;
    o.language = std::string(name) == "detected" ? "auto" : "en";
    o.timestamps = std::string(name) == "timestamps";
    o.max_new_tokens = run["max_new_tokens"].get<int64_t>();
    for (int64_t b = 0; b < 2; b++) {
      const std::vector<float> f = golden_features(b, mels, frames);
      TranscribeResult r = t.transcribe_features(f, o);
      expect_run(r, run, b);
      if (o.language == "auto") {
        ASSERT_GE(r.prompt.size(), 2u);
        EXPECT_EQ(t.settings().lang_to_id.at(r.language), r.prompt[1]);
      }
      std::printf(
          "  [whisper] %s row %lld (language %s): %zu tokens in %zu segments (%.2f-%.2f s ... %.2f s) "
          "equal to transformers' generate()\n",
          name, static_cast<long long>(b), r.language.c_str(), r.ids.size(), r.segments.size(),
          r.segments.empty() ? 0.0 : r.segments[0].start, r.segments.empty() ? 0.0 : r.segments[0].end,
          r.segments.empty() ? 0.0 : r.segments.back().end);
    }
  }
  const json& sc = g["single_call"];
  TranscribeOptions o;
  o.language = "en";
  o.single_call = true;
  o.max_new_tokens = sc["max_new_tokens"].get<int64_t>();
  for (int64_t b = 0; b < 2; b++) {
    TranscribeResult r = t.transcribe_features(golden_features(b, mels, frames), o);
    std::vector<int64_t> got = r.prompt;
    got.insert(got.end(), r.ids.begin(), r.ids.end());
    EXPECT_EQ(got, sc["sequences"][b].get<std::vector<int64_t>>()) << "row " << b;
    EXPECT_NE(r.ids, g["greedy"]["sequences"][b].get<std::vector<int64_t>>()) << "row " << b;
    std::printf(
        "  [whisper] single_call row %lld: %zu tokens equal to generate(force_unique_generate_call=True)\n",
        static_cast<long long>(b), r.ids.size());
  }
}

TEST(WhisperGoldens, LongFormFeaturesEqualTheFeatureExtractor) {
  const json g = json::parse(io::read_file(std::string(HFX_SOURCE_DIR) +
                                           "/tests/data/goldens/whisper-lm.json"))["longform_features"];
  TempDir dir("whisper_long_features");
  create_tiny("whisper", dir.path.string());
  const auto cfg = audio::WhisperFeatureConfig::from_json(
      json::parse(io::read_file((dir.path / "preprocessor_config.json").string())));
  const int64_t n = g["samples"].get<int64_t>();
  std::vector<float> w(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; i++) {  // make_whisper_goldens.py's long_wave, in float64 then float32
    const double x = static_cast<double>(i);
    w[static_cast<size_t>(i)] = static_cast<float>(0.3 * std::sin(2 * M_PI * 440 * x / 16000) *
                                                       (1 + 0.5 * std::sin(2 * M_PI * 0.7 * x / 16000)) +
                                                   0.05 * std::sin(0.001 * std::pow(x, 1.5) / 16000));
  }
  const std::vector<float> f = audio::whisper_log_mel_long(w, cfg);
  const int64_t M = cfg.feature_size, T = static_cast<int64_t>(f.size()) / M;
  ASSERT_EQ(T, g["frames"].get<int64_t>());
  ASSERT_GT(T, cfg.nb_max_frames);
  double worst = 0, sum = 0, abs_sum = 0;
  const auto cols = g["cols"].get<std::vector<int64_t>>();
  for (size_t c = 0; c < cols.size(); c++)
    for (int64_t m = 0; m < M; m++)
      worst = std::max(worst,
                       std::fabs(f[static_cast<size_t>(m * T + cols[c])] - g["values"][c][m].get<double>()));
  for (float v : f) {
    sum += v;
    abs_sum += std::fabs(v);
  }
  EXPECT_LE(worst, kTol);
  // Sums over 360k values, compared per value (as the encoder sums above).
  EXPECT_LE(std::fabs(sum - g["sum"].get<double>()) / static_cast<double>(f.size()), kTol);
  EXPECT_LE(std::fabs(abs_sum - g["abs_sum"].get<double>()) / static_cast<double>(f.size()), kTol);
  std::printf("  [whisper long-form features] %lld frames, max|diff| %.3g over %zu frames\n",
              static_cast<long long>(T), worst, cols.size());
}

}  // namespace
}  // namespace hfx::test
