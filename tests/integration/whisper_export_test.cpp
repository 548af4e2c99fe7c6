// Whisper exported to ONNX (`hfx export --format onnx`): onnx/encoder_model.onnx and
// onnx/decoder_model_merged.onnx in Transformers.js's layout, preprocessor_config.json beside them.
//   * ONNX Runtime equals eager ≤ 1e-4 at f32: the encoder's last_hidden_state; the merged decoder's
//     logits and presents on the 4-token prompt with empty pasts, then on one token over those pasts;
//   * `hfx transcribe --single-call` gives the same greedy tokens over the checkpoint (eager) and the export
//   (ort), and
//     Transformers.js 4.3.1 (model.generate() and the automatic-speech-recognition pipeline's text) gives
//     them too on the export folder as it is: a speech clip from espeak-ng (22.05 kHz), a tone clip at
//     8 kHz and one at 44.1 kHz;
//   * with --timestamps (transformers' return_timestamps): eager and ort give the same tokens and segments
//     (tests/models/whisper_test.cpp checks them against transformers 5.23). Transformers.js 4.3.1 is not a
//     reference here: its WhisperTimeStampLogitsProcessor skips max_initial_timestamp_index and the
//     non-decreasing rule, so its first token is a later timestamp than transformers allows; the test
//     asserts that departure, so that a Transformers.js that fixes it turns the check into an equality;
//   * `hfx export --format executorch|dynamo` exports whisper and `hfx verify` passes (the .pte methods'
//     numerics against eager, the .pt2 archives' structure).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <regex>

#include <nlohmann/json.hpp>

#include "hfx/audio/audio.h"
#include "hfx/io/safetensors.h"
#include "hfx/models/model.h"
#include "hfx/models/tiny.h"
#include "hfx/ops/builder.h"
#include "hfx/runtime/ort_session.h"
#include "hfx/runtime/transcribe.h"
#include "support/oracle.h"
#include "support/shell.h"
#include "support/verdict.h"

namespace fs = std::filesystem;
using hfx::testsupport::sh;
using nlohmann::json;

