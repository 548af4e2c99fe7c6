// The ONNX lowering context and driver (stage 4), and the streamed writer.
//
// Symbolic sizes never become numbers here: each symbol is mapped to the graph input axis that defines
// it (or solved from a linear input dim such as attention_mask's `past + sequence`), read at run time
// with Shape(start, end), and expressions are rebuilt from integer ops, cached per canonical text so
// that a size used by twenty nodes is computed once. Parameters become initializers whose bytes are
// attached by write_onnx_model one tensor at a time.
#include "export/onnx/lowering.h"
#include "export/onnx/weight_layout.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>

#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "hfx/core/error.h"
#include "hfx/io/safetensors.h"
#include "hfx/ops/op_schema.h"

#ifndef HFX_VERSION
#define HFX_VERSION "0"
#endif

namespace hfx::onnx_export {

namespace fs = std::filesystem;

int ir_version_for_opset(int opset) {
  switch (opset) {
    case 18:
      return 8;
    case 19:
    case 20:
      return 9;
    case 21:
    case 22:
      return 10;
    case 23:
      return 11;
    default:
      HFX_THROW("onnx", "expected an opset in [18, 23], got {}", opset);
  }
}

DType export_dtype(DType dt) { return dtype_is_float(dt) ? DType::F32 : dt; }

int onnx_elem_type(DType dt) {
  switch (export_dtype(dt)) {
    case DType::F32:
      return onnx::TensorProto::FLOAT;
    case DType::I64:
      return onnx::TensorProto::INT64;
    case DType::I32:
      return onnx::TensorProto::INT32;
    case DType::I8:
      return onnx::TensorProto::INT8;
    case DType::U8:
      return onnx::TensorProto::UINT8;
    case DType::Bool:
      return onnx::TensorProto::BOOL;
    default:
      break;
  }
  HFX_THROW("onnx", "expected an exportable dtype, got {}", dtype_name(dt));
}

int onnx_storage_elem_type(DType dt) {
  if (dt == DType::F16) return onnx::TensorProto::FLOAT16;
  if (dt == DType::BF16) return onnx::TensorProto::BFLOAT16;
  return onnx_elem_type(dt);
}

DType dtype_of_onnx_elem(int elem) {
  switch (elem) {
    case onnx::TensorProto::FLOAT:
      return DType::F32;
    case onnx::TensorProto::FLOAT16:
      return DType::F16;
    case onnx::TensorProto::BFLOAT16:
      return DType::BF16;
    case onnx::TensorProto::INT64:
      return DType::I64;
    case onnx::TensorProto::INT32:
      return DType::I32;
    case onnx::TensorProto::INT8:
      return DType::I8;
    case onnx::TensorProto::UINT8:
      return DType::U8;
    case onnx::TensorProto::BOOL:
      return DType::Bool;
    default:
      break;
  }
  HFX_THROW("onnx",
            "expected an ONNX element type hfx writes (float, float16, bfloat16, int64, int32, int8, uint8, "
            "bool), got {}",
            elem);
}

void set_type(onnx::ValueInfoProto* vi, const std::string& name, DType dt, const SymShape& shape) {
  vi->set_name(name);
  auto* tt = vi->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx_elem_type(dt));
  auto* sh = tt->mutable_shape();
  for (const Sym& d : shape) {
    auto* dim = sh->add_dim();
    if (d.is_const())
      dim->set_dim_value(d.value());
    else
      dim->set_dim_param(d.str());
  }
}

// ------------------------------------------------------------------ context

LoweringContext::LoweringContext(const Graph& g, const LowerOptions& o, onnx::GraphProto& gp,
                                 std::vector<std::string>& warnings)
    : g_(g), opts_(o), gp_(gp), warnings_(warnings) {}

std::string LoweringContext::unique(const std::string& base) {
  std::string b = base.empty() ? "t" : base;
  std::string n = b;
  while (used_.count(n)) n = b + "_" + std::to_string(++counter_);
  used_.insert(n);
  return n;
}

std::string LoweringContext::name(const Value* v) {
  if (!v) return "";
  auto it = names_.find(v);
  if (it != names_.end()) return it->second;
  if (v->kind == ValueKind::NodeOutput)
    HFX_THROW("onnx", "expected '{}' to be produced before its use (nodes out of order?)", v->name);
  HFX_THROW("onnx", "expected '{}' to be declared as a graph input or initializer, got none", v->name);
}

