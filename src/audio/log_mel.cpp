// Whisper's log-mel spectrogram, step for step as transformers' WhisperFeatureExtractor (numpy path):
// audio_utils.mel_filter_bank (slaney scale and norm), window_function("hann", periodic), spectrogram
// (center, reflect padding, float64 STFT, power 2, mel floor 1e-10, log10, cast to float32). The FFT is
// FFTW's real-to-complex transform in double precision, as numpy's rfft is.
#include <algorithm>
#include <cmath>
#include <mutex>

#include <fftw3.h>

#include "hfx/audio/audio.h"
#include "hfx/core/error.h"

namespace hfx::audio {
namespace {

constexpr double kMinLogHertz = 1000.0, kMinLogMel = 15.0;
const double kLogStep = 27.0 / std::log(6.4);

double hertz_to_mel(double f) {
  return f >= kMinLogHertz ? kMinLogMel + std::log(f / kMinLogHertz) * kLogStep : 3.0 * f / 200.0;
}
double mel_to_hertz(double m) {
  return m >= kMinLogMel ? kMinLogHertz * std::exp((m - kMinLogMel) / kLogStep) : 200.0 * m / 3.0;
}

// numpy's np.pad(x, n, mode="reflect"): the edge sample is not repeated.
std::vector<double> reflect_pad(const std::vector<float>& x, int64_t n) {
  const int64_t L = static_cast<int64_t>(x.size());
  std::vector<double> out(static_cast<size_t>(L + 2 * n));
  for (int64_t i = 0; i < L + 2 * n; i++) {
    int64_t j = i - n;
    while (j < 0 || j >= L) j = j < 0 ? -j : 2 * (L - 1) - j;
    out[static_cast<size_t>(i)] = x[static_cast<size_t>(j)];
  }
  return out;
}

// FFTW's planner is not thread-safe; execution of a plan on new arrays (fftw_execute_dft_r2c) is.
std::mutex g_plan_mutex;

}  // namespace

std::vector<double> mel_filter_bank_slaney(int64_t n_fft, int64_t n_mels, double f_min, double f_max,
                                           int64_t sampling_rate) {
  const int64_t bins = n_fft / 2 + 1;
  const double mel_min = hertz_to_mel(f_min), mel_max = hertz_to_mel(f_max);
  std::vector<double> filter_freqs(static_cast<size_t>(n_mels + 2));
  for (int64_t i = 0; i < n_mels + 2; i++)  // np.linspace(mel_min, mel_max, n_mels + 2)
    filter_freqs[static_cast<size_t>(i)] = mel_to_hertz(
        mel_min + (mel_max - mel_min) * static_cast<double>(i) / static_cast<double>(n_mels + 1));
  std::vector<double> fb(static_cast<size_t>(bins * n_mels));
  for (int64_t k = 0; k < bins; k++) {
    // np.linspace(0, sampling_rate // 2, bins)
    const double f =
        static_cast<double>(sampling_rate / 2) * static_cast<double>(k) / static_cast<double>(bins - 1);
    for (int64_t m = 0; m < n_mels; m++) {
      const double lo = filter_freqs[m], mid = filter_freqs[m + 1], hi = filter_freqs[m + 2];
      const double down = -(lo - f) / (mid - lo), up = (hi - f) / (hi - mid);
      const double enorm = 2.0 / (hi - lo);  // slaney: each filter has unit area
      fb[static_cast<size_t>(k * n_mels + m)] = std::max(0.0, std::min(down, up)) * enorm;
    }
  }
  return fb;
}

namespace {

// The clip padded (padding_value) or truncated to `total` samples → [feature_size, out_frames].
std::vector<float> log_mel(const std::vector<float>& samples, const WhisperFeatureConfig& cfg, int64_t total,
                           int64_t out_frames) {
  HFX_CHECK(!samples.empty(), "audio", "expected at least one sample, got none");
  const int64_t n_fft = cfg.n_fft, hop = cfg.hop_length, bins = n_fft / 2 + 1, M = cfg.feature_size;
  std::vector<float> wave(static_cast<size_t>(total), static_cast<float>(cfg.padding_value));
  std::copy_n(samples.begin(), std::min<size_t>(samples.size(), wave.size()), wave.begin());
  const std::vector<double> x = reflect_pad(wave, n_fft / 2);
  const int64_t frames = 1 + (static_cast<int64_t>(x.size()) - n_fft) / hop;
  const int64_t keep = std::min<int64_t>(frames - 1, out_frames);  // Whisper drops the last frame
  std::vector<double> window(static_cast<size_t>(n_fft));
  for (int64_t i = 0; i < n_fft; i++)
    window[i] = 0.5 - 0.5 * std::cos(2.0 * M_PI * static_cast<double>(i) / static_cast<double>(n_fft));
  const std::vector<double> fb = mel_filter_bank_slaney(n_fft, M, 0.0, 8000.0, cfg.sampling_rate);

  double* in = fftw_alloc_real(static_cast<size_t>(n_fft));
  fftw_complex* out = fftw_alloc_complex(static_cast<size_t>(bins));
  fftw_plan plan;
  {
    std::lock_guard<std::mutex> lock(g_plan_mutex);
    plan = fftw_plan_dft_r2c_1d(static_cast<int>(n_fft), in, out, FFTW_ESTIMATE);
  }
  std::vector<float> mel(static_cast<size_t>(M * out_frames), 0.0f);
  std::vector<double> power(static_cast<size_t>(bins));
  float max_log = -std::numeric_limits<float>::infinity();
  for (int64_t t = 0; t < keep; t++) {
    for (int64_t i = 0; i < n_fft; i++)
      in[i] = x[static_cast<size_t>(t * hop + i)] * window[static_cast<size_t>(i)];
    fftw_execute(plan);
    for (int64_t k = 0; k < bins; k++) power[k] = out[k][0] * out[k][0] + out[k][1] * out[k][1];
    for (int64_t m = 0; m < M; m++) {
      double s = 0;
      for (int64_t k = 0; k < bins; k++) s += fb[static_cast<size_t>(k * M + m)] * power[k];
      const float v = static_cast<float>(std::log10(std::max(1e-10, s)));
      mel[static_cast<size_t>(m * out_frames + t)] = v;
      max_log = std::max(max_log, v);
    }
  }
  {
    std::lock_guard<std::mutex> lock(g_plan_mutex);
    fftw_destroy_plan(plan);
  }
  fftw_free(in);
  fftw_free(out);
  for (int64_t m = 0; m < M; m++)
    for (int64_t t = 0; t < keep; t++) {
      float& v = mel[static_cast<size_t>(m * out_frames + t)];
      v = (std::max(v, max_log - 8.0f) + 4.0f) / 4.0f;
    }
  return mel;
}

}  // namespace

std::vector<float> whisper_log_mel(const std::vector<float>& samples, const WhisperFeatureConfig& cfg) {
  return log_mel(samples, cfg, cfg.n_samples, cfg.nb_max_frames);
}

std::vector<float> whisper_log_mel_long(const std::vector<float>& samples, const WhisperFeatureConfig& cfg) {
  const int64_t n = static_cast<int64_t>(samples.size());
  HFX_CHECK(n >= cfg.hop_length, "audio", "expected at least hop_length ({}) samples, got {}", cfg.hop_length,
            n);
  return log_mel(samples, cfg, n, n / cfg.hop_length);
}

}  // namespace hfx::audio
