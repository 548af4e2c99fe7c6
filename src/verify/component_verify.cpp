// Verification of models that are not causal LMs (encoder-only, encoder-decoder): the real calls of the
// model's own generation loop are recorded eagerly (inputs and outputs), then each exported program —
// onnx/<program>.onnx in ONNX Runtime, each method of model.pte in the independent .pte executor — is
// fed the same inputs and its outputs compared with eager's, by name. The causal-LM checks in
// verify.cpp / ort_verify.cpp stay richer (shape matrix, rejection probes, greedy, layer diff); this is
// the structure-independent core that every new structure gets by declaring its loop.
#include <chrono>
#include <cmath>
#include <filesystem>

#include <fmt/format.h>

#include "capture/generation_loops.h"
#include "hfx/core/error.h"
#include "verify/call_fixture.h"
#include "verify/pte_reader.h"
#include "verify/verify_internal.h"
#ifdef HFX_HAVE_ORT
#include "hfx/runtime/ort_session.h"
#endif

namespace hfx::verify::detail {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// The samples: generation's defaults (batch 1; batch 2 of unequal lengths), a padded batch of 3 and one
// prompt of 6 generating `tokens` (--tokens, default 32: a prefill and that many decode calls) — fewer when
// the export's sequence bound (`max_sequence`, 0: none) holds fewer — each cut to the export's batch bound.
std::vector<GenerationSample> verify_samples(const Model& m, int64_t max_batch, int64_t max_sequence,
                                             int64_t tokens) {
  std::vector<GenerationSample> s = default_generation_samples(m.config().vocab_size);
  if (max_sequence > 0) tokens = std::min(tokens, max_sequence - 6);
  if (tokens > 3) s.push_back(GenerationSample{{test_tokens(m.config().vocab_size, 7, 6, 23)}, tokens});
  GenerationSample three;
  for (int64_t row = 0; row < 3; row++)
    three.prompts.push_back(test_tokens(m.config().vocab_size, row, 3 + 4 * row, 21));
  three.max_new_tokens = 3;
  s.push_back(three);
  for (auto& x : s)  // an export bounded below a sample's rows (--max-batch) replays that many rows
    if (max_batch >= 1 && static_cast<int64_t>(x.prompts.size()) > max_batch)
      x.prompts.resize(static_cast<size_t>(max_batch));
  return s;
}

#ifdef HFX_HAVE_ORT
rt::RtTensor to_rt(const Tensor& t) {
  std::vector<int64_t> shape(t.shape().begin(), t.shape().end());
  if (t.dtype() == DType::I64) {
    Tensor c = t.contiguous();
    return rt::RtTensor::i64(shape,
                             std::span<const int64_t>(c.data<int64_t>(), static_cast<size_t>(c.numel())));
  }
  std::vector<float> v = t.to_floats();
  return rt::RtTensor::f32(shape, v);
}

void replay_onnx(Context& cx, const Model& m, const ProgramSpec& p, const std::vector<ReplayCall>& calls,
                 const fs::path& file) {
  const std::string comp = p.name;
  try {
    rt::SessionOptions so;
    so.intra_op_threads = 2;
    rt::OrtSession s(file, so);
    Worst w;
    for (const ReplayCall& c : calls) {
      rt::NamedTensors feeds;
      for (const auto& [name, t] : c.inputs) feeds.emplace_back(name, to_rt(t));
      for (const std::string& name : s.input_names()) {
        bool given = false;
        for (const auto& f : feeds) given |= f.first == name;
        if (!given && name == "use_cache_branch") {
          bool past = false;
          for (const auto& [n, t] : c.inputs) past |= n.rfind("past_key_values.", 0) == 0 && t.numel() > 0;
          uint8_t b = past;
          feeds.emplace_back(name, rt::RtTensor{"bool", {1}, {b}});
        }
      }
      auto out = s.run(feeds);
      for (const auto& [name, want] : c.expected)
        for (const auto& [oname, got] : out)
          if (oname == name) compare(w, cx.tol, name, c.kind, got.to_f32(), want);
      w.calls++;
    }
    report(cx, comp, w, "ONNX Runtime");
  } catch (const Error& e) {
    cx.add(comp, "numerics", "failed",
           fmt::format("expected {} to load and run in ONNX Runtime, got: {}", file.filename().string(),
                       e.what()));
  }
  (void)m;
}
#endif

// Calls beyond the method's contract: for every input with a dynamic bound, its last such axis one past
// its bound (the other inputs as in a real call) — more tokens, a longer past — must fail with an
// error, not run.
void pte_probes(Context& cx, PteMethod& pm, const std::string& comp, const ReplayCall& sample,
                const std::string& file, const std::string& method) {
  json probes = json::array();
  std::string failure;
  for (size_t i = 0; i < sample.inputs.size(); i++) {
    const Shape b = pm.input_bound(static_cast<int>(i));
    const Tensor& t = sample.inputs[i].second;
    // From the last axis: the sequence or past axis before the batch.
    for (size_t a = b.size(); a-- > 0 && t.dim() == static_cast<int64_t>(b.size());) {
      if (t.shape()[a] >= b[a]) continue;  // at its bound in a real call: a static axis
      Shape s = b;
      s[a] += 1;
      std::vector<Tensor> in;
      std::vector<std::pair<std::string, Tensor>> named;
      for (size_t j = 0; j < sample.inputs.size(); j++) {
        in.push_back(j == i ? Tensor::full(s, 0, t.dtype()) : sample.inputs[j].second);
        named.emplace_back(sample.inputs[j].first, in.back());
      }
      const std::string what =
          fmt::format("{} axis {} = {} (bound {})", sample.inputs[i].first, a, s[a], b[a]);
      save_call(cx, file, method, fmt::format("probe{}", i), named, {}, true);
      pm.reset();
      try {
        pm.run(in);
        probes.push_back({{"probe", what}, {"refused", false}});
        if (failure.empty())
          failure = fmt::format("expected the method to refuse {} (beyond its contract), got outputs", what);
      } catch (const Error& e) {
        probes.push_back(
            {{"probe", what}, {"refused", true}, {"error", std::string(e.what()).substr(0, 300)}});
      }
      break;  // one probe per input: the first bounded axis
    }
  }
  pm.reset();
  if (probes.empty()) return;
  if (failure.empty())
    cx.add(comp, "rejects", "passed",
           fmt::format("{} out-of-contract calls fail with an error (e.g. {})", probes.size(),
                       probes.front()["probe"].get<std::string>()),
           {{"probes", probes}});
  else
    cx.add(comp, "rejects", "failed", failure, {{"probes", probes}});
}

void replay_pte(Context& cx, PteProgram& prog, const std::string& method, const ProgramSpec& p,
                const std::vector<ReplayCall>& calls, const std::string& file) {
  const std::string comp = fmt::format("{}:{}", file, method);
  try {
    PteMethod& pm = prog.method(method);
    Worst w;
    double seconds = 0;
    int64_t tokens = 0;
    for (const ReplayCall& c : calls) {
      std::vector<Tensor> in;
      for (const auto& [name, t] : c.inputs) in.push_back(t);
      for (const auto& [name, t] : c.inputs)
        if (name == "input_ids") tokens += t.numel();
      auto t0 = std::chrono::steady_clock::now();
      std::vector<PteOutput> out = pm.run(in);
      seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (out.size() != c.expected.size())
        HFX_THROW("verify", "expected {} outputs from method '{}', got {}", c.expected.size(), method,
                  out.size());
      save_call(cx, file, method, fmt::format("{:03d}", w.calls), c.inputs, c.expected, false);
      for (size_t i = 0; i < out.size(); i++)
        compare(w, cx.tol, c.expected[i].first, c.kind, std::get<Tensor>(out[i]).to_floats(),
                c.expected[i].second);
      w.calls++;
    }
    report(cx, comp, w, "the .pte executor");
    json lat = {{"calls", w.calls},
                {"ms", 1e3 * seconds},
                {"input_tokens", tokens},
                {"planned_bytes", pm.planned_bytes()}};
    if (tokens > 0 && seconds > 0) lat["tokens_per_s"] = static_cast<double>(tokens) / seconds;
    cx.add(comp, "latency", "info",
           fmt::format(
               "{} calls in {:.2f} ms{}; planned arena {:.2f} MiB", w.calls, 1e3 * seconds,
               tokens > 0 ? fmt::format(", {} input tokens ({:.0f} tokens/s)", tokens, tokens / seconds) : "",
               pm.planned_bytes() / 1048576.0),
           lat);
    if (!calls.empty()) pte_probes(cx, pm, comp, calls.front(), file, method);
  } catch (const Error& e) {
    cx.add(comp, "numerics", "failed",
           fmt::format("expected method '{}' of {} to run, got: {}", method, file, e.what()));
  }
  (void)p;
}

}  // namespace

