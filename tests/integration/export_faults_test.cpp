// Faults during `hfx export`: a kill -9 at random points never leaves a half-written OUT and never
// damages a previous OUT of the same name; a full disk (a small tmpfs mounted here — the suite runs as
// root; a failed mount fails the test with the reason, it is not skipped) gives a clear error and leaves
// no partial files. Kill points: a fixed seed draws delays spread over one uninterrupted export of the
// same model and flags, for onnx (with and without --external-data), executorch and dynamo.
#include <gtest/gtest.h>

#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>
#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <thread>

#include <nlohmann/json.hpp>

#include "hfx/models/tiny.h"

namespace fs = std::filesystem;

namespace {

constexpr uint32_t kSeed = 20261202;
constexpr int kKillsPerFormat = 10;

struct Case {
  std::string name, format;
  std::vector<std::string> flags;
};
const std::vector<Case> kCases = {{"onnx", "onnx", {}},
                                  {"onnx_external", "onnx", {"--external-data"}},
                                  {"executorch", "executorch", {"--max-seq-len", "32"}},
                                  {"dynamo", "dynamo", {}}};

// Every file under `dir` with its bytes; manifest.json without its creation time (the one field that
// differs between two complete exports of the same model and flags).
using Tree = std::map<std::string, std::string>;
Tree read_tree(const fs::path& dir) {
  Tree t;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    std::ifstream f(e.path(), std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(f)), {});
    std::string rel = fs::relative(e.path(), dir).generic_string();
    if (rel == "manifest.json") {
      auto j = nlohmann::json::parse(bytes, nullptr, false);
      if (j.is_object()) j.erase("created_at");
      bytes = j.dump();
    }
    t[rel] = std::move(bytes);
  }
  return t;
}

// Differences between two trees, for a failure message ("" when equal).
std::string diff(const Tree& want, const Tree& got) {
  std::string d;
  for (const auto& [p, b] : want)
    if (!got.count(p))
      d += " missing " + p + ";";
    else if (got.at(p) != b)
      d += " changed " + p + ";";
  for (const auto& [p, b] : got)
    if (!want.count(p)) d += " extra " + p + ";";
  return d;
}

