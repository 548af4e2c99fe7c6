// hfx/audio/audio.h — audio input for speech models: decoding (WAV, FLAC through libsndfile), resampling
// (libsoxr) and Whisper's log-mel spectrogram, matching Hugging Face's WhisperFeatureExtractor.
//
//   hfx::audio::Waveform w = hfx::audio::read_audio("speech.wav");          // mono, file's rate
//   std::vector<float> x = hfx::audio::resample(w.samples, w.sample_rate, 16000);
//   auto fe = hfx::audio::WhisperFeatureConfig::from_json(preprocessor_config);
//   std::vector<float> mel = hfx::audio::whisper_log_mel(x, fe);         // [feature_size, nb_max_frames]
//
// Errors are hfx::Error("audio", "expected ..., got ...").
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace hfx::audio {

/// Decoded audio: mono samples in [-1, 1] at `sample_rate`.
struct Waveform {
  std::vector<float> samples;
  int sample_rate = 0;
};

/// Reads a WAV or FLAC file with libsndfile; several channels are averaged into one (what ffmpeg's
/// `-ac 1` does in transformers' pipeline). Accepts integer PCM (8-32 bit) and float samples. Throws
/// hfx::Error("audio", ...) for a file that is not audio, a truncated data chunk, another sample format
/// (µ-law, ADPCM, ...) or an empty file.
Waveform read_audio(const std::string& path);
/// Writes mono float samples as a 32-bit float WAV (tests, tools).
void write_wav_f32(const std::string& path, const std::vector<float>& samples, int sample_rate);

/// Band-limited resampling with libsoxr (high quality); `from == to` returns the samples unchanged.
std::vector<float> resample(const std::vector<float>& samples, int from, int to);

/// The fields of a preprocessor_config.json that WhisperFeatureExtractor reads.
struct WhisperFeatureConfig {
  int64_t feature_size = 80;  ///< mel bins
  int64_t sampling_rate = 16000;
  int64_t hop_length = 160;
  int64_t n_fft = 400;
  int64_t chunk_length = 30;     ///< seconds
  int64_t n_samples = 480000;    ///< chunk_length * sampling_rate
  int64_t nb_max_frames = 3000;  ///< n_samples / hop_length
  double padding_value = 0.0;
  /// From preprocessor_config.json (transformers' defaults for absent fields); checks the sizes agree.
  static WhisperFeatureConfig from_json(const nlohmann::json& j);
  /// The preprocessor_config.json a Whisper checkpoint carries for these fields.
  nlohmann::json to_json() const;
};

/// mel_filter_bank(1 + n_fft/2, feature_size, 0, 8000, sampling_rate, norm="slaney", mel_scale="slaney")
/// as transformers.audio_utils computes it: [n_fft/2 + 1, feature_size], row-major, float64.
std::vector<double> mel_filter_bank_slaney(int64_t n_fft, int64_t n_mels, double f_min, double f_max,
                                           int64_t sampling_rate);

/// WhisperFeatureExtractor on one clip already at `cfg.sampling_rate`: pad (padding_value) or truncate to
/// n_samples, periodic Hann window, centered reflect-padded STFT (float64), power spectrum, mel filters,
/// log10(max(1e-10, ·)), last frame dropped, max(x, max - 8), (x + 4) / 4. Returns
/// input_features [feature_size, nb_max_frames] row-major, float32.
std::vector<float> whisper_log_mel(const std::vector<float>& samples, const WhisperFeatureConfig& cfg);
/// The same over the whole clip, neither padded nor truncated (WhisperFeatureExtractor with
/// truncation=False, padding="longest": what transformers' long-form transcription reads): input_features
/// [feature_size, samples / hop_length] row-major, normalized by the whole clip's maximum.
std::vector<float> whisper_log_mel_long(const std::vector<float>& samples, const WhisperFeatureConfig& cfg);

}  // namespace hfx::audio
