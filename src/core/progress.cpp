// src/core/progress.cpp — the stderr progress bar: "\r" redraws of one line, cleared to the end of the
// line (ESC[K) so a shorter redraw leaves no tail; stdout is never touched, so piped output stays clean.
#include "hfx/core/progress.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>

namespace hfx {

namespace {

std::atomic<bool> g_enabled{true};

std::string amount(uint64_t n, Progress::Unit unit) {
  if (unit != Progress::Unit::kBytes) return std::to_string(n);
  if (n >= (uint64_t(1) << 30)) return fmt::format("{:.2f} GiB", n / double(uint64_t(1) << 30));
  if (n >= (uint64_t(1) << 20)) return fmt::format("{:.1f} MiB", n / double(uint64_t(1) << 20));
  if (n >= 1024) return fmt::format("{:.1f} KiB", n / 1024.0);
  return fmt::format("{} B", n);
}

}  // namespace

void set_progress_enabled(bool enabled) { g_enabled = enabled; }

bool progress_active() {
  const char* off = std::getenv("HF_HUB_DISABLE_PROGRESS_BARS");
  if (off && *off && std::string(off) != "0") return false;
  return g_enabled && ::isatty(STDERR_FILENO);
}

Progress::Progress(std::string label, uint64_t total, Unit unit)
    : label_(std::move(label)), total_(total), unit_(unit), active_(progress_active()) {}

Progress::~Progress() { finish(); }

void Progress::set_total(uint64_t total) {
  std::lock_guard<std::mutex> g(mu_);
  total_ = total;
}

void Progress::update(uint64_t done, const std::string& detail) {
  if (!active_) return;
  std::lock_guard<std::mutex> g(mu_);
  done_ = done;
  if (!detail.empty()) detail_ = detail;
  draw(done_ == total_);
}

void Progress::finish() {
  if (!active_) return;
  std::lock_guard<std::mutex> g(mu_);
  if (finished_) return;
  finished_ = true;
  if (!drawn_) return;
  if (drawn_done_ != done_ || drawn_total_ != total_) draw(true);
  std::fputc('\n', stderr);
  std::fflush(stderr);
}

void Progress::draw(bool force) {
  const auto now = std::chrono::steady_clock::now();
  if (!force && drawn_ && now - last_ < std::chrono::milliseconds(100)) return;
  last_ = now;
  drawn_ = true;
  drawn_done_ = done_;
  drawn_total_ = total_;
  constexpr int kWidth = 24;
  const double frac = total_ ? std::min(1.0, double(done_) / double(total_)) : 0.0;
  const int fill = static_cast<int>(frac * kWidth);
  const char* unit = unit_ == Unit::kTokens ? " tokens" : unit_ == Unit::kSteps ? " steps" : "";
  std::string counts = total_ ? fmt::format("{}/{}{}", amount(done_, unit_), amount(total_, unit_), unit)
                              : fmt::format("{}{}", amount(done_, unit_), unit);
  fmt::print(stderr, "\r{} [{}{}] {:3.0f}% {}{}{}\x1b[K", label_, std::string(fill, '#'),
             std::string(kWidth - fill, '.'), frac * 100, counts, detail_.empty() ? "" : "  ", detail_);
  std::fflush(stderr);
}

}  // namespace hfx
