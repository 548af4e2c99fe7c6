// The stage-3 decision behind com.microsoft SkipSimplifiedLayerNormalization (see norm_fusion.h).
#include "export/onnx/norm_fusion.h"

#include <algorithm>
#include <map>

#include "export/onnx/lowering.h"

namespace hfx::onnx_export {
namespace {

// The residual add an hfx.rms_norm reads, when one SkipSimplifiedLayerNormalization computes both: two
// operands of the norm input's own type (the op does not broadcast), rank 3, float32 as exported.
const Node* fusable_add(const Node& norm) {
  const Value* x = norm.inputs.at(0);
  const Node* add = x ? x->producer : nullptr;
  if (!add || add->op != "aten.add.Tensor" || x->type.shape.size() != 3) return nullptr;
  const Value *a = add->inputs.at(0), *b = add->inputs.at(1);
  if (!a || !b || !a->type.same(x->type) || !b->type.same(x->type) ||
      export_dtype(x->type.dtype) != DType::F32)
    return nullptr;
  return add;
}

}  // namespace

bool fix_skip_rms_norm_fusion(Graph& g, ExportContext& ctx, std::vector<std::string>&) {
  if (ctx.onnx_target != "ort") return false;
  std::map<const Node*, size_t> position;
  for (const auto& n : g.nodes()) position[n.get()] = position.size();
  const auto users = g.users();
  bool any = false;
  for (const auto& n : g.nodes()) {
    if (n->op != "hfx.rms_norm") continue;
    const Node* add = fusable_add(*n);
    if (!add) continue;
    ctx.skip_rms_norm.fused.insert(n->name);
    any = true;
    // Absorbed: nothing reads the sum before this norm binds it, and the graph does not return it.
    const Value* sum = add->outputs.at(0);
    const auto& outs = g.outputs();
    bool read_before = std::find(outs.begin(), outs.end(), sum) != outs.end();
    if (auto it = users.find(sum); it != users.end())
      for (const Node* u : it->second)
        read_before = read_before || (u != n.get() && position[u] < position[n.get()]);
    if (!read_before) ctx.skip_rms_norm.absorbed.insert(add->name);
  }
  return any;
}

}  // namespace hfx::onnx_export
