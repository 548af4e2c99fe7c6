// State-space decode cost against the length generated: a tiny mamba checkpoint (create-tiny) decodes
// greedily through hfx::Generator — what `hfx generate` runs, tokenizer and streaming included — with
// EOS ignored, for --short and --long new tokens, on the eager engine and on ONNX Runtime (the same
// checkpoint exported with export_for_generation). A state-space model carries a fixed-size state, so
// decode tok/s should not depend on how many tokens came before. One JSON line per engine:
//
//   ssm_decode_bench WORK_DIR [--threads 1] [--short 64] [--long 2048] [--reps 3] [--prompt 16]
//
// Statistic (the same for both lengths): decode tok/s = decode steps / decode wall (GenerationStats),
// median over --reps. Also the long run's tok/s over its first and last --short steps (per-step times
// from the token callback), which shows whether per-step cost grows with position, and the engine-only
// rate (time inside Engine::step), which separates the forward from the generator loop around it. The
// cpu_* figures are the same rates over process CPU time (std::clock), which a loaded machine disturbs
// less than wall time. The short rate counts from the prefill's event (steps 0..n-1 over n-1 gaps).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "hfx/export/exporter.h"
#include "hfx/export/onnx.h"
#include "hfx/models/model.h"
#include "hfx/models/tiny.h"
#include "hfx/runtime/generator.h"
#include "hfx/tokenizers/tokenizer.h"

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Run {
  double tok_s = 0;              // decode steps / decode wall
  double engine_tok_s = 0;       // decode steps / time inside Engine::step while decoding
  std::vector<double> step_end;  // seconds since start, at each token event
  std::vector<double> cpu_end;   // process CPU seconds since start, at each token event
};

double cpu_now() { return static_cast<double>(std::clock()) / CLOCKS_PER_SEC; }

Run generate(hfx::Generator& g, int64_t n, int64_t prompt) {
  std::vector<int64_t> ids;
  for (int64_t i = 0; i < prompt; i++) ids.push_back((i * 37 + 11) % 200 + 3);
  hfx::GenerationOptions o;
  o.max_new_tokens = n;
  o.ignore_eos = true;
  Run r;
  const auto t0 = Clock::now();
  const double c0 = cpu_now();
  auto res = g.generate_ids({ids}, o, [&](const hfx::TokenEvent&) {
    r.step_end.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    r.cpu_end.push_back(cpu_now() - c0);
  });
  r.tok_s = static_cast<double>(res.stats.decode_steps) / res.stats.decode_s;
  r.engine_tok_s = static_cast<double>(res.stats.decode_steps) / (res.stats.engine_s - res.stats.prefill_s);
  return r;
}

// tok/s over steps [a, b) of a run (event i marks the end of decode step i, event 0 the prefill).
double window(const std::vector<double>& t, size_t a, size_t b) {
  return static_cast<double>(b - a) / (t[b] - t[a]);
}

