// `hfx verify` on ExecuTorch programs (.pte) of decoders with a KV cache: ExecuTorch's static-cache
// forward(tokens, input_pos) through the independent reader (pte_reader.h) against eager — prefill and
// 16 decode steps within the tolerance of the checkpoint's dtype and the program's backend — then the
// latency per phase (prefill and decode tokens/s), the memory (planned arena per method, peak RSS of the
// check) and the program's size, and out-of-contract calls that must fail: more tokens than the
// method's bound, and a position past the static cache (which the export caps at the model's max
// positions, so past a learned position table too). Other structures' methods: component_verify.cpp.
#include <algorithm>
#include <chrono>
#include <filesystem>

#include <fmt/format.h>

#include "hfx/core/error.h"
#include "hfx/io/safetensors.h"
#include "verify/call_fixture.h"
#include "verify/pte_reader.h"
#include "verify/verify_internal.h"

namespace hfx::verify::detail {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

Tensor ids_tensor(const std::vector<int64_t>& v, bool batch) {
  return Tensor::from_ints(
      batch ? Shape{1, static_cast<int64_t>(v.size())} : Shape{static_cast<int64_t>(v.size())}, v);
}

// The positions the static-cache forward holds: its get_max_seq_len, else the tokens input's bound.
int64_t program_positions(PteProgram& prog, const ModelConfig&) {
  int64_t cache = prog.method("forward").input_bound(0).back();  // tokens [1, max S]
  if (std::find(prog.method_names().begin(), prog.method_names().end(), std::string("get_max_seq_len")) !=
      prog.method_names().end())
    cache = std::get<int64_t>(prog.method("get_max_seq_len").run({}).at(0));
  return cache;
}

// Out-of-contract calls of the static-cache forward: each must fail with an error, not run.
json forward_probes(PteProgram& prog, const ModelConfig& mc, std::string& failure,
                    std::vector<CallFixture>& saved) {
  PteMethod& fwd = prog.method("forward");
  const Shape bound = fwd.input_bound(0);  // tokens [1, max S]
  const int64_t cache = program_positions(prog, mc);
  struct Probe {
    std::string what;
    std::vector<int64_t> tokens, pos;
  };
  std::vector<Probe> probes;
  const int64_t S = bound.back() + 1;
  std::vector<int64_t> pos(static_cast<size_t>(S));
  for (int64_t i = 0; i < S; i++) pos[static_cast<size_t>(i)] = i;
  probes.push_back(
      {fmt::format("{} tokens (bound {})", S, bound.back()), test_tokens(mc.vocab_size, 0, S, 31), pos});
  probes.push_back({fmt::format("a token at position {} (static cache and max positions: {})", cache, cache),
                    test_tokens(mc.vocab_size, 0, 1, 32),
                    {cache}});
  json out = json::array();
  for (const auto& p : probes) {
    saved.push_back({"forward",
                     true,
                     {{"tokens", ids_tensor(p.tokens, true)}, {"input_pos", ids_tensor(p.pos, false)}},
                     {}});
    fwd.reset();
    try {
      fwd.run({ids_tensor(p.tokens, true), ids_tensor(p.pos, false)});
      out.push_back({{"probe", p.what}, {"refused", false}});
      if (failure.empty())
        failure = fmt::format("expected the program to refuse {} (beyond its contract), got logits", p.what);
    } catch (const Error& e) {
      out.push_back({{"probe", p.what}, {"refused", true}, {"error", std::string(e.what()).substr(0, 400)}});
    }
  }
  fwd.reset();
  return out;
}

// Prefill of 7 tokens and 16 decode steps, each against eager (EagerBuilder + DynamicCache), timed — fewer
// when the program's static cache (`positions`) holds fewer: a prompt of at most half of it, the decode
// steps up to its end.
struct ForwardRun {
  ErrorStats worst;
  json steps = json::array();
  double prefill_s = 0, decode_s = 0;
  std::vector<int64_t> prompt;
  int decode_steps = 0;
  std::vector<CallFixture> calls;  ///< every forward call with eager's logits (--save-calls, runtime judge)
  std::string what() const {
    return fmt::format("prefill of {} + {} decode steps", prompt.size(), decode_steps);
  }
};
ForwardRun run_forward(const CausalLM& model, PteMethod& fwd, int64_t positions) {
  ForwardRun out;
  const ModelConfig& mc = model.config();
  const int64_t n_prompt = std::clamp<int64_t>(positions / 2, 1, 7);
  out.decode_steps = static_cast<int>(std::clamp<int64_t>(positions - n_prompt, 0, 16));
  out.prompt = test_tokens(mc.vocab_size, 0, n_prompt, 11);
  EagerBuilder eb;
  DynamicCache cache(model.cache_layout());
  ForwardArgs args;
  args.input_ids = eb.wrap(ids_tensor(out.prompt, true));
  args.cache = &cache;
  Tensor ref_t = model.forward(eb, args).logits.tensor();
  std::vector<float> ref = ref_t.to_floats();
  std::vector<int64_t> pos(out.prompt.size());
  for (size_t i = 0; i < pos.size(); i++) pos[i] = static_cast<int64_t>(i);
  out.calls.push_back({"forward",
                       false,
                       {{"tokens", ids_tensor(out.prompt, true)}, {"input_pos", ids_tensor(pos, false)}},
                       {{"logits", ref_t}}});
  auto t1 = Clock::now();
  std::vector<float> got =
      std::get<Tensor>(fwd.run({ids_tensor(out.prompt, true), ids_tensor(pos, false)})[0]).to_floats();
  out.prefill_s = seconds_since(t1);
  out.worst = error_stats(got, ref, mc.vocab_size);
  out.steps.push_back({{"step", "prefill"}, {"stats", out.worst.to_json()}});
  int64_t next = static_cast<int64_t>(out.prompt.size());
  auto toks = test_tokens(mc.vocab_size, 1, 16, 12);
  for (int s = 0; s < out.decode_steps; s++) {
    ForwardArgs d;
    d.input_ids = eb.wrap(ids_tensor({toks[s]}, true));
    d.cache = &cache;
    Tensor r_t = model.forward(eb, d).logits.tensor();
    auto r = r_t.to_floats();
    out.calls.push_back({"forward",
                         false,
                         {{"tokens", ids_tensor({toks[s]}, true)}, {"input_pos", ids_tensor({next}, false)}},
                         {{"logits", r_t}}});
    auto t2 = Clock::now();
    auto o =
        std::get<Tensor>(fwd.run({ids_tensor({toks[s]}, true), ids_tensor({next}, false)})[0]).to_floats();
    out.decode_s += seconds_since(t2);
    ErrorStats e = error_stats(o, r, mc.vocab_size);
    out.steps.push_back({{"step", fmt::format("decode {}", s)}, {"stats", e.to_json()}});
    const double ref_max = std::max(out.worst.ref_max, e.ref_max);
    if (e.max_abs > out.worst.max_abs) out.worst = e;
    out.worst.ref_max = ref_max;  // the bound's scale is the largest |eager| logit of the whole run
    next++;
  }
  return out;
}

}  // namespace

