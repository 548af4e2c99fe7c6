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

// Each backend's stages, in the order its exporter runs them: the position is the stage's number.
struct StageRow {
  const char* name;
  const char* what;
  std::vector<EntryKind> runs = {};
  std::vector<Fact> sets = {};
};
using K = EntryKind;
const std::vector<std::pair<std::string, std::vector<StageRow>>>& backend_stage_lists() {
  static const std::vector<std::pair<std::string, std::vector<StageRow>>> lists = {
      {"onnx",  // src/export/onnx/onnx_exporter.cpp
       {{"torch_patches", "torch patches, around capture", {K::patch}},
        {"onnx_patches",
         "ONNX patches; composites without a translation decomposed, node fixes after",
         {K::patch, K::node_fix}},
        {"fx_fixes",
         "FX node fixes, then program fixes, then dead-code elimination",
         {K::node_fix, K::program_fix},
         {Fact::onnx_target}},
        {"translations", "ONNX translations (the translation table) to a ModelProto"},
        {"ir_fixes", "ONNX IR fixes (src/export/onnx/ir_fixes.cpp)"},
        {"write", "emitter: the ModelProto and its weights to onnx/<component>.onnx[_data]"}}},
      {"executorch",  // src/export/executorch/executorch_exporter.cpp
       {{"backend_preparation", "backend preparation (the backend table: dtype, partitioner)"},
        {"torch_patches", "torch patches, around capture", {K::patch}},
        {"executorch_patches", "ExecuTorch patches (static-cache attention), around capture", {K::patch}},
        {"program_fixes", "program fixes", {K::program_fix}, {Fact::constant_dtype}},
        {"node_fixes", "node fixes, then dead-code elimination", {K::node_fix}},
        {"partition_and_emit",
         "the .pte writer: partitioner (the XNNPACK op table, xnnpack_delegate.cpp), then the emitter"}}},
      {"dynamo",  // src/export/dynamo/dynamo_exporter.cpp
       {{"flatten", "forward-signature flattening (capture)"},
        {"model_patches",
         "model patches, then node and program fixes, composites lowered",
         {K::patch, K::node_fix, K::program_fix},
         {Fact::weight_dtype}},
        {"treespec", "pytree / treespec of the flattened cache"},
        {"dynamic_shapes", "dynamic shapes (range constraints, runtime asserts); emitter: the .pt2 archive"},
        {"state_cleanup", "state cleanup (every patch restored)"}}},
      {"gguf",  // src/export/gguf/gguf_exporter.cpp: no program is captured (llama.cpp builds its own graph)
       {{"plan",
         "arch and tensor plan: names, layouts, types (refuses what the arch cannot run, before writing)"},
        {"metadata", "general.*, <arch>.* keys and the tokenizer (tokenizer.ggml.*, chat template)"},
        {"write", "emitter: the tensors streamed, converted and quantized, to model.gguf"}}},
  };
  return lists;
}

}  // namespace

const std::vector<StageDecl>& declared_stages() {
  static const std::vector<StageDecl> stages = [] {
    std::vector<StageDecl> out;
    for (const auto& [backend, rows] : backend_stage_lists())
      for (size_t i = 0; i < rows.size(); i++)
        out.push_back(
            {backend, static_cast<int>(i) + 1, rows[i].name, rows[i].what, rows[i].runs, rows[i].sets});
    return out;
  }();
  return stages;
}

std::vector<PatchEntry>& patch_registry() { return tables().patches; }
std::vector<NodeFixEntry>& node_fix_registry() { return tables().node_fixes; }
std::vector<ProgramFixEntry>& program_fix_registry() { return tables().program_fixes; }
std::vector<DisableOptimizeEntry>& disable_optimize_registry() { return tables().disable_optimize; }
std::vector<ExportSkipEntry>& export_skip_registry() { return tables().export_skips; }

}  // namespace hfx
