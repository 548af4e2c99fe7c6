// tools/sweep/task.cpp — one sweep task: `hfx export` then `hfx verify` as child processes of the task
// runner, in a temporary folder renamed into RESULTS/tasks/<id> at the end. The result records how each
// step ended and the figures read back from the export's own verify.json and manifest.json.
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <fstream>
#include <thread>

#include <fmt/format.h>

#include "hfx/core/error.h"
#include "hfx/io/safetensors.h"
#include "sweep.h"

namespace hfx::sweep {

namespace {

constexpr const char* kComp = "sweep";

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

// The last "hfx: ..." line of a step's log: the error the CLI printed, i.e. the reason the step failed.
// A command-line parse error (an option this hfx does not have, e.g. a plan's --dtype) is CLI11's line
// before its "Run with --help" hint.
std::string failure_line(const fs::path& log) {
  std::ifstream f(log);
  std::string line, last, any;
  while (std::getline(f, line)) {
    if (line.rfind("hfx: ", 0) == 0 && line.rfind("hfx: warning", 0) != 0) last = line.substr(5);
    if (!line.empty() && line != "Run with --help for more information.") any = line;
  }
  return last.empty() ? any : last;
}

// Largest "max_abs" anywhere under a numerics check's data (logits and KV of every shape).
void max_abs_in(const json& j, double& worst) {
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) {
      if (k == "max_abs" && v.is_number())
        worst = std::max(worst, v.get<double>());
      else
        max_abs_in(v, worst);
    }
  } else if (j.is_array()) {
    for (const auto& v : j) max_abs_in(v, worst);
  }
}

// Figures of the export: worst numerics error, artifact bytes, cold start, batch-1 decode speed, peak RSS.
void read_figures(const fs::path& out, json& r) {
  if (fs::exists(out / "manifest.json")) {
    json m = json::parse(io::read_file((out / "manifest.json").string()));
    int64_t graph = 0, all = 0;
    for (const auto& f : m["files"]) {
      all += f["size"].get<int64_t>();
      if (f["role"] == "graph" || f["role"] == "weights") graph += f["size"].get<int64_t>();
    }
    r["artifact_bytes"] = graph;
    r["total_bytes"] = all;
  }
  if (!fs::exists(out / "verify.json")) return;
  json v = json::parse(io::read_file((out / "verify.json").string()));
  r["verify"] = {{"passed", v["passed"]}, {"first_failure", v["first_failure"]}, {"summary", v["summary"]}};
  // Nothing failed but a runtime could not judge an artifact: its own status, never a pass.
  if (v.value("verdict", "") == "not_judged" && r.value("status", "") == "failed") {
    r["status"] = "not_judged";
    r["reason"] = "verify: not judged: " + v.value("not_judged", std::string());
  }
  double worst = -1;
  for (const auto& c : v["checks"]) {
    const std::string check = c.value("check", "");
    if (check == "numerics") max_abs_in(c["data"], worst);
    if (check == "cold start" && !r.contains("load_ms") && c["data"].is_object())
      r["load_ms"] = c["data"].value("cold_start_ms", 0.0);
    if (check == "greedy" && !r.contains("decode_tok_s") && c["data"].is_object())
      for (const auto& run : c["data"].value("runs", json::array()))
        if (run.value("batch", 0) == 1) r["decode_tok_s"] = run.value("artifact_tokens_per_s", 0.0);
    if (check == "memory" && c["data"].is_object())
      r["peak_rss_bytes"] = c["data"].value("peak_rss_bytes", 0);
  }
  r["worst_abs"] = worst >= 0 ? json(worst) : json(nullptr);
}

json step_json(const ProcEnd& e) {
  return {{"exit_code", e.exit_code},         {"signal", e.signal},           {"timed_out", e.timed_out},
          {"out_of_memory", e.out_of_memory}, {"peak_rss_bytes", e.peak_rss}, {"seconds", e.seconds}};
}

