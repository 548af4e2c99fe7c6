// The audio front end (hfx/audio/audio.h) against independent references:
//   * input_features equal Transformers.js 4.3.1's WhisperFeatureExtractor (≤ 1e-4) on three clips of
//     different lengths and sample rates — speech from espeak-ng (22.05 kHz, ~3 s), a two-tone clip at
//     8 kHz (1.7 s, PCM16) and a chirp at 44.1 kHz longer than 30 s (truncated) — each decoded and
//     resampled by hfx, then handed to both feature extractors as the same 16 kHz float WAV;
//   * a FLAC file decodes to the same samples (and features) as the same clip in a WAV;
//   * libsoxr's resampling of the 8 kHz and 44.1 kHz tones against the same tones computed at 16 kHz;
//   * a corrupt file, a truncated WAV and a µ-law WAV give `[audio] expected ..., got ...` and a
//     non-zero exit from `hfx transcribe`.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <sndfile.h>

#include "hfx/audio/audio.h"
#include "hfx/core/error.h"
#include "hfx/io/safetensors.h"
#include "hfx/models/tiny.h"
#include "support/oracle.h"
#include "support/shell.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

struct Tmp {
  fs::path path;
  explicit Tmp(const std::string& tag)
      : path(fs::temp_directory_path() / ("hfx_audio_" + tag + "_" + std::to_string(::getpid()))) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~Tmp() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

void put16(std::string& s, uint16_t v) { s.append({static_cast<char>(v & 0xff), static_cast<char>(v >> 8)}); }
void put32(std::string& s, uint32_t v) {
  put16(s, static_cast<uint16_t>(v & 0xffff));
  put16(s, static_cast<uint16_t>(v >> 16));
}

// A RIFF/WAVE file written by hand (so the reader is not tested against itself): `format` 1 = PCM,
// 7 = µ-law; `data_size` lets a test declare more bytes than it writes (a truncated file).
std::string wav_bytes(uint16_t format, uint16_t bits, int rate, const std::string& data, uint32_t data_size) {
  std::string s = "RIFF";
  put32(s, static_cast<uint32_t>(36 + data_size));
  s += "WAVEfmt ";
  put32(s, 16);
  put16(s, format);
  put16(s, 1);
  put32(s, static_cast<uint32_t>(rate));
  put32(s, static_cast<uint32_t>(rate * bits / 8));
  put16(s, static_cast<uint16_t>(bits / 8));
  put16(s, bits);
  s += "data";
  put32(s, data_size);
  return s + data;
}

std::string pcm16(const std::vector<float>& x) {
  std::string d;
  for (float v : x)
    put16(d, static_cast<uint16_t>(static_cast<int16_t>(std::lround(std::clamp(v, -1.0f, 1.0f) * 32767.0f))));
  return d;
}

void write_file(const fs::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary).write(bytes.data(), bytes.size());
}

std::vector<float> tones(int rate, double seconds) {
  std::vector<float> x(static_cast<size_t>(rate * seconds));
  for (size_t i = 0; i < x.size(); i++) {
    const double t = static_cast<double>(i) / rate;
    x[i] = static_cast<float>(0.4 * std::sin(2 * M_PI * 440.0 * t) + 0.2 * std::sin(2 * M_PI * 1234.0 * t));
  }
  return x;
}

std::vector<float> chirp(int rate, double seconds) {
  std::vector<float> x(static_cast<size_t>(rate * seconds));
  for (size_t i = 0; i < x.size(); i++) {
    const double t = static_cast<double>(i) / rate;
    x[i] = static_cast<float>(0.3 * std::sin(2 * M_PI * (200.0 * t + 50.0 * t * t)) *
                              (0.6 + 0.4 * std::sin(2 * M_PI * 0.7 * t)));
  }
  return x;
}

}  // namespace

