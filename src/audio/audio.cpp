// Audio decoding (libsndfile), resampling (libsoxr) and preprocessor_config.json for Whisper's features.
// libsndfile quietly reads what is there when a WAV's data chunk is cut short, so the WAV chunk sizes are
// checked here against the file size: a truncated clip must fail loudly, not transcribe its first half.
#include "hfx/audio/audio.h"

#include <cstring>
#include <filesystem>
#include <fstream>

#include <sndfile.h>
#include <soxr.h>

#include "hfx/core/error.h"

namespace hfx::audio {
namespace {

constexpr const char* kComp = "audio";

uint32_t le32(const unsigned char* p) {
  return p[0] | (p[1] << 8) | (p[2] << 16) | (static_cast<uint32_t>(p[3]) << 24);
}

// A RIFF/WAVE file's `data` chunk must fit in the file (0 and 0xFFFFFFFF: a streamed size, not checked).
void check_wav_data_chunk(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  unsigned char head[12];
  if (!f.read(reinterpret_cast<char*>(head), 12) || std::memcmp(head, "RIFF", 4) ||
      std::memcmp(head + 8, "WAVE", 4))
    return;
  const uint64_t size = std::filesystem::file_size(path);
  uint64_t pos = 12;
  unsigned char ch[8];
  while (f.seekg(static_cast<std::streamoff>(pos)) && f.read(reinterpret_cast<char*>(ch), 8)) {
    const uint64_t n = le32(ch + 4);
    if (!std::memcmp(ch, "data", 4)) {
      if (n != 0 && n != 0xFFFFFFFFu && pos + 8 + n > size)
        HFX_THROW(
            kComp,
            "expected {} bytes of samples in the data chunk of {} (as its header says), got {}: the file is "
            "truncated; re-export or re-download it",
            n, path, size - pos - 8);
      return;
    }
    pos += 8 + n + (n & 1);
  }
}

const char* subtype_name(int subtype) {
  switch (subtype) {
    case SF_FORMAT_ULAW:
      return "u-law";
    case SF_FORMAT_ALAW:
      return "A-law";
    case SF_FORMAT_IMA_ADPCM:
      return "IMA ADPCM";
    case SF_FORMAT_MS_ADPCM:
      return "MS ADPCM";
    case SF_FORMAT_GSM610:
      return "GSM 6.10";
    default:
      return "another encoding";
  }
}

}  // namespace

Waveform read_audio(const std::string& path) {
  HFX_CHECK(std::filesystem::is_regular_file(path), kComp,
            "expected an audio file (WAV or FLAC), got '{}' (no such file)", path);
  check_wav_data_chunk(path);
  SF_INFO info{};
  SNDFILE* sf = sf_open(path.c_str(), SFM_READ, &info);
  if (!sf)
    HFX_THROW(kComp, "expected a WAV or FLAC file that libsndfile can decode, got '{}': {}", path,
              sf_strerror(nullptr));
  struct Close {
    SNDFILE* s;
    ~Close() { sf_close(s); }
  } close{sf};
  const int major = info.format & SF_FORMAT_TYPEMASK, sub = info.format & SF_FORMAT_SUBMASK;
  HFX_CHECK(major == SF_FORMAT_WAV || major == SF_FORMAT_WAVEX || major == SF_FORMAT_FLAC ||
                major == SF_FORMAT_RF64,
            kComp,
            "expected a WAV or FLAC container, got format 0x{:x} in '{}'; convert it (e.g. ffmpeg -i IN -ar "
            "16000 OUT.wav)",
            major, path);
  const bool pcm = sub == SF_FORMAT_PCM_S8 || sub == SF_FORMAT_PCM_U8 || sub == SF_FORMAT_PCM_16 ||
                   sub == SF_FORMAT_PCM_24 || sub == SF_FORMAT_PCM_32 || sub == SF_FORMAT_FLOAT ||
                   sub == SF_FORMAT_DOUBLE;
  HFX_CHECK(
      pcm, kComp,
      "expected integer PCM (8-32 bit) or float samples, got {} (subtype 0x{:x}) in '{}'; convert it to PCM "
      "(e.g. ffmpeg -i IN -c:a pcm_s16le OUT.wav)",
      subtype_name(sub), sub, path);
  HFX_CHECK(info.channels >= 1 && info.samplerate > 0, kComp,
            "expected at least one channel and a positive sample rate, got {} "
            "channels at {} Hz in '{}'",
            info.channels, info.samplerate, path);
  HFX_CHECK(info.frames > 0, kComp, "expected at least one sample, got none in '{}'", path);
  std::vector<float> inter(static_cast<size_t>(info.frames * info.channels));
  const sf_count_t got = sf_readf_float(sf, inter.data(), info.frames);
  HFX_CHECK(got == info.frames, kComp,
            "expected {} frames in '{}', got {}: the file is truncated or corrupt ({})", info.frames, path,
            got, sf_strerror(sf));
  Waveform w;
  w.sample_rate = info.samplerate;
  w.samples.resize(static_cast<size_t>(info.frames));
  for (sf_count_t i = 0; i < info.frames; i++) {
    double s = 0;
    for (int c = 0; c < info.channels; c++) s += inter[static_cast<size_t>(i * info.channels + c)];
    w.samples[static_cast<size_t>(i)] = static_cast<float>(s / info.channels);
  }
  return w;
}

void write_wav_f32(const std::string& path, const std::vector<float>& samples, int sample_rate) {
  SF_INFO info{};
  info.samplerate = sample_rate;
  info.channels = 1;
  info.format = SF_FORMAT_WAV | SF_FORMAT_FLOAT;
  SNDFILE* sf = sf_open(path.c_str(), SFM_WRITE, &info);
  HFX_CHECK(sf != nullptr, kComp, "expected to create '{}', got: {}", path, sf_strerror(nullptr));
  const sf_count_t n = sf_writef_float(sf, samples.data(), static_cast<sf_count_t>(samples.size()));
  sf_close(sf);
  HFX_CHECK(n == static_cast<sf_count_t>(samples.size()), kComp,
            "expected to write {} samples to '{}', got {}", samples.size(), path, n);
}

std::vector<float> resample(const std::vector<float>& samples, int from, int to) {
  HFX_CHECK(from > 0 && to > 0, kComp, "expected positive sample rates, got {} -> {}", from, to);
  if (from == to) return samples;
  const size_t out_len = static_cast<size_t>((static_cast<double>(samples.size()) * to + from - 1) / from);
  std::vector<float> out(out_len);
  size_t done = 0;
  soxr_io_spec_t io = soxr_io_spec(SOXR_FLOAT32_I, SOXR_FLOAT32_I);
  soxr_quality_spec_t q = soxr_quality_spec(SOXR_HQ, 0);
  soxr_error_t err = soxr_oneshot(from, to, 1, samples.data(), samples.size(), nullptr, out.data(),
                                  out.size(), &done, &io, &q, nullptr);
  HFX_CHECK(!err, kComp, "expected libsoxr to resample {} Hz to {} Hz, got: {}", from, to, err);
  out.resize(done);
  return out;
}

WhisperFeatureConfig WhisperFeatureConfig::from_json(const nlohmann::json& j) {
  HFX_CHECK(j.is_object(), kComp, "expected preprocessor_config.json to be an object, got {}", j.type_name());
  WhisperFeatureConfig c;
  auto num = [&](const char* key, int64_t& v) {
    if (!j.contains(key)) return;
    HFX_CHECK(j[key].is_number_integer() && j[key].get<int64_t>() > 0, kComp,
              "expected {} in preprocessor_config.json to be a positive integer, got {}", key, j[key].dump());
    v = j[key].get<int64_t>();
  };
  num("feature_size", c.feature_size);
  num("sampling_rate", c.sampling_rate);
  num("hop_length", c.hop_length);
  num("n_fft", c.n_fft);
  num("chunk_length", c.chunk_length);
  c.n_samples = c.chunk_length * c.sampling_rate;
  c.nb_max_frames = c.n_samples / c.hop_length;
  num("n_samples", c.n_samples);
  num("nb_max_frames", c.nb_max_frames);
  if (j.contains("padding_value") && j["padding_value"].is_number())
    c.padding_value = j["padding_value"].get<double>();
  HFX_CHECK(c.n_samples == c.chunk_length * c.sampling_rate && c.nb_max_frames == c.n_samples / c.hop_length,
            kComp,
            "expected n_samples = chunk_length * sampling_rate and nb_max_frames = n_samples / hop_length, "
            "got {} and {}",
            c.n_samples, c.nb_max_frames);
  HFX_CHECK(c.n_fft <= c.n_samples, kComp, "expected n_fft <= n_samples, got {} > {}", c.n_fft, c.n_samples);
  return c;
}

nlohmann::json WhisperFeatureConfig::to_json() const {
  return {{"chunk_length", chunk_length},
          {"feature_extractor_type", "WhisperFeatureExtractor"},
          {"feature_size", feature_size},
          {"hop_length", hop_length},
          {"n_fft", n_fft},
          {"n_samples", n_samples},
          {"nb_max_frames", nb_max_frames},
          {"padding_side", "right"},
          {"padding_value", padding_value},
          {"processor_class", "WhisperProcessor"},
          {"return_attention_mask", false},
          {"sampling_rate", sampling_rate}};
}

}  // namespace hfx::audio
