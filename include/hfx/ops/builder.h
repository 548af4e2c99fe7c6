// hfx/ops/builder.h — one model definition, two ways to run it.
//
// Model code is written against `Var` and the functional API (hfx/ops/functional.h). A `Builder`
// decides what an op call means: `EagerBuilder` runs the op's CPU kernel at once; `TraceBuilder`
// records a node into a Graph with symbolic shapes (capture). Both share the op table, so the model
// that generates text is exactly the model that is exported.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "hfx/core/tensor.h"
#include "hfx/ir/graph.h"

namespace hfx {

class Builder;
class PatchTable;

/// A value flowing through model code: a concrete tensor (eager) or a graph value (trace).
/// A default-constructed Var is "absent" (an omitted optional input).
class Var {
 public:
  Var() = default;
  Var(Builder* b, TensorType type, Tensor t, Value* v)
      : b_(b), type_(std::move(type)), t_(std::move(t)), v_(v) {}

  bool defined() const { return b_ != nullptr; }
  explicit operator bool() const { return defined(); }
  Builder& builder() const;
  const TensorType& type() const { return type_; }
  DType dtype() const { return type_.dtype; }
  const SymShape& shape() const { return type_.shape; }
  int64_t dim() const { return static_cast<int64_t>(type_.shape.size()); }
  /// Size of dim d (negative from the end), symbolic when tracing.
  Sym size(int64_t d) const;
  /// Concrete tensor (eager only).
  const Tensor& tensor() const;
  /// Graph value (trace only).
  Value* value() const { return v_; }

 private:
  Builder* b_ = nullptr;
  TensorType type_;
  Tensor t_;
  Value* v_ = nullptr;
};

/// Pushes a module scope for naming ("model" → "model.layers.0" → ...) for its lifetime.
class Scope {
 public:
  Scope(Builder& b, const std::string& part);
  ~Scope();
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

 private:
  Builder& b_;
};

class Builder {
 public:
  virtual ~Builder() = default;
  /// Calls op `name` on inputs with attributes; returns its outputs.
  virtual std::vector<Var> call(const std::string& op, const std::vector<Var>& inputs,
                                const Attrs& attrs) = 0;
  /// A weight by its Hugging Face tensor name.
  virtual Var param(const std::string& name, const Tensor& t) = 0;
  /// A small constant tensor.
  virtual Var constant(const Tensor& t) = 0;
  virtual ShapeEnv& env() = 0;
  virtual bool tracing() const = 0;
  /// Names `v` as the output of the current module scope plus `suffix` (e.g. "" or "attn_weights").
  /// Trace: renames the graph value. Eager: records it when intermediates are being collected.
  virtual void name_output(const Var& v, const std::string& suffix = "") = 0;

  /// Current module path ("model.layers.0.self_attn").
  std::string scope() const;
  void push_scope(const std::string& part) { scopes_.push_back(part); }
  void pop_scope() { scopes_.pop_back(); }

 private:
  std::vector<std::string> scopes_;
};

/// Runs every op at once with the CPU kernels.
class EagerBuilder : public Builder {
 public:
  EagerBuilder();
  std::vector<Var> call(const std::string& op, const std::vector<Var>& inputs, const Attrs& attrs) override;
  Var param(const std::string& name, const Tensor& t) override;
  Var constant(const Tensor& t) override;
  ShapeEnv& env() override { return env_; }
  bool tracing() const override { return false; }
  void name_output(const Var& v, const std::string& suffix = "") override;

  /// Wraps a concrete tensor as a Var of this builder.
  Var wrap(const Tensor& t);
  /// When enabled, every named output is kept (by module path) for per-layer diffs.
  void collect_intermediates(bool on) { collect_ = on; }
  const std::map<std::string, Tensor>& intermediates() const { return intermediates_; }

 private:
  ShapeEnv env_;
  bool collect_ = false;
  std::map<std::string, Tensor> intermediates_;
};

/// Records every op into a Graph (capture).
class TraceBuilder : public Builder {
 public:
  /// Records into `g`; ops with a handler installed in `patches` (one export's table) go to the handler.
  explicit TraceBuilder(Graph& g, PatchTable* patches = nullptr) : g_(g), patches_(patches) {}
  std::vector<Var> call(const std::string& op, const std::vector<Var>& inputs, const Attrs& attrs) override;
  Var param(const std::string& name, const Tensor& t) override;
  Var constant(const Tensor& t) override;
  ShapeEnv& env() override { return g_.env(); }
  bool tracing() const override { return true; }
  void name_output(const Var& v, const std::string& suffix = "") override;

  /// Declares a graph input and returns it as a Var.
  Var input(const std::string& name, const TensorType& type);
  /// Wraps an existing graph value.
  Var wrap(Value* v);
  Graph& graph() { return g_; }
  /// The export's patch table this trace routes through (nullptr: none).
  PatchTable* patches() const { return patches_; }

 private:
  Graph& g_;
  PatchTable* patches_ = nullptr;
  std::map<std::string, Value*> params_;
};

}  // namespace hfx
