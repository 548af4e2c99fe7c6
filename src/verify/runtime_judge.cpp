// The released runtimes judge `hfx verify`'s .pte and .pt2 files: ExecuTorch's Python runtime (portable
// kernels, XNNPACK delegate) replays the calls verify saved (call_fixture.h), and PyTorch replays each .pt2's
// through torch.export.load, then calls past its range constraints. The Python side (runtime_judge.py,
// embedded here at build time) only runs calls and writes what the runtime computed; every comparison and
// bound stays here, the same ones the in-process checks use, so the two judges of a file can differ only in
// who ran it.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

#include <fmt/format.h>

#include "hfx/core/error.h"
#include "hfx_gen/runtime_judge_py.h"
#include "verify/call_fixture.h"
#include "verify/verify_internal.h"

namespace hfx::verify::detail {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string first_line(const std::string& s, size_t max = 300) {
  std::string l = s.substr(0, s.find('\n'));
  return l.size() > max ? l.substr(0, max) : l;
}

// The judge's run: the versions it reports and per file "ok..." or the first error line.
struct JudgeRun {
  json versions = json::object(), results = json::object();
  std::string error;  ///< the interpreter or the script failed as a whole
};

JudgeRun run_script(const std::string& python, const fs::path& calls, const fs::path& out,
                    const std::vector<fs::path>& ptes, const std::vector<fs::path>& pt2s) {
  JudgeRun r;
  const fs::path script = out / "runtime_judge.py";
  std::ofstream(script) << kRuntimeJudgePy;
  std::string cmd =
      fmt::format("{} {} --calls {} --out {}", shell_quote(python), shell_quote(script.string()),
                  shell_quote(calls.string()), shell_quote(out.string()));
  for (const auto& p : ptes) cmd += " --pte " + shell_quote(p.string());
  for (const auto& p : pt2s) cmd += " --pt2 " + shell_quote(p.string());
  cmd += " 2>" + shell_quote((out / "stderr.txt").string());
  FILE* f = ::popen(cmd.c_str(), "r");
  if (!f) {
    r.error = fmt::format("could not start {}", python);
    return r;
  }
  std::string text;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) text.append(buf, n);
  const int status = ::pclose(f);
  const std::string last = text.substr(text.rfind('\n', text.size() >= 2 ? text.size() - 2 : 0) + 1);
  json j = json::parse(last, nullptr, false);
  if (status != 0 || !j.is_object()) {
    std::string err;
    std::ifstream e(out / "stderr.txt");
    for (std::string line; std::getline(e, line);)
      if (!line.empty()) err = line;  // a Python traceback ends with the exception
    r.error = fmt::format("{} exited {}: {}", python, WIFEXITED(status) ? WEXITSTATUS(status) : -1,
                          err.empty() ? first_line(text) : first_line(err));
    return r;
  }
  r.versions = j.value("versions", json::object());
  r.results = j.value("results", json::object());
  return r;
}

std::vector<fs::path> calls_of(const fs::path& dir, const std::string& stem) {
  std::vector<fs::path> v;
  if (!fs::is_directory(dir)) return v;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string n = e.path().filename().string();
    if (n.rfind(stem + ".", 0) == 0 && e.path().extension() == ".call") v.push_back(e.path());
  }
  std::sort(v.begin(), v.end());
  return v;
}