namespace {

struct Folder {
  fs::path path;
  explicit Folder(const std::string& tag)
      : path(fs::temp_directory_path() / ("hfx_whisper_" + tag + "_" + std::to_string(::getpid()))) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~Folder() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

std::string cli() { return HFX_CLI; }

// Exports a fresh tiny whisper once per test binary run (both tests read it).
const fs::path& exported() {
  static Folder f("export");
  static bool done = false;
  if (!done) {
    hfx::create_tiny("whisper", (f.path / "ckpt").string());
    auto p = sh(cli() + " export " + (f.path / "ckpt").string() + " --format onnx -o " +
                (f.path / "out").string());
    EXPECT_EQ(p.rc, 0) << p.out;
    done = true;
  }
  return f.path;
}

double max_diff(const std::vector<float>& a, const hfx::Tensor& b) {
  hfx::Tensor c = b.contiguous();
  EXPECT_EQ(static_cast<int64_t>(a.size()), c.numel());
  double w = 0;
  for (size_t i = 0; i < a.size() && static_cast<int64_t>(i) < c.numel(); i++)
    w = std::max(w, std::fabs(double(a[i]) - c.data<float>()[i]));
  return w;
}

}  // namespace

TEST(WhisperOnnx, ComponentsEqualEagerInOnnxRuntime) {
  const fs::path& d = exported();
  for (const char* f : {"onnx/encoder_model.onnx", "onnx/decoder_model_merged.onnx",
                        "preprocessor_config.json", "generation_config.json", "tokenizer.json"})
    ASSERT_TRUE(fs::exists(d / "out" / f)) << f;
  std::shared_ptr<const hfx::Model> m(hfx::load_model((d / "ckpt").string()));
  const int64_t mels = 80, frames = 3000;
  std::vector<float> feats(static_cast<size_t>(mels * frames));
  for (size_t i = 0; i < feats.size(); i++)
    feats[i] = static_cast<float>(0.5 * std::sin(0.011 * double(i)) + 0.1 * std::cos(0.7 * double(i)));

  hfx::rt::OrtSession enc((d / "out/onnx/encoder_model.onnx"), {});
  hfx::rt::OrtSession dec((d / "out/onnx/decoder_model_merged.onnx"), {});
  auto ort_enc =
      enc.run({{"input_features", hfx::rt::RtTensor::f32({1, mels, frames}, feats)}}, {"last_hidden_state"});
  hfx::EagerBuilder eb;
  hfx::Tensor x = hfx::Tensor::empty({1, mels, frames}, hfx::DType::F32);
  std::copy(feats.begin(), feats.end(), x.data<float>());
  hfx::Var hidden = hfx::get(m->call("encoder", eb, {{"input_features", eb.wrap(x)}}), "last_hidden_state");
  const double w_enc = max_diff(ort_enc.at(0).second.to_f32(), hidden.tensor());
  EXPECT_LE(w_enc, 1e-4);

  // Decoder: the prompt with empty pasts, then one token over the presents (what Transformers.js feeds).
  const json gen = json::parse(hfx::io::read_file((d / "ckpt/generation_config.json").string()));
  std::vector<int64_t> prompt = {gen["decoder_start_token_id"], gen["lang_to_id"]["<|en|>"],
                                 gen["task_to_id"]["transcribe"], gen["no_timestamps_token_id"]};
  const hfx::ComponentDecl decl = m->component("decoder");
  hfx::rt::NamedTensors feeds{{"input_ids", hfx::rt::RtTensor::i64({1, 4}, prompt)},
                              {"encoder_hidden_states", ort_enc.at(0).second}};
  std::vector<std::string> fetch{"logits"};
  for (const auto& c : decl.cache) {
    feeds.emplace_back(c.past_input, hfx::rt::RtTensor::zeros("float32", {1, 4, 0, 16}));
    fetch.push_back(c.present_output);
  }
  hfx::NamedVars in{{"input_ids", eb.wrap(hfx::Tensor::from_ints({1, 4}, prompt))},
                    {"encoder_hidden_states", hidden}};
  hfx::NamedVars out = m->call("decoder", eb, in, hfx::CallOptions{0, true});
  auto ort_out = dec.run(feeds, fetch);
  double w_dec = 0;
  for (size_t i = 0; i < fetch.size(); i++)
    w_dec = std::max(w_dec, max_diff(ort_out[i].second.to_f32(), hfx::get(out, fetch[i]).tensor()));
  // Step 2: one token over the pasts.
  hfx::rt::NamedTensors feeds2{{"input_ids", hfx::rt::RtTensor::i64({1, 1}, std::vector<int64_t>{300})},
                               {"encoder_hidden_states", ort_enc.at(0).second}};
  hfx::NamedVars in2{{"input_ids", eb.wrap(hfx::Tensor::from_ints({1, 1}, {300}))},
                     {"encoder_hidden_states", hidden}};
  for (size_t i = 0; i < decl.cache.size(); i++) {
    feeds2.emplace_back(decl.cache[i].past_input, ort_out[i + 1].second);
    in2.emplace_back(decl.cache[i].past_input, hfx::get(out, decl.cache[i].present_output));
  }
  auto ort_out2 = dec.run(feeds2, fetch);
  hfx::NamedVars out2 = m->call("decoder", eb, in2, hfx::CallOptions{0, true});
  for (size_t i = 0; i < fetch.size(); i++)
    w_dec = std::max(w_dec, max_diff(ort_out2[i].second.to_f32(), hfx::get(out2, fetch[i]).tensor()));
  EXPECT_LE(w_dec, 1e-4);
  std::printf(
      "  [whisper onnx] encoder max|ORT - eager| %.3g, merged decoder (prompt + cached step, logits and "
      "presents) %.3g\n",
      w_enc, w_dec);
}

TEST(WhisperOnnx, SameGreedyTokensEagerOrtAndTransformersJs) {
  HFX_REQUIRE_ORACLE(hfx::test::kTransformersJs);
  ASSERT_EQ(std::system("command -v espeak-ng > /dev/null"), 0)
      << "[oracle] expected espeak-ng, got none: run scripts/setup.sh";
  const fs::path& d = exported();
  Folder clips("clips");
  const fs::path speech = clips.path / "speech.wav", t8 = clips.path / "tone8k.wav",
                 t44 = clips.path / "tone44k.wav";
  ASSERT_EQ(
      std::system(
          ("espeak-ng -w " + speech.string() + " 'the quick brown fox jumps over the lazy dog'").c_str()),
      0);
  for (auto [path, rate] : {std::pair{t8, 8000}, std::pair{t44, 44100}}) {
    std::vector<float> x(static_cast<size_t>(rate * 2.5));
    for (size_t i = 0; i < x.size(); i++)
      x[i] = static_cast<float>(0.5 * std::sin(2 * M_PI * 523.25 * double(i) / rate));
    hfx::audio::write_wav_f32(path.string(), x, rate);
  }
  const int n = 24;
  std::string wavs;
  std::vector<json> eager, ort;
  size_t k = 0;
  for (const fs::path& c : {speech, t8, t44}) {
    auto e = sh(cli() + " transcribe " + (d / "ckpt").string() + " " + c.string() +
                " --language en --json --single-call --max-new-tokens " + std::to_string(n));
    auto o = sh(cli() + " transcribe " + (d / "out").string() + " " + c.string() +
                " --language en --json --single-call --max-new-tokens " + std::to_string(n));
    ASSERT_EQ(e.rc, 0) << e.out;
    ASSERT_EQ(o.rc, 0) << o.out;
    eager.push_back(json::parse(e.out));
    ort.push_back(json::parse(o.out));
    EXPECT_EQ(eager.back()["engine"], "eager");
    EXPECT_EQ(ort.back()["engine"], "ort");
    EXPECT_EQ(eager.back()["ids"], ort.back()["ids"]) << c;
    // Transformers.js gets the clip as hfx decoded and resampled it (16 kHz float WAV).
    hfx::audio::Waveform w = hfx::audio::read_audio(c.string());
    const fs::path w16 = clips.path / ("clip" + std::to_string(k++) + "_16k.wav");
    hfx::audio::write_wav_f32(w16.string(), hfx::audio::resample(w.samples, w.sample_rate, 16000), 16000);
    wavs += " " + w16.string();
  }
  auto p = sh("node " + std::string(HFX_SOURCE_DIR) + "/tests/integration/transformersjs_whisper.mjs " +
              HFX_NODE_MODULES + " " + (d / "out").string() + " asr " + std::to_string(n) + wavs);
  ASSERT_EQ(p.rc, 0) << p.out;
  const json j = json::parse(p.out.substr(p.out.rfind("{\"sequences\"")));
  for (size_t c = 0; c < eager.size(); c++) {
    std::vector<int64_t> want = eager[c]["prompt"].get<std::vector<int64_t>>();
    for (const auto& id : eager[c]["ids"]) want.push_back(id.get<int64_t>());
    EXPECT_EQ(j["sequences"][c].get<std::vector<int64_t>>(), want) << "clip " << c;
    std::string text = eager[c]["text"].get<std::string>();
    const auto b = text.find_first_not_of(' '), e = text.find_last_not_of(' ');
    text = b == std::string::npos ? "" : text.substr(b, e - b + 1);  // the pipeline trims its text
    EXPECT_EQ(j["texts"][c].get<std::string>(), text) << "clip " << c;
    std::printf(
        "  [whisper] clip %zu: %zu tokens equal (eager, ort, Transformers.js generate); pipeline text "
        "equal\n",
        c, eager[c]["ids"].size());
  }
}

// `hfx generate WHISPER --audio FILE`: the speech structure in the one generate command. Greedy, it gives
// hfx transcribe's tokens (the same window loop) on the checkpoint and the export; the common decoding
// options apply through hfx::Generator after Whisper's logits processors: a seeded sampling run repeats
// itself, a stop string cuts the text before it, --quantize int8 runs eagerly; --json has generate's schema
// ("speech").
TEST(WhisperGenerate, AudioTakesTheDecodingOptions) {
  const fs::path& d = exported();
  Folder clips("generate");
  const fs::path clip = clips.path / "tone.wav";
  std::vector<float> x(16000 * 2);
  for (size_t i = 0; i < x.size(); i++)
    x[i] = static_cast<float>(0.5 * std::sin(2 * M_PI * 440.0 * double(i) / 16000));
  hfx::audio::write_wav_f32(clip.string(), x, 16000);
  auto run = [&](const std::string& model, const std::string& flags) {
    auto p = hfx::testsupport::sh_stdout(cli() + " generate " + (d / model).string() + " --audio " +
                                         clip.string() + " --max-new-tokens 24 --json" + flags);
    EXPECT_EQ(p.rc, 0) << hfx::testsupport::sh(cli() + " generate " + (d / model).string() + " --audio " +
                                               clip.string() + " --max-new-tokens 24 --json" + flags)
                              .out;
    return p.rc == 0 ? json::parse(p.out) : json();
  };
  auto t = hfx::testsupport::sh_stdout(cli() + " transcribe " + (d / "ckpt").string() + " " + clip.string() +
                                       " --language en --json --max-new-tokens 24");
  ASSERT_EQ(t.rc, 0);
  const json greedy = run("ckpt", ""), ort = run("out", "");
  ASSERT_FALSE(greedy.is_null() || ort.is_null());
  EXPECT_EQ(greedy["mode"], "speech");
  EXPECT_EQ(greedy["rows"][0]["ids"], json::parse(t.out)["ids"]);
  EXPECT_EQ(ort["rows"][0]["ids"], greedy["rows"][0]["ids"]);
  const std::string sampled = " --temperature 1.3 --top-k 40 --seed 9 --repetition-penalty 1.2";
  const json s1 = run("ckpt", sampled);
  EXPECT_EQ(s1["rows"][0]["ids"], run("ckpt", sampled)["rows"][0]["ids"]);
  EXPECT_NE(s1["rows"][0]["ids"], greedy["rows"][0]["ids"]);
  // The random tiny model's greedy tokens decode to no text; the sampled ones do, and a stop string taken
  // from them cuts the same sampled run before it.
  const std::string text = s1["rows"][0]["text"];
  std::string stop;  // 2 printable ASCII bytes that first occur after the start of the text
  for (size_t i = 2; stop.empty() && i + 2 <= text.size(); i++) {
    const std::string p = text.substr(i, 2);
    if (std::all_of(p.begin(), p.end(), [](char c) { return c > ' ' && c < 127 && c != '\''; }) &&
        text.find(p) == i)
      stop = p;
  }
  ASSERT_FALSE(stop.empty()) << text;
  const json cut = run("ckpt", sampled + " --stop '" + stop + "'");
  EXPECT_EQ(cut["rows"][0]["finish_reason"], "stop");
  EXPECT_EQ(cut["rows"][0]["text"], text.substr(0, text.find(stop)));
  EXPECT_FALSE(run("ckpt", " --quantize int8").is_null());
  auto bad = hfx::testsupport::sh(cli() + " generate " + (d / "ckpt").string() + " --audio " + clip.string() +
                                  " --prompt hi");
  EXPECT_EQ(bad.rc, 1);
  EXPECT_NE(bad.out.find("speech encoder-decoder model whisper"), std::string::npos) << bad.out;
}

TEST(WhisperOnnx, TimestampsEagerOrtAndTransformersJs) {
  HFX_REQUIRE_ORACLE(hfx::test::kTransformersJs);
  ASSERT_EQ(std::system("command -v espeak-ng > /dev/null"), 0)
      << "[oracle] expected espeak-ng, got none: run scripts/setup.sh";
  const fs::path& d = exported();
  Folder clips("ts_clips");
  const fs::path speech = clips.path / "speech.wav";
  ASSERT_EQ(
      std::system(
          ("espeak-ng -w " + speech.string() + " 'the quick brown fox jumps over the lazy dog'").c_str()),
      0);
  const int n = 24;
  auto run = [&](const fs::path& model) {
    auto p = sh(cli() + " transcribe " + model.string() + " " + speech.string() +
                " --language en --timestamps --json --max-new-tokens " + std::to_string(n));
    EXPECT_EQ(p.rc, 0) << p.out;
    return p.rc == 0 ? json::parse(p.out) : json();
  };
  const json eager = run(d / "ckpt"), ort = run(d / "out");
  ASSERT_FALSE(eager.is_null() || ort.is_null());
  EXPECT_EQ(eager["ids"], ort["ids"]);
  EXPECT_EQ(eager["segments"], ort["segments"]);
  ASSERT_FALSE(eager["segments"].empty());
  // The prompt has no <|notimestamps|>.
  EXPECT_EQ(eager["prompt"].size(), 3u);

  hfx::audio::Waveform w = hfx::audio::read_audio(speech.string());
  const fs::path w16 = clips.path / "speech_16k.wav";
  hfx::audio::write_wav_f32(w16.string(), hfx::audio::resample(w.samples, w.sample_rate, 16000), 16000);
  auto p = sh("node " + std::string(HFX_SOURCE_DIR) + "/tests/integration/transformersjs_whisper.mjs " +
              HFX_NODE_MODULES + " " + (d / "out").string() + " asr_timestamps " + std::to_string(n) + " " +
              w16.string());
  ASSERT_EQ(p.rc, 0) << p.out;
  const json j = json::parse(p.out.substr(p.out.rfind("{\"sequences\"")));
  const auto tjs = j["sequences"][0].get<std::vector<int64_t>>();
  const auto gen = json::parse(hfx::io::read_file((d / "out" / "generation_config.json").string()));
  const int64_t timestamp_begin = gen["no_timestamps_token_id"].get<int64_t>() + 1;
  const int64_t last_initial = timestamp_begin + gen["max_initial_timestamp_index"].get<int64_t>();
  const int64_t first = eager["ids"][0].get<int64_t>();
  EXPECT_GE(first, timestamp_begin);
  EXPECT_LE(first, last_initial);  // transformers' rule, which hfx keeps
  ASSERT_GT(tjs.size(), 3u);
  EXPECT_GT(tjs[3], last_initial)
      << "Transformers.js now applies max_initial_timestamp_index: compare its tokens "
         "with hfx's for equality instead";
  std::printf(
      "  [whisper timestamps] eager = ort: %zu tokens, %zu segments; first timestamp %lld (<= %lld); "
      "Transformers.js's first: %lld (no max_initial_timestamp_index)\n",
      eager["ids"].size(), eager["segments"].size(), static_cast<long long>(first),
      static_cast<long long>(last_initial), static_cast<long long>(tjs[3]));
}

// Long-form transcription (more than 30 s of features): transformers 5.23's sequential windows, each moved on
// to its last timestamp pair, against the golden's generate(return_timestamps=True, return_segments=True) on
// LONG_FRAMES frames of the golden formula — the same segments (tokens, start and end in seconds) and the
// same sequence, from the checkpoint (eager) and from the export (ONNX Runtime).
TEST(WhisperLongForm, EagerAndOrtEqualTransformersSegments) {
  const fs::path& d = exported();
  const json g =
      json::parse(hfx::io::read_file(std::string(HFX_SOURCE_DIR) + "/tests/data/goldens/whisper-lm.json"));
  const json& lg = g["longform"];
  const int64_t frames = lg["frames"].get<int64_t>(), mels = 80;
  std::vector<float> f(static_cast<size_t>(mels * frames));
  for (int64_t m = 0; m < mels; m++)
    for (int64_t t = 0; t < frames; t++)  // make_whisper_goldens.py's formula, batch row 0
      f[static_cast<size_t>(m * frames + t)] =
          static_cast<float>(0.5 * std::sin(0.37 * static_cast<double>(m * frames + t)));
  hfx::TranscribeOptions o;
  o.language = "en";
  o.max_new_tokens = lg["max_new_tokens"].get<int64_t>();
  for (const char* engine : {"eager", "ort"}) {
    SCOPED_TRACE(engine);
    hfx::Transcriber t =
        hfx::Transcriber::open((d / (std::string(engine) == "eager" ? "ckpt" : "out")).string(), engine);
    const hfx::TranscribeResult r = t.transcribe_long_features(f, frames, o);
    EXPECT_EQ(r.ids, lg["sequence"].get<std::vector<int64_t>>());
    ASSERT_EQ(r.segments.size(), lg["segments"].size());
    for (size_t i = 0; i < r.segments.size(); i++) {
      const json& s = lg["segments"][i];
      EXPECT_EQ(r.segments[i].ids, s["tokens"].get<std::vector<int64_t>>()) << "segment " << i;
      EXPECT_NEAR(r.segments[i].start, s["start"].get<double>(), 1e-6) << "segment " << i;
      EXPECT_NEAR(r.segments[i].end, s["end"].get<double>(), 1e-6) << "segment " << i;
    }
    ASSERT_FALSE(r.segments.empty());
    EXPECT_GT(r.segments.back().start, 60.0) << "the third window was reached";
    std::printf(
        "  [whisper long-form, %s] %zu frames: %zu segments (%.2f-%.2f s ... %.2f-%.2f s) and %zu tokens "
        "equal to transformers'\n",
        engine, static_cast<size_t>(frames), r.segments.size(), r.segments[0].start, r.segments[0].end,
        r.segments.back().start, r.segments.back().end, r.ids.size());
  }
}

// ExecuTorch (.pte methods encoder, decoder, decoder_with_past) and .pt2 (one program per call kind):
// exported and verified — the generation loop's real calls replayed in the .pte executor against eager,
// the .pt2 archives read back. --max-batch 1 (a device's batch): the .pte plans its memory for the
// contract's largest call, and the encoder's [batch, 80, 3000] features at the default bound of 64 need a
// 5 GB arena.
TEST(WhisperExecutorchDynamo, ExportAndVerify) {
  Folder f("et");
  hfx::create_tiny("whisper", (f.path / "ckpt").string());
  for (const char* fmt : {"executorch", "dynamo"}) {
    SCOPED_TRACE(fmt);
    auto p = sh(cli() + " export " + (f.path / "ckpt").string() + " --format " + fmt + " --max-batch 1 -o " +
                (f.path / fmt).string() + " 2>&1");
    ASSERT_EQ(p.rc, 0) << p.out;
    p = sh(cli() + " verify " + (f.path / fmt).string() + " 2>&1");
    EXPECT_TRUE(hfx::testsupport::verified_or_judge_off(p.rc, p.out)) << p.out;
    if (std::string(fmt) == "executorch")
      for (const char* method :
           {"model.pte:encoder ", "model.pte:decoder ", "model.pte:decoder_with_past "}) {
        const size_t at = p.out.find(method);
        ASSERT_NE(at, std::string::npos) << method << p.out;
        const std::string line = p.out.substr(at, p.out.find('\n', at) - at);
        EXPECT_TRUE(std::regex_search(line, std::regex(" numerics +PASS "))) << line;  // column widths vary
      }
    else
      for (const char* file : {"encoder_model.pt2", "decoder_model.pt2", "decoder_with_past_model.pt2"})
        EXPECT_TRUE(fs::exists(f.path / fmt / file)) << file;
  }
}
