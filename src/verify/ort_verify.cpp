// The checks of `hfx verify` that run ONNX graphs in ONNX Runtime: numerics against eager (prefill,
// every present tensor, one decode step, greedy end-to-end), the shape matrix, out-of-contract probes,
// execution-provider placement from ORT's profile, cold start and warm latency, and the per-layer diff.
// Every artifact run is fed the eager model's own cache as its past, so each component is judged alone.
#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <functional>
#include <set>

#include <fmt/format.h>

#include "hfx/core/error.h"
#include "hfx/runtime/generator.h"
#include "hfx/runtime/ort_session.h"
#include "kernels/kernels.h"
#include "verify/ort_internal.h"

namespace hfx::verify::detail {
namespace fs = std::filesystem;
using nlohmann::json;
using rt::NamedTensors;
using rt::OrtSession;
using rt::RtTensor;

namespace {

// A float tensor as the graph wants it (float32, float16 or bfloat16).
RtTensor float_tensor(const std::string& dtype, std::vector<int64_t> shape, const std::vector<float>& v) {
  if (dtype == "float16") return RtTensor::f16_from_f32(std::move(shape), v);
  if (dtype == "bfloat16") {
    RtTensor t = RtTensor::zeros("bfloat16", shape);
    auto* p = reinterpret_cast<uint16_t*>(t.data.data());
    for (size_t i = 0; i < v.size(); i++) p[i] = f32_to_bf16(v[i]);
    return t;
  }
  return RtTensor::f32(std::move(shape), v);
}

Tensor to_tensor(const RtTensor& r) {
  Shape s(r.shape.begin(), r.shape.end());
  if (r.dtype == "int64" || r.dtype == "int32" || r.dtype == "bool") return Tensor::from_ints(s, r.to_i64());
  return Tensor::from_floats(s, r.to_f32());
}

}  // namespace

// One eager run: an optional prefill of `past` tokens, then the step of `seq` tokens.
struct EagerStep {
  std::vector<float> logits;                // [B, S, V]
  std::vector<std::vector<float>> past;     // per layer key, value (before the step)
  std::vector<std::vector<float>> present;  // per layer key, value (after)
  std::vector<std::vector<int64_t>> past_shape, present_shape;
  std::map<std::string, Tensor> intermediates;
};

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

Inputs make_inputs(int64_t vocab, int64_t batch, int64_t seq, int64_t past, int64_t salt) {
  Inputs in{batch, seq, past, {}};
  for (int64_t b = 0; b < batch; b++) {
    auto r = test_tokens(vocab, b, past + seq, salt);
    in.ids.insert(in.ids.end(), r.begin(), r.end());
  }
  return in;
}

namespace {

std::vector<int64_t> cols(const Inputs& in, int64_t from, int64_t to) {
  std::vector<int64_t> v;
  const int64_t T = in.past + in.seq;
  for (int64_t b = 0; b < in.batch; b++)
    for (int64_t j = from; j < to; j++) v.push_back(in.ids[b * T + j]);
  return v;
}

EagerStep eager_step(const CausalLM& m, const Inputs& in, bool collect) {
  EagerStep r;
  EagerBuilder eb;
  DynamicCache cache(m.cache_layout());
  const int64_t L = static_cast<int64_t>(m.cache_layout().size());
  if (in.past > 0) {
    ForwardArgs a;
    a.input_ids = eb.wrap(Tensor::from_ints({in.batch, in.past}, cols(in, 0, in.past)));
    a.cache = &cache;
    m.forward(eb, a);
    for (int64_t i = 0; i < L; i++)
      for (const Var* v : {&cache.key(i), &cache.value(i)}) {
        r.past.push_back(v->tensor().to_floats());
        r.past_shape.push_back(v->tensor().shape());
      }
  }
  eb.collect_intermediates(collect);
  ForwardArgs a;
  const int64_t T = in.past + in.seq;
  a.input_ids = eb.wrap(Tensor::from_ints({in.batch, in.seq}, cols(in, in.past, T)));
  a.attention_mask = eb.wrap(Tensor::full({in.batch, T}, 1, DType::I64));
  std::vector<int64_t> pos;
  for (int64_t b = 0; b < in.batch; b++)
    for (int64_t j = in.past; j < T; j++) pos.push_back(j);
  a.position_ids = eb.wrap(Tensor::from_ints({in.batch, in.seq}, pos));
  a.cache = &cache;
  r.logits = m.forward(eb, a).logits.tensor().to_floats();
  for (int64_t i = 0; i < L; i++)
    for (const Var* v : {&cache.key(i), &cache.value(i)}) {
      r.present.push_back(v->tensor().to_floats());
      r.present_shape.push_back(v->tensor().shape());
    }
  if (collect) r.intermediates = eb.intermediates();
  return r;
}

}  // namespace

NamedTensors feeds_for(const OrtSession& s, const CausalLM& m, const Inputs& in, const EagerStep* eager,
                       bool has_past) {
  NamedTensors f;
  const int64_t T = in.past + in.seq;
  f.push_back({"input_ids", RtTensor::i64({in.batch, in.seq}, cols(in, in.past, T))});
  f.push_back({"attention_mask",
               RtTensor::i64({in.batch, T}, std::vector<int64_t>(static_cast<size_t>(in.batch * T), 1))});
  std::vector<int64_t> pos;
  for (int64_t b = 0; b < in.batch; b++)
    for (int64_t j = in.past; j < T; j++) pos.push_back(j);
  f.push_back({"position_ids", RtTensor::i64({in.batch, in.seq}, pos)});
  if (has_past) {
    const auto& layout = m.cache_layout();
    for (size_t i = 0; i < layout.size(); i++)
      for (int kv = 0; kv < 2; kv++) {
        std::string name = fmt::format("past_key_values.{}.{}", i, kv ? "value" : "key");
        std::string dt = s.input(name).dtype;
        std::vector<int64_t> shape = {in.batch, layout[i].num_kv_heads, in.past, layout[i].head_dim};
        if (eager && in.past > 0)
          f.push_back({name, float_tensor(dt, shape, eager->past.at(2 * i + kv))});
        else
          f.push_back({name, RtTensor::zeros(dt, shape)});
      }
  }
  return f;
}

namespace {

// Artifact vs eager on one shape: logits and every present tensor.
struct CaseResult {
  bool ran = false, ok = false;
  std::string error;    // ORT error
  std::string failure;  // first tolerance failure
  ErrorStats logits;
  ErrorStats kv;  // worst present
  std::string kv_worst;
  double first_ms = 0, warm_ms = 0;
  NamedTensors outs;
  json to_json(const ShapeCase& sc) const {
    json j = {{"label", sc.label}, {"batch", sc.batch}, {"sequence", sc.sequence},
              {"past", sc.past},   {"ran", ran},        {"ok", ok}};
    if (!error.empty()) j["error"] = error;
    if (!failure.empty()) j["failure"] = failure;
    if (ran) {
      j["logits"] = logits.to_json();
      j["kv_worst"] = {{"name", kv_worst}, {"stats", kv.to_json()}};
      j["first_run_ms"] = first_ms;
      j["warm_median_ms"] = warm_ms;
    }
    return j;
  }
};

CaseResult run_case(Context& cx, OnnxComponent& c, OrtSession& s, const ShapeCase& sc, int warm_runs,
                    int64_t salt) {
  CaseResult r;
  const CausalLM& m = *cx.model;
  Inputs in = make_inputs(m.config().vocab_size, sc.batch, sc.sequence, sc.past, salt);
  EagerStep e = eager_step(m, in, false);
  NamedTensors feeds = feeds_for(s, m, in, &e, c.has_past);
  try {
    auto t0 = Clock::now();
    r.outs = s.run(feeds);
    r.first_ms = ms_since(t0);
    std::vector<double> times;
    for (int i = 0; i < warm_runs; i++) {
      auto t1 = Clock::now();
      s.run(feeds);
      times.push_back(ms_since(t1));
    }
    std::sort(times.begin(), times.end());
    r.warm_ms = times.empty() ? r.first_ms : times[times.size() / 2];
  } catch (const Error& err) {
    r.error = err.what();
    return r;
  }
  r.ran = true;
  const int64_t V = m.config().vocab_size;
  r.logits = error_stats(rt::find_tensor(r.outs, "logits").to_f32(), e.logits, V);
  const std::string broke = logits_within(r.logits, cx.tol);
  r.ok = broke.empty();
  if (!r.ok)
    r.failure = fmt::format(
        "expected logits within the '{}' tolerances of eager at batch {} sequence {} past {}, got {} (max "
        "abs "
        "{:.3g}, max rel {:.3g}, top-1 {:.0f}%, top-5 agreement {:.0f}%, KL {:.3g})",
        cx.tol.key, sc.batch, sc.sequence, sc.past, broke, r.logits.max_abs, r.logits.max_rel,
        100 * r.logits.top1_agreement, 100 * r.logits.topk_agreement, r.logits.kl_max);
  for (size_t i = 0; i < e.present.size(); i++) {
    const std::string n = present_name(i);
    const RtTensor* t = nullptr;
    for (const auto& [k, v] : r.outs)
      if (k == n) t = &v;
    if (!t) continue;  // the signature check names missing outputs
    std::vector<int64_t> want(e.present_shape[i].begin(), e.present_shape[i].end());
    if (t->shape != want) {
      if (r.ok)
        r.failure =
            fmt::format("expected {} of shape {}, got {}", n, fmt::join(want, "x"), fmt::join(t->shape, "x"));
      r.ok = false;
      continue;
    }
    ErrorStats st = error_stats(t->to_f32(), e.present[i], want.back());
    if (r.kv_worst.empty() || st.max_abs > r.kv.max_abs) {
      r.kv = st;
      r.kv_worst = n;
    }
    if (!(st.max_abs <= cx.tol.kv_bound(st.ref_max)) && r.ok) {
      r.ok = false;
      r.failure = fmt::format(
          "expected {} within {:.2g} of eager (the larger of {:.0e} and {:.0e} x max|eager| {:.3g}) at batch "
          "{} sequence {} past {}, got max abs error {:.3g}",
          n, cx.tol.kv_bound(st.ref_max), cx.tol.kv_abs, cx.tol.kv_rel, st.ref_max, sc.batch, sc.sequence,
          sc.past, st.max_abs);
    }
  }
  return r;
}

// Session + profile: nodes per execution provider for one run.
json provider_placement(const OnnxComponent& c, const CausalLM& m, int threads, const ShapeCase& sc) {
  char tmpl[] = "/tmp/hfx-verify-prof-XXXXXX";
  const char* dir = mkdtemp(tmpl);
  if (!dir) return {{"error", "no temp folder for the ORT profile"}};
  json j;
  try {
    rt::SessionOptions so;
    so.intra_op_threads = threads;
    so.profile_prefix = std::string(dir) + "/ort";
    OrtSession s(c.path, so);
    Inputs in = make_inputs(m.config().vocab_size, sc.batch, sc.sequence, sc.past, 5);
    s.run(feeds_for(s, m, in, nullptr, c.has_past));
    std::string path = s.end_profiling();
    json prof = json::parse(std::ifstream(path));
    std::map<std::string, std::set<std::string>> by_provider;
    std::map<std::string, std::map<std::string, int64_t>> ops;
    for (const auto& ev : prof) {
      if (ev.value("cat", "") != "Node" || !ev.contains("args")) continue;
      const auto& a = ev["args"];
      if (!a.contains("provider")) continue;
      std::string node = ev.value("name", "");
      auto k = node.rfind("_kernel_time");
      if (k == std::string::npos) continue;
      node = node.substr(0, k);
      std::string prov = a.value("provider", "?");
      if (by_provider[prov].insert(node).second) ops[prov][a.value("op_name", "?")]++;
    }
    json per = json::object();
    int64_t total = 0;
    for (const auto& [p, nodes] : by_provider) {
      per[p] = {{"nodes", nodes.size()}, {"ops", ops[p]}};
      total += static_cast<int64_t>(nodes.size());
    }
    const int64_t fallback = 0;  // CPU is the only provider registered: nothing to fall back from
    j = {{"providers", per},
         {"executed_nodes", total},
         {"registered", json::array({"CPUExecutionProvider"})},
         {"fallback_nodes", fallback},
         {"note",
          "nodes after ORT's graph optimizations (fusions), from its profile; CPU is the only provider "
          "registered here, so "
          "nothing can fall back"}};
    fs::remove(path);
  } catch (const std::exception& e) {
    j = {{"error", e.what()}};
  }
  fs::remove_all(dir);
  return j;
}

// Per-layer diff of one component on one shape.
LayerDiff layer_diff(Context& cx, OnnxComponent& c, const ShapeCase& sc, int threads) {
  std::vector<std::string> names = onnx_module_values(c.path.string());
  fs::path dbg = c.path.parent_path() / fmt::format(".hfx_verify_debug_{}_{}.onnx", c.name, ::getpid());
  LayerDiff d;
  try {
    write_debug_onnx(c.path.string(), names, dbg.string());
    rt::SessionOptions so;
    so.intra_op_threads = threads;
    so.graph_opt = rt::GraphOpt::Basic;
    OrtSession s(dbg, so);
    Inputs in = make_inputs(cx.model->config().vocab_size, sc.batch, sc.sequence, sc.past, 1);
    EagerStep e = eager_step(*cx.model, in, true);
    e.intermediates["logits"] = Tensor::from_floats({static_cast<int64_t>(e.logits.size())}, e.logits);
    std::vector<std::string> fetch;
    for (const auto& n : names)
      if (e.intermediates.count(n)) fetch.push_back(n);
    NamedTensors out = s.run(feeds_for(s, *cx.model, in, &e, c.has_past), fetch);
    std::map<std::string, Tensor> art;
    for (const auto& [k, v] : out) art[k] = to_tensor(v);
    d = compare_layers(fetch, e.intermediates, art, cx.tol.layer_abs, cx.tol.layer_rel);
  } catch (...) {
    fs::remove(dbg);
    throw;
  }
  fs::remove(dbg);
  return d;
}

}  // namespace

namespace {

ShapeCase typical_case(const OnnxComponent& c) {
  return c.name == "decode" ? ShapeCase{2, 1, 8, "decode"} : ShapeCase{2, 8, 0, "prefill"};
}

// Numerics: prefill (past 0) and, for the merged model, one decode step over the eager cache. Returns
// whether they passed.
bool numerics_check(Context& cx, OnnxComponent& c, OrtSession& s, const ShapeCase& first,
                    const CaseResult& pre) {
  json numerics = json::object();
  std::string failure;
  auto judge = [&](const CaseResult& r, const std::string& what) {
    if (!r.ran && failure.empty())
      failure = fmt::format("expected the {} step to run, got: {}", what, r.error);
    else if (!r.ok && failure.empty())
      failure = what + ": " + r.failure;
  };
  numerics[first.label] = pre.to_json(first);
  judge(pre, first.label);
  CaseResult dec;
  ShapeCase dsc{2, 1, 8, "decode"};
  if (c.name == "model") {
    dec = run_case(cx, c, s, dsc, 0, 2);
    numerics["decode"] = dec.to_json(dsc);
    judge(dec, "decode");
  }
  c.info["numerics"] = numerics;
  const CaseResult& shown = c.name == "model" && dec.ran && !dec.ok ? dec : pre;
  if (!failure.empty()) {
    cx.add(c.name, "numerics", "failed", failure, numerics);
    return false;
  }
  cx.add(
      c.name, "numerics", "passed",
      fmt::format(
          "{}logits max abs {:.2g} (rel {:.2g}, top-1 {:.0f}%, top-5 {:.0f}%, KL {:.2g}), KV max abs "
          "{:.2g} ({}) "
          "within the '{}' tolerances (logits {:.2g})",
          c.name == "model" ? "prefill + decode: " : "", std::max(pre.logits.max_abs, dec.logits.max_abs),
          std::max(pre.logits.max_rel, dec.logits.max_rel),
          100 * std::min(pre.logits.top1_agreement, c.name == "model" ? dec.logits.top1_agreement : 1.0),
          100 * std::min(pre.logits.topk_agreement, c.name == "model" ? dec.logits.topk_agreement : 1.0),
          std::max(pre.logits.kl_max, dec.logits.kl_max), std::max(pre.kv.max_abs, dec.kv.max_abs),
          shown.kv_worst, cx.tol.key, cx.tol.logits_bound(std::max(pre.logits.ref_max, dec.logits.ref_max))),
      numerics);
  return true;
}

// The shape matrix against eager, the claimed-max probes, and the warm latency of each shape.
void shape_checks(Context& cx, OnnxComponent& c, OrtSession& s) {
  std::vector<std::string> notes;
  json cases = json::array();
  std::string shape_failure;
  json latency = json::array();
  const std::vector<ShapeCase> matrix = matrix_for(cx, c, s, notes);
  for (size_t i = 0; i < matrix.size(); i++) {
    const ShapeCase& sc = matrix[i];
    cx.step(fmt::format("{} shapes {}/{}: {} {}x{}+{}", c.name, i + 1, matrix.size(), sc.label, sc.batch,
                        sc.sequence, sc.past));
    CaseResult r = run_case(cx, c, s, sc, cx.opt.warm_runs, 3);
    cases.push_back(r.to_json(sc));
    if (r.ran)
      latency.push_back({{"shape", sc.label},
                         {"batch", sc.batch},
                         {"sequence", sc.sequence},
                         {"past", sc.past},
                         {"first_ms", r.first_ms},
                         {"warm_median_ms", r.warm_ms}});
    if (shape_failure.empty()) {
      if (!r.ran)
        shape_failure = fmt::format("expected shape {} ({}x{}+{}, inside the contract) to run, got: {}",
                                    sc.label, sc.batch, sc.sequence, sc.past, r.error);
      else if (!r.ok)
        shape_failure = fmt::format("shape {}: {}", sc.label, r.failure);
    }
  }
  claimed_max_probe(cx, c, s, cases, shape_failure);
  claimed_total_probe(cx, c, s, cases, shape_failure);
  c.info["shapes"] = cases;
  c.info["shape_notes"] = notes;
  c.info["latency"] = latency;
  if (shape_failure.empty())
    cx.add(c.name, "shapes", "passed",
           fmt::format("{} shapes match eager{}", cases.size(),
                       notes.empty() ? "" : " (" + fmt::format("{}", fmt::join(notes, "; ")) + ")"),
           {{"cases", cases}});
  else
    cx.add(c.name, "shapes", "failed", shape_failure, {{"cases", cases}, {"notes", notes}});
  std::string lat;
  for (const auto& l : latency)
    lat += fmt::format("{}{} {:.2f}", lat.empty() ? "" : ", ", l["shape"].get<std::string>(),
                       l["warm_median_ms"].get<double>());
  cx.add(c.name, "latency", "info", fmt::format("warm median ms ({} runs): {}", cx.opt.warm_runs, lat),
         {{"latency", latency}});
}

// Where ONNX Runtime placed the nodes (its profile of one run of `first`).
void ops_check(Context& cx, OnnxComponent& c, const ShapeCase& first) {
  c.info["placement"] = provider_placement(c, *cx.model, cx.opt.threads, first);
  const json& pl = c.info["placement"];
  if (pl.contains("error")) {
    cx.add(c.name, "ops", "info",
           fmt::format("{} nodes in the file; ORT profile unavailable: {}", c.info["nodes"].get<int64_t>(),
                       pl["error"].get<std::string>()));
    return;
  }
  std::string per;
  for (const auto& [p, v] : pl["providers"].items())
    per += fmt::format("{}{} {}", per.empty() ? "" : ", ", p, v["nodes"].get<int64_t>());
  cx.add(
      c.name, "ops", "info",
      fmt::format("{} nodes in the file, {} op types; after ORT optimization {} nodes run: {}; fallback {}",
                  c.info["nodes"].get<int64_t>(), c.info["ops"].size(), pl["executed_nodes"].get<int64_t>(),
                  per, pl["fallback_nodes"].get<int64_t>()),
      pl);
}

// Every check of one component that loads; its session (null when it did not load) for the greedy check.
// `numerics_ok` is false when its numerics failed.
std::unique_ptr<OrtSession> component_checks(Context& cx, OnnxComponent& c, bool& numerics_ok) {
  numerics_ok = true;
  const int64_t hwm0 = peak_rss_bytes();
  // Cold start: session creation + first run of the typical shape.
  const ShapeCase first = typical_case(c);
  rt::SessionOptions so;
  so.intra_op_threads = cx.opt.threads;
  std::unique_ptr<OrtSession> s;
  auto t0 = Clock::now();
  try {
    s = std::make_unique<OrtSession>(c.path, so);
  } catch (const Error& e) {
    cx.add(c.name, "load", "failed",
           fmt::format("expected ONNX Runtime to load {}, got: {}", c.rel, e.what()));
    return nullptr;
  }
  const double create_ms = ms_since(t0);
  CaseResult pre = run_case(cx, c, *s, first, 0, 1);
  const double cold_ms = ms_since(t0);
  c.info["cold_start_ms"] = cold_ms;
  c.info["session_create_ms"] = create_ms;
  cx.add(c.name, "cold start", "info",
         fmt::format("session {:.0f} ms + first run {:.1f} ms", create_ms, pre.first_ms),
         {{"session_create_ms", create_ms}, {"first_run_ms", pre.first_ms}, {"cold_start_ms", cold_ms}});
  numerics_ok = numerics_check(cx, c, *s, first, pre);
  shape_checks(cx, c, *s);
  rejection_checks(cx, c, *s);
  ops_check(cx, c, first);
  c.info["peak_rss_delta_bytes"] = peak_rss_bytes() - hwm0;
  return s;
}

// Per-layer diff: where a failing component first leaves eager (or, when all pass, the error per layer).
void layer_diff_check(Context& cx, OnnxComponent& c, const std::string& failed_numerics) {
  const ShapeCase sc = typical_case(c);
  try {
    LayerDiff d = layer_diff(cx, c, sc, cx.opt.threads);
    cx.layer_diff = d.to_json();
    cx.layer_diff["component"] = c.name;
    cx.layer_diff["shape"] = sc.label;
    if (d.first_divergence && !failed_numerics.empty())
      for (auto& chk : cx.checks)
        if (chk.component == c.name && chk.check == "numerics" && chk.status == "failed")
          chk.message += fmt::format("; per-layer diff: first divergence at {} (max abs {:.3g})",
                                     d.first_divergence->name, d.first_divergence->max_abs);
    if (d.first_divergence)
      cx.add(
          c.name, "layer diff", "failed",
          fmt::format("first divergence at {} (max abs {:.3g}, max rel {:.3g}) of {} named modules compared",
                      d.first_divergence->name, d.first_divergence->max_abs, d.first_divergence->max_rel,
                      d.layers.size()),
          cx.layer_diff);
    else
      cx.add(
          c.name, "layer diff", failed_numerics.empty() ? "passed" : "failed",
          failed_numerics.empty()
              ? fmt::format("{} named modules within tolerance of eager", d.layers.size())
              : fmt::format(
                    "no named module diverges ({} compared): the difference is after the last named module",
                    d.layers.size()),
          cx.layer_diff);
  } catch (const Error& e) {
    cx.add(c.name, "layer diff", failed_numerics.empty() ? "skipped" : "failed",
           fmt::format("per-layer diff did not run: {}", e.what()));
  }
}

}  // namespace

void ort_checks(Context& cx, std::vector<OnnxComponent>& comps) {
  kernels::set_num_threads(cx.opt.threads);
  std::map<std::string, std::unique_ptr<OrtSession>> sessions;
  std::string failed_numerics;  // first component whose numerics failed
  for (auto& c : comps) {
    if (!c.signature_ok || !c.info.contains("size_bytes")) {
      cx.add(c.name, "numerics", "skipped",
             "not run: the graph did not load or its signature check failed (see above)");
      continue;
    }
    bool numerics_ok = true;
    std::unique_ptr<OrtSession> s = component_checks(cx, c, numerics_ok);
    if (!numerics_ok && failed_numerics.empty()) failed_numerics = c.name;
    if (s) sessions[c.name] = std::move(s);
  }
  // Greedy end-to-end, as generation runs it.
  auto get = [&](const char* n) { return sessions.count(n) ? sessions[n].get() : nullptr; };
  if (get("model")) greedy_check(cx, "model", nullptr, get("model"));
  if (get("prefill") && get("decode")) greedy_check(cx, "prefill+decode", get("prefill"), get("decode"));
  std::string target = failed_numerics;
  if (target.empty())
    for (const auto& c : comps)
      if (sessions.count(c.name)) {
        target = c.name;
        break;
      }
  for (auto& c : comps)
    if (c.name == target) layer_diff_check(cx, c, failed_numerics);
}

}  // namespace hfx::verify::detail