std::string LoweringContext::in(const Node& n, size_t i) {
  return i < n.inputs.size() ? name(n.inputs[i]) : "";
}

std::string LoweringContext::out(const Node& n, size_t i) {
  const Value* v = n.outputs.at(i);
  auto it = names_.find(v);
  if (it != names_.end()) return it->second;
  std::string nm = unique(v->name);
  names_[v] = nm;
  return nm;
}

void LoweringContext::rebind(const Value* v, const std::string& onnx_name) { names_[v] = onnx_name; }

bool LoweringContext::weight_transposed(const Value* v) const {
  const Value* p = param_behind(v);
  return p && transposed_.count(p);
}

std::string LoweringContext::tmp(const Node* n, const std::string& hint) {
  std::string base = n ? n->name + "/" + hint : hint;
  return unique(base);
}

onnx::NodeProto& LoweringContext::emit(const std::string& op_type, const std::vector<std::string>& ins,
                                       const std::vector<std::string>& outs, const Node* for_node,
                                       const std::string& domain) {
  onnx::NodeProto* p = gp_.add_node();
  p->set_op_type(op_type);
  if (!domain.empty()) {
    p->set_domain(domain);
    if (!domains_.count(domain)) domains_[domain] = 1;
  }
  for (const auto& i : ins) p->add_input(i);
  // Trailing absent optional inputs are dropped (ONNX allows "" only before a present one).
  while (p->input_size() > 0 && p->input(p->input_size() - 1).empty()) p->mutable_input()->RemoveLast();
  for (const auto& o : outs) p->add_output(o);
  std::string base = (for_node ? for_node->name + "/" : std::string("hfx/")) + op_type;
  p->set_name(unique("node:" + base));
  used_.erase(p->name());  // node names live in their own namespace
  used_.insert(p->name());
  return *p;
}

std::string LoweringContext::op(const Node* n, const std::string& op_type,
                                const std::vector<std::string>& ins, const std::string& hint,
                                const std::string& domain) {
  std::string o = tmp(n, hint.empty() ? op_type : hint);
  emit(op_type, ins, {o}, n, domain);
  return o;
}

void LoweringContext::attr(onnx::NodeProto& p, const std::string& k, int64_t v) {
  auto* a = p.add_attribute();
  a->set_name(k);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}
void LoweringContext::attr(onnx::NodeProto& p, const std::string& k, double v) {
  auto* a = p.add_attribute();
  a->set_name(k);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(static_cast<float>(v));
}
void LoweringContext::attr(onnx::NodeProto& p, const std::string& k, const std::vector<int64_t>& v) {
  auto* a = p.add_attribute();
  a->set_name(k);
  a->set_type(onnx::AttributeProto::INTS);
  for (auto x : v) a->add_ints(x);
}
void LoweringContext::attr(onnx::NodeProto& p, const std::string& k, const std::string& v) {
  auto* a = p.add_attribute();
  a->set_name(k);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(v);
}
void LoweringContext::attr(onnx::NodeProto& p, const std::string& k, const onnx::TensorProto& t) {
  auto* a = p.add_attribute();
  a->set_name(k);
  a->set_type(onnx::AttributeProto::TENSOR);
  *a->mutable_t() = t;
}

onnx::TensorProto LoweringContext::value_tensor(double v, DType dt) {
  onnx::TensorProto t;
  dt = export_dtype(dt);
  t.set_data_type(onnx_elem_type(dt));
  t.add_dims(1);
  Tensor x = Tensor::full({1}, v, dt);
  t.set_raw_data(std::string(static_cast<const char*>(x.raw()), x.nbytes()));
  return t;
}

std::string LoweringContext::i64s(const std::vector<int64_t>& v) {
  std::string key = "i64s[";
  for (auto x : v) key += std::to_string(x) + ",";
  key += "]";
  auto it = const_cache_.find(key);
  if (it != const_cache_.end()) return it->second;
  std::string nm = unique("const_i64" + key.substr(4));
  onnx::TensorProto* t = gp_.add_initializer();
  t->set_name(nm);
  t->set_data_type(onnx::TensorProto::INT64);
  t->add_dims(static_cast<int64_t>(v.size()));
  t->set_raw_data(std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(int64_t)));
  const_cache_[key] = nm;
  return nm;
}

