// Registry mechanics: installing patches for one stage, running fixes, the lists, and the listing
// behind `hfx registries`. The entries themselves are declared in registry_table.cpp.
#include "hfx/export/registry.h"

#include <algorithm>

#include <fmt/format.h>

#include "hfx/core/error.h"
#include "hfx/ops/op_schema.h"
#include "hfx/passes/pass.h"

namespace hfx {

const char* entry_kind_name(EntryKind k) {
  switch (k) {
    case EntryKind::patch:
      return "patch";
    case EntryKind::node_fix:
      return "node_fix";
    default:
      return "program_fix";
  }
}

const char* fact_name(Fact f) {
  switch (f) {
    case Fact::onnx_target:
      return "onnx_target";
    case Fact::weight_dtype:
      return "weight_dtype";
    case Fact::constant_dtype:
      return "constant_dtype";
    case Fact::gqa_fusion:
      return "gqa_fusion";
    default:
      return "skip_rms_norm";
  }
}

namespace {

bool declared_backend(const std::string& backend) {
  for (const StageDecl& d : declared_stages())
    if (d.backend == backend) return true;
  return false;
}

std::string declared_backends() {
  std::string out;
  for (const StageDecl& d : declared_stages())
    if (out.find(d.backend) == std::string::npos) out += (out.empty() ? "" : ", ") + d.backend;
  return out;
}

// Whether (backend, stage) is declared and runs `kind`; else the expectation, for the error.
bool runs(const std::string& backend, int stage, EntryKind kind, std::string* expected) {
  std::string stages;
  for (const StageDecl& d : declared_stages()) {
    if (d.backend != backend) continue;
    if (std::find(d.runs.begin(), d.runs.end(), kind) == d.runs.end()) continue;
    if (d.stage == stage) return true;
    stages += (stages.empty() ? "" : ", ") + std::to_string(d.stage);
  }
  *expected = declared_backend(backend)
                  ? fmt::format("a {} stage of {} ({})", entry_kind_name(kind), backend, stages)
                  : fmt::format("a declared backend ({})", declared_backends());
  return false;
}

void check_entry(EntryKind kind, const std::string& backend, int stage, const std::string& name,
                 const std::string& reason) {
  std::string expected;
  if (!runs(backend, stage, kind, &expected))
    HFX_THROW("registry",
              "expected {} entry '{}' on {}, got backend '{}' stage {}; fix the entry or declare the stage "
              "in declared_stages() (src/export/registry_table.cpp)",
              entry_kind_name(kind), name, expected, backend, stage);
  if (reason.empty())
    HFX_THROW("registry", "expected a reason for {} entry '{}' ({} stage {}), got none",
              entry_kind_name(kind), name, backend, stage);
}

// An exporter applies only stages its backend declares (a backend no declaration names, as unit tests use
// for isolated entries, is left alone).
void require_declared(const std::string& backend, int stage, EntryKind kind) {
  std::string expected;
  if (declared_backend(backend) && !runs(backend, stage, kind, &expected))
    HFX_THROW("registry", "expected the exporter to apply {} at {}, got stage {}", entry_kind_name(kind),
              expected, stage);
}

// A program fix reads only facts its exporter set at or before its stage (StageDecl::sets) or that a fix of
// an earlier stage, or earlier in its own stage's list, wrote.
void check_facts(const ProgramFixEntry& fix) {
  std::vector<Fact> known;
  for (const StageDecl& d : declared_stages())
    if (d.backend == fix.backend && d.stage <= fix.stage)
      known.insert(known.end(), d.sets.begin(), d.sets.end());
  for (const ProgramFixEntry& e : program_fix_registry()) {
    if (&e == &fix) break;
    if (e.backend == fix.backend && e.stage <= fix.stage)
      known.insert(known.end(), e.writes.begin(), e.writes.end());
  }
  for (Fact f : fix.reads)
    if (std::find(known.begin(), known.end(), f) == known.end())
      HFX_THROW(
          "registry",
          "expected program fix '{}' ({} stage {}) to read facts set before it, got '{}', which no stage "
          "of {} up to {} sets and no earlier fix writes; declare it in StageDecl::sets or move the fix",
          fix.name, fix.backend, fix.stage, fact_name(f), fix.backend, fix.stage);
}

}  // namespace

void check_registries() {
  for (const PatchEntry& e : patch_registry()) {
    std::string paths;
    for (const std::string& p : e.paths) {
      paths += (paths.empty() ? "" : ",") + p;
      if (!p.starts_with("hfx.model.") && find_op_schema(p) == nullptr)
        HFX_THROW(
            "registry",
            "expected the paths of the {} stage {} patch to be ops of the op table or hfx.model.<hook>, "
            "got '{}'",
            e.backend, e.stage, p);
    }
    check_entry(EntryKind::patch, e.backend, e.stage, paths, e.reason);
  }
  for (const NodeFixEntry& e : node_fix_registry()) {
    check_entry(EntryKind::node_fix, e.backend, e.stage, e.name, e.reason);
    for (const std::string& op : e.ops)
      if (find_op_schema(op) == nullptr)
        HFX_THROW("registry",
                  "expected the ops of node fix '{}' ({} stage {}) to be ops of the op table, got '{}'",
                  e.name, e.backend, e.stage, op);
  }
  for (const ProgramFixEntry& e : program_fix_registry()) {
    check_entry(EntryKind::program_fix, e.backend, e.stage, e.name, e.reason);
    check_facts(e);
  }
  for (const DisableOptimizeEntry& e : disable_optimize_registry())
    if (!declared_backend(e.backend) || e.upstream_bug.empty())
      HFX_THROW("registry",
                "expected disable-optimize entry '{}' on a declared backend ({}) with its upstream bug, got "
                "backend '{}'{}",
                e.model_type, declared_backends(), e.backend, e.upstream_bug.empty() ? " and no bug" : "");
  for (const ExportSkipEntry& e : export_skip_registry())
    if ((e.backend != "*" && !declared_backend(e.backend)) || e.reason.empty())
      HFX_THROW("registry",
                "expected export-skip entry '{}' on a declared backend ({}, or *) with its reason, got "
                "backend '{}'{}",
                e.model_type, declared_backends(), e.backend, e.reason.empty() ? " and no reason" : "");
}

PatchScope::PatchScope(ExportContext& ctx, const std::string& backend, int stage) : table_(ctx.patches) {
  require_declared(backend, stage, EntryKind::patch);
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

namespace {
// The verifier after one fix (Debug builds, HFX_VERIFY_PASSES=1), its error naming the fix.
void verify_after(const char* kind, const std::string& name, const std::string& backend, int stage,
                  const Graph& g) {
  try {
    verify_graph(g);
  } catch (const Error& err) {
    HFX_THROW("registry", "expected a valid graph after {} '{}' ({} stage {}), got: {}", kind, name, backend,
              stage, err.what());
  }
}
}  // namespace

int apply_node_fixes(const std::string& backend, int stage, Graph& g) {
  require_declared(backend, stage, EntryKind::node_fix);
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
      // A fix that changed nothing leaves the graph the last check passed (or the capture built typed).
      if (mine) verify_after("node fix", e.name, backend, stage, g);
      // The fix's contract: the ops it declares it rewrites away (NodeFixEntry::ops) are gone.
      for (const auto& n : g.nodes())
        if (std::find(e.ops.begin(), e.ops.end(), n->op) != e.ops.end())
          HFX_THROW("registry", "expected no {} after node fix '{}' ({} stage {}), got node '{}'", n->op,
                    e.name, backend, stage, n->name);
    }
  }
  return changes;
}

