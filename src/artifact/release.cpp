// Releases side by side with an atomically switched `current` symlink; see include/hfx/artifact/manifest.h.
// Every visible change is one rename: the copy is made under a hidden temp name and renamed to its
// release name only when complete and re-verified; `current` is replaced by renaming a fresh
// `current.tmp` symlink over it; history.json is rewritten atomically. An flock on RELEASES/.lock
// serializes concurrent release/rollback calls. Leftovers of a killed run (hidden temp folders, a
// dangling current.tmp) are removed by the next call.
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "hfx/artifact/manifest.h"
#include "hfx/core/error.h"
#include "hfx/io/safetensors.h"

namespace hfx::artifact {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* kComp = "release";

// Test hook: HFX_TEST_CRASH_AFTER=<step> aborts right after that step (the crash tests).
void step_done(const char* step) {
  const char* e = std::getenv("HFX_TEST_CRASH_AFTER");
  if (e && std::strcmp(e, step) == 0) std::abort();
}

std::string utc_now(const char* fmt_str = "%Y-%m-%dT%H:%M:%SZ") {
  std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, fmt_str, &tm);
  return buf;
}

void fsync_path(const fs::path& p, bool dir) {
  int fd = ::open(p.c_str(), (dir ? O_DIRECTORY : 0) | O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

class DirLock {
 public:
  explicit DirLock(const fs::path& dir) {
    fd_ = ::open((dir / ".lock").c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
    HFX_CHECK(fd_ >= 0, kComp, "expected to create {}/.lock, got: {}", dir.string(), std::strerror(errno));
    HFX_CHECK(::flock(fd_, LOCK_EX) == 0, kComp, "expected to lock {}/.lock, got: {}", dir.string(),
              std::strerror(errno));
  }
  ~DirLock() {
    ::flock(fd_, LOCK_UN);
    ::close(fd_);
  }

 private:
  int fd_ = -1;
};

// Leftovers of a run that was killed: hidden temp copies and a current.tmp symlink.
void clean_leftovers(const fs::path& dir) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string n = e.path().filename().string();
    if (n.rfind(".tmp-", 0) == 0) fs::remove_all(e.path(), ec);
  }
  if (fs::is_symlink(fs::symlink_status(dir / "current.tmp"))) fs::remove(dir / "current.tmp", ec);
}

void copy_tree(const fs::path& from, const fs::path& to) {
  fs::create_directories(to);
  for (const auto& e : fs::directory_iterator(from)) {
    const std::string n = e.path().filename().string();
    if (!n.empty() && n[0] == '.') continue;  // temp files of atomic writers
    const fs::path dst = to / n;
    if (e.is_directory()) {
      copy_tree(e.path(), dst);
    } else if (e.is_regular_file()) {
      fs::copy_file(e.path(), dst, fs::copy_options::overwrite_existing);
      fsync_path(dst, false);
    }
  }
  fsync_path(to, true);
}

std::string sanitize(const std::string& s) {
  std::string r;
  for (size_t i = 0; i < s.size(); i++) {
    char c = s[i];
    if (c == '/') {
      r += "--";
    } else {
      r += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-') ? c : '_';
    }
  }
  while (!r.empty() && r[0] == '.') r.erase(0, 1);  // never hidden
  return r.empty() ? "model" : r;
}

json history_json(const std::vector<HistoryEntry>& h) {
  json entries = json::array();
  for (const auto& e : h)
    entries.push_back({{"name", e.name},
                       {"action", e.action},
                       {"at", e.at},
                       {"model_id", e.model_id},
                       {"revision", e.revision},
                       {"previous", e.previous}});
  return {{"schema_version", 1}, {"entries", entries}};
}

void append_history(const fs::path& dir, HistoryEntry e) {
  auto h = read_history(dir.string());
  e.at = utc_now();
  h.push_back(std::move(e));
  io::write_file_atomic((dir / "history.json").string(), history_json(h).dump(2) + "\n");
}

// `current` → `name`, atomically: a fresh current.tmp symlink renamed over current.
void switch_current(const fs::path& dir, const std::string& name, bool crash_hooks) {
  const fs::path tmp = dir / "current.tmp", cur = dir / "current";
  std::error_code ec;
  fs::remove(tmp, ec);
  fs::create_directory_symlink(name, tmp);
  if (crash_hooks) step_done("linked");
  if (fs::exists(fs::symlink_status(cur)) && !fs::is_symlink(fs::symlink_status(cur)))
    HFX_THROW(kComp, "expected {} to be a symlink, got a regular file or folder (move it away)",
              cur.string());
  if (::rename(tmp.c_str(), cur.c_str()) != 0)
    HFX_THROW(kComp, "expected to switch {}, got: {}", cur.string(), std::strerror(errno));
  fsync_path(dir, true);
}

// Whether RELEASES/name is a complete release that passed verify, with matching checksums.
std::optional<std::string> release_problem(const fs::path& dir) {
  if (!fs::is_directory(dir)) return "its folder is missing";
  try {
    Manifest m = Manifest::read(dir.string());
    if (m.verify.status != "passed") return fmt::format("its verify status is '{}'", m.verify.status);
    if (auto mm = m.verify_checksums(dir.string())) return mm->message();
  } catch (const Error& e) {
    return std::string(e.what());
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> current_release(const std::string& releases_dir) {
  const fs::path cur = fs::path(releases_dir) / "current";
  if (!fs::is_symlink(fs::symlink_status(cur))) return std::nullopt;
  return fs::read_symlink(cur).filename().string();
}

std::vector<HistoryEntry> read_history(const std::string& releases_dir) {
  const fs::path p = fs::path(releases_dir) / "history.json";
  std::vector<HistoryEntry> h;
  if (!fs::exists(p)) return h;
  json j;
  try {
    j = json::parse(io::read_file(p.string()));
    for (const auto& e : j.at("entries"))
      h.push_back({e.at("name").get<std::string>(), e.value("action", "release"), e.value("at", ""),
                   e.value("model_id", ""), e.value("revision", ""), e.value("previous", "")});
  } catch (const json::exception& e) {
    HFX_THROW(kComp, "expected a valid {}, got: {}", p.string(), e.what());
  }
  return h;
}

std::string release(const std::string& out_dir, const std::string& releases_dir) {
  const fs::path out = fs::absolute(out_dir);
  const fs::path dir = fs::absolute(releases_dir);
  fs::create_directories(dir);
  DirLock lock(dir);
  clean_leftovers(dir);

  Manifest m;
  try {
    m = Manifest::read(out.string());
  } catch (const Error& e) {
    HFX_THROW(kComp, "expected a manifest to release {}, got: {}", out.string(), e.what());
  }
  if (m.verify.status != "passed")
    HFX_THROW(kComp,
              "expected verify status 'passed' in {}/manifest.json, got '{}' (run hfx verify first; current "
              "is unchanged)",
              out.string(), m.verify.status);
  if (auto mm = m.verify_checksums(out.string()))
    HFX_THROW(kComp, "expected the files of {} to match its manifest, got: {} (current is unchanged)",
              out.string(), mm->message());
  step_done("checked");

  const std::string manifest_hash = io::sha256_file((out / "manifest.json").string());
  const std::string short_hash = m.revision.empty()
                                     ? manifest_hash.substr(0, 8)
                                     : m.revision.substr(0, std::min<size_t>(8, m.revision.size()));
  std::string name = fmt::format("{}-{}-{}", sanitize(m.model_id), short_hash, utc_now("%Y%m%dT%H%M%SZ"));
  for (int i = 2; fs::exists(fs::symlink_status(dir / name)); i++)
    name = fmt::format("{}-{}-{}-{}", sanitize(m.model_id), short_hash, utc_now("%Y%m%dT%H%M%SZ"), i);

  const fs::path tmp = dir / fmt::format(".tmp-{}.{}", name, ::getpid());
  try {
    copy_tree(out, tmp);
    Manifest copied = Manifest::read(tmp.string());
    if (auto mm = copied.verify_checksums(tmp.string()))
      HFX_THROW(kComp, "expected the copy in {} to match the manifest, got: {}", tmp.string(), mm->message());
  } catch (...) {
    std::error_code ec;
    fs::remove_all(tmp, ec);
    throw;
  }
  step_done("copied");
  if (::rename(tmp.c_str(), (dir / name).c_str()) != 0)
    HFX_THROW(kComp, "expected to rename {} to {}, got: {}", tmp.string(), name, std::strerror(errno));
  fsync_path(dir, true);
  step_done("renamed");

  const std::string previous = current_release(dir.string()).value_or("");
  switch_current(dir, name, true);
  step_done("switched");
  append_history(dir, {name, "release", "", m.model_id, m.revision, previous});
  step_done("history");
  return name;
}

std::string rollback(const std::string& releases_dir) {
  const fs::path dir = fs::absolute(releases_dir);
  HFX_CHECK(fs::is_directory(dir), kComp, "expected a releases folder, got '{}' (not a folder)",
            releases_dir);
  DirLock lock(dir);
  clean_leftovers(dir);
  const auto cur = current_release(dir.string());
  HFX_CHECK(cur.has_value(), kComp, "expected {}/current to point at a release, got none", dir.string());
  const auto h = read_history(dir.string());
  // Start below the entry that released the current one (if the history has it; a run killed between
  // the switch and the history write leaves current newer than the history).
  int64_t start = static_cast<int64_t>(h.size());
  for (int64_t i = static_cast<int64_t>(h.size()) - 1; i >= 0; i--)
    if (h[i].action == "release" && h[i].name == *cur) {
      start = i;
      break;
    }
  std::vector<std::string> skipped;
  for (int64_t i = start - 1; i >= 0; i--) {
    const HistoryEntry& e = h[i];
    if (e.action != "release" || e.name == *cur) continue;
    // a release that was rolled back from after it was released is not a target
    bool rolled_back = false;
    for (size_t j = i + 1; j < h.size(); j++)
      rolled_back = rolled_back || (h[j].action == "rollback" && h[j].previous == e.name);
    if (rolled_back) continue;
    if (auto problem = release_problem(dir / e.name)) {
      skipped.push_back(fmt::format("{} ({})", e.name, *problem));
      continue;
    }
    switch_current(dir, e.name, false);
    append_history(dir, {e.name, "rollback", "", e.model_id, e.revision, *cur});
    return e.name;
  }
  HFX_THROW(kComp, "expected a verified release before '{}' in {}/history.json to roll back to, got none{}{}",
            *cur, dir.string(),
            skipped.empty() ? "" : "; skipped: ", fmt::format("{}", fmt::join(skipped, "; ")));
}

}  // namespace hfx::artifact
