// src/export/dynamo/emitter.h — private to the Dynamo exporter: the Emitter that writes an ExportedProgram's
// graph nodes (arguments as torch's serializer spells them, symbolic sizes as SymInts read from the input
// tensors' dims) and the argument helpers the ATen table uses.
#pragma once
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "export/dynamo/program.h"
#include "hfx/core/error.h"
#include "hfx/ir/graph.h"

namespace hfx::dynamo::detail {

using json = nlohmann::json;

/// torch's ScalarType number of `dt` (the serialized programs' and tensor metadata's "dtype").
inline int scalar_type(DType dt) {
  switch (dt) {
    case DType::U8:
      return 1;
    case DType::I8:
      return 2;
    case DType::I32:
      return 4;
    case DType::I64:
      return 5;
    case DType::F16:
      return 6;
    case DType::F32:
      return 7;
    case DType::Bool:
      return 12;
    case DType::BF16:
      return 13;
  }
  return 0;
}

inline json float_arg(double v) {
  if (std::isnan(v)) HFX_THROW("dynamo", "expected a finite or infinite float argument, got NaN");
  if (std::isinf(v)) return json{{"as_float", v > 0 ? "Infinity" : "-Infinity"}};
  return json{{"as_float", v}};
}

inline json named(const std::string& name, json arg, bool keyword = false) {
  return json{{"name", name}, {"arg", std::move(arg)}, {"kind", keyword ? 2 : 1}};
}

struct SymSource {
  std::string tensor;
  int dim = 0;
};

class Emitter {
 public:
  Emitter(const Graph& g) : g_(g), env_(g.env()) {}

  json nodes = json::array();
  json tensor_values = json::object();
  json sym_int_values = json::object();
  json sym_bool_values = json::object();
  std::map<std::string, std::string> sym_names;  // hfx → torch
  std::map<std::string, SymSource> sources;

  std::string fresh(const std::string& base) {
    std::string b = fx_name(base), n = b;
    for (int i = 1; used_.count(n); i++) n = fmt::format("{}_{}", b, i);
    used_.insert(n);
    return n;
  }
  void bind(const Value* v, const std::string& name) { names_[v] = name; }
  const std::string& name_of(const Value* v) const {
    auto it = names_.find(v);
    if (it == names_.end())
      HFX_THROW("dynamo", "expected value '{}' to be defined before use, got none", v ? v->name : "<null>");
    return it->second;
  }
  bool contiguous(const Value* v) const {
    auto it = contig_.find(v);
    return it == contig_.end() ? true : it->second;
  }
  void set_contiguous(const Value* v, bool c) { contig_[v] = c; }

  // ---- symbols
  std::string torch_symbol(const std::string& hfx) {
    auto it = sym_names.find(hfx);
    if (it != sym_names.end()) return it->second;
    std::string t = fmt::format("s{}", sym_names.size());
    sym_names[hfx] = t;
    return t;
  }
  std::string srepr(const Sym& e) {
    switch (e.kind()) {
      case Sym::Kind::Const:
        return fmt::format("Integer({})", e.value());
      case Sym::Kind::Symbol: {
        SymRange r = env_.has_symbol(e.name()) ? env_.range_of(e.name()) : SymRange{};
        return fmt::format("Symbol('{}', integer=True, {}=True)", torch_symbol(e.name()),
                           r.min >= 1 ? "positive" : "nonnegative");
      }
      case Sym::Kind::Add:
      case Sym::Kind::Mul: {
        std::string s = e.kind() == Sym::Kind::Add ? "Add(" : "Mul(";
        for (size_t i = 0; i < e.args().size(); i++) s += (i ? ", " : "") + srepr(e.args()[i]);
        return s + ")";
      }
      case Sym::Kind::FloorDiv:
        return fmt::format("FloorDiv({}, {})", srepr(e.args()[0]), srepr(e.args()[1]));
      case Sym::Kind::Mod:
        return fmt::format("PythonMod({}, {})", srepr(e.args()[0]), srepr(e.args()[1]));
      case Sym::Kind::Min:
        return fmt::format("Min({}, {})", srepr(e.args()[0]), srepr(e.args()[1]));
      case Sym::Kind::Max:
        return fmt::format("Max({}, {})", srepr(e.args()[0]), srepr(e.args()[1]));
    }
    return "";
  }
  json sym_meta(const Sym& e) {
    if (e.is_const()) return json{{"as_int", e.value()}};
    return json{{"as_expr", {{"expr_str", srepr(e)}, {"hint", {{"as_int", env_.hint(e)}}}}}};
  }
  json tensor_meta(const TensorType& t, const std::vector<Sym>* strides = nullptr) {
    json sizes = json::array(), st = json::array();
    std::vector<Sym> s(t.shape.size());
    Sym acc(1);
    for (size_t i = t.shape.size(); i-- > 0;) {
      s[i] = acc;
      acc = acc * t.shape[i];
    }
    if (strides) s = *strides;
    for (const auto& d : t.shape) sizes.push_back(sym_meta(d));
    for (const auto& d : s) st.push_back(sym_meta(d));
    return json{{"dtype", scalar_type(t.dtype)},
                {"sizes", sizes},
                {"requires_grad", false},
                {"device", {{"type", "cpu"}, {"index", nullptr}}},
                {"strides", st},
                {"storage_offset", {{"as_int", 0}}},
                {"layout", 7}};
  }