// `hfx export` as a child process; stdout and stderr go to `log`.
pid_t spawn_export(const fs::path& ckpt, const Case& c, const fs::path& out, const fs::path& log) {
  std::vector<std::string> args = {HFX_CLI,  "export", ckpt.string(), "--format",
                                   c.format, "-o",     out.string()};
  args.insert(args.end(), c.flags.begin(), c.flags.end());
  pid_t pid = ::fork();
  if (pid == 0) {
    FILE* f = std::freopen(log.c_str(), "w", stdout);
    if (f) ::dup2(::fileno(stdout), 2);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  return pid;
}

int wait_exit(pid_t pid) {
  int st = 0;
  ::waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

std::string slurp(const fs::path& p) {
  std::ifstream f(p);
  return std::string((std::istreambuf_iterator<char>(f)), {});
}

// Entries beside OUT that belong to an export of OUT (its temp and previous-version folders).
std::vector<std::string> leftovers(const fs::path& out) {
  std::vector<std::string> v;
  const std::string prefix = "." + out.filename().string() + ".";
  for (const auto& e : fs::directory_iterator(out.parent_path()))
    if (e.path().filename().string().rfind(prefix, 0) == 0) v.push_back(e.path().filename().string());
  return v;
}

struct Scratch {
  fs::path path = fs::temp_directory_path() / ("hfx_faults_" + std::to_string(::getpid()));
  Scratch() {
    fs::remove_all(path);
    fs::create_directories(path);
    hfx::create_tiny("llama", (path / "ckpt").string());
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// A tmpfs of `bytes` at `dir` for the object's lifetime.
struct Tmpfs {
  fs::path dir;
  bool mounted = false;
  Tmpfs(fs::path d, uint64_t bytes) : dir(std::move(d)) {
    fs::create_directories(dir);
    std::string opts = "size=" + std::to_string(bytes);
    if (::mount("tmpfs", dir.c_str(), "tmpfs", 0, opts.c_str()) != 0)
      ADD_FAILURE() << "expected to mount a " << bytes << "-byte tmpfs at " << dir
                    << " for the full-disk test (needs root "
                    << "or CAP_SYS_ADMIN), got " << std::strerror(errno) << "; this test is not skipped";
    else
      mounted = true;
  }
  ~Tmpfs() {
    if (mounted) ::umount2(dir.c_str(), MNT_DETACH);
  }
};

uint64_t disk_bytes(const Tree& t) {
  uint64_t n = 0;
  for (const auto& [p, b] : t) n += (b.size() + 4095) / 4096 * 4096;
  return n;
}

}  // namespace

TEST(ExportFaults, KillAtRandomPointsNeverLeavesAHalfWrittenOrDamagedOut) {
  Scratch s;
  std::mt19937 rng(kSeed);
  for (const Case& c : kCases) {
    SCOPED_TRACE("format " + c.name + ", seed " + std::to_string(kSeed));
    const fs::path ref = s.path / ("ref_" + c.name), out = s.path / ("out_" + c.name),
                   log = s.path / "log.txt";
    auto t0 = std::chrono::steady_clock::now();
    ASSERT_EQ(wait_exit(spawn_export(s.path / "ckpt", c, ref, log)), 0) << slurp(log);
    const double full_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    const Tree want = read_tree(ref);
    // Kill points spread over the whole export (and a little past it, where it may already be done).
    std::uniform_real_distribution<double> at(0.0, 1.1 * full_ms);
    for (int i = 0; i < kKillsPerFormat; i++) {
      // The first half starts without OUT, the second half over a complete previous OUT.
      const bool previous = i >= kKillsPerFormat / 2;
      if (!previous)
        fs::remove_all(out);
      else if (!fs::exists(out)) {
        ASSERT_EQ(wait_exit(spawn_export(s.path / "ckpt", c, out, log)), 0) << slurp(log);
      }
      const int delay_ms = static_cast<int>(at(rng));
      pid_t pid = spawn_export(s.path / "ckpt", c, out, log);
      std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
      ::kill(pid, SIGKILL);
      const int rc = wait_exit(pid);
      const std::string where = "kill " + std::to_string(i) + " at " + std::to_string(delay_ms) + " ms of ~" +
                                std::to_string(static_cast<int>(full_ms)) + " ms (exit " +
                                std::to_string(rc) + ")";
      if (previous) {
        EXPECT_TRUE(fs::exists(out)) << where << ": expected the previous OUT to survive, got none";
      }
      if (fs::exists(out)) {
        std::string d = diff(want, read_tree(out));
        EXPECT_EQ(d, "") << where
                         << ": expected OUT to be a complete export (the previous or the new one), got" << d;
      }
    }
    // The next export completes and clears what killed runs left beside OUT.
    ASSERT_EQ(wait_exit(spawn_export(s.path / "ckpt", c, out, log)), 0) << slurp(log);
    EXPECT_EQ(diff(want, read_tree(out)), "");
    EXPECT_EQ(leftovers(out), std::vector<std::string>{})
        << "expected no temp folders of OUT after a complete export";
  }
}

TEST(ExportFaults, FullDiskGivesAClearErrorAndLeavesNoPartialFiles) {
  Scratch s;
  for (const Case& c : kCases) {
    SCOPED_TRACE("format " + c.name);
    const fs::path ref = s.path / ("ref_" + c.name), log = s.path / "log.txt";
    ASSERT_EQ(wait_exit(spawn_export(s.path / "ckpt", c, ref, log)), 0) << slurp(log);
    const Tree want = read_tree(ref);
    const uint64_t need = disk_bytes(want);
    {
      // Half of what the export needs: it fails, and the disk is left empty.
      Tmpfs disk(s.path / ("small_" + c.name), need / 2 / 4096 * 4096);
      ASSERT_TRUE(disk.mounted);
      const fs::path out = disk.dir / "out";
      EXPECT_NE(wait_exit(spawn_export(s.path / "ckpt", c, out, log)), 0) << slurp(log);
      const std::string err = slurp(log);
      EXPECT_NE(err.find("No space left on device"), std::string::npos) << err;
      EXPECT_NE(err.find("hfx: ["), std::string::npos) << "expected a [component] error, got: " << err;
      EXPECT_EQ(err.find("[internal]"), std::string::npos) << err;
      EXPECT_TRUE(fs::is_empty(disk.dir)) << "expected no partial files on the full disk";
    }
    {
      // Room for one export and a half: the first fits; the second (written beside the first before the
      // swap) runs out of space and leaves the first as it was.
      Tmpfs disk(s.path / ("one_" + c.name), (need * 3 / 2 + 4095) / 4096 * 4096);
      ASSERT_TRUE(disk.mounted);
      const fs::path out = disk.dir / "out";
      ASSERT_EQ(wait_exit(spawn_export(s.path / "ckpt", c, out, log)), 0) << slurp(log);
      EXPECT_NE(wait_exit(spawn_export(s.path / "ckpt", c, out, log)), 0) << slurp(log);
      EXPECT_NE(slurp(log).find("No space left on device"), std::string::npos) << slurp(log);
      EXPECT_EQ(diff(want, read_tree(out)), "") << "expected the previous OUT unchanged";
      EXPECT_EQ(leftovers(out), std::vector<std::string>{}) << "expected no partial files beside OUT";
    }
  }
}