// Resident set size of a running process (VmRSS of /proc/PID/status), 0 once it is gone.
int64_t rss_bytes(pid_t pid) {
  std::ifstream f(fmt::format("/proc/{}/status", pid));
  for (std::string line; std::getline(f, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::atoll(line.c_str() + 6) * 1024;
  return 0;
}

// Moves `tmp` to `dst`, the previous result (if any) surviving until the new one is in place.
void swap_into_place(const fs::path& tmp, const fs::path& dst) {
  fs::path prev = dst.parent_path() / fmt::format(".{}.prev.{}", dst.filename().string(), ::getpid());
  if (fs::exists(dst)) fs::rename(dst, prev);
  fs::rename(tmp, dst);
  fs::remove_all(prev);
}

// Outcome of a step that did not exit 0: killed by a signal, by the time or memory limit, or failed with a
// message.
void set_failure(json& r, const std::string& stage, const ProcEnd& e, const fs::path& log,
                 const Resources& res) {
  r["stage"] = stage;
  if (e.timed_out) {
    r["status"] = "timeout";
    r["reason"] =
        fmt::format("{} exceeded the task's time limit ({:g} min, resources.time_min) and was killed", stage,
                    res.time_min);
  } else if (e.out_of_memory) {
    r["status"] = "out_of_memory";
    // The reason leaves the sampled peak out (it is in the step's peak_rss_bytes): the same task over the
    // same limit reads the same on every engine and run.
    r["reason"] = fmt::format(
        "out of memory: {} went over the task's limit of {} MiB resident (resources.mem_mb) and was killed",
        stage, res.mem_mb);
  } else if (e.signal) {
    r["status"] = "killed";
    r["signal"] = e.signal;
    r["reason"] = fmt::format("{} killed by signal {} ({})", stage, e.signal, strsignal(e.signal));
  } else {
    r["status"] = "failed";
    r["reason"] = fmt::format("{} exited {}: {}", stage, e.exit_code, failure_line(log));
  }
}

}  // namespace

ProcEnd run_process(const std::vector<std::string>& argv, const fs::path& log, double deadline_s,
                    int64_t mem_limit) {
  double t0 = now_s();
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  HFX_CHECK(pid >= 0, kComp, "expected to start '{}', got fork error: {}", argv[0], std::strerror(errno));
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);  // the parent died before prctl
    int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      ::close(fd);
    }
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    std::fprintf(stderr, "hfx: [sweep] could not run %s: %s\n", args[0], std::strerror(errno));
    ::_exit(127);
  }
  ProcEnd e;
  int st = 0;
  // Poll rather than block, so the time and memory limits can be enforced. Memory is the resident set,
  // sampled as Slurm's jobacct_gather samples it for OverMemoryKill: the same limit binds on both engines,
  // whether or not the cluster confines jobs by cgroup.
  while (true) {
    pid_t w = ::waitpid(pid, &st, WNOHANG);
    if (w == pid) break;
    if (w < 0 && errno != EINTR) break;
    bool over = false;
    if (int64_t rss = rss_bytes(pid); rss > 0) {
      e.peak_rss = std::max(e.peak_rss, rss);
      over = mem_limit > 0 && rss > mem_limit;
    }
    if (!e.timed_out && !e.out_of_memory && (over || (deadline_s > 0 && now_s() - t0 > deadline_s))) {
      (over ? e.out_of_memory : e.timed_out) = true;
      ::kill(pid, SIGKILL);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  e.seconds = now_s() - t0;
  if (WIFEXITED(st)) e.exit_code = WEXITSTATUS(st);
  if (WIFSIGNALED(st)) e.signal = WTERMSIG(st);
  return e;
}

fs::path task_dir(const fs::path& results, const Task& t) { return results / "tasks" / t.id; }

std::optional<json> read_result(const fs::path& results, const Task& t) {
  fs::path f = task_dir(results, t) / "result.json";
  if (!fs::exists(f)) return std::nullopt;
  try {
    return json::parse(io::read_file(f.string()));
  } catch (const json::exception&) {
    return std::nullopt;
  }
}

json run_task(const Plan& plan, const Task& t, const fs::path& results, const std::string& run_id) {
  double t0 = now_s();
  fs::path tmp = results / "tasks" / fmt::format(".{}.tmp.{}", t.id, ::getpid());
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  json r = {{"id", t.id},
            {"index", t.index},
            {"model", t.model->name},
            {"variant", t.variant->name},
            {"format", t.variant->format},
            {"dtype", t.variant->dtype},
            {"quantize", t.variant->quantize},
            {"run_id", run_id},
            {"started_at", utc_now()}};
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  r["host"] = host;
  // The CPUs the task ran on: the local engine's pinning, or whatever the scheduler gave it.
  cpu_set_t cpus;
  if (::sched_getaffinity(0, sizeof cpus, &cpus) == 0) {
    r["cpus_allowed"] = json::array();
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &cpus)) r["cpus_allowed"].push_back(c);
  }
  std::string exe = self_exe();
  std::vector<std::string> ex = export_argv(t, tmp / "export"), ve = verify_argv(t, tmp / "export");
  r["commands"] = {fmt::format("hfx {}", fmt::join(export_argv(t, "OUT"), " ")),
                   fmt::format("hfx {}", fmt::join(verify_argv(t, "OUT"), " "))};
  ex.insert(ex.begin(), exe);
  ve.insert(ve.begin(), exe);
  // The task's CPU count is its thread count on every engine: numerics depend on the summation order.
  ::setenv("HFX_NUM_THREADS", std::to_string(plan.resources.cpus).c_str(), 1);
  double limit = plan.resources.time_min * 60.0;
  int64_t mem = plan.resources.mem_mb << 20;
  ProcEnd e = run_process(ex, tmp / "export.log", limit, mem);
  r["export"] = step_json(e);
  r["status"] = "passed";
  if (e.exit_code != 0) {
    set_failure(r, "export", e, tmp / "export.log", plan.resources);
  } else {
    ProcEnd v = run_process(ve, tmp / "verify.log", limit - (now_s() - t0), mem);
    r["verify_step"] = step_json(v);
    if (v.exit_code != 0) set_failure(r, "verify", v, tmp / "verify.log", plan.resources);
    if (!v.signal) read_figures(tmp / "export", r);
  }
  // Reasons name the task's final folder relative to RESULTS, so two runs of a plan compare equal.
  if (r.contains("reason")) {
    std::string reason = r["reason"], from = tmp.string(), to = "tasks/" + t.id;
    for (size_t at; (at = reason.find(from)) != std::string::npos;) reason.replace(at, from.size(), to);
    r["reason"] = reason;
  }
  // A step that died mid-way leaves partial outputs: they never count, only the logs stay.
  if (r["status"] == "killed" || r["status"] == "timeout" || r["status"] == "out_of_memory")
    fs::remove_all(tmp / "export");
  r["duration_s"] = now_s() - t0;
  io::write_file_atomic((tmp / "result.json").string(), r.dump(2));
  swap_into_place(tmp, task_dir(results, t));
  return r;
}