  // A symbol: sym_size.int of the input axis that defines it, else solved from a linear input dim.
  std::string symbol_node(const Sym& e) {
    auto src = sources.find(e.name());
    if (src == sources.end()) return solve_symbol(e);
    std::string out = fresh("sym_size_int");
    nodes.push_back(
        json{{"target", "torch.ops.aten.sym_size.int"},
             {"inputs", json::array({named("self", json{{"as_tensor", {{"name", src->second.tensor}}}}),
                                     named("dim", json{{"as_int", src->second.dim}})})},
             {"outputs", json::array({json{{"as_sym_int", {{"as_name", out}}}}})},
             {"metadata", json::object()}});
    sym_int_values[out] = sym_meta(e);
    return out;
  }

  // A sum: positive terms first, then subtract the negative ones; each partial sum is its own node.
  std::string sum_node(const Sym& e) {
    std::vector<Sym> pos, neg;
    int64_t c = 0;
    for (const auto& t : e.args()) {
      if (t.is_const()) {
        c += t.value();
        continue;
      }
      if (t.kind() == Sym::Kind::Mul && t.args()[0].is_const() && t.args()[0].value() < 0)
        neg.push_back(-t);
      else
        pos.push_back(t);
    }
    Sym acc_sym = pos.empty() ? Sym(c) : pos[0];
    json acc = sym_arg(acc_sym);
    if (pos.empty()) c = 0;
    for (size_t i = 1; i < pos.size(); i++)
      acc_sym = acc_sym + pos[i], acc = binop("_operator.add", "add", acc, sym_arg(pos[i]), acc_sym);
    for (const auto& t : neg)
      acc_sym = acc_sym - t, acc = binop("_operator.sub", "sub", acc, sym_arg(t), acc_sym);
    if (c > 0)
      acc_sym = acc_sym + Sym(c), acc = binop("_operator.add", "add", acc, json{{"as_int", c}}, acc_sym);
    if (c < 0)
      acc_sym = acc_sym - Sym(-c), acc = binop("_operator.sub", "sub", acc, json{{"as_int", -c}}, acc_sym);
    return acc.at("as_sym_int").at("as_name");
  }

  // A SymInt node for a symbolic expression (sym_size.int for a symbol, _operator ops for the rest).
  std::string sym_node(const Sym& e) {
    std::string key = e.str();
    if (auto it = sym_cache_.find(key); it != sym_cache_.end()) return it->second;
    std::string out;
    switch (e.kind()) {
      case Sym::Kind::Const:
        HFX_THROW("dynamo", "expected a symbolic expression, got constant {}", e.value());
      case Sym::Kind::Symbol:
        out = symbol_node(e);
        break;
      case Sym::Kind::Add:
        out = sum_node(e);
        break;
      case Sym::Kind::Mul: {
        Sym acc_sym = e.args()[0];
        json acc = sym_arg(acc_sym);
        for (size_t i = 1; i < e.args().size(); i++)
          acc_sym = acc_sym * e.args()[i],
          acc = binop("_operator.mul", "mul", acc, sym_arg(e.args()[i]), acc_sym);
        out = acc.at("as_sym_int").at("as_name");
        break;
      }
      case Sym::Kind::FloorDiv:
        out = binop("_operator.floordiv", "floordiv", sym_arg(e.args()[0]), sym_arg(e.args()[1]), e)
                  .at("as_sym_int")
                  .at("as_name");
        break;
      case Sym::Kind::Mod:
        out = binop("_operator.mod", "mod", sym_arg(e.args()[0]), sym_arg(e.args()[1]), e)
                  .at("as_sym_int")
                  .at("as_name");
        break;
      case Sym::Kind::Min:
        out = binop("torch.sym_min", "sym_min", sym_arg(e.args()[0]), sym_arg(e.args()[1]), e)
                  .at("as_sym_int")
                  .at("as_name");
        break;
      case Sym::Kind::Max:
        out = binop("torch.sym_max", "sym_max", sym_arg(e.args()[0]), sym_arg(e.args()[1]), e)
                  .at("as_sym_int")
                  .at("as_name");
        break;
    }
    sym_cache_[key] = out;
    return out;
  }
  // Argument for an int-valued schema slot (int or SymInt).
  json sym_arg(const Sym& e) {
    if (e.is_const()) return json{{"as_int", e.value()}};
    return json{{"as_sym_int", {{"as_name", sym_node(e)}}}};
  }
  json syms_arg(const std::vector<Sym>& v) {
    bool all_const = true;
    for (const auto& s : v) all_const = all_const && s.is_const();
    json a = json::array();
    if (all_const) {
      for (const auto& s : v) a.push_back(s.value());
      return json{{"as_ints", a}};
    }
    for (const auto& s : v)
      a.push_back(s.is_const() ? json{{"as_int", s.value()}} : json{{"as_name", sym_node(s)}});
    return json{{"as_sym_ints", a}};
  }
  json tensor_arg(const Value* v) { return json{{"as_tensor", {{"name", name_of(v)}}}}; }

