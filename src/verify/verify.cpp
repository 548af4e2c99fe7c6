// `hfx verify` without ONNX Runtime: finding the artifacts and the reference, checksums, the static
// signature and contract checks of .onnx graphs (read with the onnx protobuf API), op counts, sizes,
// ExecuTorch programs through pte_reader, .pt2 structure, and the report (JSON, table, manifest).
// The checks that run ONNX graphs are in ort_verify.cpp.
#include "hfx/verify/verify.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <fstream>
#include <regex>
#include <set>

#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include "hfx/artifact/manifest.h"
#include "hfx/core/error.h"
#include "hfx/io/safetensors.h"
#include "hfx/models/quantize_model.h"
#include "hfx/quant/quantize.h"
#include "hfx/verify/precision.h"
#include "io/zip.h"
#include "verify/pte_reader.h"
#include "verify/verify_internal.h"

#ifndef HFX_VERSION
#define HFX_VERSION "unknown"
#endif

namespace hfx::verify {
namespace fs = std::filesystem;
using nlohmann::json;

namespace detail {

int64_t peak_rss_bytes() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
  return 0;
}

std::vector<int64_t> test_tokens(int64_t vocab, int64_t row, int64_t n, int64_t salt) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  uint64_t s =
      0x9E3779B97F4A7C15ull * static_cast<uint64_t>(row + 1) + static_cast<uint64_t>(salt) * 1315423911ull;
  const int64_t span = std::max<int64_t>(vocab - 3, 1);
  for (auto& x : v) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    x = 3 + static_cast<int64_t>((s >> 33) % static_cast<uint64_t>(span));
  }
  return v;
}

std::pair<int64_t, int64_t> contract_range(const ShapeContract& c, const std::string& input, int axis) {
  auto it = c.find(input);
  if (it == c.end() || static_cast<int>(it->second.size()) <= axis) return {0, -1};
  return {it->second[axis].min, it->second[axis].max};
}

}  // namespace detail

using namespace detail;

// ---------------------------------------------------------------- small helpers

std::vector<ShapeCase> parse_shape_spec(const std::string& spec) {
  std::vector<ShapeCase> out;
  static const std::regex re(R"(^\s*(\d+)\s*[xX]\s*(\d+)\s*(?:\+\s*(\d+))?\s*$)");
  size_t start = 0;
  while (start <= spec.size()) {
    size_t end = spec.find(',', start);
    if (end == std::string::npos) end = spec.size();
    std::string item = spec.substr(start, end - start);
    start = end + 1;
    if (item.find_first_not_of(" \t") == std::string::npos) continue;
    std::smatch m;
    HFX_CHECK(
        std::regex_match(item, m, re), "verify",
        "expected shapes as BATCHxSEQUENCE[+PAST] separated by commas (e.g. 1x1,2x16,1x1+255), got '{}'",
        item);
    ShapeCase c;
    c.batch = std::stoll(m[1]);
    c.sequence = std::stoll(m[2]);
    c.past = m[3].matched ? std::stoll(m[3]) : 0;
    HFX_CHECK(c.batch >= 1 && c.sequence >= 1, "verify",
              "expected batch and sequence >= 1 in --shapes, got '{}'", item);
    c.label = fmt::format("{}x{}{}", c.batch, c.sequence, c.past ? fmt::format("+{}", c.past) : "");
    out.push_back(c);
  }
  HFX_CHECK(!out.empty(), "verify", "expected at least one shape in --shapes, got '{}'", spec);
  return out;
}

json ErrorStats::to_json() const {
  return {{"max_abs", max_abs},
          {"max_rel", max_rel},
          {"ref_max_abs", ref_max},
          {"top5_agreement", topk_agreement},
          {"top1_agreement", top1_agreement},
          {"kl_max", kl_max},
          {"rows", rows},
          {"finite", finite}};
}