// An initializer named as the graph input is its default (ONNX IR >= 4): ONNX Runtime lists such an input
// as an overridable initializer, not as a required input, so a caller that does not know it (Transformers.js
// and gemma3's token_type_ids) leaves it out and the graph sees zeros [1, …, 1], which it broadcasts.
bool LoweringContext::zero_default(const Value* v) const {
  const auto& z = opts_.zero_default_inputs;
  return std::find(z.begin(), z.end(), v->name) != z.end();
}

void LoweringContext::add_zero_default(const Value* v) {
  onnx::TensorProto* t = gp_.add_initializer();
  t->set_name(v->name);
  t->set_data_type(onnx_elem_type(export_dtype(v->type.dtype)));
  for (size_t i = 0; i < v->type.shape.size(); i++) t->add_dims(1);
  const Tensor x = Tensor::zeros(Shape(v->type.shape.size(), 1), export_dtype(v->type.dtype));
  t->set_raw_data(std::string(static_cast<const char*>(x.raw()), x.nbytes()));
}

std::string LoweringContext::i64(int64_t v) { return scalar(static_cast<double>(v), DType::I64); }

std::string LoweringContext::scalar(double v, DType dt) {
  dt = export_dtype(dt);
  std::string key = fmt::format("scalar:{}:{}", dtype_name(dt), v);
  if (dt == DType::I64) key = fmt::format("scalar:int64:{}", static_cast<int64_t>(v));
  auto it = const_cache_.find(key);
  if (it != const_cache_.end()) return it->second;
  std::string nm = unique(
      fmt::format("const_{}_{}", dtype_name(dt),
                  dt == DType::I64 ? fmt::format("{}", static_cast<int64_t>(v)) : fmt::format("{}", v)));
  onnx::TensorProto* t = gp_.add_initializer();
  t->set_name(nm);
  t->set_data_type(onnx_elem_type(dt));
  Tensor x = Tensor::full({}, v, dt);
  t->set_raw_data(std::string(static_cast<const char*>(x.raw()), x.nbytes()));
  const_cache_[key] = nm;
  return nm;
}

std::string LoweringContext::cast(const Node* n, const std::string& x, DType from, DType to) {
  from = export_dtype(from);
  to = export_dtype(to);
  if (from == to || x.empty()) return x;
  std::string o = tmp(n, std::string("cast_") + dtype_name(to));
  auto& p = emit("Cast", {x}, {o}, n);
  attr(p, "to", static_cast<int64_t>(onnx_elem_type(to)));
  return o;
}

std::string LoweringContext::in_as(const Node& n, size_t i, DType to) {
  const Value* v = i < n.inputs.size() ? n.inputs[i] : nullptr;
  if (!v) return "";
  return cast(&n, name(v), v->type.dtype, to);
}

void LoweringContext::use_domain(const std::string& domain, int version) { domains_[domain] = version; }

void LoweringContext::warn(const std::string& w) {
  if (warned_.insert(w).second) warnings_.push_back(w);
}

