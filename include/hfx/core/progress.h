// hfx/core/progress.h — one progress bar on stderr for long work: downloads (bytes), exports and verifies
// (steps), generation (tokens). It draws only when stderr is a terminal, progress is enabled (the CLI's
// --quiet disables it) and HF_HUB_DISABLE_PROGRESS_BARS is not set; otherwise every call is a no-op, so
// callers never test for it. Redraws are throttled to 10 per second; safe to update from several threads.
#pragma once
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

namespace hfx {

/// Enables or disables every progress bar of the process (default: enabled).
void set_progress_enabled(bool enabled);
/// True when bars draw: enabled, stderr is a terminal, HF_HUB_DISABLE_PROGRESS_BARS unset.
bool progress_active();

class Progress {
 public:
  enum class Unit { kSteps, kBytes, kTokens };
  /// A bar labelled `label` ("download org/name") over `total` units (0: unknown yet).
  Progress(std::string label, uint64_t total, Unit unit = Unit::kSteps);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  /// Sets the total (a download learns it after the HEAD requests).
  void set_total(uint64_t total);
  /// Moves the bar to `done`; `detail` (the current step's name) is shown after the counts.
  void update(uint64_t done, const std::string& detail = "");
  /// Draws the final state and ends the line. Called by the destructor if not called before.
  void finish();

 private:
  void draw(bool force);
  std::string label_, detail_;
  uint64_t total_ = 0, done_ = 0, drawn_done_ = 0, drawn_total_ = 0;
  Unit unit_;
  bool active_, drawn_ = false, finished_ = false;
  std::chrono::steady_clock::time_point last_{};
  std::mutex mu_;
};

}  // namespace hfx