std::string slurp(const fs::path& p) {
  std::ifstream f(p);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

// One .pte: every saved call of each method against eager's outputs, every probe refused.
void judge_pte(Context& cx, const fs::path& pte, const fs::path& calls, const fs::path& out,
               const std::string& runtime, const json& results) {
  const std::string file = pte.filename().string(), stem = pte.stem().string();
  std::map<std::string, Worst> worst;
  std::map<std::string, std::pair<int, std::string>> probes;  // refused, first not refused
  std::map<std::string, std::string> failures;
  const DType dtype = cx.model ? cx.model->config().dtype : cx.other->config().dtype;
  Tolerance fwd_tol = cx.tol;  // a decoder's forward: the bound check_pte holds it to
  const PteTolerance pt = pte_tolerance_of(cx, dtype, pte_backend(cx.out));
  fwd_tol.logits_abs = pt.logits_abs;
  fwd_tol.logits_rel = pt.logits_rel;
  // The judge's word on the file as a whole: a runtime process that ended mid-replay (an abort) fails it.
  const std::string whole = results.value(file, std::string("no result"));
  if (whole.rfind("ok", 0) != 0) {
    cx.add(file, "runtime numerics", "failed",
           fmt::format("expected {} to replay {}, got: {}", runtime, file, whole));
    return;
  }
  for (const fs::path& f : calls_of(calls, stem)) {
    const CallFixture in = read_call_fixture(f.string());
    const std::string comp = fmt::format("{}:{}", file, in.method);
    const fs::path got = out / f.filename(), err = fs::path(got.string() + ".error");
    if (in.expect_error) {
      auto& [refused, escaped] = probes[comp];
      if (fs::exists(err))
        refused++;
      else if (escaped.empty())
        escaped = fmt::format("expected {} to refuse the out-of-contract call {}, got outputs", runtime,
                              f.filename().string());
      continue;
    }
    if (fs::exists(err) || !fs::exists(got)) {
      failures.emplace(comp, fmt::format("expected {} to run {}, got: {}", runtime, f.filename().string(),
                                         fs::exists(err) ? slurp(err) : "no outputs"));
      continue;
    }
    const CallFixture res = read_call_fixture(got.string());
    Worst& w = worst[comp];
    if (res.outputs.size() < in.outputs.size()) {
      failures.emplace(comp, fmt::format("expected {} outputs from {} in {}, got {}", in.outputs.size(),
                                         f.filename().string(), runtime, res.outputs.size()));
      continue;
    }
    const Tolerance& tol = in.method == "forward" && cx.model ? fwd_tol : cx.tol;
    for (size_t i = 0; i < in.outputs.size(); i++)
      compare(w, tol, in.outputs[i].first, in.method, res.outputs[i].second.to_floats(),
              in.outputs[i].second);
    w.calls++;
  }
  if (worst.empty() && failures.empty())
    cx.add(file, "runtime numerics", "failed",
           fmt::format("expected saved calls of {} to replay in {}, got none", file, runtime));
  for (const auto& [comp, w] : worst)
    if (!failures.count(comp))
      report(cx, comp, w, runtime, "runtime numerics",
             comp == file + ":forward" && cx.model ? &fwd_tol : &cx.tol);
  for (const auto& [comp, why] : failures) cx.add(comp, "runtime numerics", "failed", why);
  for (const auto& [comp, p] : probes) {
    if (p.second.empty())
      cx.add(comp, "runtime rejects", "passed",
             fmt::format("{} out-of-contract calls refused by {}", p.first, runtime));
    else
      cx.add(comp, "runtime rejects", "failed", p.second);
  }
}

// The eager output a .pt2 output stands for: the program returns a KV cache under its input's name.
bool same_output(const std::string& runtime_name, const std::string& eager_name) {
  return runtime_name == eager_name || (runtime_name.rfind("past_key_values.", 0) == 0 &&
                                        "present." + runtime_name.substr(16) == eager_name);
}

// One .pt2 on the calls verify saved (save_program_calls): every output against eager's, every probe refused.
void judge_pt2(Context& cx, const fs::path& pt2, const fs::path& calls, const fs::path& out,
               const std::string& runtime) {
  const std::string file = pt2.filename().string(), stem = pt2.stem().string();
  Worst w;
  std::string failure;
  const std::vector<fs::path> saved = calls_of(calls, stem);
  if (saved.empty())
    failure = fmt::format(
        "expected saved calls of program '{}' to replay in {}, got none (no program of the "
        "generation loop has that name)",
        stem, runtime);
  for (const fs::path& f : saved) {
    const CallFixture in = read_call_fixture(f.string());
    const fs::path got = out / f.filename(), err = fs::path(got.string() + ".error");
    if (fs::exists(err) || !fs::exists(got)) {
      failure = fmt::format("expected {} to run {}, got: {}", runtime, f.filename().string(),
                            fs::exists(err) ? slurp(err) : "no outputs");
      break;
    }
    const CallFixture res = read_call_fixture(got.string());
    for (const auto& [name, want] : in.outputs) {
      auto it = std::find_if(res.outputs.begin(), res.outputs.end(),
                             [&](const auto& o) { return same_output(o.first, name); });
      if (it == res.outputs.end()) {
        failure = fmt::format("expected output '{}' of {} from {}, got none", name, file, runtime);
        break;
      }
      compare(w, cx.tol, name, stem, it->second.to_floats(), want);
    }
    if (!failure.empty()) break;
    w.calls++;
  }
  if (failure.empty())
    report(cx, file, w, runtime, "runtime numerics");
  else
    cx.add(file, "runtime numerics", "failed", failure);
  // Probes: a refused one leaves <stem>.forward.probeK.call.error, one that ran leaves its .call.
  int refused = 0;
  std::string escaped;
  for (const auto& e : fs::directory_iterator(out)) {
    const std::string n = e.path().filename().string();
    if (n.rfind(stem + ".forward.probe", 0) != 0) continue;
    if (e.path().extension() == ".error")
      refused++;
    else if (escaped.empty())
      escaped = fmt::format("expected {} to refuse {} (beyond the program's range constraints), got outputs",
                            runtime, read_call_fixture(e.path().string()).method);
  }
  if (!escaped.empty())
    cx.add(file, "runtime rejects", "failed", escaped);
  else if (refused > 0)
    cx.add(file, "runtime rejects", "passed",
           fmt::format("{} out-of-contract calls (each bounded dimension one past its range, every axis of "
                       "it at once) refused by {}",
                       refused, runtime));
}

}  // namespace

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string runtime_python(std::string& why) {
  if (const char* j = std::getenv("HFX_RUNTIME_JUDGE"); j && std::string(j) == "0") {
    why = "HFX_RUNTIME_JUDGE=0";
    return "";
  }
  if (const char* p = std::getenv("HFX_PYTHON"); p && *p) {
    if (::access(p, X_OK) == 0) return p;
    why = fmt::format("HFX_PYTHON={} is not an executable", p);
    return "";
  }
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  std::vector<std::string> tried;
  fs::path d = exe.parent_path();
  for (int up = 0; up < 3 && !d.empty(); up++, d = d.parent_path()) {
    const fs::path py = d / ".venv" / "bin" / "python";
    tried.push_back(py.string());
    if (::access(py.c_str(), X_OK) == 0) return py.string();
    if (d == d.root_path()) break;
  }
  why = fmt::format(
      "no Python with the released runtimes: set HFX_PYTHON to an interpreter with torch and executorch "
      "(scripts/setup.sh makes one as .venv); looked at {}",
      fmt::join(tried, ", "));
  return "";
}

