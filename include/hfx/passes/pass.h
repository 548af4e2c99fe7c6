// hfx/passes/pass.h — graph passes with a name, a contract and a `changed` result.
//
// A pass states what it needs (precondition) and what it guarantees (postcondition) in its contract
// text; `run_pass` runs it and, in debug builds or with HFX_VERIFY_PASSES=1, runs hfx::verify_graph
// after it whenever it reports a change, so a broken rewrite is caught at the pass that made it. Pipelines
// are named lists of passes so the CLI and tests can run one pass alone.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "hfx/ir/graph.h"
#include "hfx/ops/builder.h"

namespace hfx {

class PatchTable;  // hfx/ops/patch_point.h

struct Pass {
  std::string name;
  std::string contract;             ///< "requires ...; ensures ..."
  std::function<bool(Graph&)> run;  ///< returns true if the graph changed
};

/// Runs a pass (and the verifier when enabled). Returns whether the graph changed.
bool run_pass(Graph& g, const Pass& p);
/// Runs passes in order; returns the names of those that changed the graph.
std::vector<std::string> run_pipeline(Graph& g, const std::vector<Pass>& passes);
/// Whether run_pass verifies after each pass (debug builds, or HFX_VERIFY_PASSES=1).
bool verify_passes_enabled();

/// Built-in passes usable by every backend.
Pass dead_code_elimination_pass();
/// Replaces each composite op (hfx.sdpa, hfx.rms_norm, hfx.rope) named in `ops` by its reference
/// decomposition (from the op table), in place. Ops the decompositions call go through the handlers
/// installed in `patches` (an export's table), if given.
Pass decompose_pass(const std::vector<std::string>& ops, PatchTable* patches = nullptr);
/// The one node-rewrite helper: rebuilds node `n` of `g` by tracing `build` on a TraceBuilder over `g`
/// (through `patches`, if given) with n's inputs, the new nodes named under n's name and placed before it;
/// n's outputs are rewired to what `build` returns and n is erased. Throws hfx::Error("passes", ...) when
/// `build` returns another number of outputs than n has.
void rewrite_node(Graph& g, Node* n,
                  const std::function<std::vector<Var>(TraceBuilder&, const std::vector<Var>&)>& build,
                  PatchTable* patches = nullptr);
/// Replaces the composite node `n` of `g` by its decomposition, in place (new nodes named under n's
/// name, placed before it). Throws hfx::Error("passes", ...) when its op has no decomposition.
void decompose_node(Graph& g, Node* n, PatchTable* patches = nullptr);

}  // namespace hfx