PteTolerance pte_tolerance(DType dtype, const std::string& backend) {
  // The portable backend computes in float32 with float32 constants (stage 1 upcasts half checkpoints),
  // as eager does: the error is reduction-order noise. Measured with `hfx verify` on .pte exports of the
  // tiny checkpoints (prefill + 16 decode steps, max abs on logits): llama 1.7e-6 (float32), 1.8e-6
  // (bfloat16), 1.9e-6 (float16); gpt2 1.1e-6, qwen2 1.7e-6, gemma2 1.9e-6, phi3 1.8e-6. 1e-5 keeps 5x room.
  // A trained model's logits are larger and so is the noise: stories260K (|logits| 12) measured 2.2e-5
  // abs, 1.85e-6 relative to max|eager| (portable and xnnpack), hence the 5e-6 rel term.
  // The xnnpack backend's delegate payloads are read back and run by the reader's own XNNGraph interpreter
  // (pte_xnnpack.cpp) with the same float32 op-table kernels, so the same bound holds for what verify runs;
  // XNNPACK's own microkernels are checked in ExecuTorch's released runtime (the runtime judge,
  // runtime_judge.cpp).
  PteTolerance t;
  if (backend != "portable" && backend != "xnnpack") {
    t.logits_abs = 0;
    t.logits_rel = 0;
    t.basis = fmt::format("no tolerance is measured for backend '{}'", backend);
    return t;
  }
  t.logits_abs = 1e-5;
  t.basis = fmt::format(
      "{} checkpoint, {} backend: float32 kernels and constants as eager; the larger of 1e-5 abs and 5e-6 x "
      "max|eager| on logits (measured <= 1.9e-6 abs on tiny checkpoints, 1.85e-6 rel on the trained "
      "stories260K)",
      dtype_name(dtype), backend);
  return t;
}

