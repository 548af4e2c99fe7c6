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
    check_registries();  // a typo in a backend, stage or op name fails here, not silently later
  }
  return raw();
}
}  // namespace

const std::vector<StageDecl>& declared_stages() {
  using K = EntryKind;
  static const std::vector<StageDecl> stages = {
      // src/export/onnx/onnx_exporter.cpp
      {"onnx", 1, "torch patches (around capture)", {K::patch}},
      {"onnx", 2, "ONNX patches; node fixes after the decompositions", {K::patch, K::node_fix}},
      {"onnx", 3, "FX node fixes, then program fixes", {K::node_fix, K::program_fix}},
      {"onnx", 4, "ONNX translations (the translation table)", {}},
      {"onnx", 5, "ONNX IR fixes (src/export/onnx/ir_fixes.cpp)", {}},
      // src/export/executorch/executorch_exporter.cpp
      {"executorch", 1, "backend preparation (the backend table)", {}},
      {"executorch", 2, "torch patches", {K::patch}},
      {"executorch", 3, "ExecuTorch patches", {K::patch}},
      {"executorch", 4, "program fixes", {K::program_fix}},
      {"executorch", 5, "node fixes", {K::node_fix}},
      {"executorch", 6, "partitioner (the XNNPACK op table, src/export/executorch/xnnpack_delegate.cpp)", {}},
      // src/export/dynamo/dynamo_exporter.cpp
      {"dynamo", 1, "forward-signature flattening", {}},
      {"dynamo", 2, "model patches, then node and program fixes", {K::patch, K::node_fix, K::program_fix}},
      {"dynamo", 3, "pytree / treespec of the flattened cache", {}},
      {"dynamo", 4, "dynamic shapes (range constraints)", {}},
      {"dynamo", 5, "state cleanup", {}},
  };
  return stages;
}

std::vector<PatchEntry>& patch_registry() { return tables().patches; }
std::vector<NodeFixEntry>& node_fix_registry() { return tables().node_fixes; }
std::vector<ProgramFixEntry>& program_fix_registry() { return tables().program_fixes; }
std::vector<DisableOptimizeEntry>& disable_optimize_registry() { return tables().disable_optimize; }
std::vector<ExportSkipEntry>& export_skip_registry() { return tables().export_skips; }

}  // namespace hfx
