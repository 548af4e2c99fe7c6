// hfx/ops/op_lowering.h — how an op maps onto another system's op, declared beside the op in the op table.
//
// Most ops become one call of an op the target already has: `aten.erf` is ExecuTorch's portable kernel
// `aten::erf.out`, the ATen overload `torch.ops.aten.erf.default` and the ONNX op `Erf`. Such a mapping is
// data — a callee and, per argument, where its value comes from (a node input, an attribute, or a
// constant) — so it is declared once, in the op's entry of src/ops/op_table.cpp, and every consumer is
// derived from it: the ExecuTorch writer emits the call, the `.pte` reader maps the kernel back to the op,
// the Dynamo exporter emits the ATen node, its test interpreter maps the target back, and the ONNX
// exporter emits the ONNX node. An op whose lowering needs code (a tensor list, a dtype taken from the
// output, an argument that exists only sometimes) leaves the backend's declaration empty and keeps a
// hand-written lowering in that backend's table; `LoweringCoverage` and the per-backend conformance tests
// (tests/export/lowering_coverage_test.cpp, tests/support/op_cases.cpp) fail for an op that has neither.
#pragma once
#include <string>
#include <vector>

#include "hfx/ir/attrs.h"

namespace hfx {

/// One argument of a backend call: where its value comes from.
struct CallArg {
  enum class Kind { Input, Attr, Const, None };
  Kind kind = Kind::Input;
  std::string name;      ///< the callee's schema name ("self", "dim"); the Dynamo argument name
  int input = 0;         ///< Kind::Input: the node's input index
  std::string attr;      ///< Kind::Attr: the op's attribute (its value's type picks the encoding)
  AttrValue value;       ///< Kind::Const: what the call always passes; a reader refuses anything else
  bool keyword = false;  ///< Dynamo: a keyword-only argument
};

/// A call: the callee and its arguments in schema order. An empty target: no declared lowering.
struct CallDecl {
  std::string target{};
  std::vector<CallArg> args{};
  bool declared() const { return !target.empty(); }
};

/// What a Dynamo output's layout is, for the exporter's view-or-reshape decisions.
enum class AtenLayout {
  Fresh,        ///< a new contiguous tensor (matmul, reductions, gathers)
  Elementwise,  ///< contiguous when every input is, unbroadcast
  LikeInput0,   ///< contiguous when input 0 is
};

/// How the ONNX exporter writes a declared op: its inputs converted as the form says, then one node.
enum class OnnxForm {
  None,     ///< no declaration: a translation in src/export/onnx (or the op is decomposed first)
  Unary,    ///< `Op(x)`
  Binary,   ///< `Op(a, b)`, both cast to the output dtype (the promoted one)
  Compare,  ///< `Op(a, b)`, both cast to the promoted input dtype (bool as int32 but for Equal)
  Logical,  ///< `Op(...)`, every input cast to bool
};

/// How a backend takes an op whose call is not declared in its OpLowering field: said in the op's entry, so a
/// missing lowering is a statement, not an absence. tests/export/op_routes_test.cpp holds every statement to
/// the backends' real tables and registries, and fails naming the op and backend where none is said.
enum class Route {
  unsaid,         ///< nothing said: an error for a backend whose call is not declared
  hand_written,   ///< an entry of that backend's own table (ONNX translations, .pte lowering table, ATen
                  ///< table; for XNNPACK a partitioner rule): the lowering needs code
  decomposed,     ///< a patch or node fix of that backend (ONNX: also its composite decomposition) rewrites
                  ///< the op away before lowering
  refused,        ///< the backend refuses models that carry the op, before capture
  not_delegated,  ///< XNNPACK only: the op stays outside the delegate, run by its portable kernel
};
const char* route_name(Route r);  ///< "unsaid", "hand_written", ...

/// A route and why (for hand_written: what needs code; for refused: where and why).
struct RouteNote {
  Route route = Route::unsaid;
  std::string why{};
};

struct OpLowering {
  CallDecl executorch{};  ///< portable kernel "aten::erf.out"; the out tensor follows the arguments
  CallDecl aten{};        ///< "torch.ops.aten.erf.default"
  AtenLayout aten_layout = AtenLayout::Fresh;
  std::string onnx{};  ///< ONNX op type for `onnx_form`
  OnnxForm onnx_form = OnnxForm::None;
  /// The XNNPACK elementwise node ("XNNExp": 1x1 for one input, 2x1 for two) the partitioner may delegate
  /// the op to on float32 operands; "" = not delegated, or by a rule in
  /// src/export/executorch/xnnpack_delegate.cpp
  std::string xnnpack{};
  /// Each backend's route where its call above is not declared (ignored where it is).
  RouteNote onnx_route{}, executorch_route{}, aten_route{}, xnnpack_route{};
};

namespace lower {
/// Argument builders for the op table's declarations.
inline CallArg in(int i, std::string name = "") {
  return {CallArg::Kind::Input, std::move(name), i, "", int64_t{0}, false};
}
inline CallArg attr(std::string a, std::string name = "") {
  std::string n = name.empty() ? a : std::move(name);
  return {CallArg::Kind::Attr, std::move(n), 0, std::move(a), int64_t{0}, false};
}
inline CallArg constant(AttrValue v, std::string name = "") {
  return {CallArg::Kind::Const, std::move(name), 0, "", std::move(v), false};
}
inline CallArg none(std::string name = "") {
  return {CallArg::Kind::None, std::move(name), 0, "", int64_t{0}, false};
}
/// Route builders.
inline RouteNote hand(std::string why) { return {Route::hand_written, std::move(why)}; }
inline RouteNote decomposed(std::string why) { return {Route::decomposed, std::move(why)}; }
inline RouteNote refused(std::string why) { return {Route::refused, std::move(why)}; }
inline RouteNote not_delegated(std::string why = "") { return {Route::not_delegated, std::move(why)}; }
}  // namespace lower

}  // namespace hfx
