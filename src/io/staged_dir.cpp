// Staged output folders (see the header). The swap uses renameat2(RENAME_EXCHANGE): one system call that
// exchanges the two names, so a kill at any instant leaves OUT either the old tree or the new one. Two
// renames (OUT → aside, tmp → OUT) would leave a window with no OUT at all.
#include "hfx/io/staged_dir.h"

#include <fcntl.h>
#include <unistd.h>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <system_error>

#include <fmt/format.h>

#include "hfx/core/error.h"
#include "io/fileutil.h"

namespace fs = std::filesystem;

namespace hfx::io {

namespace {

// The pid in `.<name>.<kind>.<pid>`, or 0 when `entry` is not a staging folder of `name`.
pid_t staging_pid(const std::string& entry, const std::string& name) {
  for (const char* kind : {".tmp.", ".prev."}) {
    const std::string prefix = "." + name + kind;
    if (entry.size() <= prefix.size() || entry.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string digits = entry.substr(prefix.size());
    if (digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos) return 0;
    return static_cast<pid_t>(std::stol(digits));
  }
  return 0;
}

}  // namespace

int remove_stale_staging(const std::string& out) {
  const fs::path o = fs::absolute(out);
  std::error_code ec;
  int removed = 0;
  for (const auto& e : fs::directory_iterator(o.parent_path(), ec)) {
    pid_t pid = staging_pid(e.path().filename().string(), o.filename().string());
    // A live process (or one we may not signal) still owns its folder; only ESRCH means it is gone. A
    // previous tree set aside (`.prev.`) is only dropped once OUT exists again.
    if (pid <= 0 || pid == ::getpid() || ::kill(pid, 0) == 0 || errno != ESRCH) continue;
    if (e.path().filename().string().find(".prev.") != std::string::npos && !fs::exists(o)) continue;
    std::error_code rm;
    fs::remove_all(e.path(), rm);
    removed += !rm;
  }
  return removed;
}

StagedDir::StagedDir(const std::string& out) : out_(fs::absolute(out).string()) {
  const fs::path o(out_);
  if (o.filename().empty()) HFX_THROW("io", "expected an output folder name, got '{}'", out);
  remove_stale_staging(out_);
  tmp_ = (o.parent_path() / fmt::format(".{}.tmp.{}", o.filename().string(), ::getpid())).string();
  std::error_code ec;
  fs::remove_all(tmp_, ec);
  fs::create_directories(tmp_, ec);
  if (ec)
    HFX_THROW("io",
              "expected to create the temp folder '{}' beside the output, got {}; check that {} is writable "
              "and has "
              "free space",
              tmp_, ec.message(), o.parent_path().string());
}

StagedDir::~StagedDir() {
  if (committed_) return;
  std::error_code ec;
  fs::remove_all(tmp_, ec);
}

void StagedDir::commit() {
  if (::renameat2(AT_FDCWD, tmp_.c_str(), AT_FDCWD, out_.c_str(), RENAME_EXCHANGE) == 0) {
    committed_ = true;
    std::error_code ec;
    fs::remove_all(tmp_, ec);  // now the previous OUT; a kill here leaves it for remove_stale_staging
    return;
  }
  const int err = errno;
  if (err == ENOENT && ::rename(tmp_.c_str(), out_.c_str()) == 0) {  // no previous OUT
    committed_ = true;
    return;
  }
  if (err == EINVAL || err == ENOSYS) {
    // A filesystem without RENAME_EXCHANGE: OUT goes aside, then the new tree in. A kill between the two
    // renames leaves the previous tree in `.<name>.prev.<pid>` (not removed: remove_stale_staging only
    // takes it when OUT exists again).
    const fs::path o(out_);
    const std::string aside =
        (o.parent_path() / fmt::format(".{}.prev.{}", o.filename().string(), ::getpid())).string();
    if (::rename(out_.c_str(), aside.c_str()) == 0 && ::rename(tmp_.c_str(), out_.c_str()) == 0) {
      committed_ = true;
      std::error_code ec;
      fs::remove_all(aside, ec);
      return;
    }
  }
  HFX_THROW("io", "expected to move '{}' into place of '{}', got {}; the previous output is unchanged", tmp_,
            out_, detail::errno_text(err == ENOENT ? errno : err));
}

}  // namespace hfx::io