TEST(AudioFeatures, MatchTransformersJsWhisperFeatureExtractor) {
  HFX_REQUIRE_ORACLE(hfx::test::kTransformersJs);
  ASSERT_EQ(std::system("command -v espeak-ng > /dev/null"), 0)
      << "[oracle] expected espeak-ng, got none: run scripts/setup.sh";
  Tmp tmp("features");
  const fs::path ckpt = tmp.path / "whisper";
  hfx::create_tiny("whisper", ckpt.string());
  const auto cfg = hfx::audio::WhisperFeatureConfig::from_json(
      json::parse(hfx::io::read_file((ckpt / "preprocessor_config.json").string())));

  const fs::path speech = tmp.path / "speech.wav", tone = tmp.path / "tone8k.wav",
                 longc = tmp.path / "chirp44k.wav";
  ASSERT_EQ(
      std::system(
          ("espeak-ng -w " + speech.string() + " 'hello world, this is a test of the speech model'").c_str()),
      0);
  const std::vector<float> t8 = tones(8000, 1.7);
  write_file(tone, wav_bytes(1, 16, 8000, pcm16(t8), static_cast<uint32_t>(2 * t8.size())));
  hfx::audio::write_wav_f32(longc.string(), chirp(44100, 33.0), 44100);

  std::vector<std::vector<float>> mine;
  std::string args;
  size_t k = 0;
  for (const fs::path& clip : {speech, tone, longc}) {
    hfx::audio::Waveform w = hfx::audio::read_audio(clip.string());
    if (clip == tone) {
      ASSERT_EQ(w.sample_rate, 8000);
      ASSERT_EQ(w.samples.size(), t8.size());
      for (size_t i = 0; i < t8.size(); i += 97)
        EXPECT_NEAR(w.samples[i], std::lround(t8[i] * 32767.0f) / 32768.0f, 1e-7);
    }
    const std::vector<float> x =
        hfx::audio::resample(w.samples, w.sample_rate, static_cast<int>(cfg.sampling_rate));
    const fs::path wav16 = tmp.path / ("clip" + std::to_string(k++) + "_16k.wav");
    hfx::audio::write_wav_f32(wav16.string(), x, static_cast<int>(cfg.sampling_rate));
    mine.push_back(hfx::audio::whisper_log_mel(x, cfg));
    args += " " + wav16.string();
  }
  hfx::testsupport::Proc p = hfx::testsupport::sh(
      "node " + std::string(HFX_SOURCE_DIR) + "/tests/integration/transformersjs_whisper.mjs " +
      HFX_NODE_MODULES + " " + ckpt.string() + " features 0" + args);
  ASSERT_EQ(p.rc, 0) << p.out;
  for (size_t c = 0; c < mine.size(); c++) {
    const std::string bytes =
        hfx::io::read_file((tmp.path / ("clip" + std::to_string(c) + "_16k.wav.features.f32")).string());
    ASSERT_EQ(bytes.size(), mine[c].size() * 4) << "clip " << c;
    std::vector<float> theirs(mine[c].size());
    std::memcpy(theirs.data(), bytes.data(), bytes.size());
    double worst = 0;
    for (size_t i = 0; i < theirs.size(); i++)
      worst = std::max(worst, std::fabs(static_cast<double>(theirs[i]) - mine[c][i]));
    EXPECT_LE(worst, 1e-4) << "clip " << c;
    std::printf("  [features] clip %zu: max |hfx - Transformers.js| = %.3g over %zu values\n", c, worst,
                theirs.size());
  }
}

