// Eager and trace builders. Both normalize attributes through the op table so that an eager run and a
// captured node see exactly the same op state.
#include "hfx/ops/builder.h"

#include "hfx/core/error.h"
#include "hfx/ops/op_schema.h"
#include "hfx/ops/patch_point.h"

namespace hfx {

Builder& Var::builder() const {
  if (!b_) HFX_THROW("builder", "expected a defined Var, got an absent one");
  return *b_;
}

Sym Var::size(int64_t d) const {
  int64_t n = dim();
  if (d < 0) d += n;
  if (d < 0 || d >= n) HFX_THROW("builder", "expected dim in [{}, {}) of {}, got {}", -n, n, type_.str(), d);
  return type_.shape[d];
}

const Tensor& Var::tensor() const {
  if (!t_.defined())
    HFX_THROW("builder", "expected a concrete tensor (eager mode), got a traced value '{}'",
              v_ ? v_->name : "?");
  return t_;
}

Scope::Scope(Builder& b, const std::string& part) : b_(b) { b_.push_scope(part); }
Scope::~Scope() { b_.pop_scope(); }

std::string Builder::scope() const {
  std::string s;
  for (const auto& p : scopes_) {
    if (p.empty()) continue;
    s += (s.empty() ? "" : ".") + p;
  }
  return s;
}

// ---- eager ----

static TensorType type_of(const Tensor& t) {
  return TensorType{t.dtype(), SymShape(t.shape().begin(), t.shape().end())};
}

EagerBuilder::EagerBuilder() = default;

Var EagerBuilder::wrap(const Tensor& t) { return Var(this, type_of(t), t, nullptr); }

std::vector<Var> EagerBuilder::call(const std::string& op, const std::vector<Var>& inputs,
                                    const Attrs& attrs) {
  const OpSchema& s = op_schema(op);
  Attrs norm = normalize_attrs(s, attrs);
  std::vector<Tensor> in;
  in.reserve(inputs.size());
  for (const Var& v : inputs) in.push_back(v.defined() ? v.tensor() : Tensor());
  std::vector<Tensor> out;
  try {
    out = s.kernel(in, norm);
  } catch (const Error& e) {
    HFX_THROW("eager", "{} at '{}' failed: {}", op, scope(), e.what());
  }
  std::vector<Var> res;
  res.reserve(out.size());
  for (auto& t : out) res.push_back(wrap(t));
  return res;
}

Var EagerBuilder::param(const std::string&, const Tensor& t) { return wrap(t); }
Var EagerBuilder::constant(const Tensor& t) { return wrap(t); }

void EagerBuilder::name_output(const Var& v, const std::string& suffix) {
  if (!collect_) return;
  std::string n = scope();
  if (!suffix.empty()) n += (n.empty() ? "" : ".") + suffix;
  intermediates_[n] = v.tensor();
}

// ---- trace ----

Var TraceBuilder::wrap(Value* v) { return Var(this, v->type, Tensor(), v); }

Var TraceBuilder::input(const std::string& name, const TensorType& type) {
  return wrap(g_.add_input(name, type));
}

std::vector<Var> TraceBuilder::call(const std::string& op, const std::vector<Var>& inputs,
                                    const Attrs& attrs) {
  // Export patches (installed by PatchScope in this export's table) take over the op while they are active.
  if (const OpHandler* h = patches_ ? patches_->active(op) : nullptr) {
    PatchTable::Running guard(*patches_, op);
    return (*h)(*this, inputs, attrs);
  }
  std::vector<Value*> in;
  in.reserve(inputs.size());
  for (const Var& v : inputs) {
    if (v.defined() && &v.builder() != this)
      HFX_THROW(
          "capture",
          "expected every input of {} at '{}' to come from this trace, got a value from another builder", op,
          scope());
    in.push_back(v.defined() ? v.value() : nullptr);
  }
  std::string name = scope();
  std::string shortop = op.substr(op.find('.') + 1);
  if (auto p = shortop.find('.'); p != std::string::npos) shortop = shortop.substr(0, p);
  name = name.empty() ? shortop : name + "/" + shortop;
  Node* n = add_node(g_, op, in, attrs, name);
  std::vector<Var> res;
  for (Value* o : n->outputs) res.push_back(wrap(o));
  return res;
}

Var TraceBuilder::param(const std::string& name, const Tensor& t) {
  auto it = params_.find(name);
  if (it != params_.end()) return wrap(it->second);
  Value* v = g_.add_param(name, t);
  params_[name] = v;
  return wrap(v);
}

Var TraceBuilder::constant(const Tensor& t) {
  std::string hint = scope();
  return wrap(g_.add_const(t, hint.empty() ? "const" : hint + "/const"));
}

void TraceBuilder::name_output(const Var& v, const std::string& suffix) {
  Value* val = v.value();
  if (!val || val->kind != ValueKind::NodeOutput) return;
  std::string n = scope();
  if (!suffix.empty()) n += (n.empty() ? "" : ".") + suffix;
  // Keep names unique: a module called twice gets ".1", ".2", ...
  std::string cand = n;
  for (int i = 1;; i++) {
    bool taken = false;
    for (const auto& node : g_.nodes())
      for (Value* o : node->outputs)
        if (o != val && o->name == cand) taken = true;
    if (!taken) break;
    cand = n + "." + std::to_string(i);
  }
  val->name = cand;
}

}  // namespace hfx