void bench(const std::string& name, const std::function<hfx::Generator()>& make, int64_t s, int64_t l,
           int reps, int64_t prompt, int threads) {
  hfx::Generator g = make();
  generate(g, s, prompt);  // warm-up (allocator, ORT arenas)
  std::vector<double> short_v, long_v, first_v, last_v, eng_short, eng_long, cpu_short, cpu_long, cpu_first,
      cpu_last;
  for (int i = 0; i < reps; i++) {
    Run sr = generate(g, s, prompt);
    short_v.push_back(sr.tok_s);
    eng_short.push_back(sr.engine_tok_s);
    Run lr = generate(g, l, prompt);
    long_v.push_back(lr.tok_s);
    eng_long.push_back(lr.engine_tok_s);
    const size_t n = lr.step_end.size() - 1, w = static_cast<size_t>(s);
    first_v.push_back(window(lr.step_end, 1, w + 1));
    last_v.push_back(window(lr.step_end, n - w, n));
    cpu_first.push_back(window(lr.cpu_end, 1, w + 1));
    cpu_last.push_back(window(lr.cpu_end, n - w, n));
    cpu_short.push_back(window(sr.cpu_end, 0, sr.cpu_end.size() - 1));
    cpu_long.push_back(window(lr.cpu_end, 0, n));
  }
  const double a = median(short_v), b = median(long_v);
  if (std::getenv("HFX_BENCH_WINDOWS")) {  // per-256-step CPU tok/s of the last long run, to see a trend
    Run lr = generate(g, l, prompt);
    std::fprintf(stderr, "[%s] cpu tok/s per 256 steps:", name.c_str());
    for (size_t w = 1; w + 256 < lr.cpu_end.size(); w += 256)
      std::fprintf(stderr, " %.0f", window(lr.cpu_end, w, w + 256));
    std::fprintf(stderr, "\n");
  }
  std::printf(
      "{\"engine\":\"%s\",\"threads\":%d,\"prompt\":%lld,\"short\":%lld,\"long\":%lld,\"reps\":%d,"
      "\"decode_tok_s_short\":%.1f,\"decode_tok_s_long\":%.1f,\"ratio_long_over_short\":%.3f,"
      "\"long_first_%lld_tok_s\":%.1f,\"long_last_%lld_tok_s\":%.1f,"
      "\"engine_only_tok_s_short\":%.1f,\"engine_only_tok_s_long\":%.1f,"
      "\"cpu_tok_s_short\":%.1f,\"cpu_tok_s_long\":%.1f,\"cpu_ratio_long_over_short\":%.3f,"
      "\"cpu_long_first_tok_s\":%.1f,\"cpu_long_last_tok_s\":%.1f}\n",
      name.c_str(), threads, static_cast<long long>(prompt), static_cast<long long>(s),
      static_cast<long long>(l), reps, a, b, b / a, static_cast<long long>(s), median(first_v),
      static_cast<long long>(s), median(last_v), median(eng_short), median(eng_long), median(cpu_short),
      median(cpu_long), median(cpu_long) / median(cpu_short), median(cpu_first), median(cpu_last));
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: ssm_decode_bench WORK_DIR [--threads 1] [--short 64] [--long 2048] [--reps 3] "
                 "[--prompt 16]\n");
    return 2;
  }
  const fs::path work(argv[1]);
  int threads = 1, reps = 3;
  int64_t s = 64, l = 2048, prompt = 16;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    const long long v = std::stoll(argv[i + 1]);
    if (k == "--threads")
      threads = static_cast<int>(v);
    else if (k == "--short")
      s = v;
    else if (k == "--long")
      l = v;
    else if (k == "--reps")
      reps = static_cast<int>(v);
    else if (k == "--prompt")
      prompt = v;
    else {
      std::fprintf(stderr, "[bench] expected --threads, --short, --long, --reps or --prompt, got '%s'\n",
                   k.c_str());
      return 2;
    }
  }
  try {
    const fs::path ckpt = work / "mamba-tiny", out = work / "mamba-tiny-onnx";
    fs::remove_all(ckpt);
    fs::remove_all(out);
    hfx::create_tiny("mamba", ckpt.string());
    std::shared_ptr<const hfx::CausalLM> model = hfx::load_causal_lm(ckpt.string());
    hfx::OnnxConfig oc;
    hfx::make_onnx_exporter()->export_for_generation(*model, hfx::CaptureOptions{}, {{"default", &oc}},
                                                     out.string());
    auto tok = std::make_shared<const hfx::tok::Tokenizer>(hfx::tok::Tokenizer::from_dir(ckpt.string()));
    bench(
        "eager",
        [&] {
          return hfx::Generator::open(ckpt.string(), {"eager", threads});
        },
        s, l, reps, prompt, threads);
    bench(
        "ort", [&] { return hfx::Generator(hfx::make_ort_engine(out.string(), threads), tok, {0}, 0); }, s, l,
        reps, prompt, threads);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