// FLAC (lossless) decodes to exactly the PCM16 samples of the same clip in a WAV, so both give the same
// input_features. The FLAC file is written by libsndfile's FLAC encoder.
TEST(AudioDecode, FlacEqualsWav) {
  Tmp tmp("flac");
  const std::vector<float> x = tones(22050, 1.3);
  const fs::path wav = tmp.path / "clip.wav", flac = tmp.path / "clip.flac";
  write_file(wav, wav_bytes(1, 16, 22050, pcm16(x), static_cast<uint32_t>(2 * x.size())));
  SF_INFO info{};
  info.samplerate = 22050;
  info.channels = 1;
  info.format = SF_FORMAT_FLAC | SF_FORMAT_PCM_16;
  SNDFILE* sf = sf_open(flac.string().c_str(), SFM_WRITE, &info);
  ASSERT_NE(sf, nullptr) << sf_strerror(nullptr);
  std::vector<short> q(x.size());
  for (size_t i = 0; i < x.size(); i++)
    q[i] = static_cast<short>(std::lround(std::clamp(x[i], -1.0f, 1.0f) * 32767.0f));
  ASSERT_EQ(sf_write_short(sf, q.data(), static_cast<sf_count_t>(q.size())),
            static_cast<sf_count_t>(q.size()));
  sf_close(sf);
  const hfx::audio::Waveform a = hfx::audio::read_audio(wav.string()),
                             b = hfx::audio::read_audio(flac.string());
  ASSERT_EQ(b.sample_rate, 22050);
  ASSERT_EQ(a.samples, b.samples);
  const hfx::audio::WhisperFeatureConfig cfg;
  EXPECT_EQ(hfx::audio::whisper_log_mel(hfx::audio::resample(a.samples, 22050, 16000), cfg),
            hfx::audio::whisper_log_mel(hfx::audio::resample(b.samples, 22050, 16000), cfg));
}

TEST(AudioResample, SoxrMatchesTonesComputedAt16k) {
  for (int rate : {8000, 44100}) {
    const std::vector<float> x = hfx::audio::resample(tones(rate, 1.0), rate, 16000);
    const std::vector<float> want = tones(16000, 1.0);
    ASSERT_NEAR(static_cast<double>(x.size()), 16000.0, 1.0) << rate;
    double worst = 0;
    // The filter's edges see the clip's abrupt start and end; the interior is the steady state.
    for (size_t i = 400; i + 400 < std::min(x.size(), want.size()); i++)
      worst = std::max(worst, std::fabs(double(x[i]) - want[i]));
    EXPECT_LE(worst, 1e-5) << rate;  // measured 2.5e-7 (8 kHz), 3.6e-7 (44.1 kHz)
    std::printf("  [resample] %d Hz -> 16 kHz: max |soxr - analytic| = %.3g (interior)\n", rate, worst);
  }
}

TEST(AudioErrors, BadFilesFailClearly) {
  Tmp tmp("errors");
  const fs::path ckpt = tmp.path / "whisper";
  hfx::create_tiny("whisper", ckpt.string());
  const std::vector<float> x = tones(16000, 0.5);
  const std::string data = pcm16(x);
  const fs::path truncated = tmp.path / "truncated.wav", corrupt = tmp.path / "corrupt.wav",
                 ulaw = tmp.path / "ulaw.wav";
  write_file(truncated,
             wav_bytes(1, 16, 16000, data.substr(0, data.size() / 2), static_cast<uint32_t>(data.size())));
  std::string noise(4096, '\0');
  for (size_t i = 0; i < noise.size(); i++) noise[i] = static_cast<char>((i * 2654435761u) >> 13);
  write_file(corrupt, noise);
  write_file(ulaw, wav_bytes(7, 8, 8000, std::string(4000, '\x7f'), 4000));
  struct Case {
    fs::path file;
    std::string want;
  };
  for (const Case& c : {Case{truncated, "truncated"}, Case{corrupt, "libsndfile"}, Case{ulaw, "u-law"}}) {
    EXPECT_THROW(hfx::audio::read_audio(c.file.string()), hfx::Error) << c.file;
    hfx::testsupport::Proc p =
        hfx::testsupport::sh(std::string(HFX_CLI) + " transcribe " + ckpt.string() + " " + c.file.string());
    EXPECT_NE(p.rc, 0) << p.out;
    EXPECT_NE(p.out.find("[audio] expected"), std::string::npos) << p.out;
    EXPECT_NE(p.out.find(c.want), std::string::npos) << p.out;
    std::printf("  [errors] %s -> rc %d: %s", c.file.filename().c_str(), p.rc, p.out.c_str());
  }
}
