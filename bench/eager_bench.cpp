// Eager engine throughput: prefill and decode tokens/s of hfx::EagerEngine on a checkpoint folder, as
// one JSON line per thread count (the llama.cpp side is bench/llama_cpp_bench.mjs on the same weights,
// written as F32 GGUF by `hfx export --format gguf --dtype f32`). bench/run_all.sh runs both and prints the
// ratios.
//
//   eager_bench run MODEL_DIR [--threads 1,2] [--prefill 128] [--decode 64] [--reps 3]
//
// Prefill: one step of `prefill` tokens from an empty cache (median of reps after one warm-up that
// also faults the mmapped weights in). Decode: `decode` single-token steps after that prefill, greedy
// (argmax of the returned logits), tokens/s over all steps (median of reps).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "hfx/models/model.h"
#include "hfx/runtime/generator.h"
#include "kernels/kernels.h"

using namespace hfx;
using Clock = std::chrono::steady_clock;

namespace {

double secs(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::vector<int64_t> prompt_ids(int64_t n, int64_t V) {
  std::vector<int64_t> ids(n);
  uint64_t s = 12345;
  for (auto& x : ids) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    x = 3 + static_cast<int64_t>((s >> 33) % static_cast<uint64_t>(V - 3));
  }
  return ids;
}

struct Run {
  double prefill_s, decode_s;
};

Run one(EagerEngine& e, const std::vector<int64_t>& ids, int64_t decode) {
  e.reset();
  const int64_t S = static_cast<int64_t>(ids.size());
  std::vector<int64_t> mask(S, 1), pos(S);
  for (int64_t i = 0; i < S; i++) pos[i] = i;
  std::vector<float> logits;
  auto t0 = Clock::now();
  e.step(ids, mask, pos, 1, S, logits);
  auto t1 = Clock::now();
  for (int64_t j = 0; j < decode; j++) {
    int64_t tok = std::max_element(logits.begin(), logits.end()) - logits.begin();
    mask.push_back(1);
    int64_t p = S + j;
    e.step(std::vector<int64_t>{tok}, mask, std::vector<int64_t>{p}, 1, 1, logits);
  }
  auto t2 = Clock::now();
  return {secs(t0, t1), secs(t1, t2)};
}

std::vector<int> parse_list(const std::string& s) {
  std::vector<int> r;
  size_t i = 0;
  while (i < s.size()) {
    size_t j = s.find(',', i);
    if (j == std::string::npos) j = s.size();
    r.push_back(std::stoi(s.substr(i, j - i)));
    i = j + 1;
  }
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    if (argc < 3 || std::string(argv[1]) != "run") {
      std::fprintf(stderr,
                   "usage: eager_bench run MODEL_DIR [--threads 1,2] "
                   "[--prefill 128] [--decode 64] [--reps 3]\n");
      return 2;
    }
    std::string dir = argv[2];
    std::vector<int> threads = {1, 2};
    int64_t prefill = 128, decode = 64;
    int reps = 3;
    for (int i = 3; i + 1 < argc; i += 2) {
      std::string k = argv[i], v = argv[i + 1];
      if (k == "--threads")
        threads = parse_list(v);
      else if (k == "--prefill")
        prefill = std::stoll(v);
      else if (k == "--decode")
        decode = std::stoll(v);
      else if (k == "--reps")
        reps = std::stoi(v);
    }
    std::shared_ptr<const CausalLM> model(load_causal_lm(dir));
    EagerEngine e(model);
    auto ids = prompt_ids(prefill, model->config().vocab_size);
    for (int t : threads) {
      kernels::set_num_threads(t);
      one(e, ids, 4);  // warm-up (page faults, allocator)
      std::vector<double> pf, dc;
      for (int r = 0; r < reps; r++) {
        Run x = one(e, ids, decode);
        pf.push_back(x.prefill_s);
        dc.push_back(x.decode_s);
      }
      double p = median(pf), d = median(dc);
      std::printf(
          "{\"engine\":\"hfx-eager\",\"threads\":%d,\"prefill_tokens\":%lld,\"prefill_s\":%.6f,"
          "\"prefill_tok_s\":%.3f,\"decode_tokens\":%lld,\"decode_s\":%.6f,\"decode_tok_s\":%.3f}\n",
          t, static_cast<long long>(prefill), p, prefill / p, static_cast<long long>(decode), d, decode / d);
      std::fflush(stdout);
    }
    return 0;
  } catch (const std::exception& ex) {
    std::fprintf(stderr, "eager_bench: %s\n", ex.what());
    return 1;
  }
}