// KL(softmax(p) || softmax(q)) in nats, in double (log-sum-exp shifted by each row's max).
static double kl_divergence(const float* p, const float* q, int64_t n) {
  double mp = -INFINITY, mq = -INFINITY;
  for (int64_t j = 0; j < n; j++) mp = std::max(mp, double(p[j])), mq = std::max(mq, double(q[j]));
  if (!std::isfinite(mp) || !std::isfinite(mq)) return 0;
  double zp = 0, zq = 0;
  for (int64_t j = 0; j < n; j++) zp += std::exp(p[j] - mp), zq += std::exp(q[j] - mq);
  const double lzp = mp + std::log(zp), lzq = mq + std::log(zq);
  double kl = 0;
  for (int64_t j = 0; j < n; j++) {
    const double lp = p[j] - lzp, lq = q[j] - lzq;
    kl += std::exp(lp) * (lp - lq);
  }
  return std::max(0.0, kl);
}

ErrorStats error_stats(const std::vector<float>& got, const std::vector<float>& ref, int64_t last_dim,
                       int k) {
  ErrorStats s;
  HFX_CHECK(got.size() == ref.size(), "verify", "expected {} values to compare, got {}", ref.size(),
            got.size());
  for (size_t i = 0; i < got.size(); i++) {
    if (!std::isfinite(got[i]) || !std::isfinite(ref[i])) {
      if (!(std::isinf(got[i]) && got[i] == ref[i])) s.finite = false;
      continue;
    }
    s.max_abs = std::max(s.max_abs, static_cast<double>(std::fabs(got[i] - ref[i])));
    s.ref_max = std::max(s.ref_max, static_cast<double>(std::fabs(ref[i])));
  }
  if (!s.finite) s.max_abs = std::numeric_limits<double>::infinity();
  s.max_rel = s.ref_max > 0 ? s.max_abs / s.ref_max : s.max_abs;
  if (last_dim > 0 && got.size() % static_cast<size_t>(last_dim) == 0 && got.size() > 0) {
    s.rows = static_cast<int64_t>(got.size()) / last_dim;
    int64_t agree = 0, agree1 = 0;
    const int kk = static_cast<int>(std::min<int64_t>(k, last_dim));
    std::vector<int64_t> ia(last_dim), ib(last_dim);
    for (int64_t r = 0; r < s.rows; r++) {
      const float* a = got.data() + r * last_dim;
      const float* b = ref.data() + r * last_dim;
      for (int64_t j = 0; j < last_dim; j++) ia[j] = ib[j] = j;
      auto by = [](const float* p) {
        return [p](int64_t x, int64_t y) { return p[x] > p[y] || (p[x] == p[y] && x < y); };
      };
      std::partial_sort(ia.begin(), ia.begin() + kk, ia.end(), by(a));
      std::partial_sort(ib.begin(), ib.begin() + kk, ib.end(), by(b));
      if (std::equal(ia.begin(), ia.begin() + kk, ib.begin())) agree++;
      if (ia[0] == ib[0]) agree1++;
      s.kl_max = std::max(s.kl_max, kl_divergence(b, a, last_dim));
    }
    s.topk_agreement = s.rows ? static_cast<double>(agree) / static_cast<double>(s.rows) : 1.0;
    s.top1_agreement = s.rows ? static_cast<double>(agree1) / static_cast<double>(s.rows) : 1.0;
  }
  return s;
}

