// The registries: the one place where every patch, fix and list entry is declared. Backends keep
// their entries next to their stages and hand them over through their register_* function, called
// here in a fixed order.
#include "hfx/export/registry.h"

#include <atomic>
#include <mutex>

namespace hfx {

// Each backend's entries (defined next to its stages, in src/export/<backend>/).
void register_onnx_entries();
void register_executorch_entries();
void register_dynamo_entries();

namespace {
struct Tables {
  std::vector<PatchEntry> patches;
  std::vector<NodeFixEntry> node_fixes;
  std::vector<ProgramFixEntry> program_fixes;
  std::vector<DisableOptimizeEntry> disable_optimize;
  std::vector<ExportSkipEntry> export_skips;
};

Tables& raw() {
  static Tables t;
  return t;
}

// Fills the tables on first use, once per process even when exports start on several threads at once.
// The register_* functions call back into the accessors below on the filling thread, which must then
// see the tables without waiting on the fill: hence a recursive mutex, and `filled` for the fast path.
Tables& tables() {
  static std::atomic<bool> filled{false};
  if (filled.load(std::memory_order_acquire)) return raw();
  static std::recursive_mutex fill;
  std::lock_guard<std::recursive_mutex> lock(fill);
  static bool started = false;
  if (!started) {
    started = true;
    register_onnx_entries();
    register_executorch_entries();
    register_dynamo_entries();
    filled.store(true, std::memory_order_release);
  }
  return raw();
}
}  // namespace

std::vector<PatchEntry>& patch_registry() { return tables().patches; }
std::vector<NodeFixEntry>& node_fix_registry() { return tables().node_fixes; }
std::vector<ProgramFixEntry>& program_fix_registry() { return tables().program_fixes; }
std::vector<DisableOptimizeEntry>& disable_optimize_registry() { return tables().disable_optimize; }
std::vector<ExportSkipEntry>& export_skip_registry() { return tables().export_skips; }

}  // namespace hfx
