// Initializer layout and dtype of parameters (see weight_layout.h for why).
#include "export/onnx/weight_layout.h"

#include <algorithm>
#include <map>

namespace hfx::onnx_export {

namespace {

bool is_cast(const Node* n) { return n && n->op == "aten._to_copy" && !n->inputs.empty(); }

// Every reader of `v`, looking through casts: is each a linear's weight or an embedding's table?
// Counts the linears in `linears`.
bool only_linear_or_table(const Value* v, const std::map<const Value*, std::vector<Node*>>& users,
                          int& linears) {
  auto it = users.find(v);
  if (it == users.end()) return true;
  for (const Node* u : it->second) {
    const long uses = std::count(u->inputs.begin(), u->inputs.end(), v);
    if (is_cast(u) && uses == 1) {
      if (!only_linear_or_table(u->outputs[0], users, linears)) return false;
    } else if (u->op == "aten.linear" && uses == 1 && u->inputs.size() > 1 && u->inputs[1] == v) {
      linears++;
    } else if (u->op != "aten.embedding" || uses != 1 || u->inputs[0] != v) {
      return false;
    }
  }
  return true;
}

}  // namespace

const Value* param_behind(const Value* v) {
  while (v && v->kind == ValueKind::NodeOutput && is_cast(v->producer)) v = v->producer->inputs[0];
  return v && v->kind == ValueKind::Param ? v : nullptr;
}

namespace {
// For each 2-D floating parameter of `g` that is not an output: whether all its readers are linears or
// tables, and how many linears read it.
struct ParamUse {
  bool only_linear_or_table = true;
  int linears = 0;
};
void param_uses(const Graph& g, std::map<std::string, ParamUse>& uses) {
  auto users = g.users();
  for (const Value* p : g.params()) {
    ParamUse& u = uses[p->name];
    if (p->type.shape.size() != 2 || !dtype_is_float(p->type.dtype) ||
        std::find(g.outputs().begin(), g.outputs().end(), p) != g.outputs().end()) {
      u.only_linear_or_table = false;
      continue;
    }
    int linears = 0;
    u.only_linear_or_table = only_linear_or_table(p, users, linears) && u.only_linear_or_table;
    u.linears += linears;
  }
}
}  // namespace

std::set<const Value*> params_to_transpose(const Graph& g) {
  std::map<std::string, ParamUse> uses;
  param_uses(g, uses);
  std::set<const Value*> out;
  for (const Value* p : g.params())
    if (const ParamUse& u = uses[p->name]; u.only_linear_or_table && u.linears > 0) out.insert(p);
  return out;
}

std::set<std::string> params_to_transpose(const std::vector<const Graph*>& graphs) {
  std::map<std::string, ParamUse> uses;
  for (const Graph* g : graphs) param_uses(*g, uses);
  std::set<std::string> out;
  for (const auto& [name, u] : uses)
    if (u.only_linear_or_table && u.linears > 0) out.insert(name);
  return out;
}

void declare_params(LoweringContext& cx, const Graph& g, const std::set<const Value*>& read,
                    LoweredModel& lm) {
  const LowerOptions& opts = cx.options();
  // Without an explicit weight dtype, a f16/bf16 parameter whose every reader is a cast to f32 (the
  // models' `F::to(w, F32)` at use) or a gather of rows that eager casts afterwards keeps its dtype behind
  // one Cast. Widening is exact and commutes with a gather, so the graph computes what eager computes.
  auto users = g.users();
  std::set<const Value*> outputs(g.outputs().begin(), g.outputs().end());
  auto only_cast_to_f32 = [&](const Value* v) {
    if (!opts.keep_param_dtype || (v->type.dtype != DType::F16 && v->type.dtype != DType::BF16) ||
        outputs.count(v))
      return false;
    auto it = users.find(v);
    if (it == users.end() || it->second.empty()) return false;
    for (const Node* u : it->second) {
      bool cast = u->op == "aten._to_copy" && !u->outputs.empty() && u->outputs[0]->type.dtype == DType::F32;
      bool gather = (u->op == "aten.embedding" || u->op == "aten.index_select") && !u->inputs.empty() &&
                    u->inputs[0] == v && std::count(u->inputs.begin(), u->inputs.end(), v) == 1;
      if (!cast && !gather) return false;
    }
    return true;
  };
  // The stored dtype: the export's weight dtype for floating parameters (never for a graph output, whose
  // dtype the signature promises), else the rule above.
  auto stored = [&](const Value* v) {
    if (!dtype_is_float(v->type.dtype) || outputs.count(v)) return export_dtype(v->type.dtype);
    if (opts.weight_dtype) return *opts.weight_dtype;
    return only_cast_to_f32(v) ? v->type.dtype : DType::F32;
  };
  for (const Value* v : g.params()) {
    if (!read.count(v)) continue;
    const bool transposed = cx.weight_transposed(v);
    std::string nm = cx.tmp(nullptr, v->name);
    onnx::TensorProto* t = cx.proto().add_initializer();
    t->set_name(nm);
    if (transposed) {
      t->add_dims(v->type.shape[1].value());
      t->add_dims(v->type.shape[0].value());
      lm.transposed.insert(nm);
    } else {
      for (const Sym& d : v->type.shape) t->add_dims(d.value());
    }
    lm.param_sources[nm] = v;
    const DType as = stored(v);
    if (as == DType::F16 || as == DType::BF16) {
      t->set_data_type(onnx_storage_elem_type(as));
      std::string wide = cx.tmp(nullptr, v->name + "/f32");
      auto& c = cx.emit("Cast", {nm}, {wide});
      LoweringContext::attr(c, "to", static_cast<int64_t>(onnx::TensorProto::FLOAT));
      cx.rebind(v, wide);
    } else {
      t->set_data_type(onnx_elem_type(v->type.dtype));
      cx.rebind(v, nm);
    }
  }
}

}  // namespace hfx::onnx_export