void runtime_judge(Context& cx, const std::string& python, const std::string& why,
                   const std::vector<fs::path>& ptes, const std::vector<fs::path>& pt2s,
                   const fs::path& calls) {
  if (ptes.empty() && pt2s.empty()) return;
  auto not_judged = [&](const std::string& reason) {
    for (const auto& p : ptes) cx.add(p.filename().string(), "runtime numerics", "not_judged", reason);
    for (const auto& p : pt2s) cx.add(p.filename().string(), "runtime numerics", "not_judged", reason);
  };
  if (python.empty()) return not_judged(why);
  cx.step("the released runtimes (Python)");
  const fs::path out = fs::temp_directory_path() / fmt::format("hfx_runtime_judge_{}", ::getpid());
  fs::remove_all(out);
  fs::create_directories(out);
  const JudgeRun r = run_script(python, calls, out, ptes, pt2s);
  if (!r.error.empty()) {
    not_judged(r.error);
  } else {
    const std::string torch = r.versions.value("torch", "?"), et = r.versions.value("executorch", "?");
    for (const auto& p : ptes)
      judge_pte(cx, p, calls, out, fmt::format("ExecuTorch {} (Python runtime, pybindings)", et), r.results);
    for (const auto& p : pt2s)
      judge_pt2(cx, p, calls, out, fmt::format("PyTorch {} (torch.export.load)", torch));
  }
  if (!std::getenv("HFX_KEEP_RUNTIME_JUDGE")) fs::remove_all(out);
}

}  // namespace hfx::verify::detail
