// Weight-only quantization, eager engine: decode speed of f32 vs int8 vs int4 in one run, and the
// distance of the quantized models to the f32 model over the greedy steps of a fixed prompt set.
// bench/quant_bench.sh runs it beside ort_bench on the quantized ONNX exports. One JSON line per figure.
//
//   quant_bench speed MODEL_DIR [--threads 2] [--decode 32] [--reps 3]
//   quant_bench agree MODEL_DIR [--steps 32] [--prompts 8]
//
// speed: a 16-token prefill, then `decode` single-token steps (EagerEngine, KV cache), median of reps
// after a warm-up, for f32, int8 g32 and int4 g32 (asymmetric, quantized at load), the reps interleaved.
// agree: the f32 model generates `steps` greedy tokens after each of `prompts` fixed prompts (ids drawn
// from a seeded generator, 8–20 tokens). Each quantized model is then run teacher-forced on the same
// sequences (one forward over prompt + generated tokens, no cache), and at every position that chose a
// generated token: top-1 agreement with the f32 argmax, max |Δlogit|, and KL(f32 ‖ quantized).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "hfx/models/model.h"
#include "hfx/models/quantize_model.h"
#include "hfx/quant/quantize.h"
#include "hfx/runtime/generator.h"
#include "hfx/verify/precision.h"
#include "kernels/kernels.h"

using namespace hfx;
using Clock = std::chrono::steady_clock;

namespace {

struct Variant {
  std::string name;
  quant::QuantOptions q;
};
// HFX_QUANT_BENCH_ONLY=NAME keeps one quantized variant beside the f32 baseline (for profiling it).
std::vector<Variant> variants() {
  std::vector<Variant> all = {{"f32", {}},
                              {"int8_g32", quant::parse_options("int8", 32, false)},
                              {"int4_g32", quant::parse_options("int4", 32, false)},
                              // the activations rounded to int8 (hfx.linear_q act_bits 8: VNNI where present)
                              {"int8_g32_a8", quant::parse_options("int8", 32, false, "int8")},
                              {"int4_g32_a8", quant::parse_options("int4", 32, false, "int8")}};
  const char* only = std::getenv("HFX_QUANT_BENCH_ONLY");
  if (only == nullptr) return all;
  std::erase_if(all, [&](const Variant& v) { return v.q.enabled() && v.name != only; });
  return all;
}

std::shared_ptr<const CausalLM> as_lm(std::unique_ptr<Model> m) {
  std::shared_ptr<Model> s(std::move(m));
  return std::shared_ptr<const CausalLM>(s, &as_causal_lm(*s));
}

double decode_s(EagerEngine& e, int64_t vocab, int64_t steps) {
  std::vector<int64_t> ids(16), mask(16, 1), pos(16);
  for (int64_t i = 0; i < 16; i++) ids[i] = (i * 7919 + 13) % vocab, pos[i] = i;
  std::vector<float> logits;
  e.reset();
  e.step(ids, mask, pos, 1, 16, logits);
  auto t0 = Clock::now();
  for (int64_t s = 0; s < steps; s++) {
    const int64_t tok = std::max_element(logits.begin(), logits.end()) - logits.begin(), p = 16 + s;
    std::vector<int64_t> m(static_cast<size_t>(p + 1), 1);
    e.step(std::vector<int64_t>{tok}, m, std::vector<int64_t>{p}, 1, 1, logits);
  }
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// The variants' reps are interleaved (rep r of every variant, then rep r + 1), so a host whose speed drifts
// during the run (measured on a shared VM: the same f32 decode at 5.9 and 7.3 tok/s minutes apart) slows all
// variants alike instead of skewing their ratio.
void speed(const std::string& dir, int threads, int64_t decode, int reps) {
  kernels::set_num_threads(threads);
  auto base = load_causal_lm(dir);
  const int64_t V = base->config().vocab_size;
  const std::vector<Variant> vs = variants();
  std::vector<std::unique_ptr<EagerEngine>> engines;
  for (const Variant& v : vs) {
    engines.push_back(std::make_unique<EagerEngine>(v.q.enabled() ? as_lm(quant::quantize_model(*base, v.q))
                                                                  : as_lm(load_causal_lm(dir))));
    decode_s(*engines.back(), V, 2);  // warm-up
  }
  std::vector<std::vector<double>> t(vs.size());
  for (int r = 0; r < reps; r++)
    for (size_t i = 0; i < vs.size(); i++) t[i].push_back(decode_s(*engines[i], V, decode));
  double f32 = 0;
  for (size_t i = 0; i < vs.size(); i++) {
    std::sort(t[i].begin(), t[i].end());
    const double tok_s = static_cast<double>(decode) / t[i][t[i].size() / 2];
    if (!vs[i].q.enabled()) f32 = tok_s;
    std::printf(
        "{\"engine\":\"hfx-eager\",\"weights\":\"%s\",\"threads\":%d,\"decode_tokens\":%lld,"
        "\"decode_tok_s\":%.3f,\"vs_f32\":%.3f}\n",
        vs[i].name.c_str(), threads, static_cast<long long>(decode), tok_s, tok_s / f32);
    std::fflush(stdout);
  }
}

void agree(const std::string& dir, int64_t steps, int prompts) {
  auto f32 = as_lm(load_causal_lm(dir));
  verify::AgreementOptions o;
  o.steps = steps;
  o.prompts = prompts;
  const verify::AgreementSet set = verify::agreement_set(*f32, o);  // the float32 side, once
  for (const Variant& v : variants()) {
    if (!v.q.enabled()) continue;
    auto qm = as_lm(quant::quantize_model(*f32, v.q));
    const verify::Agreement a = verify::measure_agreement(set, *qm);
    std::printf(
        "{\"weights\":\"%s\",\"positions\":%lld,\"top1_agreement\":%.4f,\"max_abs_logit_diff\":%.4f,"
        "\"max_abs_logit\":%.3f,\"mean_kl\":%.6f,\"max_kl\":%.6f}\n",
        v.name.c_str(), static_cast<long long>(a.positions), a.top1, a.max_abs_diff, a.max_abs_logit,
        a.mean_kl, a.max_kl);
    std::fflush(stdout);
  }
}

}  // namespace

int main(int argc, char** argv) {
  try {
    if (argc < 3 || (std::string(argv[1]) != "speed" && std::string(argv[1]) != "agree")) {
      std::fprintf(stderr,
                   "usage: quant_bench speed MODEL_DIR [--threads 2] [--decode 32] [--reps 3] | "
                   "agree MODEL_DIR [--steps 32] [--prompts 8]\n");
      return 2;
    }
    int threads = 2, reps = 3, prompts = 8;
    int64_t decode = 32, steps = 32;
    for (int i = 3; i + 1 < argc; i += 2) {
      std::string k = argv[i], v = argv[i + 1];
      if (k == "--threads")
        threads = std::stoi(v);
      else if (k == "--decode")
        decode = std::stoll(v);
      else if (k == "--reps")
        reps = std::stoi(v);
      else if (k == "--steps")
        steps = std::stoll(v);
      else if (k == "--prompts")
        prompts = std::stoi(v);
    }
    if (std::string(argv[1]) == "speed")
      speed(argv[2], threads, decode, reps);
    else
      agree(argv[2], steps, prompts);
    return 0;
  } catch (const std::exception& ex) {
    std::fprintf(stderr, "quant_bench: %s\n", ex.what());
    return 1;
  }
}
