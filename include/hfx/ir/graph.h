// hfx/ir/graph.h — the captured program: a graph of nodes and values with a flat signature.
//
// Values are typed (dtype + symbolic shape) and named; graph inputs, parameters (weights, by their
// Hugging Face tensor name) and constants are values without a producer. Nodes call ops from the op
// table by name with typed attributes. Node order is topological. Names follow the Hugging Face module
// that produced them ("model.layers.0.self_attn.q_proj") so a per-layer diff can point at one.
#pragma once
#include <list>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "hfx/core/symbolic.h"
#include "hfx/core/tensor.h"
#include "hfx/ir/attrs.h"

namespace hfx {

struct Node;

/// dtype + symbolic shape.
struct TensorType {
  DType dtype = DType::F32;
  SymShape shape;
  std::string str() const;
  bool same(const TensorType& o) const;
};

enum class ValueKind { Input, Param, Const, NodeOutput };

struct Value {
  int id = 0;
  std::string name;
  TensorType type;
  ValueKind kind = ValueKind::NodeOutput;
  Node* producer = nullptr;  ///< for NodeOutput
  int index = 0;             ///< output slot in producer
  Tensor data;               ///< for Param and Const: the data (may view a memory mapping)
};

struct Node {
  int id = 0;
  std::string op;
  std::vector<Value*> inputs;  ///< nullptr for an omitted optional input
  std::vector<Value*> outputs;
  Attrs attrs;
  std::string name;  ///< module path + local suffix
};

/// Metadata about the KV cache leaves of a graph: which inputs/outputs are which layer's key/value.
struct CacheLeaf {
  int layer = 0;
  std::string kind;         ///< "key" or "value"
  std::string layer_type;   ///< "full_attention" or "sliding_attention"
  int64_t window = 0;       ///< sliding window (0 for full)
  std::string input_name;   ///< past leaf (graph input), empty if none
  std::string output_name;  ///< present leaf (graph output)
};

class Graph {
 public:
  explicit Graph(std::shared_ptr<ShapeEnv> env = nullptr);
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  ShapeEnv& env() { return *env_; }
  const ShapeEnv& env() const { return *env_; }
  std::shared_ptr<ShapeEnv> env_ptr() const { return env_; }

  Value* add_input(const std::string& name, const TensorType& type);
  Value* add_param(const std::string& name, const Tensor& data);
  Value* add_const(const Tensor& data, const std::string& hint = "const");
  /// Adds a node with given output types. Name is made unique. The graph knows no op table (it is a layer
  /// below the ops): hfx::add_node (hfx/ops/op_schema.h) adds a node typed by its op's schema.
  Node* add_node_typed(const std::string& op, const std::vector<Value*>& inputs, const Attrs& attrs,
                       const std::string& name, const std::vector<TensorType>& out_types);
  /// Declares a graph output under `name` (renames the value).
  void add_output(const std::string& name, Value* v);

  const std::vector<Value*>& inputs() const { return inputs_; }
  const std::vector<Value*>& params() const { return params_; }
  const std::vector<Value*>& consts() const { return consts_; }
  const std::vector<Value*>& outputs() const { return outputs_; }
  const std::list<std::unique_ptr<Node>>& nodes() const { return nodes_; }
  std::vector<CacheLeaf>& cache_leaves() { return cache_leaves_; }
  const std::vector<CacheLeaf>& cache_leaves() const { return cache_leaves_; }

  Value* find_input(const std::string& name) const;
  Value* find_output(const std::string& name) const;
  Value* find_param(const std::string& name) const;

  /// Users of each value (computed on demand).
  std::map<const Value*, std::vector<Node*>> users() const;
  /// Replaces every use of `from` (node inputs and graph outputs) by `to`.
  void replace_all_uses(Value* from, Value* to);
  /// Removes nodes whose outputs are unused and are not graph outputs. Returns how many.
  int eliminate_dead_code();
  /// Moves node `n` (already added at the end) to just before `before`.
  void move_before(Node* n, Node* before);
  void erase_node(Node* n);

  /// Readable dump: signature, then one line per node: `%name: f32[s0, 4] = aten.mm(%a, %b) {attrs}`.
  std::string dump() const;
  // The verifier, which re-infers types from the op table, is hfx::verify_graph (hfx/ops/op_schema.h).

 private:
  Value* new_value(const std::string& name, const TensorType& t, ValueKind k);
  std::string unique_name(const std::string& base);
  std::shared_ptr<ShapeEnv> env_;
  std::vector<std::unique_ptr<Value>> values_;
  std::vector<Value*> inputs_, params_, consts_, outputs_;
  std::list<std::unique_ptr<Node>> nodes_;
  std::vector<CacheLeaf> cache_leaves_;
  std::map<std::string, int> name_counts_;
  int next_id_ = 0;
};

}  // namespace hfx
