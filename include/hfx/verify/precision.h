// include/hfx/verify/precision.h — how far a lower-precision copy of a causal LM is from its float32
// model: top-1 agreement, logit error and KL divergence over the greedy steps of a fixed prompt set.
// `hfx verify` reports it for a quantized export (the artifact itself is compared with the quantized
// eager model; this says what the quantization costs), and bench/quant_bench's `agree` prints it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "hfx/models/model.h"
#include "hfx/ops/builder.h"

namespace hfx::verify {

/// `m`'s logits [1, S, vocab] over `seq` in one teacher-forced forward (positions 0..S-1, no cache), run by
/// `b` (which may collect intermediates); the second form with a builder of its own.
Tensor forward_logits(const CausalLM& m, const std::vector<int64_t>& seq, EagerBuilder& b);
Tensor forward_logits(const CausalLM& m, const std::vector<int64_t>& seq);

/// The fixed prompt set: `prompts` prompts of 8-20 token ids drawn by a generator seeded with `seed`,
/// each followed by `steps` greedy tokens of the float32 model.
struct AgreementOptions {
  int prompts = 8;
  int64_t steps = 32;
  uint32_t seed = 1234;
};

/// The distance over every position that chose a generated token (the low-precision model runs
/// teacher-forced on the float32 model's sequences: one forward over prompt + generated tokens).
struct Agreement {
  int64_t positions = 0;
  double top1 = 1;                 ///< share of positions whose argmax equals the float32 model's
  double max_abs_diff = 0;         ///< max |logit difference|
  double max_abs_logit = 0;        ///< max |float32 logit| (the scale max_abs_diff compares with)
  double mean_kl = 0, max_kl = 0;  ///< KL(float32 || low precision) of the next-token distribution, nats
  nlohmann::json to_json() const;
};

/// The fixed prompt set with the float32 model's greedy continuations and its teacher-forced logits over
/// each whole sequence: computed once, compared with any number of low-precision copies.
struct AgreementSet {
  int64_t vocab = 0;
  std::vector<std::vector<int64_t>> sequences;  ///< prompt + generated tokens
  std::vector<size_t> starts;                   ///< the position that chose each sequence's first new token
  std::vector<Tensor> logits;                   ///< [1, S, vocab] of the float32 model per sequence
};
AgreementSet agreement_set(const CausalLM& f32, const AgreementOptions& opt = {});

/// Measures `low` (same config and vocabulary as the set's model) over the set's generated positions.
Agreement measure_agreement(const AgreementSet& set, const CausalLM& low);
/// agreement_set(f32, opt), then measure_agreement of `low` over it.
Agreement measure_agreement(const CausalLM& f32, const CausalLM& low, const AgreementOptions& opt = {});

}  // namespace hfx::verify
