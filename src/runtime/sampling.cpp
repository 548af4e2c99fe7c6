// Token selection; see include/hfx/runtime/sampling.h. The order and the comparisons follow
// transformers' generation/logits_process.py so that a row filtered here keeps exactly the tokens HF
// keeps (the probabilities of top-p are accumulated in float32 as torch does).
#include "hfx/runtime/sampling.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <unordered_set>

#include "hfx/core/error.h"

namespace hfx::sampling {

namespace {
constexpr float kFilter = -std::numeric_limits<float>::infinity();
}

void validate(const SamplingParams& p) {
  HFX_CHECK(p.temperature > 0 && std::isfinite(p.temperature), "sampling", "expected temperature > 0, got {}",
            p.temperature);
  HFX_CHECK(p.top_p >= 0 && p.top_p <= 1, "sampling", "expected top_p in [0, 1], got {}", p.top_p);
  HFX_CHECK(p.top_k >= 0, "sampling", "expected top_k >= 0 (0 = off), got {}", p.top_k);
  HFX_CHECK(p.repetition_penalty > 0 && std::isfinite(p.repetition_penalty), "sampling",
            "expected repetition_penalty > 0 (1 = off), got {}", p.repetition_penalty);
}

void apply_repetition_penalty(std::span<float> logits, std::span<const int64_t> previous, float penalty) {
  if (penalty == 1.0f) return;
  const int64_t V = static_cast<int64_t>(logits.size());
  // HF gathers the scores of input_ids and scatters them back: an id seen twice is penalized once.
  std::unordered_set<int64_t> seen;
  for (int64_t id : previous) {
    if (id < 0 || id >= V || !seen.insert(id).second) continue;
    float& s = logits[id];
    s = s < 0 ? s * penalty : s / penalty;
  }
}

void apply_temperature(std::span<float> logits, float t) {
  if (t == 1.0f) return;
  for (float& x : logits) x /= t;
}

void apply_top_k(std::span<float> logits, int64_t k, int64_t min_keep) {
  const int64_t V = static_cast<int64_t>(logits.size());
  if (k <= 0 || V == 0) return;
  k = std::min(std::max(k, min_keep), V);
  if (k == V) return;
  std::vector<float> tmp(logits.begin(), logits.end());
  std::nth_element(tmp.begin(), tmp.begin() + (k - 1), tmp.end(), std::greater<float>());
  const float kth = tmp[k - 1];
  for (float& x : logits)
    if (x < kth) x = kFilter;
}

void apply_top_p(std::span<float> logits, float p, int64_t min_keep) {
  const int64_t V = static_cast<int64_t>(logits.size());
  if (p >= 1.0f || V == 0) return;
  std::vector<int64_t> idx(V);
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(), [&](int64_t a, int64_t b) { return logits[a] < logits[b]; });
  // softmax of the ascending row in float32, then a running sum (torch: softmax(-1).cumsum(-1)).
  float mx = logits[idx[V - 1]];
  std::vector<float> e(V);
  float z = 0;
  for (int64_t i = 0; i < V; i++) {
    float x = logits[idx[i]];
    e[i] = x == kFilter ? 0.0f : std::exp(x - mx);
    z += e[i];
  }
  const float threshold = 1.0f - p;
  float cum = 0;
  const int64_t keep_from = std::max<int64_t>(0, V - min_keep);
  std::vector<int64_t> remove;
  for (int64_t i = 0; i < V; i++) {
    cum += e[i] / z;
    if (cum <= threshold && i < keep_from) remove.push_back(idx[i]);
  }
  for (int64_t i : remove) logits[i] = kFilter;
}

std::vector<double> softmax(std::span<const float> logits) {
  std::vector<double> p(logits.size(), 0.0);
  if (logits.empty()) return p;
  double mx = -std::numeric_limits<double>::infinity();
  for (float x : logits) mx = std::max<double>(mx, x);
  if (!std::isfinite(mx))
    HFX_THROW("sampling", "expected at least one finite logit, got none (every token was filtered)");
  double z = 0;
  for (size_t i = 0; i < logits.size(); i++) {
    p[i] = logits[i] == kFilter ? 0.0 : std::exp(static_cast<double>(logits[i]) - mx);
    z += p[i];
  }
  for (double& x : p) x /= z;
  return p;
}

int64_t argmax(std::span<const float> logits) {
  HFX_CHECK(!logits.empty(), "sampling", "expected a non-empty logits row, got 0 entries");
  int64_t best = 0;
  for (int64_t i = 1; i < static_cast<int64_t>(logits.size()); i++)
    if (logits[i] > logits[best] || (std::isnan(logits[i]) && !std::isnan(logits[best]))) best = i;
  return best;
}

double uniform01(Rng& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

int64_t sample_from(std::span<const double> probs, Rng& rng) {
  double total = 0;
  for (double x : probs) total += x;
  HFX_CHECK(total > 0 && std::isfinite(total), "sampling",
            "expected probabilities with a positive finite sum, got {}", total);
  const double u = uniform01(rng) * total;
  double cum = 0;
  int64_t last = -1;
  for (int64_t i = 0; i < static_cast<int64_t>(probs.size()); i++) {
    if (probs[i] <= 0) continue;
    cum += probs[i];
    last = i;
    if (u < cum) return i;
  }
  return last;  // rounding left u at the very top: the last possible token
}

int64_t select_next(std::span<float> logits, std::span<const int64_t> previous, const SamplingParams& p,
                    Rng& rng) {
  apply_repetition_penalty(logits, previous, p.repetition_penalty);
  if (p.greedy) return argmax(logits);
  apply_temperature(logits, p.temperature);
  apply_top_k(logits, p.top_k);
  apply_top_p(logits, p.top_p);
  std::vector<double> probs = softmax(logits);
  return sample_from(probs, rng);
}

}  // namespace hfx::sampling
