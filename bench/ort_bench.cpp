// ONNX Runtime speed of hfx's graphs: 512-token prefill time and decode tokens/s of one exported
// model.onnx on ORT CPU, through hfx::rt::OrtSession, each step's present.N.* fed back as the next
// step's past_key_values.N.*. Run it on a `--target ort` export and a standard one of the same model;
// bench/run_all.sh prints the ratio. One JSON line.
//
//   ort_bench OUT_DIR_OR_MODEL.onnx [--threads 2] [--prefill 512] [--decode 64] [--reps 3] [--label ort]
//             [--profile PREFIX]   (ORT profiling on: the JSON path is printed as "profile";
//             bench/ort_profile.mjs
//                                   sums it per op type)
//
// Prefill: one run with S = prefill and empty pasts [1, Hkv, 0, D] (median of reps after a warm-up).
// Decode: `decode` single-token runs after a short prefill of 16 tokens, the past growing each step;
// tokens/s over all steps (median of reps). Inputs are fixed ids, so both graphs do the same work.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "hfx/runtime/ort_session.h"

using namespace hfx::rt;
using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

namespace {

double secs(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Bench {
  OrtSession& s;
  std::map<std::string, RtTensor> past{};  // past_key_values.* → tensor
  int64_t P = 0;

  void reset() {
    past.clear();
    P = 0;
    for (const auto& in : s.inputs()) {
      if (in.name.rfind("past_key_values.", 0) != 0) continue;
      std::vector<int64_t> sh;
      for (size_t d = 0; d < in.shape.size(); d++)
        sh.push_back(d == 0 ? 1 : (d == 2 ? 0 : in.shape[d].value));
      for (auto x : sh)
        if (x < 0)
          throw std::runtime_error("past input " + in.name +
                                   " has a symbolic dim other than batch/past: " + in.shape_str());
      past[in.name] = RtTensor::zeros(in.dtype, sh);
    }
  }

  void step(int64_t S) {
    NamedTensors feeds;
    std::vector<int64_t> ids(S), mask(P + S, 1), pos(S);
    for (int64_t i = 0; i < S; i++) ids[i] = 3 + (i * 7919) % 997, pos[i] = P + i;
    for (const auto& in : s.inputs()) {
      if (in.name == "input_ids")
        feeds.push_back({in.name, RtTensor::i64({1, S}, ids)});
      else if (in.name == "attention_mask")
        feeds.push_back({in.name, RtTensor::i64({1, P + S}, mask)});
      else if (in.name == "position_ids")
        feeds.push_back({in.name, RtTensor::i64({1, S}, pos)});
      else if (past.count(in.name))
        feeds.push_back({in.name, std::move(past[in.name])});
      else
        throw std::runtime_error("unexpected graph input " + in.name + " " + in.shape_str());
    }
    NamedTensors out = s.run(feeds);
    for (auto& [name, t] : out) {
      if (name.rfind("present.", 0) == 0) past["past_key_values." + name.substr(8)] = std::move(t);
    }
    P += S;
  }
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: ort_bench OUT_DIR_OR_MODEL.onnx [--threads 2] [--prefill 512] [--decode 64] [--reps "
                 "3] [--label L]\n");
    return 2;
  }
  try {
    fs::path p = argv[1];
    if (fs::is_directory(p))
      p = fs::exists(p / "onnx" / "model.onnx") ? p / "onnx" / "model.onnx" : p / "model.onnx";
    int threads = 2, reps = 3;
    int64_t prefill = 512, decode = 64;
    std::string label = p.parent_path().parent_path().filename().string();
    std::string profile;
    for (int i = 2; i + 1 < argc; i += 2) {
      std::string k = argv[i], v = argv[i + 1];
      if (k == "--threads")
        threads = std::stoi(v);
      else if (k == "--prefill")
        prefill = std::stoll(v);
      else if (k == "--decode")
        decode = std::stoll(v);
      else if (k == "--reps")
        reps = std::stoi(v);
      else if (k == "--label")
        label = v;
      else if (k == "--profile")
        profile = v;
    }
    auto tl = Clock::now();
    OrtSession s(p, {.intra_op_threads = threads, .profile_prefix = profile});
    double load_s = secs(tl, Clock::now());
    Bench b{s};
    // warm-up
    b.reset();
    b.step(prefill);
    b.reset();
    b.step(16);
    for (int i = 0; i < 4; i++) b.step(1);
    std::vector<double> pf, dc;
    for (int r = 0; r < reps; r++) {
      b.reset();
      auto t0 = Clock::now();
      b.step(prefill);
      pf.push_back(secs(t0, Clock::now()));
      b.reset();
      b.step(16);
      auto t1 = Clock::now();
      for (int64_t j = 0; j < decode; j++) b.step(1);
      dc.push_back(secs(t1, Clock::now()));
    }
    double pm = median(pf), dm = median(dc);
    std::string prof_path = profile.empty() ? "" : s.end_profiling();
    std::printf(
        "{\"engine\":\"ort\",\"label\":\"%s\",\"threads\":%d,\"load_s\":%.3f,\"prefill_tokens\":%lld,"
        "\"prefill_s\":%.6f,"
        "\"decode_tokens\":%lld,\"decode_s\":%.6f,\"decode_tok_s\":%.3f,\"ort_version\":\"%s\",\"profile\":"
        "\"%s\"}\n",
        label.c_str(), threads, load_s, static_cast<long long>(prefill), pm, static_cast<long long>(decode),
        dm, decode / dm, ort_version().c_str(), prof_path.c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ort_bench: %s\n", e.what());
    return 1;
  }
}
