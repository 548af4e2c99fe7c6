// The distance of a quantized (or otherwise lower-precision) causal LM to its float32 model, measured the
// way docs/benchmarks.md's agreement tables are: greedy continuations of the float32 model after a
// seeded set of prompts, then both models teacher-forced over the same sequences. Teacher forcing keeps
// every position comparable: once a free-running copy parted, its later tokens would follow another text.
#include "hfx/verify/precision.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "hfx/runtime/generator.h"

namespace hfx::verify {

namespace {

std::vector<double> log_softmax(const float* x, int64_t V) {
  double mx = *std::max_element(x, x + V), s = 0;
  for (int64_t i = 0; i < V; i++) s += std::exp(x[i] - mx);
  std::vector<double> out(static_cast<size_t>(V));
  for (int64_t i = 0; i < V; i++) out[i] = x[i] - mx - std::log(s);
  return out;
}

}  // namespace

Tensor forward_logits(const CausalLM& m, const std::vector<int64_t>& seq, EagerBuilder& b) {
  const auto S = static_cast<int64_t>(seq.size());
  std::vector<int64_t> pos(seq.size());
  for (int64_t i = 0; i < S; i++) pos[i] = i;
  ForwardArgs a;
  a.input_ids = b.wrap(Tensor::from_ints({1, S}, seq));
  a.attention_mask = b.wrap(Tensor::full({1, S}, 1, DType::I64));
  a.position_ids = b.wrap(Tensor::from_ints({1, S}, pos));
  return m.forward(b, a).logits.tensor().contiguous();
}

Tensor forward_logits(const CausalLM& m, const std::vector<int64_t>& seq) {
  EagerBuilder b;
  return forward_logits(m, seq, b);
}

nlohmann::json Agreement::to_json() const {
  return {{"positions", positions},         {"top1_agreement", top1}, {"max_abs_logit_diff", max_abs_diff},
          {"max_abs_logit", max_abs_logit}, {"mean_kl", mean_kl},     {"max_kl", max_kl}};
}

AgreementSet agreement_set(const CausalLM& f32, const AgreementOptions& opt) {
  AgreementSet set;
  set.vocab = f32.config().vocab_size;
  std::mt19937 rng(opt.seed);
  // A non-owning handle: the Generator's engine only reads the model during this call.
  std::shared_ptr<const CausalLM> ref(std::shared_ptr<const CausalLM>(), &f32);
  Generator g(std::make_unique<EagerEngine>(ref), nullptr, {});
  GenerationOptions go;
  go.max_new_tokens = opt.steps;
  go.ignore_eos = true;
  for (int p = 0; p < opt.prompts; p++) {
    std::vector<int64_t> seq(8 + rng() % 13);
    for (auto& t : seq) t = static_cast<int64_t>(rng() % set.vocab);
    set.starts.push_back(seq.size() - 1);
    GenerationResult r = g.generate_ids({seq}, go);
    seq.insert(seq.end(), r.ids[0].begin(), r.ids[0].end());
    set.logits.push_back(forward_logits(f32, seq));
    set.sequences.push_back(std::move(seq));
  }
  return set;
}

Agreement measure_agreement(const AgreementSet& set, const CausalLM& low) {
  const int64_t V = set.vocab;
  Agreement a;
  int64_t same = 0;
  for (size_t i = 0; i < set.sequences.size(); i++) {
    const std::vector<int64_t>& seq = set.sequences[i];
    const Tensor y = forward_logits(low, seq);
    for (size_t t = set.starts[i]; t + 1 < seq.size(); t++) {
      const float* u = set.logits[i].data<float>() + t * V;
      const float* v = y.data<float>() + t * V;
      same += (std::max_element(u, u + V) - u) == (std::max_element(v, v + V) - v);
      for (int64_t k = 0; k < V; k++) {
        a.max_abs_diff = std::max(a.max_abs_diff, static_cast<double>(std::fabs(u[k] - v[k])));
        a.max_abs_logit = std::max(a.max_abs_logit, static_cast<double>(std::fabs(u[k])));
      }
      const auto lu = log_softmax(u, V), lv = log_softmax(v, V);
      double kl = 0;
      for (int64_t k = 0; k < V; k++) kl += std::exp(lu[k]) * (lu[k] - lv[k]);
      a.mean_kl += kl;
      a.max_kl = std::max(a.max_kl, kl);
      a.positions++;
    }
  }
  if (a.positions > 0) {
    a.top1 = static_cast<double>(same) / static_cast<double>(a.positions);
    a.mean_kl /= static_cast<double>(a.positions);
  }
  return a;
}

Agreement measure_agreement(const CausalLM& f32, const CausalLM& low, const AgreementOptions& opt) {
  return measure_agreement(agreement_set(f32, opt), low);
}

}  // namespace hfx::verify
