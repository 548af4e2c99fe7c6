// Weight dtype of an export applied to a captured graph (see weight_dtype.h).
#include "export/weight_dtype.h"

#include <algorithm>

#include "hfx/core/error.h"

namespace hfx {

namespace {

bool is_cast(const Node* n) { return n && n->op == "aten._to_copy" && n->inputs.size() == 1; }

// Folds cast(cast(p: dt → orig) → t) into cast(p → t), and drops cast(p → dt), when exact: either dt or
// orig is float32, so p's values pass through the inner cast unchanged or through f32 losslessly.
void fold_casts(Graph& g, Value* p, Node* inner, DType dt, DType orig) {
  if (dt != DType::F32 && orig != DType::F32) return;
  auto users = g.users();
  for (Node* u : users[inner->outputs[0]]) {
    if (!is_cast(u)) continue;
    u->inputs[0] = p;
    if (u->outputs[0]->type.dtype == dt) {
      g.replace_all_uses(u->outputs[0], p);
      g.erase_node(u);
    }
  }
}

}  // namespace

bool store_params_as(Graph& g, DType dt) {
  if (!dtype_is_float(dt)) HFX_THROW("export", "expected a floating weight dtype, got {}", dtype_name(dt));
  auto users = g.users();
  Node* first = g.nodes().empty() ? nullptr : g.nodes().front().get();
  bool changed = false;
  const std::vector<Value*> params = g.params();  // a copy: the loop adds casts to the graph
  for (Value* p : params) {
    const DType orig = p->type.dtype;
    // A parameter returned as a graph output keeps its dtype (the signature promises it).
    bool output = std::find(g.outputs().begin(), g.outputs().end(), p) != g.outputs().end();
    if (!dtype_is_float(orig) || orig == dt || users[p].empty() || !first || output) continue;
    p->type.dtype = dt;
    Node* widen = g.add_node_typed("aten._to_copy", {p}, Attrs{{"dtype", orig}},
                                   p->name + "/to_" + dtype_name(orig), {TensorType{orig, p->type.shape}});
    g.move_before(widen, first);
    first = widen;
    for (Node* u : users[p])
      for (auto& in : u->inputs)
        if (in == p) in = widen->outputs[0];
    fold_casts(g, p, widen, dt, orig);
    changed = true;
  }
  if (changed) g.eliminate_dead_code();
  return changed;
}

bool fix_weight_dtype(Graph& g, ExportContext& ctx, std::vector<std::string>&) {
  return ctx.weight_dtype && store_params_as(g, *ctx.weight_dtype);
}

}  // namespace hfx
