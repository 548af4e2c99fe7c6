// src/export/dynamo/aten_table.h — private to the Dynamo exporter: the table that says which ATen overload
// an hfx op becomes and how its inputs and attributes map onto the overload's schema arguments.
#pragma once
#include <functional>
#include <string>

#include "export/dynamo/emitter.h"

namespace hfx::dynamo::detail {

using LowerFn = std::function<void(Emitter&, const Node&, const std::string& out)>;

struct AtenEntry {
  std::string hfx_op;
  std::string target;  // "torch.ops.aten.<name>.<overload>"
  LowerFn lower;
  std::string note;
};

/// The entry of hfx op `op`, or null when the table has none.
const AtenEntry* find_entry(const std::string& op);
/// Whether aten.scaled_dot_product_attention computes this hfx.sdpa exactly (no window, no softcap, and
/// causal only when queries and keys have the same length), so it need not be decomposed.
bool sdpa_is_exact(const Node& n);

}  // namespace hfx::dynamo::detail
