// hfx/ops/op_schema.h — the op table: one declaration per op, serving eager execution and export.
//
// Each op has a Core-ATen-like name ("aten.mm", "aten.add.Tensor"), an input arity, attribute specs
// with defaults, a shape/dtype inference function over symbolic dims, a CPU kernel, and — for
// composite ops (hfx.sdpa, hfx.rms_norm, hfx.rope) — a reference decomposition into primitive ops, and
// the backends' one-call lowerings (hfx/ops/op_lowering.h). The table is declared in one place:
// src/ops/op_table.cpp.
#pragma once
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "hfx/core/tensor.h"
#include "hfx/ir/attrs.h"
#include "hfx/ir/graph.h"
#include "hfx/ops/op_lowering.h"

namespace hfx {

class Var;
class Builder;

struct AttrSpec {
  std::string name{};
  bool required = false;
  AttrValue default_value = int64_t{0};
  std::string doc{};
};

using InferFn = std::function<std::vector<TensorType>(const std::vector<const TensorType*>& inputs,
                                                      const Attrs& attrs, ShapeEnv& env)>;
using KernelFn = std::function<std::vector<Tensor>(const std::vector<Tensor>& inputs, const Attrs& attrs)>;
using DecompFn =
    std::function<std::vector<Var>(Builder& b, const std::vector<Var>& inputs, const Attrs& attrs)>;

struct OpSchema {
  std::string name{};
  int min_inputs = 0;
  int max_inputs = 0;  ///< -1: variadic
  int num_outputs = 1;
  std::vector<AttrSpec> attrs{};
  InferFn infer{};
  KernelFn kernel{};
  DecompFn decompose{};  ///< set for composite ops
  std::string doc{};
  OpLowering lower{};  ///< the backends' one-call lowerings (hfx/ops/op_lowering.h); empty where hand-written
  bool composite() const { return static_cast<bool>(decompose); }
};

/// The op named `name`; throws hfx::Error("ops", "expected a known op, got ...").
const OpSchema& op_schema(std::string_view name);
const OpSchema* find_op_schema(std::string_view name);
/// The op whose declared ExecuTorch call is `kernel` ("aten::erf.out"), or null: the `.pte` reader's map.
const OpSchema* find_op_by_executorch_kernel(std::string_view kernel);
/// The op whose declared ATen call is `target` ("torch.ops.aten.erf.default"), or null: the `.pt2` readers'.
const OpSchema* find_op_by_aten_target(std::string_view target);
/// All ops, sorted by name.
std::vector<const OpSchema*> all_op_schemas();
/// Fills defaults and checks required attributes and unknown names. Throws naming the op.
Attrs normalize_attrs(const OpSchema& op, const Attrs& attrs);

/// The table itself (defined in src/ops/op_table.cpp).
const std::vector<OpSchema>& op_table();

/// Adds a node to `g` typed by its op's schema: attributes normalized (defaults filled), arity checked and
/// output types inferred over g's symbols. Name is made unique. Throws hfx::Error("graph", ...) naming
/// the op and node on a wrong arity or a failed inference.
Node* add_node(Graph& g, const std::string& op, const std::vector<Value*>& inputs, const Attrs& attrs,
               const std::string& name);
/// The graph verifier: every op known, every input defined before use, names unique, and each node's
/// output types equal to a fresh inference from its schema. Throws hfx::Error("verifier", ...).
void verify_graph(const Graph& g);

}  // namespace hfx
