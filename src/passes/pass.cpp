// Pass runner and the backend-independent passes.
#include "hfx/passes/pass.h"

#include <cstdlib>
#include <set>

#include "hfx/core/error.h"
#include "hfx/ops/builder.h"
#include "hfx/ops/op_schema.h"

namespace hfx {

bool verify_passes_enabled() {
#ifndef NDEBUG
  return true;
#else
  const char* e = std::getenv("HFX_VERIFY_PASSES");
  return e && std::string(e) == "1";
#endif
}

bool run_pass(Graph& g, const Pass& p) {
  bool changed = p.run(g);
  // A pass that changed nothing leaves the graph as the last check (or the typed capture) left it.
  if (changed && verify_passes_enabled()) {
    try {
      verify_graph(g);
    } catch (const Error& e) {
      HFX_THROW("passes", "expected a valid graph after pass '{}' ({}), got: {}", p.name, p.contract,
                e.what());
    }
  }
  return changed;
}

std::vector<std::string> run_pipeline(Graph& g, const std::vector<Pass>& passes) {
  std::vector<std::string> changed;
  for (const Pass& p : passes)
    if (run_pass(g, p)) changed.push_back(p.name);
  return changed;
}

Pass dead_code_elimination_pass() {
  return Pass{"dce", "requires: nothing; ensures: every node contributes to an output",
              [](Graph& g) { return g.eliminate_dead_code() > 0; }};
}

void rewrite_node(Graph& g, Node* n,
                  const std::function<std::vector<Var>(TraceBuilder&, const std::vector<Var>&)>& build,
                  PatchTable* patches) {
  TraceBuilder tb(g, patches);
  // Name the new nodes after the node they replace (the per-layer diff then points at its module).
  tb.push_scope(n->name);
  std::vector<Var> in;
  for (Value* v : n->inputs) in.push_back(v ? tb.wrap(v) : Var());
  size_t before = g.nodes().size();
  std::vector<Var> out = build(tb, in);
  // Move the freshly appended nodes in front of the node they replace.
  std::vector<Node*> fresh;
  auto it = g.nodes().begin();
  std::advance(it, before);
  for (; it != g.nodes().end(); ++it) fresh.push_back(it->get());
  for (Node* f : fresh) g.move_before(f, n);
  if (out.size() != n->outputs.size())
    HFX_THROW("passes", "expected {} outputs from the rewrite of {}, got {}", n->outputs.size(), n->name,
              out.size());
  for (size_t i = 0; i < out.size(); i++) g.replace_all_uses(n->outputs[i], out[i].value());
  g.erase_node(n);
}

void decompose_node(Graph& g, Node* n, PatchTable* patches) {
  const OpSchema& s = op_schema(n->op);
  if (!s.decompose) HFX_THROW("passes", "expected a decomposition for {}, got none", n->op);
  const Attrs attrs = n->attrs;
  rewrite_node(
      g, n, [&](TraceBuilder& tb, const std::vector<Var>& in) { return s.decompose(tb, in, attrs); },
      patches);
}

Pass decompose_pass(const std::vector<std::string>& ops, PatchTable* patches) {
  std::set<std::string> want(ops.begin(), ops.end());
  return Pass{"decompose",
              "requires: composite ops listed have a decomposition; ensures: none of them remain",
              [want, patches](Graph& g) {
                std::vector<Node*> todo;
                for (const auto& n : g.nodes())
                  if (want.count(n->op)) todo.push_back(n.get());
                for (Node* n : todo) decompose_node(g, n, patches);
                return !todo.empty();
              }};
}

}  // namespace hfx