namespace {

constexpr const char* kComp = "verify";

std::string utc_now() {
  std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

bool has_weights(const fs::path& d) {
  if (fs::exists(d / "model.safetensors") || fs::exists(d / "model.safetensors.index.json")) return true;
  if (!fs::is_directory(d)) return false;
  for (const auto& e : fs::directory_iterator(d))
    if (e.path().extension() == ".safetensors") return true;
  return false;
}

// Dynamo .pt2: a zip with the ExportedProgram records; running it needs PyTorch.
void check_pt2(Context& cx, const fs::path& path) {
  const std::string comp = path.filename().string();
  try {
    const std::string bytes = io::read_file(path.string());
    Pt2Structure st = read_pt2_structure(bytes);
    json info = {
        {"file", comp}, {"size_bytes", static_cast<int64_t>(bytes.size())}, {"records", st.names.size()}};
    if (st.programs == 0)
      cx.add(comp, "structure", "failed",
             fmt::format("expected a models/*.json ExportedProgram record in {}, got none", comp), info);
    else
      cx.add(
          comp, "structure", "passed",
          fmt::format("{} records, each read and CRC-checked (program{}{}); its numerics need PyTorch: the "
                      "runtime numerics check",
                      st.names.size(), st.has_weights ? ", weights" : "", st.has_version ? ", version" : ""),
          info);
  } catch (const Error& e) {
    cx.add(comp, "structure", "failed",
           fmt::format("expected {} to be a readable .pt2 archive, got: {}", comp, e.what()));
  }
}

json report_json(const Context& cx, const VerifyReport& r, const std::vector<OnnxComponent>& comps) {
  json j;
  j["schema"] = "hfx.verify/1";
  j["hfx_version"] = HFX_VERSION;
  j["checked_at"] = utc_now();
  j["out_dir"] = cx.out.string();
  j["reference"] = cx.reference_dir;
  j["passed"] = r.passed;
  j["verdict"] = r.verdict;
  j["first_failure"] = r.first_failure;
  j["not_judged"] = r.not_judged;
  if (cx.model) {
    j["model"] = {{"model_type", cx.model->config().model_type},
                  {"dtype", dtype_name(cx.model->config().dtype)},
                  {"layers", cx.model->config().num_hidden_layers},
                  {"vocab_size", cx.model->config().vocab_size}};
    j["tolerances"] = cx.tol.to_json();
  }
  if (!cx.precision.is_null()) j["precision"] = cx.precision;
  j["caps"] = {{"max_check_sequence", cx.opt.max_check_sequence},
               {"max_check_batch", cx.opt.max_check_batch},
               {"max_probe_past", cx.opt.max_probe_past},
               {"why",
                "the max-shape cases run against eager on 2 CPU cores; larger claimed maxima are probed on "
                "the artifact alone"}};
  json checks = json::array();
  int passed = 0, failed = 0, skipped = 0, not_judged = 0;
  for (const auto& c : cx.checks) {
    checks.push_back({{"component", c.component},
                      {"check", c.check},
                      {"status", c.status},
                      {"message", c.message},
                      {"data", c.data}});
    passed += c.status == "passed";
    failed += c.status == "failed";
    skipped += c.status == "skipped";
    not_judged += c.status == "not_judged";
  }
  j["summary"] = {{"passed", passed}, {"failed", failed}, {"skipped", skipped}, {"not_judged", not_judged}};
  j["checks"] = checks;
  json cj = json::object();
  for (const auto& c : comps) cj[c.name] = c.info;
  j["components"] = cj;
  j["layer_diff"] = cx.layer_diff;
  j["memory"] = cx.memory;
  return j;
}

}  // namespace

namespace {

// What the export folder holds to verify.
struct Artifacts {
  std::vector<OnnxComponent> comps;         ///< model / prefill / decode .onnx found
  std::vector<fs::path> ptes, pt2s, ggufs;  ///< sorted
  bool any_onnx = false;                    ///< any .onnx under onnx/, named or not
};

// The artifacts of the folder: the ONNX components hfx names, every .pte and .pt2; fails when none.
Artifacts find_artifacts(const Context& cx) {
  Artifacts a;
  for (const char* n : {"model", "prefill", "decode"}) {
    fs::path p = cx.out / "onnx" / (std::string(n) + ".onnx");
    if (!fs::exists(p)) p = cx.out / (std::string(n) + ".onnx");
    if (!fs::exists(p)) continue;
    OnnxComponent c;
    c.name = n;
    c.path = p;
    c.rel = fs::relative(p, cx.out).generic_string();
    a.comps.push_back(std::move(c));
  }
  for (const auto& e : fs::directory_iterator(cx.out)) {
    if (e.path().extension() == ".pte") a.ptes.push_back(e.path());
    if (e.path().extension() == ".pt2") a.pt2s.push_back(e.path());
    if (e.path().extension() == ".gguf") a.ggufs.push_back(e.path());
  }
  std::sort(a.ptes.begin(), a.ptes.end());
  std::sort(a.pt2s.begin(), a.pt2s.end());
  if (fs::is_directory(cx.out / "onnx"))
    for (const auto& e : fs::directory_iterator(cx.out / "onnx"))
      a.any_onnx |= e.path().extension() == ".onnx";
  std::sort(a.ggufs.begin(), a.ggufs.end());
  const bool any = !a.comps.empty() || a.any_onnx || !a.ptes.empty() || !a.pt2s.empty() || !a.ggufs.empty();
  HFX_CHECK(
      any, kComp,
      "expected an artifact in '{}' (onnx/model.onnx, onnx/prefill.onnx, onnx/decode.onnx, *.pte, *.pt2 "
      "or *.gguf), got none",
      cx.opt.out_dir);

  return a;
}

// 1. Checksums: the manifest when the folder has a readable one, its checksums checked.
std::optional<artifact::Manifest> check_manifest(Context& cx) {
  std::optional<artifact::Manifest> manifest;
  if (fs::exists(cx.out / "manifest.json")) {
    try {
      manifest = artifact::Manifest::read(cx.out.string());
      auto t0 = std::chrono::steady_clock::now();
      auto mm = manifest->verify_checksums(cx.out.string());
      double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      if (mm)
        cx.add("manifest", "checksums", "failed", mm->message().substr(std::string("[manifest] ").size()),
               {{"path", mm->path},
                {"reason", mm->reason},
                {"expected_sha256", mm->expected_sha256},
                {"actual_sha256", mm->actual_sha256},
                {"expected_size", mm->expected_size},
                {"actual_size", mm->actual_size}});
      else
        cx.add("manifest", "checksums", "passed",
               fmt::format("{} files match manifest.json ({:.0f} ms)", manifest->files.size(), ms));
    } catch (const Error& e) {
      cx.add("manifest", "checksums", "failed",
             fmt::format("expected a readable manifest.json, got: {}", e.what()));
      manifest.reset();
    }
  } else {
    cx.add("manifest", "checksums", "skipped",
           "no manifest.json in the folder (write one with `hfx manifest OUT --source MODEL`)");
  }
  if (manifest)
    for (const auto& w : manifest->warnings) cx.add("manifest", "export warning", "info", w);

  return manifest;
}

// 2. The reference model: --reference, the folder itself, or the manifest's source; fails the check
// "reference load" when none loads.
void load_reference(Context& cx, const std::optional<artifact::Manifest>& manifest) {
  std::string ref_problem;
  if (cx.opt.reference_model) {
    cx.reference_dir = cx.opt.reference.empty() ? "(a model in memory)" : cx.opt.reference;
  } else if (!cx.opt.reference.empty()) {
    if (!fs::exists(fs::path(cx.opt.reference) / "config.json") || !has_weights(cx.opt.reference))
      ref_problem = fmt::format(
          "expected a checkpoint folder (config.json + model.safetensors) for --reference, got '{}'",
          cx.opt.reference);
    else
      cx.reference_dir = cx.opt.reference;
  } else if (fs::exists(cx.out / "config.json") && has_weights(cx.out)) {
    cx.reference_dir = cx.out.string();
  } else if (manifest && !manifest->source_path.empty() &&
             fs::exists(fs::path(manifest->source_path) / "config.json") &&
             has_weights(manifest->source_path)) {
    // No --reference: the checkpoint the export was made from, as the manifest records it.
    cx.reference_dir = manifest->source_path;
  } else {
    ref_problem = fmt::format(
        "expected the checkpoint weights (model.safetensors) in {} or --reference MODEL, got neither: the "
        "export folder holds no "
        "weights and no --reference was given{}",
        cx.opt.out_dir,
        manifest && !manifest->source_path.empty()
            ? fmt::format(" (the manifest names the source {}, which is not a readable checkpoint folder)",
                          manifest->source_path)
            : "");
  }
  if (ref_problem.empty()) {
    try {
      std::shared_ptr<const Model> m = cx.opt.reference_model
                                           ? cx.opt.reference_model
                                           : std::shared_ptr<const Model>(load_model(cx.reference_dir));
      // A quantized export is compared with the reference quantized the same way (its export_config.json).
      // (A GGUF file's block types are read from the file itself: gguf_verify.cpp.)
      const bool gguf = fs::exists(cx.out / "model.gguf");
      const quant::QuantOptions q =
          gguf ? quant::QuantOptions{} : quant::export_quantization(cx.out.string());
      if (q.enabled()) {
        std::shared_ptr<const Model> quantized = quant::quantize_model(*m, q);
        measure_precision(cx, *m, *quantized, q);
        m = std::move(quantized);
      }
      // The causal-LM checks (ort_verify.cpp) feed past_key_values.N.key/value; a decoder whose cache has
      // other leaves (a state-space model's conv/ssm states) is verified like the other structures, by
      // replaying its loop's recorded calls against each program.
      if (m->structure() == Structure::DecoderOnly && kv_cache_only(*m))
        cx.model = std::shared_ptr<const CausalLM>(m, &as_causal_lm(*m));
      else
        cx.other = m;
      cx.tol = tolerance_for(gguf ? "exact" : tolerance_key(precision_key(manifest), m->config()),
                             m->config().dtype);
      if (manifest && manifest->export_config.is_object()) {
        cx.max_batch = manifest->export_config.value("max_batch", int64_t{0});
        for (const char* k : {"max_sequence", "max_seq_len"})
          if (const int64_t v = manifest->export_config.value(k, int64_t{0}); v > 0)
            cx.max_sequence = cx.max_sequence > 0 ? std::min(cx.max_sequence, v) : v;
      }
      cx.add("reference", "load", "passed",
             fmt::format("{} {} ({}, {}, {} layers, vocab {}) from {}", m->config().model_type, m->head(),
                         structure_name(m->structure()), dtype_name(m->config().dtype),
                         m->config().num_hidden_layers, m->config().vocab_size, cx.reference_dir));
    } catch (const Error& e) {
      ref_problem =
          fmt::format("expected a loadable reference checkpoint in {}, got: {}", cx.reference_dir, e.what());
    }
  }
  if (!ref_problem.empty()) cx.add("reference", "load", "failed", ref_problem);
}

// 3. The checks of each artifact against the reference.
void run_reference_checks(Context& cx, Artifacts& a, const std::optional<artifact::Manifest>& manifest);

void run_checks(Context& cx, Artifacts& a, const std::optional<artifact::Manifest>& manifest) {
  // The released runtimes judge the .pte and .pt2 files too when the project's Python is there: the calls
  // verify replays are saved for them (--save-calls, or a temporary folder).
  std::string why, python;
  if ((cx.model || cx.other) && (!a.ptes.empty() || !a.pt2s.empty())) python = runtime_python(why);
  const bool temp_calls = !python.empty() && cx.opt.save_calls.empty();
  if (temp_calls)
    cx.opt.save_calls = (fs::temp_directory_path() / fmt::format("hfx_verify_calls_{}", ::getpid())).string();
  const fs::path calls = cx.opt.save_calls;
  run_reference_checks(cx, a, manifest);
  if (cx.model || cx.other)
    save_program_calls(cx, cx.model ? static_cast<const Model&>(*cx.model) : *cx.other, a.pt2s);
  if (cx.model || cx.other) runtime_judge(cx, python, why, a.ptes, a.pt2s, calls);
  if (temp_calls) {
    fs::remove_all(calls);
    cx.opt.save_calls.clear();
  }
}

void run_reference_checks(Context& cx, Artifacts& a, const std::optional<artifact::Manifest>& manifest) {
  if (cx.model) {
    for (auto& c : a.comps) check_onnx_static(cx, c, manifest);
#ifdef HFX_HAVE_ORT
    if (!a.comps.empty()) ort_checks(cx, a.comps);
#else
    for (auto& c : a.comps)
      cx.add(c.name, "numerics", "skipped",
             "hfx was built without ONNX Runtime: the ONNX graphs were not run");
#endif
    for (const auto& p : a.ptes) check_pte(cx, p);
    for (const auto& p : a.pt2s) check_pt2(cx, p);
  } else if (cx.other) {
    // A folder with only .pt2 archives: running them needs PyTorch (check_pt2 says so), as for the
    // decoder-only models; every other folder must replay the recorded calls somewhere.
    if (a.any_onnx || !a.ptes.empty() || (a.pt2s.empty() && a.ggufs.empty()))
      component_checks(cx, *cx.other, a.ptes);
    for (const auto& p : a.pt2s) check_pt2(cx, p);
  }
  for (const auto& p : a.ggufs) check_gguf(cx, p, cx.model ? *cx.model : *cx.other);
}

// Peak memory of the verify process, and the artifacts' size beside it.
void report_memory(Context& cx, const Artifacts& a, int64_t rss0) {
  cx.memory["peak_rss_bytes"] = peak_rss_bytes();
  cx.memory["peak_rss_delta_bytes"] = peak_rss_bytes() - rss0;
  cx.memory["how"] =
      "VmHWM of /proc/self/status (the verify process: eager reference + ONNX Runtime sessions)";
  if (cx.model || cx.other) {
    int64_t total = 0;
    for (const auto& c : a.comps) total += c.info.value("size_bytes", int64_t{0});
    for (const auto& p : a.ptes) total += static_cast<int64_t>(fs::file_size(p));
    for (const auto& p : a.pt2s) total += static_cast<int64_t>(fs::file_size(p));
    for (const auto& p : a.ggufs) total += static_cast<int64_t>(fs::file_size(p));
    cx.add("verify", "memory", "info",
           fmt::format("peak RSS {:.1f} MiB (+{:.1f} MiB during verify); artifacts {:.2f} MiB in all",
                       cx.memory["peak_rss_bytes"].get<int64_t>() / 1048576.0,
                       cx.memory["peak_rss_delta_bytes"].get<int64_t>() / 1048576.0, total / 1048576.0),
           cx.memory);
  }
}

// The verdict (no failure, and something was really run against the reference), the reports written
// (verify.json, verify.html) and, when asked, the manifest's verify section.
VerifyReport finish(Context& cx, const Artifacts& a, const std::optional<artifact::Manifest>& manifest) {
  VerifyReport rep;
  const VerifyOptions& options = cx.opt;
  // Verdict: no failure, and something was really run against the reference; an artifact whose only
  // numerics check is a runtime that could not run (a .pt2 without PyTorch) is not judged, never a pass.
  bool ran = false;
  std::set<std::string> judged;
  for (const auto& c : cx.checks) {
    if (c.status == "failed" && rep.first_failure.empty())
      rep.first_failure = fmt::format("{} {}: {}", c.component, c.check, c.message);
    const bool numerics = c.check == "numerics" || c.check == "runtime numerics";
    if (numerics && c.status == "passed") {
      ran = true;
      judged.insert(c.component);
    }
  }
  if (rep.first_failure.empty() && !ran && a.pt2s.empty() && a.ggufs.empty()) {
    cx.add(
        "verify", "numerics", "failed",
        "expected at least one artifact run against the reference, got none (built without ONNX Runtime?)");
    rep.first_failure = "verify numerics: " + cx.checks.back().message;
  }
  // A .pte's methods are judged as "model.pte:forward": they cover "model.pte".
  auto covered = [&](const std::string& comp) {
    auto it = judged.lower_bound(comp);
    return it != judged.end() && (*it == comp || it->rfind(comp + ":", 0) == 0);
  };
  for (const auto& c : cx.checks)
    if (c.status == "not_judged" && !covered(c.component) && rep.not_judged.empty())
      rep.not_judged = fmt::format("{} {}: {}", c.component, c.check, c.message);
  rep.verdict = !rep.first_failure.empty() ? "failed" : !rep.not_judged.empty() ? "not_judged" : "verified";
  rep.passed = rep.verdict == "verified";
  rep.checks = cx.checks;
  rep.json = report_json(cx, rep, a.comps);

  rep.json_path = options.json_path.empty() ? (cx.out / "verify.json").string() : options.json_path;
  rep.html_path = options.html_path.empty() ? (cx.out / "verify.html").string() : options.html_path;
  io::write_file_atomic(rep.json_path, rep.json.dump(2));
  io::write_file_atomic(rep.html_path, render_html(rep.json));
  if (options.write_manifest && manifest) {
    json summary = {{"passed", rep.passed},
                    {"verdict", rep.verdict},
                    {"first_failure", rep.first_failure},
                    {"not_judged", rep.not_judged},
                    {"summary", rep.json["summary"]},
                    {"checked_at", rep.json["checked_at"]},
                    {"reference", cx.reference_dir}};
    json lines = json::array();
    for (const auto& c : cx.checks)
      lines.push_back(
          {{"component", c.component}, {"check", c.check}, {"status", c.status}, {"message", c.message}});
    summary["checks"] = lines;
    // The tolerances the numerics were judged by (the precision row), shown in the manifest too.
    if (rep.json.contains("tolerances")) summary["tolerances"] = rep.json["tolerances"];
    if (rep.json.contains("precision")) summary["precision"] = rep.json["precision"];
    artifact::record_verify_result(cx.out.string(), rep.passed, summary);
  }
  return rep;
}

}  // namespace

VerifyReport run_verify(const VerifyOptions& options) {
  Context cx;
  cx.opt = options;
  HFX_CHECK(!options.out_dir.empty() && fs::is_directory(options.out_dir), kComp,
            "expected an export folder, got '{}' (not a folder)", options.out_dir);
  cx.out = fs::absolute(options.out_dir).lexically_normal();
  const int64_t rss0 = peak_rss_bytes();
  Artifacts a = find_artifacts(cx);
  const std::optional<artifact::Manifest> manifest = check_manifest(cx);
  load_reference(cx, manifest);
  run_checks(cx, a, manifest);
  report_memory(cx, a, rss0);
  return finish(cx, a, manifest);
}

std::string render_table(const VerifyReport& r) {
  std::string s;
  size_t wc = 9, wk = 9;
  for (const auto& c : r.checks) {
    wc = std::max(wc, c.component.size());
    wk = std::max(wk, c.check.size());
  }
  s += fmt::format("{:<{}}  {:<{}}  {:<7}  {}\n", "component", wc, "check", wk, "status", "detail");
  s += std::string(wc + wk + 30, '-') + "\n";
  for (const auto& c : r.checks) {
    std::string st = c.status == "passed"       ? "PASS"
                     : c.status == "failed"     ? "FAIL"
                     : c.status == "skipped"    ? "skip"
                     : c.status == "not_judged" ? "not judged"
                                                : "info";
    s += fmt::format("{:<{}}  {:<{}}  {:<7}  {}\n", c.component, wc, c.check, wk, st, c.message);
  }
  const json& sm = r.json.contains("summary") ? r.json["summary"] : json::object();
  const std::string head = r.verdict == "verified" ? "VERIFIED"
                           : r.verdict == "failed" ? "FAILED"
                                                   : "NOT JUDGED";
  s += fmt::format("\n{}: {} passed, {} failed, {} skipped, {} not judged — report {} , {}\n", head,
                   sm.value("passed", 0), sm.value("failed", 0), sm.value("skipped", 0),
                   sm.value("not_judged", 0), r.json_path, r.html_path);
  if (!r.first_failure.empty()) s += "first failure: " + r.first_failure + "\n";
  if (r.verdict == "not_judged") s += "not judged: " + r.not_judged + "\n";
  return s;
}

}  // namespace hfx::verify
