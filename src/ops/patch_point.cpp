// Patch points: a process-wide table of installed handlers. Export is single-threaded per process in
// hfx, so a plain map guarded by a mutex is enough; the running set is thread-local.
#include "hfx/ops/patch_point.h"

#include <map>
#include <mutex>
#include <set>

namespace hfx {
namespace {
std::mutex& mu() {
  static std::mutex m;
  return m;
}
std::map<std::string, std::unique_ptr<OpHandler>>& table() {
  static std::map<std::string, std::unique_ptr<OpHandler>> t;
  return t;
}
thread_local std::set<std::string> running;
}  // namespace

const OpHandler* active_patch(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu());
  if (table().empty() || running.count(path)) return nullptr;
  auto it = table().find(path);
  return it == table().end() ? nullptr : it->second.get();
}

std::unique_ptr<OpHandler> swap_patch(const std::string& path, std::unique_ptr<OpHandler> h) {
  std::lock_guard<std::mutex> lock(mu());
  std::unique_ptr<OpHandler> old;
  auto it = table().find(path);
  if (it != table().end()) {
    old = std::move(it->second);
    table().erase(it);
  }
  if (h) table()[path] = std::move(h);
  return old;
}

size_t installed_patch_count() {
  std::lock_guard<std::mutex> lock(mu());
  return table().size();
}

PatchRunning::PatchRunning(const std::string& path) : path_(path) { running.insert(path); }
PatchRunning::~PatchRunning() { running.erase(path_); }

}  // namespace hfx
