// Nodes typed by the op table, and the graph verifier. They live in the ops layer, not in ir, because
// both need the op table (ir is below ops: the graph is data, the table gives it meaning). The verifier
// re-runs shape inference on every node and compares with the recorded types, so a pass that rewrites a
// node inconsistently is caught at the pass that did it (debug builds run it after every pass; see
// passes/pass.h).
#include <set>
#include <unordered_set>

#include "hfx/core/error.h"
#include "hfx/ops/op_schema.h"

namespace hfx {

Node* add_node(Graph& g, const std::string& op, const std::vector<Value*>& inputs, const Attrs& attrs,
               const std::string& name) {
  const OpSchema& s = op_schema(op);
  Attrs norm = normalize_attrs(s, attrs);
  int n = static_cast<int>(inputs.size());
  if (n < s.min_inputs || (s.max_inputs >= 0 && n > s.max_inputs))
    HFX_THROW("graph", "expected {}..{} inputs for {} at '{}', got {}", s.min_inputs, s.max_inputs, op, name,
              n);
  std::vector<const TensorType*> in;
  for (Value* v : inputs) in.push_back(v ? &v->type : nullptr);
  std::vector<TensorType> outs;
  try {
    outs = s.infer(in, norm, g.env());
  } catch (const Error& e) {
    HFX_THROW("graph", "shape inference of {} at '{}' failed: {}", op, name, e.what());
  }
  return g.add_node_typed(op, inputs, norm, name, outs);
}

void verify_graph(const Graph& g) {
  std::unordered_set<const Value*> defined;
  std::set<std::string> names;
  auto def = [&](const Value* v) {
    if (!names.insert(v->name).second)
      HFX_THROW("verifier", "expected unique value names, got '{}' twice", v->name);
    defined.insert(v);
  };
  for (Value* v : g.inputs()) def(v);
  for (Value* v : g.params()) def(v);
  for (Value* v : g.consts()) def(v);
  for (const auto& n : g.nodes()) {
    const OpSchema* s = find_op_schema(n->op);
    if (!s) HFX_THROW("verifier", "expected a known op at node '{}', got '{}'", n->name, n->op);
    std::vector<const TensorType*> in;
    for (size_t i = 0; i < n->inputs.size(); i++) {
      Value* v = n->inputs[i];
      if (v && !defined.count(v))
        HFX_THROW("verifier", "expected input {} of node '{}' ({}) to be defined before use, got '{}'", i,
                  n->name, n->op, v->name);
      in.push_back(v ? &v->type : nullptr);
    }
    ShapeEnv scratch = g.env();
    std::vector<TensorType> outs = s->infer(in, n->attrs, scratch);
    if (outs.size() != n->outputs.size())
      HFX_THROW("verifier", "expected {} outputs at node '{}' ({}), got {}", outs.size(), n->name, n->op,
                n->outputs.size());
    for (size_t i = 0; i < outs.size(); i++) {
      if (!outs[i].same(n->outputs[i]->type))
        HFX_THROW("verifier", "expected output {} of '{}' ({}) to have type {}, got {}", i, n->name, n->op,
                  outs[i].str(), n->outputs[i]->type.str());
      if (n->outputs[i]->producer != n.get())
        HFX_THROW("verifier", "expected '{}' to be produced by '{}'", n->outputs[i]->name, n->name);
      def(n->outputs[i]);
    }
  }
  for (Value* o : g.outputs())
    if (!defined.count(o))
      HFX_THROW("verifier", "expected graph output '{}' to be defined, got an undefined value", o->name);
}

}  // namespace hfx