namespace {

// The forward run against eager within the tolerance, and its latency.
void numerics_and_latency(Context& cx, const std::string& comp, const ForwardRun& run,
                          const PteTolerance& tol, const std::string& backend, double load_s, json& info) {
  const ErrorStats& worst = run.worst;
  const double prefill_s = run.prefill_s, decode_s = run.decode_s;
  const std::vector<int64_t>& prompt = run.prompt;
  const int delegated = info.value("delegate_calls", 0);
  const std::string delegates =
      delegated ? fmt::format(
                      "; {} of {} instructions are XnnpackBackend calls (run by the reader's XNNGraph "
                      "interpreter)",
                      delegated, info.value("instructions", 0))
                : "";
  const double bound = tol.logits_bound(worst.ref_max);
  if (worst.max_abs <= bound)
    cx.add(comp, "numerics", "passed",
           fmt::format("{} vs eager: max abs {:.3g} <= {:.2g} ({} backend), max rel "
                       "{:.3g}, top-5 agreement {:.0f}%{}",
                       run.what(), worst.max_abs, bound, backend, worst.max_rel, 100 * worst.topk_agreement,
                       delegates),
           info);
  else
    cx.add(comp, "numerics", "failed",
           fmt::format("expected logits within {:.2g} of eager (the larger of {:.0e} and {:.0e} x max|eager| "
                       "{:.3g}) over the {} ({}), got max abs error {:.3g}",
                       bound, tol.logits_abs, tol.logits_rel, worst.ref_max, run.what(), tol.basis,
                       worst.max_abs),
           info);
  cx.add(
      comp, "latency", "info",
      fmt::format("forward: prefill {} tokens {:.2f} ms ({:.0f} tokens/s), decode {:.2f} ms/token "
                  "({:.0f} tokens/s); load {:.0f} ms",
                  prompt.size(), 1e3 * prefill_s, prompt.size() / prefill_s,
                  1e3 * decode_s / std::max(run.decode_steps, 1), run.decode_steps / decode_s, 1e3 * load_s),
      info["latency"]);
}

// Out-of-contract calls (longer than the bound, past the position table) must fail with an error.
void rejects_check(Context& cx, const std::string& comp, PteProgram& prog, const ModelConfig& mc) {
  std::string failure;
  std::vector<CallFixture> saved;
  json probes = forward_probes(prog, mc, failure, saved);
  // After the numerics' calls in name order ("probe" sorts after the digits): a runtime replaying them
  // runs the real calls first on a fresh cache.
  for (size_t i = 0; i < saved.size(); i++)
    save_call(cx, comp, "forward", fmt::format("probe{}", i), saved[i].inputs, {}, true);
  if (failure.empty())
    cx.add(comp, "rejects", "passed",
           fmt::format("{} out-of-contract calls fail with an error (e.g. {}: {})", probes.size(),
                       probes[1]["probe"].get<std::string>(),
                       probes[1]["error"].get<std::string>().substr(0, 160)),
           {{"probes", probes}});
  else
    cx.add(comp, "rejects", "failed", failure, {{"probes", probes}});
}

}  // namespace

std::string pte_backend(const fs::path& out) {
  const fs::path p = out / "export_config.json";
  if (!fs::exists(p)) return "portable";
  auto j = json::parse(io::read_file(p.string()), nullptr, false);
  return j.is_object() && j.contains("backend") && j["backend"].is_string() ? j["backend"].get<std::string>()
                                                                            : "portable";
}

