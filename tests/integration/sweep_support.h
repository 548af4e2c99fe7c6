// tests/integration/sweep_support.h — helpers shared by the `hfx sweep` tests (sweep_test.cpp for the local
// engine, sweep_slurm_test.cpp for the Slurm engine): running the binary, tiny checkpoints with one
// corrupted, the test plan, and reading the results back independently of hfx.
#pragma once
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include <nlohmann/json.hpp>

namespace sweep_test {

namespace fs = std::filesystem;
using nlohmann::json;

struct Proc {
  int rc = -1;
  std::string out;
};

inline Proc sh(const std::string& cmd) {
  Proc r;
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  int st = ::pclose(p);
  r.rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

inline std::string cli() { return HFX_CLI; }
// `hfx sweep` with the released runtimes judging each verify: a .pt2 task is a pass only when PyTorch ran it
// (without them it is not_judged), so the sweep tests turn the suite's HFX_RUNTIME_JUDGE=0 back on.
inline std::string sweep_cli() { return std::string("HFX_RUNTIME_JUDGE=1 ") + HFX_CLI; }

inline std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

inline json read_json(const fs::path& p) { return json::parse(slurp(p)); }

inline fs::path tmpdir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("hfx_sweep_test_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// Tiny checkpoints of decoder architectures whose four variants all pass, and a copy of llama with its
// weights file cut in half (a corrupted download).
inline void make_checkpoints(const fs::path& dir, const std::vector<std::string>& archs) {
  for (const auto& a : archs) {
    std::string cmd = cli();  // appended, not chained operator+: g++ 12 -O2 warns (-Wstringop-overflow)
    cmd.append(" create-tiny ").append(a).append(" -o ").append((dir / a).string());
    Proc c = sh(cmd);
    ASSERT_EQ(c.rc, 0) << c.out;
  }
  fs::copy(dir / "llama", dir / "broken", fs::copy_options::recursive);
  fs::resize_file(dir / "broken" / "model.safetensors",
                  fs::file_size(dir / "llama" / "model.safetensors") / 2);
}

// The plan: archs × 4 variants (bert 3), the broken checkpoint with the onnx variant only. Short verify
// settings keep CI time down; the shapes leave out batch>1 chunks over a cache (see the report on
// GroupQueryAttention).
inline fs::path write_plan(const fs::path& dir, const std::vector<std::string>& archs, const json& variants) {
  json models = json::array();
  // bert has no ONNX Runtime fused operator, so `--target ort` is refused for it: the other three variants.
  for (const auto& a : archs) {
    std::string path = "ckpt/";
    path += a;
    if (a == "bert")
      models.push_back({{"name", a}, {"path", path}, {"variants", {"onnx", "executorch", "dynamo"}}});
    else
      models.push_back(path);
  }
  models.push_back({{"name", "broken"}, {"path", "ckpt/broken"}, {"variants", {"onnx"}}});
  json plan = {{"name", "tiny-zoo"},
               {"models", models},
               {"variants", variants},
               {"verify", {{"tokens", 4}, {"warm_runs", 1}, {"threads", 1}, {"shapes", "1x4,2x1+4,1x3+2"}}},
               {"resources", {{"cpus", 1}, {"mem_mb", 2048}, {"time_min", 10}}}};
  std::ofstream(dir / "plan.json") << plan.dump(2);
  return dir / "plan.json";
}

inline const json kFourVariants =
    json::parse(R"([{"format": "onnx"}, {"name": "onnx-ort", "format": "onnx", "target": "ort"},
                                          {"format": "executorch"}, {"format": "dynamo"}])");

inline const json& task(const json& summary, const std::string& id) {
  for (const auto& t : summary["tasks"])
    if (t["id"] == id) return t;
  static json none;
  ADD_FAILURE() << "no task " << id;
  return none;
}

// Largest max_abs under the numerics checks of a verify.json, read here independently of hfx sweep.
inline double worst_numerics(const json& j) {
  double w = -1;
  std::function<void(const json&)> walk = [&](const json& x) {
    if (x.is_object())
      for (const auto& [k, v] : x.items()) {
        if (k == "max_abs" && v.is_number())
          w = std::max(w, v.get<double>());
        else
          walk(v);
      }
    else if (x.is_array())
      for (const auto& v : x) walk(v);
  };
  for (const auto& c : j["checks"])
    if (c["check"] == "numerics") walk(c["data"]);
  return w;
}

// Every passed task has its export, manifest and verify report, and its figures come from them.
inline void check_passed_task(const fs::path& results, const json& t) {
  fs::path d = results / "tasks" / t["id"].get<std::string>();
  ASSERT_TRUE(fs::exists(d / "export" / "manifest.json")) << d;
  json v = read_json(d / "export" / "verify.json");
  EXPECT_TRUE(v["passed"].get<bool>()) << d;
  double w = worst_numerics(v);
  if (w < 0)
    EXPECT_TRUE(t["worst_abs"].is_null()) << t.dump();
  else
    EXPECT_DOUBLE_EQ(t["worst_abs"].get<double>(), w) << t.dump();
  int64_t graph = 0;
  json manifest = read_json(d / "export" / "manifest.json");
  for (const auto& f : manifest["files"])
    if (f["role"] == "graph" || f["role"] == "weights") graph += f["size"].get<int64_t>();
  EXPECT_EQ(t["artifact_bytes"].get<int64_t>(), graph);
  EXPECT_EQ(t["export"]["exit_code"], 0);
  EXPECT_EQ(t["verify_step"]["exit_code"], 0);
}

inline std::vector<std::string> leftovers(const fs::path& results) {
  std::vector<std::string> v;
  for (const auto& e : fs::directory_iterator(results / "tasks"))
    if (e.path().filename().string()[0] == '.') v.push_back(e.path().filename().string());
  return v;
}

// The facts that must not depend on where a task ran (timings, hosts and run ids do).
inline json comparable(const json& summary) {
  json out = json::object();
  for (const auto& t : summary["tasks"])
    out[t["id"].get<std::string>()] = {{"status", t["status"]},
                                       {"stage", t.value("stage", "")},
                                       {"reason", t.value("reason", "")},
                                       {"worst_abs", t.value("worst_abs", json())},
                                       {"artifact_bytes", t.value("artifact_bytes", json())}};
  return out;
}

// Polls until a task's temporary folder appears; returns the runner pid in its name (0 on time out).
inline pid_t wait_for_runner(const fs::path& results, const std::string& id) {
  std::string prefix = "." + id + ".tmp.";
  for (int i = 0; i < 3000; ++i) {
    if (fs::exists(results / "tasks"))
      for (const auto& e : fs::directory_iterator(results / "tasks")) {
        std::string n = e.path().filename().string();
        if (n.rfind(prefix, 0) == 0) return std::stoi(n.substr(prefix.size()));
      }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return 0;
}

// The sweep as a background process, its output in `log`.
inline pid_t start_sweep(const std::string& args, const fs::path& log) {
  pid_t pid = ::fork();
  if (pid == 0) {
    std::string cmd = cli() + " sweep " + args + " > " + log.string() + " 2>&1";
    ::execl("/bin/sh", "sh", "-c", cmd.c_str(), nullptr);
    ::_exit(127);
  }
  return pid;
}

inline int wait_rc(pid_t pid) {
  int st = 0;
  ::waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

}  // namespace sweep_test