int apply_program_fixes(const std::string& backend, int stage, Graph& g, ExportContext& ctx,
                        std::vector<std::string>& warnings) {
  require_declared(backend, stage, EntryKind::program_fix);
  int changes = 0;
  for (const ProgramFixEntry& e : program_fix_registry()) {
    if (e.backend != backend || e.stage != stage) continue;
    const bool changed = e.fix(g, ctx, warnings);
    if (changed) changes++;
    if (changed && verify_passes_enabled()) verify_after("program fix", e.name, backend, stage, g);
  }
  return changes;
}

int stage_of(const std::string& backend, const std::string& name) {
  std::string names;
  for (const StageDecl& d : declared_stages()) {
    if (d.backend != backend) continue;
    if (d.name == name) return d.stage;
    names += (names.empty() ? "" : ", ") + d.name;
  }
  HFX_THROW("registry", "expected a declared stage of {} ({}), got '{}'; declare it in declared_stages()",
            backend, names.empty() ? "no stages: not a declared backend" : names, name);
}

int run_stage(const std::string& backend, const std::string& name, const Graph* g,
              const std::function<void(int stage)>& body) {
  const int stage = stage_of(backend, name);
  body(stage);
  if (g && verify_passes_enabled()) {
    try {
      verify_graph(*g);
    } catch (const Error& err) {
      HFX_THROW("registry", "expected a valid graph after {} stage {} '{}', got: {}", backend, stage, name,
                err.what());
    }
  }
  return stage;
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

PatchEntry decomposition_patch(const std::string& backend, int stage, const std::string& op,
                               const std::string& reason) {
  return PatchEntry{backend,
                    stage,
                    {op},
                    [op](const OpHandler*, ExportContext&) -> OpHandler {
                      return [op](Builder& b, const std::vector<Var>& in, const Attrs& attrs) {
                        const OpSchema& s = op_schema(op);
                        return s.decompose(b, in, normalize_attrs(s, attrs));
                      };
                    },
                    reason};
}

}  // namespace hfx
