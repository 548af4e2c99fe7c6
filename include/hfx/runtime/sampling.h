// hfx/runtime/sampling.h — choosing the next token from one row of logits, as transformers does.
//
// Pure functions over a float logits row [V]. `select_next` applies transformers' logits processors in
// the order `generate()` builds them: repetition penalty (a processor, applied in greedy mode too), then
// the sampling warpers temperature → top-k → top-p, then softmax and a draw. Removed tokens get -inf
// (HF's filter_value). The draw is an inverse-CDF over the probabilities with a uniform double taken
// from the row's std::mt19937_64, so a seed reproduces the same tokens on every platform.
//
//   hfx::sampling::SamplingParams p{.greedy = false, .temperature = 0.7f, .top_p = 0.9f, .seed = 1};
//   hfx::sampling::Rng rng(p.seed);
//   int64_t id = hfx::sampling::select_next(row, history, p, rng);
#pragma once
#include <cstdint>
#include <random>
#include <span>
#include <vector>

namespace hfx::sampling {

using Rng = std::mt19937_64;

struct SamplingParams {
  bool greedy = true;               ///< argmax (HF do_sample=False); the warpers below are then skipped
  float temperature = 1.0f;         ///< > 0; 1 = off
  int64_t top_k = 0;                ///< 0 = off
  float top_p = 1.0f;               ///< in [0, 1]; 1 = off
  float repetition_penalty = 1.0f;  ///< > 0; 1 = off (applied in greedy mode too)
  uint64_t seed = 0;                ///< row r of a batch draws from Rng(seed + r)
};

/// Throws hfx::Error("sampling", ...) for a temperature <= 0, top_p outside [0, 1], top_k < 0 or a
/// repetition penalty <= 0.
void validate(const SamplingParams& p);

/// HF RepetitionPenaltyLogitsProcessor: for every distinct id in `previous`, a positive logit is divided
/// by `penalty`, a negative one multiplied by it. Ids outside the row are ignored.
void apply_repetition_penalty(std::span<float> logits, std::span<const int64_t> previous, float penalty);
/// HF TemperatureLogitsWarper: logits / t.
void apply_temperature(std::span<float> logits, float t);
/// HF TopKLogitsWarper: keeps every logit >= the k-th largest (ties at the threshold stay), others -inf.
/// k is raised to `min_keep` and clamped to the row size; k = 0 is a no-op.
void apply_top_k(std::span<float> logits, int64_t k, int64_t min_keep = 1);
/// HF TopPLogitsWarper: sorts ascending, removes tokens whose cumulative probability is <= 1 - p, keeping
/// at least `min_keep` of the largest. p >= 1 is a no-op.
void apply_top_p(std::span<float> logits, float p, int64_t min_keep = 1);
/// Softmax of a row (max-subtracted, in double; -inf gives 0).
std::vector<double> softmax(std::span<const float> logits);
/// First index of the largest value (torch.argmax's tie rule).
int64_t argmax(std::span<const float> logits);
/// A uniform double in [0, 1) from 53 bits of the generator.
double uniform01(Rng& rng);
/// Inverse-CDF draw over `probs` (need not be normalized; zero entries are never chosen).
int64_t sample_from(std::span<const double> probs, Rng& rng);

/// The whole chain on `logits` (modified in place): penalty, then argmax (greedy) or
/// temperature → top-k → top-p → softmax → draw.
int64_t select_next(std::span<float> logits, std::span<const int64_t> previous, const SamplingParams& p,
                    Rng& rng);

}  // namespace hfx::sampling
