// Graph construction and dump. Typing a node and the verifier need the op table, a layer above this one:
// they are hfx::add_node and hfx::verify_graph in src/ops/graph_typing.cpp.
#include "hfx/ir/graph.h"

#include <algorithm>
#include <set>
#include <unordered_set>

#include "hfx/core/error.h"

namespace hfx {

std::string TensorType::str() const {
  static const std::map<DType, const char*> abbr = {
      {DType::F32, "f32"}, {DType::F16, "f16"}, {DType::BF16, "bf16"}, {DType::I64, "i64"},
      {DType::I32, "i32"}, {DType::I8, "i8"},   {DType::U8, "u8"},     {DType::Bool, "bool"}};
  return std::string(abbr.at(dtype)) + shape_str(shape);
}

bool TensorType::same(const TensorType& o) const {
  if (dtype != o.dtype || shape.size() != o.shape.size()) return false;
  for (size_t i = 0; i < shape.size(); i++)
    if (!shape[i].same(o.shape[i])) return false;
  return true;
}

Graph::Graph(std::shared_ptr<ShapeEnv> env) : env_(env ? std::move(env) : std::make_shared<ShapeEnv>()) {}

std::string Graph::unique_name(const std::string& base) {
  std::string b = base.empty() ? "v" : base;
  int& n = name_counts_[b];
  std::string out = n == 0 ? b : b + "_" + std::to_string(n);
  n++;
  while (n > 1 && name_counts_.count(out)) out = b + "_" + std::to_string(n++);
  if (out != b) name_counts_[out] = 1;
  return out;
}

Value* Graph::new_value(const std::string& name, const TensorType& t, ValueKind k) {
  auto v = std::make_unique<Value>();
  v->id = next_id_++;
  v->name = unique_name(name);
  v->type = t;
  v->kind = k;
  values_.push_back(std::move(v));
  return values_.back().get();
}

Value* Graph::add_input(const std::string& name, const TensorType& type) {
  if (find_input(name)) HFX_THROW("graph", "expected a new input name, got duplicate '{}'", name);
  Value* v = new_value(name, type, ValueKind::Input);
  inputs_.push_back(v);
  return v;
}

Value* Graph::add_param(const std::string& name, const Tensor& data) {
  if (Value* p = find_param(name)) return p;
  SymShape s(data.shape().begin(), data.shape().end());
  Value* v = new_value(name, TensorType{data.dtype(), s}, ValueKind::Param);
  v->data = data;
  params_.push_back(v);
  return v;
}

Value* Graph::add_const(const Tensor& data, const std::string& hint) {
  SymShape s(data.shape().begin(), data.shape().end());
  Value* v = new_value(hint, TensorType{data.dtype(), s}, ValueKind::Const);
  v->data = data.contiguous();
  consts_.push_back(v);
  return v;
}

Node* Graph::add_node_typed(const std::string& op, const std::vector<Value*>& inputs, const Attrs& attrs,
                            const std::string& name, const std::vector<TensorType>& out_types) {
  auto node = std::make_unique<Node>();
  node->id = next_id_++;
  node->op = op;
  node->inputs = inputs;
  node->attrs = attrs;
  node->name = unique_name(name.empty() ? op : name);
  for (size_t i = 0; i < out_types.size(); i++) {
    Value* v = new_value(out_types.size() == 1 ? node->name : node->name + "." + std::to_string(i),
                         out_types[i], ValueKind::NodeOutput);
    v->producer = node.get();
    v->index = static_cast<int>(i);
    node->outputs.push_back(v);
  }
  nodes_.push_back(std::move(node));
  return nodes_.back().get();
}

void Graph::add_output(const std::string& name, Value* v) {
  if (find_output(name)) HFX_THROW("graph", "expected a new output name, got duplicate '{}'", name);
  if (v->kind == ValueKind::NodeOutput && v->name != name) {
    if (name_counts_.count(name) && !find_output(name)) {
      // another value holds the name: rename it away so the output keeps the public name
      for (auto& val : values_)
        if (val->name == name) val->name = unique_name(name + ".renamed");
    }
    v->name = name;
    name_counts_[name]++;
  }
  outputs_.push_back(v);
}

Value* Graph::find_input(const std::string& name) const {
  for (Value* v : inputs_)
    if (v->name == name) return v;
  return nullptr;
}
Value* Graph::find_output(const std::string& name) const {
  for (Value* v : outputs_)
    if (v->name == name) return v;
  return nullptr;
}
Value* Graph::find_param(const std::string& name) const {
  for (Value* v : params_)
    if (v->name == name) return v;
  return nullptr;
}

std::map<const Value*, std::vector<Node*>> Graph::users() const {
  std::map<const Value*, std::vector<Node*>> u;
  for (const auto& n : nodes_)
    for (Value* in : n->inputs)
      if (in) u[in].push_back(n.get());
  return u;
}

void Graph::replace_all_uses(Value* from, Value* to) {
  for (auto& n : nodes_)
    for (auto& in : n->inputs)
      if (in == from) in = to;
  for (auto& o : outputs_)
    if (o == from) {
      std::string keep = from->name;
      o = to;
      if (to->kind == ValueKind::NodeOutput) to->name = keep;
    }
}

int Graph::eliminate_dead_code() {
  std::unordered_set<const Value*> live(outputs_.begin(), outputs_.end());
  int removed = 0;
  for (auto it = nodes_.rbegin(); it != nodes_.rend();) {
    Node* n = it->get();
    bool used = std::any_of(n->outputs.begin(), n->outputs.end(), [&](Value* v) { return live.count(v); });
    if (used) {
      for (Value* in : n->inputs)
        if (in) live.insert(in);
      ++it;
    } else {
      it = decltype(it)(nodes_.erase(std::next(it).base()));
      removed++;
    }
  }
  auto prune = [&](std::vector<Value*>& vs) {
    vs.erase(std::remove_if(vs.begin(), vs.end(), [&](Value* v) { return !live.count(v); }), vs.end());
  };
  prune(params_);
  prune(consts_);
  return removed;
}

void Graph::move_before(Node* n, Node* before) {
  auto it_n = std::find_if(nodes_.begin(), nodes_.end(), [&](const auto& p) { return p.get() == n; });
  auto it_b = std::find_if(nodes_.begin(), nodes_.end(), [&](const auto& p) { return p.get() == before; });
  if (it_n == nodes_.end() || it_b == nodes_.end())
    HFX_THROW("graph", "expected nodes of this graph in move_before");
  nodes_.splice(it_b, nodes_, it_n);
}

void Graph::erase_node(Node* n) {
  nodes_.remove_if([&](const auto& p) { return p.get() == n; });
}

std::string Graph::dump() const {
  std::string s = "graph(";
  for (size_t i = 0; i < inputs_.size(); i++)
    s += (i ? ", " : "") + std::string("%") + inputs_[i]->name + ": " + inputs_[i]->type.str();
  s += ") {\n";
  for (const auto& [name, r] : env_->ranges())
    s += "  sym " + name + " in [" + std::to_string(r.min) + ", " +
         (r.bounded() ? std::to_string(r.max) : "inf") + "]\n";
  for (Value* p : params_) s += "  param %" + p->name + ": " + p->type.str() + "\n";
  for (Value* c : consts_) s += "  const %" + c->name + ": " + c->type.str() + "\n";
  for (const auto& n : nodes_) {
    s += "  ";
    for (size_t i = 0; i < n->outputs.size(); i++)
      s += (i ? ", " : "") + std::string("%") + n->outputs[i]->name + ": " + n->outputs[i]->type.str();
    s += " = " + n->op + "(";
    for (size_t i = 0; i < n->inputs.size(); i++)
      s += (i ? ", " : "") + (n->inputs[i] ? "%" + n->inputs[i]->name : std::string("None"));
    s += ")";
    if (!n->attrs.items().empty()) s += " " + n->attrs.str();
    s += "\n";
  }
  s += "  return (";
  for (size_t i = 0; i < outputs_.size(); i++) s += (i ? ", " : "") + std::string("%") + outputs_[i]->name;
  s += ")\n}\n";
  return s;
}

}  // namespace hfx
