// hfx/io/staged_dir.h — an output folder that appears whole or not at all.
//
// `hfx export` writes everything into a temp folder beside OUT (`.<name>.tmp.<pid>`, same filesystem) and
// swaps it into place only when it is complete: with renameat2(RENAME_EXCHANGE) when OUT already exists,
// so there is no moment at which OUT is missing or half-written, even under kill -9; with rename(2)
// otherwise. An export that throws removes its temp folder; one that is killed leaves it, and the next
// export of the same OUT removes temp folders whose process is gone.
#pragma once
#include <string>

namespace hfx::io {

class StagedDir {
 public:
  /// Removes stale temp folders of `out` (their process is gone) and makes a fresh one. Throws
  /// hfx::Error("io", ...) when the folder beside OUT cannot be written (read-only, disk full).
  explicit StagedDir(const std::string& out);
  /// Without commit(): removes the temp folder (the previous OUT, if any, is untouched).
  ~StagedDir();
  StagedDir(const StagedDir&) = delete;
  StagedDir& operator=(const StagedDir&) = delete;

  /// The temp folder to write into.
  const std::string& path() const { return tmp_; }
  /// Puts the temp folder in place of OUT atomically, then removes the previous version.
  void commit();

 private:
  std::string out_, tmp_;
  bool committed_ = false;
};

/// Removes `.<name>.tmp.<pid>` / `.<name>.prev.<pid>` folders beside `out` whose process no longer runs.
/// Returns how many it removed.
int remove_stale_staging(const std::string& out);

}  // namespace hfx::io
