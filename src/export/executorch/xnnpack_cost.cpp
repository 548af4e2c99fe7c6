// How much work and memory a node or value of a method takes at its bounds' sizes (xnnpack_delegate.h):
// the delegated share of FLOPs that `hfx export` reports, and the size that keeps a large value out of an
// XNNPACK workspace.
#include <algorithm>
#include <set>
#include <string>

#include "export/executorch/xnnpack_delegate.h"

namespace hfx::et::xnn {

namespace {

double bound_size(const Sym& d, const ShapeEnv& env) {
  if (auto c = d.maybe_value()) return static_cast<double>(*c);
  const SymRange r = env.bounds(d);
  return r.bounded() ? static_cast<double>(r.max) : 1.0;
}

double bound_numel(const Value& v, const ShapeEnv& env) {
  double e = 1;
  for (const Sym& d : v.type.shape) e *= bound_size(d, env);
  return e;
}

}  // namespace

double bound_bytes(const Value& v, const ShapeEnv& env) {
  return bound_numel(v, env) * static_cast<double>(dtype_size(v.type.dtype));
}

double node_flops(const Node& n, const ShapeEnv& env) {
  // Data movement (views, copies, gathers, concatenation, fills, selects, comparisons) is no arithmetic.
  static const std::set<std::string> moves = {
      "aten.view",      "aten.permute",   "aten.expand",       "aten.slice",      "aten.cat",
      "aten.unsqueeze", "aten.squeeze",   "aten.index_select", "aten.embedding",  "aten.index_copy",
      "aten._to_copy",  "aten.full",      "aten.arange",       "aten.where.self", "aten.clone",
      "aten.select",    "aten.gather",    "aten.eq.Tensor",    "aten.lt.Tensor",  "aten.le.Tensor",
      "aten.gt.Tensor", "aten.ge.Tensor", "aten.logical_and",  "aten.logical_or", "aten.logical_not"};
  const size_t overload = n.op.find('.', 5);  // "aten.slice.Tensor" → "aten.slice"
  if (n.outputs.empty() || moves.count(n.op) || moves.count(n.op.substr(0, overload))) return 0;
  auto size = [&](const Sym& d) { return bound_size(d, env); };
  auto numel = [&](const Value* v) { return bound_numel(*v, env); };
  const double out = numel(n.outputs[0]);
  const bool product = ((n.op == "aten.mm" || n.op == "aten.bmm") && n.inputs.size() == 2) ||
                       (n.op == "hfx.linear_q" && n.inputs.size() >= 3);
  if (product && !n.inputs[0]->type.shape.empty()) return 2 * out * size(n.inputs[0]->type.shape.back());
  double in = 0;  // a reduction works on its input
  for (const Value* v : n.inputs)
    if (v) in = std::max(in, numel(v));
  return std::max(out, in);
}

}  // namespace hfx::et::xnn