void LoweringContext::declare_inputs() {
  for (const Value* v : g_.inputs()) {
    used_.insert(v->name);
    names_[v] = v->name;
    set_type(gp_.add_input(), v->name, v->type.dtype, v->type.shape);
    if (zero_default(v)) add_zero_default(v);
  }
  // Reserve output names so that no helper tensor takes them.
  for (const Value* v : g_.outputs())
    if (v->kind == ValueKind::NodeOutput && !names_.count(v) && !used_.count(v->name)) {
      used_.insert(v->name);
      names_[v] = v->name;
    }
  // Symbols read directly from an input axis (not from one that may be its [1, …, 1] default).
  for (const Value* v : g_.inputs())
    for (size_t a = 0; a < v->type.shape.size() && !zero_default(v); a++) {
      const Sym& d = v->type.shape[a];
      if (d.kind() == Sym::Kind::Symbol && !origins_.count(d.name()))
        origins_[d.name()] = {v->name, static_cast<int>(a)};
    }
  // Symbols solvable from a linear input dim (attention_mask [B, past + seq] with seq known).
  bool progress = true;
  while (progress) {
    progress = false;
    for (const Value* v : g_.inputs())
      for (size_t a = 0; a < v->type.shape.size(); a++) {
        const Sym& d = v->type.shape[a];
        if (d.kind() != Sym::Kind::Add) continue;
        std::vector<std::string> unknown;
        for (const auto& s : d.free_symbols())
          if (!origins_.count(s) && !derived_.count(s)) unknown.push_back(s);
        if (unknown.size() != 1) continue;
        bool unit = false;
        for (const auto& t : d.args())
          if (t.kind() == Sym::Kind::Symbol && t.name() == unknown[0]) unit = true;
        if (!unit) continue;
        std::string pseudo = fmt::format("__{}:{}", v->name, a);
        origins_[pseudo] = {v->name, static_cast<int>(a)};
        Sym u = Sym::symbol(unknown[0]);
        derived_[unknown[0]] = Sym::symbol(pseudo) - (d - u);
        progress = true;
      }
  }
}

void LoweringContext::restrict(const nlohmann::json& restriction) {
  if (std::find(restrictions_.begin(), restrictions_.end(), restriction) == restrictions_.end())
    restrictions_.push_back(restriction);
}

std::string LoweringContext::contract_cmp(const std::string& op_type, const std::string& a,
                                          const std::string& b) {
  std::string o = unique("contract/" + op_type);
  emit(op_type, {a, b}, {o});
  return o;
}

std::string LoweringContext::contract_and(const std::string& a, const std::string& b) {
  if (a.empty()) return b;
  if (b.empty()) return a;
  return contract_cmp("And", a, b);
}

// Every symbol with a defining input axis within its range.
void LoweringContext::range_checks(std::vector<ContractCheck>& checks) {
  const ShapeEnv& env = g_.env();
  for (const auto& [s, o] : origins_) {
    if (s.rfind("__", 0) == 0 || !env.has_symbol(s)) continue;
    SymRange r = env.range_of(s);
    std::string v = sym(Sym::symbol(s));
    std::string ok;
    if (r.min > 0) ok = contract_and(ok, contract_cmp("GreaterOrEqual", v, i64s({r.min})));
    if (r.bounded()) ok = contract_and(ok, contract_cmp("LessOrEqual", v, i64s({r.max})));
    if (ok.empty()) continue;
    checks.push_back({fmt::format("{} in [{}, {}] ({} axis {})", s, r.min,
                                  r.bounded() ? std::to_string(r.max) : "inf", o.input, o.axis),
                      ok});
  }
}

// Input dims that must agree with symbols defined elsewhere (attention_mask = past + sequence). An input
// with a zero default may be its [1, …, 1] default instead: the graph broadcasts it (Expand checks).
void LoweringContext::dim_checks(std::vector<ContractCheck>& checks) {
  for (const Value* v : g_.inputs())
    for (size_t a = 0; a < v->type.shape.size() && !zero_default(v); a++) {
      const Sym& d = v->type.shape[a];
      if (d.is_const()) continue;
      auto o = origins_.find(d.kind() == Sym::Kind::Symbol ? d.name() : "");
      if (o != origins_.end() && o->second.input == v->name && o->second.axis == static_cast<int>(a))
        continue;
      if (derived_.count(d.kind() == Sym::Kind::Symbol ? d.name() : "")) continue;
      // A dim that defined a derived symbol is consistent by construction; skip it.
      if (origins_.count(fmt::format("__{}:{}", v->name, a))) continue;
      if (!sym_available(d)) continue;
      std::string pseudo = unique("contract/dim");
      auto& p = emit("Shape", {v->name}, {pseudo});
      attr(p, "start", static_cast<int64_t>(a));
      attr(p, "end", static_cast<int64_t>(a + 1));
      checks.push_back(
          {fmt::format("{} axis {} == {}", v->name, a, d.str()), contract_cmp("Equal", pseudo, sym(d))});
    }
}