  // A node with one tensor output of type `t`; returns the output name.
  std::string emit(const std::string& target, json inputs, const TensorType& t, const std::string& out_name,
                   const std::string& hfx_name, const std::vector<Sym>* strides = nullptr) {
    tensor_values[out_name] = tensor_meta(t, strides);
    json meta = json::object();
    if (!hfx_name.empty()) meta["custom"] = py_json(json{{"hfx_name", hfx_name}});
    nodes.push_back(json{{"target", target},
                         {"inputs", std::move(inputs)},
                         {"outputs", json::array({json{{"as_tensor", {{"name", out_name}}}}})},
                         {"metadata", meta}});
    return out_name;
  }
  // A node with no outputs (runtime asserts).
  void emit_void(const std::string& target, json inputs) {
    nodes.push_back(json{{"target", target},
                         {"inputs", std::move(inputs)},
                         {"outputs", json::array()},
                         {"metadata", json::object()}});
  }
  // SymBool node `lhs OP rhs` over ints; returns its name.
  std::string sym_bool(const std::string& target, const char* sympy_rel, const Sym& lhs, int64_t rhs) {
    std::string out = fresh(target.substr(target.rfind('.') + 1));
    nodes.push_back(
        json{{"target", target},
             {"inputs", json::array({named("a", sym_arg(lhs)), named("b", json{{"as_int", rhs}})})},
             {"outputs", json::array({json{{"as_sym_bool", {{"as_name", out}}}}})},
             {"metadata", json::object()}});
    sym_bool_values[out] =
        json{{"as_expr", {{"expr_str", fmt::format("{}({}, Integer({}))", sympy_rel, srepr(lhs), rhs)}}}};
    return out;
  }

 private:
  json binop(const std::string& target, const std::string& base, const json& a, const json& b,
             const Sym& result) {
    std::string out = fresh(base);
    nodes.push_back(json{{"target", target},
                         {"inputs", json::array({named("a", a), named("b", b)})},
                         {"outputs", json::array({json{{"as_sym_int", {{"as_name", out}}}}})},
                         {"metadata", json::object()}});
    sym_int_values[out] = sym_meta(result);
    return json{{"as_sym_int", {{"as_name", out}}}};
  }
  // A symbol seen only inside a sum (e.g. attention_mask's past + sequence): size minus the rest.
  std::string solve_symbol(const Sym& s) {
    for (const Value* in : g_.inputs()) {
      for (size_t d = 0; d < in->type.shape.size(); d++) {
        const Sym& e = in->type.shape[d];
        if (e.kind() != Sym::Kind::Add) continue;
        bool has = false;
        Sym rest(0);
        for (const auto& t : e.args()) {
          if (t.kind() == Sym::Kind::Symbol && t.name() == s.name())
            has = true;
          else
            rest = rest + t;
        }
        bool rest_known = true;
        for (const auto& f : rest.free_symbols()) rest_known = rest_known && sources.count(f);
        if (!has || !rest_known) continue;
        std::string size = fresh("sym_size_int");
        nodes.push_back(
            json{{"target", "torch.ops.aten.sym_size.int"},
                 {"inputs", json::array({named("self", tensor_arg(in)),
                                         named("dim", json{{"as_int", static_cast<int64_t>(d)}})})},
                 {"outputs", json::array({json{{"as_sym_int", {{"as_name", size}}}}})},
                 {"metadata", json::object()}});
        sym_int_values[size] = sym_meta(e);
        return binop("_operator.sub", "sub", json{{"as_sym_int", {{"as_name", size}}}}, sym_arg(rest), s)
            .at("as_sym_int")
            .at("as_name");
      }
    }
    HFX_THROW("dynamo", "expected symbol '{}' to be the size of some input dim, got none that defines it",
              s.name());
  }

  const Graph& g_;
  const ShapeEnv& env_;
  std::set<std::string> used_;
  std::map<const Value*, std::string> names_;
  std::map<const Value*, bool> contig_;
  std::map<std::string, std::string> sym_cache_;
};

}  // namespace hfx::dynamo::detail
