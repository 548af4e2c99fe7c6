// hfx/export/registry.h — where export workarounds live: patches, fixes, and the lists of the seeds.
//
// Workarounds never live in model code. Each kind has one registry, and each entry says which backend
// and which numbered stage of that backend's exporter it belongs to, and why it exists (the bug it
// works around and when to remove it):
//  - Patch: swaps a patch point (a named, swappable function: an op's lowering during capture, or a
//    model-side hook) for the duration of one export; restored after, even when the export throws.
//  - NodeFix / ProgramFix: rewrites the captured graph (one node at a time, or the whole program).
//  - DisableOptimize: models whose graphs must skip the optimizer, each naming the upstream bug.
//  - ExportSkip: models that cannot be exported as they are, each naming the model-side change needed.
// Backend-specific tables (the ONNX translation table and ONNX IR fixes) live in their backend and
// are listed by `hfx registries` through `registry_listing()`.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "hfx/core/dtype.h"

#include "hfx/ir/graph.h"
#include "hfx/ops/builder.h"
#include "hfx/ops/patch_point.h"

namespace hfx {

// ---------------------------------------------------------------- the state of one export
namespace et {
struct StaticAttentionContext;
}

/// The facts one pass hands to a later one through the ExportContext (nothing string-keyed crosses a pass
/// boundary). A stage declares the facts its exporter sets (StageDecl::sets), a program fix the facts it
/// reads and writes (ProgramFixEntry::reads, ::writes); check_registries() refuses a fix that reads a fact
/// nothing set before it.
enum class Fact {
  onnx_target,     ///< ExportContext::onnx_target
  weight_dtype,    ///< ExportContext::weight_dtype
  constant_dtype,  ///< ExportContext::constant_dtype
  gqa_fusion,      ///< ExportContext::gqa
  skip_rms_norm,   ///< ExportContext::skip_rms_norm
};
const char* fact_name(Fact f);  ///< "onnx_target", ...

/// ONNX --target ort: what the stage-3 program fix gqa_fusion decided for each hfx.sdpa, read by the stage-4
/// translations (src/export/onnx/gqa_fusion.h).
struct GqaFusionRecord {
  std::map<std::string, std::string> decision;   ///< sdpa node → "" (fused) or the reason it is not
  std::map<std::string, std::string> cat_owner;  ///< KV concat node → the fused sdpa that owns it
};

/// ONNX --target ort: what the stage-3 program fix skip_rms_norm_fusion decided, read by the stage-4
/// translations (src/export/onnx/translations_composite.h).
struct SkipNormRecord {
  /// hfx.rms_norm nodes one com.microsoft SkipSimplifiedLayerNormalization computes with the residual add
  /// before them (its 4th output is the sum).
  std::set<std::string> fused;
  /// Those residual aten.add.Tensor nodes no one reads before their fused norm: the fused op alone computes
  /// them, so they emit nothing.
  std::set<std::string> absorbed;
};

/// The mutable state of one export, passed explicitly through its stages: nothing an export changes
/// lives in process-global or thread-local storage, so exports may run concurrently on threads of one
/// process (tests/embed). The registries below are declarations, read-only while exports run.
struct ExportContext {
  /// The patch points installed for this export (by PatchScope); captures trace through it.
  PatchTable patches;
  /// ExecuTorch: the static-cache positions while a static-cache forward is captured (else nullptr);
  /// set by et::StaticAttentionScope, read by the stage-3 attention patch.
  et::StaticAttentionContext* static_attention = nullptr;
  // ---- the facts (Fact) passes hand each other
  /// ONNX: "standard" or "ort" (com.microsoft fused operators); set before stage 3.
  std::string onnx_target = "standard";
  /// Dynamo: the dtype parameters are stored in (--dtype resolved); unset: as they are.
  std::optional<DType> weight_dtype;
  /// ExecuTorch: the dtype constants are stored in (the backend row's, or --dtype); unset: as they are.
  std::optional<DType> constant_dtype;
  /// ONNX --target ort: the gqa_fusion pass's record.
  GqaFusionRecord gqa;
  /// ONNX --target ort: the skip_rms_norm_fusion pass's record.
  SkipNormRecord skip_rms_norm;
};

// ---------------------------------------------------------------- patch points
/// A swappable function: a capture-time op handler. During export, patches may replace the handler
/// for an op (e.g. "hfx.sdpa" → its decomposition for ExecuTorch). Path = the op name, or
/// "hfx.model.<hook>" for model-side hooks that call `patch_point(path)`.

struct PatchEntry {
  std::string backend;  ///< "onnx", "executorch", "dynamo"
  int stage = 0;        ///< the exporter stage that installs it
  std::vector<std::string> paths;
  /// Gets the original handler (nullptr = the op table's own) and the export's context (which outlives
  /// the handler), and returns the replacement.
  std::function<OpHandler(const OpHandler* original, ExportContext& ctx)> factory;
  std::string reason;  ///< the bug, and when to remove this patch
};

/// A patch that records op `op`'s own decomposition from the op table (OpSchema::decompose, attributes
/// normalized) in place of the op: how a backend without a kernel or lowering for a composite takes it.
PatchEntry decomposition_patch(const std::string& backend, int stage, const std::string& op,
                               const std::string& reason);

/// Installs every patch of (backend, stage) in `ctx.patches` for its lifetime; restores the previous
/// handlers on destruction (also during stack unwinding, and when a factory throws part-way).
class PatchScope {
 public:
  PatchScope(ExportContext& ctx, const std::string& backend, int stage);
  ~PatchScope();
  PatchScope(const PatchScope&) = delete;
  PatchScope& operator=(const PatchScope&) = delete;
  int installed() const { return static_cast<int>(saved_.size()); }

