// Patch points: the per-export table of installed handlers. A table is owned by one export and used by
// one thread at a time, so it needs no lock (see the header).
#include "hfx/ops/patch_point.h"

namespace hfx {

const OpHandler* PatchTable::active(const std::string& path) const {
  if (handlers_.empty() || running_.count(path)) return nullptr;
  auto it = handlers_.find(path);
  return it == handlers_.end() ? nullptr : it->second.get();
}

std::unique_ptr<OpHandler> PatchTable::swap(const std::string& path, std::unique_ptr<OpHandler> h) {
  std::unique_ptr<OpHandler> old;
  auto it = handlers_.find(path);
  if (it != handlers_.end()) {
    old = std::move(it->second);
    handlers_.erase(it);
  }
  if (h) handlers_[path] = std::move(h);
  return old;
}

PatchTable::Running::Running(PatchTable& table, const std::string& path) : table_(table), path_(path) {
  table_.running_.insert(path_);
}
PatchTable::Running::~Running() { table_.running_.erase(path_); }

}  // namespace hfx
