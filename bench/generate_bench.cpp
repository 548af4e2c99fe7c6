// Generation overhead: hfx::Generator over ONNX Runtime (what `hfx generate OUT` runs) against the
// same steps as bare ORT session runs in the same process (Ort::Session::Run on OUT/onnx/model.onnx,
// presents moved into the next pasts, nothing else). One JSON line.
//
//   generate_bench OUT_DIR [--threads 2] [--prompt 32] [--new 64] [--reps 5]
//
// Both loops run the same token sequence: the generator decodes greedily with EOS ignored, and the bare
// loop replays exactly the ids the generator produced. Overhead = median generate wall / median bare
// wall − 1 (graph loading excluded from both). GenerationStats' engine_s is reported beside it.
#include <onnxruntime/onnxruntime_cxx_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "hfx/runtime/generator.h"

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

namespace {

double secs(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Bare {
  Ort::Env env{ORT_LOGGING_LEVEL_FATAL, "bench"};
  Ort::Session s{nullptr};
  std::vector<std::string> in, out;
  std::vector<const char*> inp, outp;
  std::vector<std::vector<int64_t>> past_shape;
  std::vector<ONNXTensorElementDataType> past_type;
  Ort::AllocatorWithDefaultOptions alloc;

  Bare(const fs::path& p, int threads) {
    Ort::SessionOptions so;
    so.SetIntraOpNumThreads(threads);
    so.SetGraphOptimizationLevel(GraphOptimizationLevel::ORT_ENABLE_ALL);
    s = Ort::Session(env, p.c_str(), so);
    for (size_t i = 0; i < s.GetInputCount(); i++) {
      in.push_back(s.GetInputNameAllocated(i, alloc).get());
      auto ti = s.GetInputTypeInfo(i);
      auto info = ti.GetTensorTypeAndShapeInfo();
      past_shape.push_back(info.GetShape());
      past_type.push_back(info.GetElementType());
    }
    for (size_t i = 0; i < s.GetOutputCount(); i++) out.push_back(s.GetOutputNameAllocated(i, alloc).get());
    for (auto& n : in) inp.push_back(n.c_str());
    for (auto& n : out) outp.push_back(n.c_str());
  }

  /// Runs prompt then one step per id in `next`; returns wall seconds.
  double run(const std::vector<int64_t>& prompt, const std::vector<int64_t>& next) {
    auto mem = Ort::MemoryInfo::CreateCpu(OrtArenaAllocator, OrtMemTypeDefault);
    std::vector<Ort::Value> past(in.size());
    std::vector<int64_t> ids = prompt, mask, pos;
    int64_t P = 0;
    auto t0 = Clock::now();
    for (size_t step = 0; step <= next.size(); step++) {
      if (step > 0) ids = {next[step - 1]};
      const int64_t S = static_cast<int64_t>(ids.size());
      mask.assign(P + S, 1);
      pos.resize(S);
      for (int64_t i = 0; i < S; i++) pos[i] = P + i;
      const int64_t ish[2] = {1, S}, msh[2] = {1, P + S};
      std::vector<Ort::Value> feeds;
      for (size_t i = 0; i < in.size(); i++) {
        if (in[i] == "input_ids")
          feeds.push_back(Ort::Value::CreateTensor<int64_t>(mem, ids.data(), ids.size(), ish, 2));
        else if (in[i] == "attention_mask")
          feeds.push_back(Ort::Value::CreateTensor<int64_t>(mem, mask.data(), mask.size(), msh, 2));
        else if (in[i] == "position_ids")
          feeds.push_back(Ort::Value::CreateTensor<int64_t>(mem, pos.data(), pos.size(), ish, 2));
        else {
          if (!past[i]) {
            int64_t sh[4] = {1, past_shape[i][1], 0, past_shape[i][3]};
            past[i] = Ort::Value::CreateTensor(alloc, sh, 4, past_type[i]);
          }
          feeds.push_back(std::move(past[i]));
        }
      }
      auto outs =
          s.Run(Ort::RunOptions{nullptr}, inp.data(), feeds.data(), feeds.size(), outp.data(), outp.size());
      for (size_t o = 0; o < out.size(); o++) {
        if (out[o].rfind("present.", 0) != 0) continue;
        std::string pn = "past_key_values." + out[o].substr(8);
        for (size_t i = 0; i < in.size(); i++)
          if (in[i] == pn) past[i] = std::move(outs[o]);
      }
      P += S;
    }
    return secs(t0, Clock::now());
  }
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: generate_bench OUT_DIR [--threads 2] [--prompt 32] [--new 64] [--reps 5]\n");
    return 2;
  }
  try {
    std::string dir = argv[1];
    int threads = 2, reps = 5;
    int64_t prompt_len = 32, max_new = 64;
    for (int i = 2; i + 1 < argc; i += 2) {
      std::string k = argv[i], v = argv[i + 1];
      if (k == "--threads")
        threads = std::stoi(v);
      else if (k == "--prompt")
        prompt_len = std::stoll(v);
      else if (k == "--new")
        max_new = std::stoll(v);
      else if (k == "--reps")
        reps = std::stoi(v);
    }
    hfx::Generator g = hfx::Generator::open(dir, {.engine = "ort", .threads = threads});
    Bare bare(fs::path(dir) / "onnx" / "model.onnx", threads);
    std::vector<int64_t> prompt(prompt_len);
    for (int64_t i = 0; i < prompt_len; i++) prompt[i] = 3 + (i * 7919) % 997;
    hfx::GenerationOptions o;
    o.max_new_tokens = max_new;
    o.ignore_eos = true;
    std::vector<double> gw, bw, es;
    std::vector<int64_t> produced;
    for (int r = 0; r <= reps; r++) {  // rep 0 is the warm-up of both
      auto t0 = Clock::now();
      auto res = g.generate_ids({prompt}, o);
      double w = secs(t0, Clock::now());
      produced = res.ids.at(0);
      // the generator runs the prompt step plus one step per generated token but the last
      std::vector<int64_t> next(produced.begin(), produced.end() - (produced.empty() ? 0 : 1));
      double b = bare.run(prompt, next);
      if (r == 0) continue;
      gw.push_back(w);
      bw.push_back(b);
      es.push_back(res.stats.engine_s);
    }
    double G = median(gw), B = median(bw), E = median(es);
    std::printf(
        "{\"threads\":%d,\"prompt_tokens\":%lld,\"new_tokens\":%zu,\"generate_s\":%.6f,\"bare_s\":%.6f,"
        "\"engine_s\":%.6f,\"overhead\":%.5f,\"overhead_vs_engine_s\":%.5f}\n",
        threads, static_cast<long long>(prompt_len), produced.size(), G, B, E, G / B - 1.0, G / E - 1.0);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "generate_bench: %s\n", e.what());
    return 1;
  }
}