PteTolerance pte_tolerance_of(const Context& cx, DType dtype, const std::string& backend) {
  PteTolerance tol = pte_tolerance(dtype, backend);
  // Weights stored in a lower precision than the checkpoint's (--dtype f16/bf16): that precision's
  // measured row (tolerances.cpp) bounds the error, not the float32 kernels' noise.
  if (cx.tol.key != "exact") {
    tol.logits_abs = cx.tol.logits_abs;
    tol.logits_rel = cx.tol.logits_rel;
    tol.basis = fmt::format("'{}' weights: {}", cx.tol.key, cx.tol.basis);
  }
  return tol;
}

void check_pte(Context& cx, const fs::path& path) {
  const std::string comp = path.filename().string();
  const int64_t rss0 = peak_rss_bytes();
  json info = {{"file", comp}, {"size_bytes", static_cast<int64_t>(fs::file_size(path))}};
  try {
    auto t0 = Clock::now();
    auto prog = PteProgram::load_file(path.string());
    info["segment_bytes"] = prog->header().segment_data_size;
    info["program_bytes"] = prog->header().program_size;
    auto& fwd = prog->method("forward");
    info["planned_bytes"] = {{"forward", fwd.planned_bytes()}};
    const double load_s = seconds_since(t0);
    const ModelConfig& mc = cx.model->config();
    const ForwardRun run = run_forward(*cx.model, fwd, program_positions(*prog, cx.model->config()));
    const json& steps = run.steps;
    const double prefill_s = run.prefill_s, decode_s = run.decode_s;
    const std::vector<int64_t>& prompt = run.prompt;
    const std::string backend = pte_backend(cx.out);
    const PteTolerance tol = pte_tolerance_of(cx, mc.dtype, backend);
    for (size_t i = 0; i < run.calls.size(); i++)
      save_call(cx, comp, "forward", fmt::format("{:03d}", i), run.calls[i].inputs, run.calls[i].outputs,
                false);
    info["steps"] = steps;
    info["backend"] = backend;
    info["tolerance"] = {
        {"logits_abs", tol.logits_abs}, {"logits_rel", tol.logits_rel}, {"basis", tol.basis}};
    info["load_ms"] = 1e3 * load_s;
    info["cold_start_ms"] = 1e3 * (load_s + prefill_s);
    info["latency"] = {{"forward",
                        {{"prefill_tokens", prompt.size()},
                         {"prefill_ms", 1e3 * prefill_s},
                         {"prefill_tokens_per_s", static_cast<double>(prompt.size()) / prefill_s},
                         {"decode_steps", run.decode_steps},
                         {"decode_ms_per_token", 1e3 * decode_s / std::max(run.decode_steps, 1)},
                         {"decode_tokens_per_s", run.decode_steps / decode_s}}}};
    info["operators"] = prog->operator_names("forward");
    info["delegate_calls"] = fwd.num_delegate_calls();
    info["instructions"] = fwd.num_instructions();
    numerics_and_latency(cx, comp, run, tol, backend, load_s, info);
    rejects_check(cx, comp, *prog, mc);
    const int64_t hwm = peak_rss_bytes() - rss0;
    cx.add(comp, "memory", "info",
           fmt::format("program {:.2f} MiB ({:.2f} MiB constants), planned arena forward {:.2f} MiB, peak "
                       "RSS +{:.1f} MiB during the check",
                       info["size_bytes"].get<int64_t>() / 1048576.0,
                       info["segment_bytes"].get<uint64_t>() / 1048576.0, fwd.planned_bytes() / 1048576.0,
                       hwm / 1048576.0),
           {{"size_bytes", info["size_bytes"]},
            {"segment_bytes", info["segment_bytes"]},
            {"planned_bytes", info["planned_bytes"]},
            {"peak_rss_delta_bytes", hwm}});
  } catch (const Error& e) {
    cx.add(comp, "load", "failed", fmt::format("expected {} to load and run, got: {}", comp, e.what()), info);
  }
}

}  // namespace hfx::verify::detail
