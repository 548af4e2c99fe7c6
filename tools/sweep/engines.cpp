// tools/sweep/engines.cpp — where tasks run. Both engines start the same task runner,
// `hfx sweep RESULTS/plan.json --task K -o RESULTS --run-id ID`, and both treat a task whose runner ended
// without writing a result of this run as lost (killed, cancelled, out of memory, timed out).
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "hfx/core/error.h"
#include "hfx/io/safetensors.h"
#include "sweep.h"

namespace hfx::sweep {

namespace {

constexpr const char* kComp = "sweep";

std::vector<std::string> runner_argv(const fs::path& results, const std::string& run_id,
                                     const std::string& task) {
  return {self_exe(), "sweep", (results / "plan.json").string(), "--task", task, "-o", results.string(),
          "--run-id", run_id};
}

// Starts a runner with output to `log`, pinned to `cpus`; it dies with this process (PR_SET_PDEATHSIG).
pid_t spawn(const std::vector<std::string>& argv, const fs::path& log, const std::vector<int>& cpus) {
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  HFX_CHECK(pid >= 0, kComp, "expected to start a task, got fork error: {}", std::strerror(errno));
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      ::close(fd);
    }
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int c : cpus) CPU_SET(c, &set);
    if (::sched_setaffinity(0, sizeof set, &set) != 0) {
      std::fprintf(stderr, "hfx: [sweep] could not pin the task to its CPUs: %s\n", std::strerror(errno));
      ::_exit(126);
    }
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  return pid;
}

void print_done(const json& r, size_t done, size_t total) {
  fmt::print("[{}/{}] {:<32} {}{}\n", done, total, r.value("id", ""), r.value("status", ""),
             r.value("status", "") == "passed" ? "" : "  " + r.value("reason", ""));
  std::fflush(stdout);
}

// After a runner ended: its result of this run, or a lost-task result saying how the runner ended.
json settle(const fs::path& results, const Task& t, const std::string& run_id, int exit_code, int signal,
            const std::string& status, const std::string& reason) {
  auto r = read_result(results, t);
  if (r && r->value("run_id", "") == run_id) return *r;
  record_lost_task(results, t, run_id, status, exit_code, signal, reason);
  return *read_result(results, t);
}

struct Captured {
  int rc = -1;
  std::string out;
};

Captured capture(const std::string& cmd) {
  Captured c;
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  HFX_CHECK(p, kComp, "expected to run '{}', got popen error: {}", cmd, std::strerror(errno));
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) c.out.append(buf, n);
  int st = ::pclose(p);
  c.rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return c;
}

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// "0-3,7,9-10" from sorted task indices.
std::string array_spec(const std::vector<const Task*>& tasks) {
  std::vector<int> ix;
  for (const Task* t : tasks) ix.push_back(t->index);
  std::sort(ix.begin(), ix.end());
  std::string s;
  for (size_t i = 0; i < ix.size();) {
    size_t j = i;
    while (j + 1 < ix.size() && ix[j + 1] == ix[j] + 1) ++j;
    s += (s.empty() ? "" : ",") + (i == j ? std::to_string(ix[i]) : fmt::format("{}-{}", ix[i], ix[j]));
    i = j + 1;
  }
  return s;
}

// One line of `scontrol -o show job` as key=value pairs.
std::map<std::string, std::string> fields(const std::string& line) {
  std::map<std::string, std::string> f;
  std::istringstream in(line);
  std::string tok;
  while (in >> tok) {
    auto eq = tok.find('=');
    if (eq != std::string::npos) f[tok.substr(0, eq)] = tok.substr(eq + 1);
  }
  return f;
}

bool terminal(const std::string& state) {
  static const std::set<std::string> done = {"COMPLETED", "FAILED",        "CANCELLED",
                                             "TIMEOUT",   "OUT_OF_MEMORY", "NODE_FAIL",
                                             "PREEMPTED", "BOOT_FAIL",     "DEADLINE"};
  return done.count(state) > 0;
}