void compare(Worst& w, const Tolerance& tol, const std::string& name, const std::string& kind,
             const std::vector<float>& got, const Tensor& want) {
  std::vector<float> ref = want.to_floats();
  ErrorStats e = error_stats(got, ref, 0);
  const double bound = tol.logits_bound(e.ref_max);
  const bool worse = w.where.empty() || !e.finite || e.max_abs / bound > w.max_abs / w.bound;
  if (worse && std::isfinite(w.max_abs)) {  // the first output names the worst until one differs more
    w.max_abs = e.finite ? e.max_abs : INFINITY;
    w.bound = bound;
    w.where = fmt::format("{} of a {} call", name, kind);
  }
}

void report(Context& cx, const std::string& comp, const Worst& w, const std::string& runtime,
            const std::string& check, const Tolerance* bound_of) {
  const Tolerance& tol = bound_of ? *bound_of : cx.tol;
  json info = {{"calls", w.calls},
               {"max_abs", w.max_abs},
               {"bound", w.bound},
               {"worst", w.where},
               {"runtime", runtime}};
  const std::string how = fmt::format("the larger of {:.0e} and {:.0e} x the output's max|eager|",
                                      tol.logits_abs, tol.logits_rel);
  if (w.calls == 0)
    cx.add(comp, check, "failed", "expected recorded calls to replay, got none", info);
  else if (w.max_abs <= w.bound)
    cx.add(
        comp, check, "passed",
        fmt::format("{} real calls of the generation loop replayed in {}: max abs {:.3g} <= {:.2g} ({}) vs "
                    "eager (worst: {})",
                    w.calls, runtime, w.max_abs, w.bound, how, w.where),
        info);
  else
    cx.add(
        comp, check, "failed",
        fmt::format("expected outputs within {:.2g} ({}) of eager over {} replayed calls in {}, got max abs "
                    "{:.3g} at {}",
                    w.bound, how, w.calls, runtime, w.max_abs, w.where),
        info);
}

