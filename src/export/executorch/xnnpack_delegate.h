// src/export/executorch/xnnpack_delegate.h — the XNNPACK partitioner of the ExecuTorch backend `xnnpack`
// and the writer of its delegate payloads.
//
// ExecuTorch's XNNPACK flow partitions the edge graph into subgraphs XNNPACK computes, serializes each as an
// XNNGraph flatbuffer behind an `XH00` header (backends/xnnpack/serialization in ExecuTorch; our copy of the
// schema: xnnpack_schema.fbs) and calls it from the method with a DelegateCall whose arguments are the
// subgraph's inputs then its outputs; the weights live in the program's named data (one segment each), which
// the payload names by key. hfx does the same after the stage-5 node fixes: a partition is a maximal run of
// consecutive supported nodes in graph order (consecutive, so no value leaves the run and comes back: every
// partition is convex), and every node the table below does not take stays a portable kernel call (the KV
// cache update, sym-size arithmetic, views, gathers).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "hfx/ir/graph.h"

namespace hfx::et::xnn {

/// One partitioner entry: an hfx op as it reaches the .pte writer, the XNNPACK node it becomes, when the
/// partitioner takes it and why. Declared once (xnnpack_delegate.cpp); `hfx registries` lists them.
struct XnnOpEntry {
  std::string op;        ///< "aten.mm"
  std::string xnn_node;  ///< "XNNFullyConnected"
  std::string when;      ///< the condition beyond float32 operands ("rhs is a constant")
  std::string reason;
};
const std::vector<XnnOpEntry>& xnnpack_op_table();

/// Whether the partitioner has a rule of its own for op `op` (beyond the op table's declared elementwise
/// nodes): the matmuls, reshapes, reductions, scalar forms, softmax, gelu, relu, hfx.linear_q.
bool has_rule(const std::string& op);

/// Whether the partitioner takes node `n`: a table entry, float32 tensors of rank <= 6 throughout, and the
/// entry's condition (sizes and their ranges in `env`); hfx.linear_q (uint8 codes) has its own condition
/// (4-bit symmetric, blocks a multiple of 32, f32 activations).
bool supported(const Node& n, const ShapeEnv& env);

/// A partition: consecutive supported nodes; `inputs` are the non-constant values its nodes read that come
/// from outside (first use order), `outputs` the values it produces that a node outside reads or the graph
/// returns. Constants its nodes read become static XNNPACK values in named data.
struct Partition {
  std::vector<const Node*> nodes;
  std::vector<const Value*> inputs;
  std::vector<const Value*> outputs;
};
std::vector<Partition> partition(const Graph& g);

/// Serializes a partition: the XH00 header, the XNNGraph (external ids 0..n-1 = the DelegateCall's
/// arguments, inputs then outputs) and no inline constant data. `bound` gives a value's serialized sizes
/// (the upper bounds the .pte declares); `named_key` adds a constant to the program's named data and returns
/// its key.
std::vector<uint8_t> serialize(const Partition& p,
                               const std::function<std::vector<int32_t>(const Value*)>& bound,
                               const std::function<std::string(const Value*)>& named_key);

/// Arithmetic of one node at the upper-bound sizes: 2·M·K·N for a matrix product (quantized or not), one per
/// element of its largest operand for the rest, none for data movement (views, copies, gathers,
/// concatenation, fills, selects, comparisons): the measure of the share of work the delegate takes.
double node_flops(const Node& n, const ShapeEnv& env);
/// Bytes of `v` at the upper-bound sizes (a symbolic size without a bound counts 1).
double bound_bytes(const Value& v, const ShapeEnv& env);

}  // namespace hfx::et::xnn
