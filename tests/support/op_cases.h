// Per-op conformance cases shared by the backends' op tests (tests/export/onnx/ort_ops_test.cpp for ONNX
// Runtime, tests/export/executorch/pte_op_conformance_test.cpp for the .pte programs): for every op of the
// op table, its inputs (symbolic dims, generator), attributes and tolerance, as data, and the tiny traced
// graph each case becomes.
#pragma once
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "hfx/core/tensor.h"
#include "hfx/ir/attrs.h"
#include "hfx/ir/graph.h"
#include "hfx/ops/builder.h"

namespace hfx::op_cases {

struct In {
  std::string name;               ///< "" = absent optional input
  std::vector<std::string> dims;  ///< numbers or symbol names
  DType dt = DType::F32;
  std::string gen =
      "normal";        ///< normal | pos | int:N | bool | perm | cos | sin | cos_i | sin_i | mask | nzmask
  bool param = false;  ///< a weight (initializer) instead of a graph input
};

struct OpCase {
  std::string name;
  std::string op;
  std::vector<In> ins;
  Attrs attrs{};
  double tol = 1e-5;
  /// Target standard below this opset: lowering must refuse the op with an error (blocked
  /// DequantizeLinear needs opset 21).
  int min_opset = 18;
  /// Run ORT with basic optimizations only: its extended ones rewrite blocked DequantizeLinear → MatMul
  /// into MatMulNBits with int8 activations, other math than the graph states.
  bool basic_opt = false;
  std::vector<std::map<std::string, int64_t>> sizes = {{{"B", 2}, {"S", 5}, {"T", 7}},
                                                       {{"B", 3}, {"S", 3}, {"T", 4}}};
};

/// Every case, at least one per op of the table.
std::vector<OpCase> cases();
/// Random data for one input at a concrete shape, as its generator says.
Tensor make_input(const In& in, const Shape& shape, std::mt19937& rng);
/// The input's dims as symbolic sizes (numbers constant, names symbols).
SymShape symbolic_dims(const In& in);

/// A case traced into a graph with symbolic dims (each symbol in [1, 64], hinted with the first binding):
/// weights as params, the other inputs as graph inputs in order, plus a shape-only input "dims" [B, S, T]
/// when a symbol is used only by attributes; output "out". `patches`: the backend's patch table, so a
/// patched op traces into its decomposition as it does in a capture.
struct CaseGraph {
  std::unique_ptr<Graph> graph;
  std::map<std::string, Tensor> params;
  bool dims_input = false;
};
CaseGraph build_case_graph(const OpCase& oc, std::mt19937& rng, PatchTable* patches = nullptr);

/// One size binding of a case: the graph's inputs (in order, then "dims" when the graph has it) and the
/// eager kernel's result on them.
struct CaseRun {
  std::vector<Tensor> feeds;
  Tensor ref;
};
CaseRun eager_case_run(const OpCase& oc, const CaseGraph& cg, const std::map<std::string, int64_t>& binding,
                       std::mt19937& rng);
/// Max |a - b| / max(1, |b|) over the elements, equal infinities counting 0.
double max_rel_diff(const Tensor& a, const Tensor& b);

}  // namespace hfx::op_cases