// --save-calls: `<DIR>/<program>.<method>.<tag>.call` (call_fixture.h).
void save_call(const Context& cx, const std::string& file, const std::string& method, const std::string& tag,
               const std::vector<std::pair<std::string, Tensor>>& inputs,
               const std::vector<std::pair<std::string, Tensor>>& outputs, bool expect_error) {
  if (cx.opt.save_calls.empty()) return;
  fs::create_directories(cx.opt.save_calls);
  CallFixture f{method, expect_error, inputs, outputs};
  write_call_fixture((fs::path(cx.opt.save_calls) /
                      fmt::format("{}.{}.{}.call", fs::path(file).stem().string(), method, tag))
                         .string(),
                     f);
}

void save_program_calls(const Context& cx, const Model& m, const std::vector<fs::path>& files) {
  if (cx.opt.save_calls.empty() || files.empty()) return;
  std::vector<RecordedCall> calls =
      record_generation(m, verify_samples(m, cx.max_batch, cx.max_sequence, cx.opt.tokens), true);
  for (const ProgramSpec& p : plan_generation(m, calls, CaptureOptions{}))
    for (const fs::path& f : files) {
      if (f.stem().string() != p.name) continue;
      const std::vector<ReplayCall> replay = replay_calls(m, p, calls);
      for (size_t i = 0; i < replay.size(); i++)
        save_call(cx, f.filename().string(), "forward", fmt::format("{:03d}", i), replay[i].inputs,
                  replay[i].expected, false);
    }
}

void component_checks(Context& cx, const Model& m, const std::vector<fs::path>& ptes) {
  std::vector<RecordedCall> calls =
      record_generation(m, verify_samples(m, cx.max_batch, cx.max_sequence, cx.opt.tokens), true);
  std::vector<ProgramSpec> plan = plan_generation(m, calls, CaptureOptions{});
  const auto& loop = capture::generation_loop(m.structure());
  std::vector<std::shared_ptr<PteProgram>> programs;
  for (const auto& f : ptes) programs.push_back(PteProgram::load_file(f.string()));
  int ran = 0;
  for (const ProgramSpec& p : plan) {
    std::vector<ReplayCall> replay = replay_calls(m, p, calls);
    fs::path onnx = cx.out / "onnx" / (p.name + ".onnx");
    if (fs::exists(onnx)) {
#ifdef HFX_HAVE_ORT
      replay_onnx(cx, m, p, replay, onnx);
#else
      cx.add(p.name, "numerics", "skipped", "hfx was built without ONNX Runtime: the ONNX graph was not run");
#endif
      ran++;
    }
    std::string method;
    for (const auto& pd : loop.programs)
      if (pd.name == p.name) method = pd.executorch_method;
    for (size_t i = 0; i < programs.size() && !method.empty(); i++) {
      auto names = programs[i]->method_names();
      if (std::find(names.begin(), names.end(), method) == names.end()) {
        cx.add(ptes[i].filename().string(), "signature", "failed",
               fmt::format("expected a method '{}' (program {}) in {}, got [{}]", method, p.name,
                           ptes[i].filename().string(), fmt::join(names, ", ")));
        continue;
      }
      replay_pte(cx, *programs[i], method, p, replay, ptes[i].filename().string());
      ran++;
    }
  }
  if (ran == 0)
    cx.add(
        "verify", "numerics", "failed",
        fmt::format("expected onnx/<program>.onnx or a .pte for the programs of this {} model ({}), got none",
                    structure_name(m.structure()), fmt::join(m.component_names(), ", ")));
}

}  // namespace hfx::verify::detail
