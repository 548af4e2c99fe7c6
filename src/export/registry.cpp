// Registry mechanics: installing patches for one stage, running fixes, the lists, and the listing
// behind `hfx registries`. The entries themselves are declared in registry_table.cpp.
#include "hfx/export/registry.h"

#include <algorithm>

#include "hfx/core/error.h"
#include "hfx/ops/op_schema.h"
#include "hfx/passes/pass.h"

namespace hfx {

PatchScope::PatchScope(ExportContext& ctx, const std::string& backend, int stage) : table_(ctx.patches) {
  try {
    for (const PatchEntry& e : patch_registry()) {
      if (e.backend != backend || e.stage != stage) continue;
      for (const std::string& path : e.paths) {
        const OpHandler* cur = table_.active(path);
        OpHandler repl = e.factory(cur, ctx);
        auto prev = table_.swap(path, std::make_unique<OpHandler>(std::move(repl)));
        saved_.emplace_back(path, std::move(prev));
      }
    }
  } catch (...) {
    // A throwing factory: undo what this scope installed. The members are destroyed once, by the
    // constructor's unwinding (the destructor does not run for a constructor that throws).
    restore();
    throw;
  }
}

PatchScope::~PatchScope() { restore(); }

void PatchScope::restore() {
  // Restore in reverse order so stacked patches unwind correctly.
  for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) table_.swap(it->first, std::move(it->second));
  saved_.clear();
}

int apply_node_fixes(const std::string& backend, int stage, Graph& g) {
  int changes = 0;
  for (const NodeFixEntry& e : node_fix_registry()) {
    if (e.backend != backend || e.stage != stage) continue;
    std::vector<Node*> nodes;
    for (const auto& n : g.nodes()) nodes.push_back(n.get());
    int mine = 0;
    for (Node* n : nodes)
      if (e.fix(g, *n)) mine++;
    changes += mine;
    // A fix replaces a node and rewires its uses; the node it replaced is dead from then on. It goes before
    // the verifier looks, so the replacement may keep the old node's name (the Hugging Face module's, which
    // the per-layer diff reports) — found by the Debug build's verifier on
    // Registry.NodeFixAppliesAtItsStageOnly.
    if (mine) g.eliminate_dead_code();
    if (verify_passes_enabled()) {
      try {
        verify_graph(g);
      } catch (const Error& err) {
        HFX_THROW("registry", "expected a valid graph after node fix '{}' ({} stage {}), got: {}", e.name,
                  backend, stage, err.what());
      }
    }
  }
  return changes;
}

int apply_program_fixes(const std::string& backend, int stage, Graph& g, std::vector<std::string>& warnings) {
  int changes = 0;
  for (const ProgramFixEntry& e : program_fix_registry()) {
    if (e.backend != backend || e.stage != stage) continue;
    if (e.fix(g, warnings)) changes++;
    if (verify_passes_enabled()) verify_graph(g);
  }
  return changes;
}

bool optimize_disabled(const std::string& backend, const std::string& model_type, std::string* why) {
  for (const auto& e : disable_optimize_registry()) {
    if (e.backend == backend && e.model_type == model_type) {
      if (why) *why = e.upstream_bug;
      return true;
    }
  }
  return false;
}

void check_export_skip(const std::string& backend, const std::string& model_type) {
  for (const auto& e : export_skip_registry()) {
    if ((e.backend == backend || e.backend == "*") && e.model_type == model_type)
      HFX_THROW("export", "expected an exportable model, got '{}' which is on the {} export-skip list: {}",
                model_type, backend, e.reason);
  }
}

std::vector<RegistryLine> registry_listing(const std::string& backend) {
  std::vector<RegistryLine> out;
  for (const auto& e : patch_registry()) {
    std::string paths;
    for (const auto& p : e.paths) paths += (paths.empty() ? "" : ",") + p;
    out.push_back({"patch", e.backend, e.stage, paths, e.reason});
  }
  for (const auto& e : node_fix_registry()) out.push_back({"node_fix", e.backend, e.stage, e.name, e.reason});
  for (const auto& e : program_fix_registry())
    out.push_back({"program_fix", e.backend, e.stage, e.name, e.reason});
  for (const auto& e : disable_optimize_registry())
    out.push_back({"disable_optimize", e.backend, 0, e.model_type, e.upstream_bug});
  for (const auto& e : export_skip_registry())
    out.push_back({"export_skip", e.backend, 0, e.model_type, e.reason});
  // Backend tables.
  for (auto& l : onnx_registry_lines()) out.push_back(l);
  for (auto& l : executorch_registry_lines()) out.push_back(l);
  if (!backend.empty())
    out.erase(std::remove_if(out.begin(), out.end(),
                             [&](const RegistryLine& l) { return l.backend != backend && l.backend != "*"; }),
              out.end());
  std::stable_sort(out.begin(), out.end(), [](const RegistryLine& a, const RegistryLine& b) {
    return std::tie(a.backend, a.stage) < std::tie(b.backend, b.stage);
  });
  return out;
}

}  // namespace hfx
