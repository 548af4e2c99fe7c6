// The registries: the one place where every patch, fix and list entry is declared. Backends keep
// their entries next to their stages and hand them over through their register_* function, called
// here in a fixed order.
#include "hfx/export/registry.h"

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

// Fills the tables on first use. The register_* functions call back into the accessors below,
// which must then see the tables without re-entering the fill.
Tables& tables() {
  static bool started = false;
  if (!started) {
    started = true;
    register_onnx_entries();
    register_executorch_entries();
    register_dynamo_entries();
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