// The capture's deferred guards whose symbols the graph can compute.
void LoweringContext::guard_checks(std::vector<ContractCheck>& checks) {
  for (const Guard& gd : opts_.guards) {
    if (!sym_available(gd.expr)) {
      warn(fmt::format("deferred guard '{}' ({}) not checked in the graph: a symbol has no defining input",
                       gd.what, gd.where));
      continue;
    }
    std::string v = sym(gd.expr), ok;
    if (gd.lower > -SymRange::kInf)
      ok = contract_and(ok, contract_cmp("GreaterOrEqual", v, i64s({gd.lower})));
    if (gd.upper < SymRange::kInf) ok = contract_and(ok, contract_cmp("LessOrEqual", v, i64s({gd.upper})));
    if (ok.empty()) continue;
    checks.push_back(
        {fmt::format("guard {} in [{}, {}] from {}", gd.expr.str(), gd.lower, gd.upper, gd.where), ok});
  }
}

// Reshapes v to its own shape when `ok` holds and to an invalid shape (-2) otherwise; `after` (an empty
// tensor from the last named check) makes this gate run after it.
void LoweringContext::contract_gate(const Value* v, const std::string& ok, const std::string& what,
                                    const std::string& after) {
  std::string cur = name(v), shp = unique(v->name + "/contract_shape"), target = unique("contract/target");
  emit("Shape", {cur}, {shp});
  emit("Where", {ok, shp, i64s(std::vector<int64_t>(v->type.shape.size(), -2))}, {target});
  if (!after.empty()) {
    std::string t2 = unique("contract/target");
    attr(emit("Concat", {target, after}, {t2}), "axis", int64_t{0});
    target = t2;
  }
  std::string next = unique(v->name + "/checked");
  emit("Reshape", {cur, target}, {next}).set_name(unique("hfx.contract: " + what));
  rebind(v, next);
}

void LoweringContext::emit_guards() {
  // The guarded tensor: the first input that some node reads (input_ids in a causal LM graph). Every
  // check reshapes it to its own shape when the check holds and to an invalid shape (-2) otherwise, so
  // ORT stops with "... running Reshape node. Name:'hfx.contract: <check>' ..." — the check text names
  // the symbol, its range and the input axis.
  const Value* guarded = nullptr;
  auto users = g_.users();
  for (const Value* v : g_.inputs())
    if (users.count(v) && !users.at(v).empty()) {
      guarded = v;
      break;
    }
  if (!guarded) return;
  std::vector<ContractCheck> checks;
  range_checks(checks);
  dim_checks(checks);
  guard_checks(checks);
  if (checks.empty()) return;
  std::string all;
  for (const auto& c : checks) {
    contract_gate(guarded, c.ok, c.what, "");
    all = contract_and(all, c.ok);
  }
  // The named checks above fail first (their message says which contract was broken).
  std::string after = unique("contract/after_checks");
  auto& sp = emit("Shape", {name(guarded)}, {after});
  attr(sp, "start", int64_t{0});
  attr(sp, "end", int64_t{0});
  // The other integer inputs (positions, masks) pass the same checks, so no node reads an input of an
  // out-of-contract call before a check stops it (a Gather of position_ids past a learned table would).
  for (const Value* v : g_.inputs())
    if (v != guarded && users.count(v) && !users.at(v).empty() && !dtype_is_float(v->type.dtype))
      contract_gate(v, all, "every check above (" + v->name + ")", after);
}

// ------------------------------------------------------------------ registration

OnnxTranslation register_onnx_translation(const std::string& op, OnnxTranslation fn) {
  auto& t = onnx_translation_table();
  OnnxTranslation prev;
  auto it = t.find(op);
  if (it != t.end()) prev = it->second.fn;
  if (!fn) {
    if (it != t.end()) t.erase(it);
  } else if (it != t.end()) {
    it->second.fn = std::move(fn);
  } else {
    t[op] = OnnxTranslationEntry{std::move(fn), "registered at run time"};
  }
  return prev;
}

// ------------------------------------------------------------------ IR fixes

std::vector<std::string> apply_onnx_ir_fixes(onnx::ModelProto& m, std::vector<std::string>& warnings) {
  std::vector<std::string> changed;
  for (const auto& f : onnx_ir_fixes())
    if (f.fix && f.fix(m, warnings)) changed.push_back(f.name);
  return changed;
}

}  // namespace hfx::onnx_export