// Polls until every array task is in a terminal state; returns task index -> (JobState, ExitCode).
std::map<int, std::pair<std::string, std::string>> wait_array(const std::string& job, size_t n,
                                                              const std::function<void(int)>& on_end) {
  std::map<int, std::pair<std::string, std::string>> ended;
  while (true) {
    Captured c = capture("scontrol -o show job " + job);
    HFX_CHECK(c.rc == 0, kComp,
              "expected scontrol to show job {}, got exit {}: {}; is MinJobAge long enough "
              "to keep finished jobs?",
              job, c.rc, c.out);
    bool pending = false;
    std::istringstream in(c.out);
    for (std::string line; std::getline(in, line);) {
      auto f = fields(line);
      if (!f.count("ArrayTaskId") || !terminal(f["JobState"])) {
        pending = true;
        continue;
      }
      int k = std::stoi(f["ArrayTaskId"]);
      if (ended.count(k)) continue;
      ended[k] = {f["JobState"], f["ExitCode"]};
      on_end(k);
    }
    if (!pending && ended.size() >= n) return ended;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
}

// The CPUs this process may run on, which the local engine hands out to tasks.
std::vector<int> allowed_cpus() {
  cpu_set_t set;
  HFX_CHECK(::sched_getaffinity(0, sizeof set, &set) == 0, kComp,
            "expected to read this process's CPUs, got: {}", std::strerror(errno));
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

}  // namespace

void run_local(const Plan& plan, const std::vector<const Task*>& tasks, const fs::path& results, int jobs,
               const std::string& run_id) {
  fs::create_directories(results / "logs");
  // Each running task holds resources.cpus CPUs of its own, as Slurm would give it.
  std::vector<int> free_cpus = allowed_cpus();
  const size_t per_task = static_cast<size_t>(plan.resources.cpus);
  HFX_CHECK(per_task <= free_cpus.size(), kComp,
            "expected resources.cpus <= {} (the CPUs this process may use), got {}; lower it or run on Slurm",
            free_cpus.size(), per_task);
  std::map<pid_t, std::pair<const Task*, std::vector<int>>> running;
  size_t next = 0, done = 0;
  while (next < tasks.size() || !running.empty()) {
    while (next < tasks.size() && static_cast<int>(running.size()) < jobs && free_cpus.size() >= per_task) {
      const Task* t = tasks[next++];
      std::vector<int> mine(free_cpus.end() - static_cast<long>(per_task), free_cpus.end());
      free_cpus.resize(free_cpus.size() - per_task);
      running[spawn(runner_argv(results, run_id, std::to_string(t->index)),
                    results / "logs" / (t->id + ".log"), mine)] = {t, mine};
    }
    int st = 0;
    pid_t pid = ::waitpid(-1, &st, 0);
    if (pid < 0) {
      HFX_CHECK(errno == EINTR, kComp, "expected to wait for task processes, got: {}", std::strerror(errno));
      continue;
    }
    auto it = running.find(pid);
    if (it == running.end()) continue;
    const Task& t = *it->second.first;
    free_cpus.insert(free_cpus.end(), it->second.second.begin(), it->second.second.end());
    running.erase(it);
    int code = WIFEXITED(st) ? WEXITSTATUS(st) : -1, sig = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
    std::string reason =
        sig ? fmt::format("task runner killed by signal {} ({}); its partial outputs were discarded", sig,
                          strsignal(sig))
            : fmt::format("task runner exited {} without a result (see logs/{}.log)", code, t.id);
    print_done(settle(results, t, run_id, code, sig, sig ? "killed" : "failed", reason), ++done,
               tasks.size());
  }
}

void run_slurm(const Plan& plan, const std::vector<const Task*>& tasks, const fs::path& results,
               const std::string& run_id) {
  fs::path sd = results / "slurm";
  fs::create_directories(sd);
  const Resources& r = plan.resources;
  std::string cmd;
  for (const auto& a : runner_argv(results, run_id, "@K@")) cmd += (cmd.empty() ? "" : " ") + quote(a);
  cmd.replace(cmd.find("'@K@'"), 5, "\"$SLURM_ARRAY_TASK_ID\"");
  std::string script = fmt::format(
      "#!/bin/sh\n# hfx sweep {}: one array task per plan task (index = task index in {})\n"
      "#SBATCH --job-name=hfx-sweep-{}\n#SBATCH --array={}\n#SBATCH --cpus-per-task={}\n#SBATCH --mem={}M\n"
      "#SBATCH --time={}\n#SBATCH --output={}/task-%a.log\n#SBATCH --chdir={}\nexec {}\n",
      plan.name, (results / "plan.json").string(), plan.name, array_spec(tasks), r.cpus, r.mem_mb,
      static_cast<int>(std::ceil(r.time_min)), sd.string(), results.string(), cmd);
  io::write_file_atomic((sd / "sweep.sbatch").string(), script);
  Captured sub = capture("sbatch --parsable " + quote((sd / "sweep.sbatch").string()));
  HFX_CHECK(sub.rc == 0, kComp,
            "expected sbatch to accept the job array, got exit {}: {}; check that Slurm is "
            "reachable (sinfo) and SLURM_CONF is set",
            sub.rc, sub.out);
  std::string job = sub.out.substr(0, sub.out.find_first_of(";\n"));
  fmt::print("submitted Slurm job {} (array {}, {} tasks)\n", job, array_spec(tasks), tasks.size());
  std::fflush(stdout);
  std::map<int, const Task*> by_index;
  for (const Task* t : tasks) by_index[t->index] = t;
  size_t done = 0;
  auto ended = wait_array(job, tasks.size(), [&](int k) {
    if (auto res = read_result(results, *by_index.at(k)); res && res->value("run_id", "") == run_id)
      print_done(*res, ++done, tasks.size());
  });
  for (const Task* t : tasks) {
    const auto& [state, exit] = ended[t->index];
    int code = std::atoi(exit.c_str()), sig = std::atoi(exit.substr(exit.find(':') + 1).c_str());
    std::string status = state == "CANCELLED"       ? "killed"
                         : state == "OUT_OF_MEMORY" ? "out_of_memory"
                         : state == "TIMEOUT"       ? "timeout"
                                                    : (sig ? "killed" : "failed");
    std::string reason = fmt::format(
        "Slurm array task {}_{} ended {} (ExitCode {}) without a result; its partial "
        "outputs were discarded (log: slurm/task-{}.log)",
        job, t->index, state, exit, t->index);
    json res = settle(results, *t, run_id, code, sig, status, reason);
    if (res.value("stage", "") == "runner") print_done(res, ++done, tasks.size());
  }
}

}  // namespace hfx::sweep