void record_lost_task(const fs::path& results, const Task& t, const std::string& run_id,
                      const std::string& status, int exit_code, int signal, const std::string& reason) {
  fs::path tasks = results / "tasks";
  fs::create_directories(tasks);
  std::string prefix = "." + t.id + ".tmp.";
  for (const auto& e : fs::directory_iterator(tasks))
    if (e.path().filename().string().rfind(prefix, 0) == 0) fs::remove_all(e.path());
  fs::path tmp = tasks / fmt::format(".{}.lost.{}", t.id, ::getpid());
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  json r = {{"id", t.id},
            {"index", t.index},
            {"model", t.model->name},
            {"variant", t.variant->name},
            {"format", t.variant->format},
            {"run_id", run_id},
            {"status", status},
            {"stage", "runner"},
            {"runner", {{"exit_code", exit_code}, {"signal", signal}}},
            {"reason", reason},
            {"started_at", utc_now()}};
  if (signal) r["signal"] = signal;
  io::write_file_atomic((tmp / "result.json").string(), r.dump(2));
  swap_into_place(tmp, task_dir(results, t));
}

std::vector<const Task*> tasks_to_resume(const Plan& plan, const fs::path& results) {
  std::vector<const Task*> out;
  for (const Task& t : plan.tasks) {
    auto r = read_result(results, t);
    if (!r || r->value("status", "") != "passed") out.push_back(&t);
  }
  return out;
}

}  // namespace hfx::sweep
