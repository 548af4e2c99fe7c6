// src/export/executorch/pte_writer.h — captured graphs → an ExecuTorch program file (.pte).
//
// Lowers each graph node to one call of an out-variant kernel of ExecuTorch's portable library by its
// registered name ("aten::mm.out"), with every schema argument in order, defaults filled in, the out
// argument(s) and the return slot. Symbolic sizes in arguments (view/expand/slice/arange/full) become
// Int values computed at run time by `aten::sym_size.int` and `executorch_prim::*.Scalar` ops, as
// ExecuTorch's own emitter does; tensor sizes are upper bounds (DYNAMIC_BOUND) from the symbol ranges,
// and a dim without an upper bound is refused. Non-constant tensors are memory-planned into one arena
// per method (greedy reuse by lifetime); constants go to a segment addressed by `constant_segment`;
// mutable buffers (the static KV cache) are planned for the whole method and start from a zeroed
// initial state in `mutable_data_segments`. The file carries the `eh00` extended header.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "hfx/ir/graph.h"

namespace hfx::et {

/// One method built from a graph.
struct PteMethodSpec {
  std::string name;
  const Graph* graph = nullptr;
  /// (graph input, graph output): a mutable buffer — state kept across calls of the method, zeroed at
  /// load — and the output holding its new value, written in place (`aten::index_put_`). Neither is a
  /// method input or output.
  std::vector<std::pair<std::string, std::string>> mutable_buffers;
  /// The capture's deferred runtime asserts over input sizes: each becomes a check instruction ahead of
  /// the model's (aten::full.out into a tensor bounded by the guard: ExecuTorch's resize refuses a call
  /// outside it), with a stacktrace frame naming the guard.
  std::vector<Guard> guards;
};

using PteConstant = std::variant<int64_t, bool, double>;

/// A method without inputs that returns constants (ExecuTorch's metadata methods).
struct PteConstMethod {
  std::string name;
  std::vector<PteConstant> values;
};

struct PteWriteOptions {
  size_t segment_alignment = 128;  ///< start of each segment (ExecuTorch's default)
  size_t tensor_alignment = 16;    ///< each constant inside the constant segment
  size_t memory_alignment = 16;    ///< each planned tensor inside the arena
  /// "" (every node a portable kernel call) or "xnnpack": the XNNPACK partitioner (xnnpack_delegate.h)
  /// takes the runs of nodes it supports into XnnpackBackend delegate calls.
  std::string delegate;
};

struct PteMethodStats {
  std::string name;
  int instructions = 0;
  int values = 0;
  int64_t planned_bytes = 0;                     ///< arena size after reuse
  int64_t naive_bytes = 0;                       ///< sum of every planned tensor's capacity
  std::vector<std::string> operators;            ///< "aten::mm.out", each once
  int delegate_calls = 0;                        ///< DelegateCall instructions
  int nodes = 0, delegated_nodes = 0;            ///< graph nodes, and those inside a delegate
  double flops = 0, delegated_flops = 0;         ///< work at the upper-bound sizes (xnn::node_flops)
  std::map<std::string, double> portable_flops;  ///< per op (e.g. "aten.cumsum"), outside the delegates
};

struct PteWriteResult {
  std::vector<uint8_t> bytes;
  std::vector<PteMethodStats> methods;
  int64_t constant_bytes = 0;
  int64_t mutable_bytes = 0;
  int64_t named_data_bytes = 0;  ///< constants of delegate payloads, in the program's named data
  int64_t delegate_bytes = 0;    ///< the payloads themselves
  /// Every operator of every method, each once, sorted.
  std::vector<std::string> operators;
  /// Guards that could not be checked in the program (a symbol no input size defines).
  std::vector<std::string> warnings;
};

/// Writes the program. Throws hfx::Error("executorch", ...) for an op without a portable lowering, an
/// unbounded dim, or a symbol no input size defines.
PteWriteResult write_pte(const std::vector<PteMethodSpec>& methods,
                         const std::vector<PteConstMethod>& const_methods, const PteWriteOptions& opt = {});

/// Ops of the hfx op table that write_pte lowers directly (the rest must be rewritten first).
std::vector<std::string> pte_lowered_ops();

}  // namespace hfx::et