 private:
  void restore();
  PatchTable& table_;
  std::vector<std::pair<std::string, std::unique_ptr<OpHandler>>> saved_;
};

// ---------------------------------------------------------------- fixes
struct NodeFixEntry {
  std::string backend;
  int stage = 0;
  std::string name;
  /// Rewrites one node if it applies; returns true if it changed the graph.
  std::function<bool(Graph& g, Node& n)> fix;
  std::string reason;
  /// The ops this fix rewrites away entirely (none of them remains after it), so the backend needs no
  /// lowering of its own for them (tests/export/lowering_coverage_test.cpp); empty for a fix that rewrites
  /// only some nodes of an op.
  std::vector<std::string> ops = {};
};
struct ProgramFixEntry {
  std::string backend;
  int stage = 0;
  std::string name;
  /// Rewrites the program, reading and writing only the facts declared below; returns true if it changed
  /// the graph (or wrote a fact).
  std::function<bool(Graph& g, ExportContext& ctx, std::vector<std::string>& warnings)> fix;
  std::string reason;
  std::vector<Fact> reads = {};   ///< facts of the context it reads
  std::vector<Fact> writes = {};  ///< facts of the context it writes
};

/// Runs every node fix of (backend, stage) over every node, then verifies (debug). Returns changes.
int apply_node_fixes(const std::string& backend, int stage, Graph& g);
/// Runs every program fix of (backend, stage) with the export's context. Returns changes.
int apply_program_fixes(const std::string& backend, int stage, Graph& g, ExportContext& ctx,
                        std::vector<std::string>& warnings);

// ---------------------------------------------------------------- lists
struct DisableOptimizeEntry {
  std::string backend;
  std::string model_type;
  std::string upstream_bug;  ///< required: the bug that forces this
};
struct ExportSkipEntry {
  std::string backend;  ///< "*" for every backend
  std::string model_type;
  std::string reason;  ///< required: the model-side change that would lift it
};
bool optimize_disabled(const std::string& backend, const std::string& model_type, std::string* why = nullptr);
/// Throws hfx::Error("export", ...) with the entry's reason if the model is on the skip list.
void check_export_skip(const std::string& backend, const std::string& model_type);

// ---------------------------------------------------------------- the declared stages
/// The kinds of entries a stage applies.
enum class EntryKind { patch, node_fix, program_fix };
const char* entry_kind_name(EntryKind k);  ///< "patch", "node_fix", "program_fix"

/// One stage of a backend's exporter (docs/design.md, docs/stages.md). Each backend is a declared list of
/// named stages (src/export/registry_table.cpp); a stage's number is its position in that list, 1-based —
/// the numbers registry entries name. The one declaration that registry entries and the exporters'
/// run_stage / PatchScope / apply_node_fixes / apply_program_fixes calls are checked against: an entry on a
/// backend, stage or kind no exporter runs is an error when the registries are filled, and an exporter that
/// applies a stage its backend does not declare fails at that call.
struct StageDecl {
  std::string backend;               ///< "onnx", "executorch", "dynamo"
  int stage = 0;                     ///< its position in the backend's list, 1-based (derived from the list)
  std::string name;                  ///< its identifier, e.g. "fx_fixes": what exporters run it by
  std::string what;                  ///< what it does, one line
  std::vector<EntryKind> runs = {};  ///< the kinds of registry entries this stage applies (may be none)
  std::vector<Fact> sets = {};  ///< the facts the exporter sets in the context before this stage's entries
};
const std::vector<StageDecl>& declared_stages();

/// The number of stage `name` of `backend`. Throws hfx::Error("registry", "expected a declared stage of
/// <backend> (...), got '<name>'").
int stage_of(const std::string& backend, const std::string& name);

/// The driver's step: runs stage `name` of `backend` — `body(stage number)` — then, when
/// verify_passes_enabled(), the graph verifier on `g` (null for a stage that does not rewrite the hfx graph,
/// e.g. the ONNX translations, whose output is a ModelProto). A graph the stage left broken throws
/// hfx::Error("registry", "expected a valid graph after <backend> stage N '<name>', got: ...") naming it.
/// Returns the stage's number.
int run_stage(const std::string& backend, const std::string& name, const Graph* g,
              const std::function<void(int stage)>& body);

/// Checks every entry of the registries against declared_stages(): a patch, node fix or program fix names
/// a declared backend and a stage of it that runs its kind; a patch path is an op of the op table or a
/// model hook ("hfx.model.<hook>"); disable-optimize and export-skip entries name a declared backend
/// (export-skip may say "*"); every entry gives its reason. Throws hfx::Error("registry", "expected …, got
/// …") naming the first bad entry. Run once when the registries are filled; tests that append entries may
/// call it.
void check_registries();

// ---------------------------------------------------------------- the registries (one place each)
/// All entries, declared in src/export/registry_table.cpp (filled once, thread-safely, on first use).
/// Tests may append entries and remove them, while no export runs.
std::vector<PatchEntry>& patch_registry();
std::vector<NodeFixEntry>& node_fix_registry();
std::vector<ProgramFixEntry>& program_fix_registry();
std::vector<DisableOptimizeEntry>& disable_optimize_registry();
std::vector<ExportSkipEntry>& export_skip_registry();

/// One line per registry entry of every kind (incl. backend tables that registered a lister), for
/// `hfx registries [--backend B]`: kind, backend, stage, name/path, reason.
struct RegistryLine {
  std::string kind, backend;
  int stage = 0;
  std::string name, reason;
};
std::vector<RegistryLine> registry_listing(const std::string& backend = "");
/// Backend tables listed by registry_listing (each implemented by its backend).
std::vector<RegistryLine> onnx_registry_lines();        ///< translation table + IR fixes
std::vector<RegistryLine> executorch_registry_lines();  ///< backend preparation table

}  // namespace hfx
