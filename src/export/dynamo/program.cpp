// hfx Graph → torch.export ExportedProgram JSON (see program.h). The ATen table below is the one
// place that says which ATen overload an hfx op becomes and how its inputs and attributes map onto
// the overload's schema arguments.
#include "export/dynamo/program.h"

#include <fmt/format.h>

#include <cmath>
#include <functional>
#include <set>

#include "hfx/core/error.h"
#include "hfx/ops/op_schema.h"
#include "hfx/ops/builder.h"
#include "hfx/passes/pass.h"

namespace hfx::dynamo {

using json = nlohmann::json;

// ---------------------------------------------------------------- python-style json, treespecs

namespace {

void py_str(std::string& out, const std::string& s) {
  out.push_back('"');
  for (size_t i = 0; i < s.size(); i++) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20 || c >= 0x7f) {
          // ASCII escape of UTF-8 (BMP code points only: names here are ASCII in practice).
          uint32_t cp = c;
          int extra = 0;
          if (c >= 0xf0) cp = c & 0x07, extra = 3;
          else if (c >= 0xe0) cp = c & 0x0f, extra = 2;
          else if (c >= 0xc0) cp = c & 0x1f, extra = 1;
          for (int k = 0; k < extra && i + 1 < s.size(); k++) cp = (cp << 6) | (static_cast<unsigned char>(s[++i]) & 0x3f);
          if (cp >= 0x10000) {
            cp -= 0x10000;
            out += fmt::format("\\u{:04x}\\u{:04x}", 0xd800 + (cp >> 10), 0xdc00 + (cp & 0x3ff));
          } else {
            out += fmt::format("\\u{:04x}", cp);
          }
        } else {
          out.push_back(static_cast<char>(c));
        }
    }
  }
  out.push_back('"');
}

// Python-repr-like JSON (", " and ": " separators), for json and ordered_json alike.
template <class J>
void py_dump(std::string& out, const J& j) {
  switch (j.type()) {
    case J::value_t::null: out += "null"; break;
    case J::value_t::boolean: out += j.template get<bool>() ? "true" : "false"; break;
    case J::value_t::string: py_str(out, j.template get_ref<const std::string&>()); break;
    case J::value_t::array: {
      out.push_back('[');
      bool first = true;
      for (const auto& x : j) {
        if (!first) out += ", ";
        first = false;
        py_dump(out, x);
      }
      out.push_back(']');
      break;
    }
    case J::value_t::object: {
      out.push_back('{');
      bool first = true;
      for (auto it = j.begin(); it != j.end(); ++it) {
        if (!first) out += ", ";
        first = false;
        py_str(out, it.key());
        out += ": ";
        py_dump(out, it.value());
      }
      out.push_back('}');
      break;
    }
    default: out += j.dump();
  }
}

// ordered_json keeps insertion order, as Python dicts do.
using ojson = nlohmann::ordered_json;

ojson leaf_spec() { return ojson{{"type", nullptr}, {"context", nullptr}, {"children_spec", ojson::array()}}; }
ojson node_spec(const char* type, const std::string& context, ojson children) {
  return ojson{{"type", type}, {"context", context}, {"children_spec", std::move(children)}};
}

bool is_cache_leaf(const std::string& name, const char* prefix, int* layer, std::string* kind) {
  std::string p = std::string(prefix) + ".";
  if (name.rfind(p, 0) != 0) return false;
  auto dot = name.find('.', p.size());
  if (dot == std::string::npos) return false;
  try {
    *layer = std::stoi(name.substr(p.size(), dot - p.size()));
  } catch (...) {
    return false;
  }
  *kind = name.substr(dot + 1);
  return *kind == "key" || *kind == "value";
}

// Groups names into (plain keys, cache layers). Cache leaves become one list of (key, value) tuples
// (unless groups_kv_leaves says they stay flat).
ojson dict_spec(const std::vector<std::string>& names, const char* cache_prefix, const char* cache_key) {
  const bool group = groups_kv_leaves(names);
  std::vector<std::string> keys;
  ojson children = ojson::array();
  int layers = 0;
  bool cache_seen = false;
  for (const auto& n : names) {
    int layer;
    std::string kind;
    if (group && is_cache_leaf(n, cache_prefix, &layer, &kind)) {
      layers = std::max(layers, layer + 1);
      if (!cache_seen) {
        cache_seen = true;
        keys.push_back(cache_key);
        children.push_back(nullptr);  // placeholder, filled below
      }
      continue;
    }
    keys.push_back(n);
    children.push_back(leaf_spec());
  }
  if (cache_seen) {
    ojson layer_specs = ojson::array();
    for (int i = 0; i < layers; i++) layer_specs.push_back(node_spec("builtins.tuple", "null", ojson::array({leaf_spec(), leaf_spec()})));
    for (auto& c : children)
      if (c.is_null()) c = node_spec("builtins.list", "null", layer_specs);
  }
  std::string ctx;
  py_dump(ctx, json(keys));
  return node_spec("builtins.dict", ctx, children);
}

}  // namespace

std::string py_json(const json& j) {
  std::string out;
  py_dump(out, j);
  return out;
}

// Treespecs keep key order ("type", "context", "children_spec", and dict keys as given), so they are
// built as ordered_json and dumped in that order.
namespace {
std::string dump_spec(const ojson& spec) {
  std::string out;
  py_dump(out, ojson::array({1, spec}));
  return out;
}
}  // namespace

bool groups_kv_leaves(const std::vector<std::string>& names) {
  for (const auto& n : names)
    if ((n.rfind("past_", 0) == 0 && n.rfind("past_key_values.", 0) != 0) || n.rfind("present_", 0) == 0) return false;
  return true;
}

std::string input_treespec(const std::vector<std::string>& input_names) {
  ojson args = node_spec("builtins.tuple", "null", ojson::array());
  ojson kwargs = dict_spec(input_names, "past_key_values", "past_key_values");
  return dump_spec(node_spec("builtins.tuple", "null", ojson::array({args, kwargs})));
}

std::string output_treespec(const std::vector<std::string>& output_names) {
  return dump_spec(dict_spec(output_names, "present", "past_key_values"));
}

// ---------------------------------------------------------------- names

std::string fx_name(const std::string& raw) {
  static const std::set<std::string> reserved = {
      "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue", "def", "del", "elif",
      "else", "except", "finally", "for", "from", "global", "if", "import", "in", "is", "lambda", "nonlocal", "not", "or",
      "pass", "raise", "return", "try", "while", "with", "yield", "self", "torch", "operator", "_operator", "math", "inf",
      "nan", "device", "fx_pytree", "pytree", "getattr", "print", "match", "case", "type", "input", "output"};
  std::string s;
  for (char c : raw) s.push_back(std::isalnum(static_cast<unsigned char>(c)) || c == '_' ? c : '_');
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) s = "_" + s;
  if (reserved.count(s)) s += "_1";
  return s;
}

// ---------------------------------------------------------------- the emitter

namespace {

int scalar_type(DType dt) {
  switch (dt) {
    case DType::U8: return 1;
    case DType::I8: return 2;
    case DType::I32: return 4;
    case DType::I64: return 5;
    case DType::F16: return 6;
    case DType::F32: return 7;
    case DType::Bool: return 12;
    case DType::BF16: return 13;
  }
  return 0;
}

json float_arg(double v) {
  if (std::isnan(v)) HFX_THROW("dynamo", "expected a finite or infinite float argument, got NaN");
  if (std::isinf(v)) return json{{"as_float", v > 0 ? "Infinity" : "-Infinity"}};
  return json{{"as_float", v}};
}

json named(const std::string& name, json arg, bool keyword = false) {
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
    if (it == names_.end()) HFX_THROW("dynamo", "expected value '{}' to be defined before use, got none", v ? v->name : "<null>");
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
      case Sym::Kind::Const: return fmt::format("Integer({})", e.value());
      case Sym::Kind::Symbol: {
        SymRange r = env_.has_symbol(e.name()) ? env_.range_of(e.name()) : SymRange{};
        return fmt::format("Symbol('{}', integer=True, {}=True)", torch_symbol(e.name()), r.min >= 1 ? "positive" : "nonnegative");
      }
      case Sym::Kind::Add:
      case Sym::Kind::Mul: {
        std::string s = e.kind() == Sym::Kind::Add ? "Add(" : "Mul(";
        for (size_t i = 0; i < e.args().size(); i++) s += (i ? ", " : "") + srepr(e.args()[i]);
        return s + ")";
      }
      case Sym::Kind::FloorDiv: return fmt::format("FloorDiv({}, {})", srepr(e.args()[0]), srepr(e.args()[1]));
      case Sym::Kind::Mod: return fmt::format("PythonMod({}, {})", srepr(e.args()[0]), srepr(e.args()[1]));
      case Sym::Kind::Min: return fmt::format("Min({}, {})", srepr(e.args()[0]), srepr(e.args()[1]));
      case Sym::Kind::Max: return fmt::format("Max({}, {})", srepr(e.args()[0]), srepr(e.args()[1]));
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
    return json{{"dtype", scalar_type(t.dtype)}, {"sizes", sizes}, {"requires_grad", false},
                {"device", {{"type", "cpu"}, {"index", nullptr}}}, {"strides", st}, {"storage_offset", {{"as_int", 0}}},
                {"layout", 7}};
  }

  // A SymInt node for a symbolic expression (sym_size.int for a symbol, _operator ops for the rest).
  std::string sym_node(const Sym& e) {
    std::string key = e.str();
    if (auto it = sym_cache_.find(key); it != sym_cache_.end()) return it->second;
    std::string out;
    switch (e.kind()) {
      case Sym::Kind::Const: HFX_THROW("dynamo", "expected a symbolic expression, got constant {}", e.value());
      case Sym::Kind::Symbol: {
        auto src = sources.find(e.name());
        if (src != sources.end()) {
          out = fresh("sym_size_int");
          nodes.push_back(json{{"target", "torch.ops.aten.sym_size.int"},
                               {"inputs", json::array({named("self", json{{"as_tensor", {{"name", src->second.tensor}}}}),
                                                       named("dim", json{{"as_int", src->second.dim}})})},
                               {"outputs", json::array({json{{"as_sym_int", {{"as_name", out}}}}})},
                               {"metadata", json::object()}});
          sym_int_values[out] = sym_meta(e);
        } else {
          out = solve_symbol(e);
        }
        break;
      }
      case Sym::Kind::Add: {
        // Positive terms first, then subtract the negative ones; each partial sum is its own node.
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
        for (size_t i = 1; i < pos.size(); i++) acc_sym = acc_sym + pos[i], acc = binop("_operator.add", "add", acc, sym_arg(pos[i]), acc_sym);
        for (const auto& t : neg) acc_sym = acc_sym - t, acc = binop("_operator.sub", "sub", acc, sym_arg(t), acc_sym);
        if (c > 0) acc_sym = acc_sym + Sym(c), acc = binop("_operator.add", "add", acc, json{{"as_int", c}}, acc_sym);
        if (c < 0) acc_sym = acc_sym - Sym(-c), acc = binop("_operator.sub", "sub", acc, json{{"as_int", -c}}, acc_sym);
        out = acc.at("as_sym_int").at("as_name");
        break;
      }
      case Sym::Kind::Mul: {
        Sym acc_sym = e.args()[0];
        json acc = sym_arg(acc_sym);
        for (size_t i = 1; i < e.args().size(); i++) acc_sym = acc_sym * e.args()[i], acc = binop("_operator.mul", "mul", acc, sym_arg(e.args()[i]), acc_sym);
        out = acc.at("as_sym_int").at("as_name");
        break;
      }
      case Sym::Kind::FloorDiv: out = binop("_operator.floordiv", "floordiv", sym_arg(e.args()[0]), sym_arg(e.args()[1]), e).at("as_sym_int").at("as_name"); break;
      case Sym::Kind::Mod: out = binop("_operator.mod", "mod", sym_arg(e.args()[0]), sym_arg(e.args()[1]), e).at("as_sym_int").at("as_name"); break;
      case Sym::Kind::Min: out = binop("torch.sym_min", "sym_min", sym_arg(e.args()[0]), sym_arg(e.args()[1]), e).at("as_sym_int").at("as_name"); break;
      case Sym::Kind::Max: out = binop("torch.sym_max", "sym_max", sym_arg(e.args()[0]), sym_arg(e.args()[1]), e).at("as_sym_int").at("as_name"); break;
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
    for (const auto& s : v) a.push_back(s.is_const() ? json{{"as_int", s.value()}} : json{{"as_name", sym_node(s)}});
    return json{{"as_sym_ints", a}};
  }
  json tensor_arg(const Value* v) { return json{{"as_tensor", {{"name", name_of(v)}}}}; }

  // A node with one tensor output of type `t`; returns the output name.
  std::string emit(const std::string& target, json inputs, const TensorType& t, const std::string& out_name,
                   const std::string& hfx_name, const std::vector<Sym>* strides = nullptr) {
    tensor_values[out_name] = tensor_meta(t, strides);
    json meta = json::object();
    if (!hfx_name.empty()) meta["custom"] = py_json(json{{"hfx_name", hfx_name}});
    nodes.push_back(json{{"target", target}, {"inputs", std::move(inputs)},
                         {"outputs", json::array({json{{"as_tensor", {{"name", out_name}}}}})}, {"metadata", meta}});
    return out_name;
  }
  // A node with no outputs (runtime asserts).
  void emit_void(const std::string& target, json inputs) {
    nodes.push_back(json{{"target", target}, {"inputs", std::move(inputs)}, {"outputs", json::array()}, {"metadata", json::object()}});
  }
  // SymBool node `lhs OP rhs` over ints; returns its name.
  std::string sym_bool(const std::string& target, const char* sympy_rel, const Sym& lhs, int64_t rhs) {
    std::string out = fresh(target.substr(target.rfind('.') + 1));
    nodes.push_back(json{{"target", target},
                         {"inputs", json::array({named("a", sym_arg(lhs)), named("b", json{{"as_int", rhs}})})},
                         {"outputs", json::array({json{{"as_sym_bool", {{"as_name", out}}}}})},
                         {"metadata", json::object()}});
    sym_bool_values[out] = json{{"as_expr", {{"expr_str", fmt::format("{}({}, Integer({}))", sympy_rel, srepr(lhs), rhs)}}}};
    return out;
  }

 private:
  json binop(const std::string& target, const std::string& base, const json& a, const json& b, const Sym& result) {
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
          if (t.kind() == Sym::Kind::Symbol && t.name() == s.name()) has = true;
          else rest = rest + t;
        }
        bool rest_known = true;
        for (const auto& f : rest.free_symbols()) rest_known = rest_known && sources.count(f);
        if (!has || !rest_known) continue;
        std::string size = fresh("sym_size_int");
        nodes.push_back(json{{"target", "torch.ops.aten.sym_size.int"},
                             {"inputs", json::array({named("self", tensor_arg(in)), named("dim", json{{"as_int", static_cast<int64_t>(d)}})})},
                             {"outputs", json::array({json{{"as_sym_int", {{"as_name", size}}}}})},
                             {"metadata", json::object()}});
        sym_int_values[size] = sym_meta(e);
        return binop("_operator.sub", "sub", json{{"as_sym_int", {{"as_name", size}}}}, sym_arg(rest), s).at("as_sym_int").at("as_name");
      }
    }
    HFX_THROW("dynamo", "expected symbol '{}' to be the size of some input dim, got none that defines it", s.name());
  }

  const Graph& g_;
  const ShapeEnv& env_;
  std::set<std::string> used_;
  std::map<const Value*, std::string> names_;
  std::map<const Value*, bool> contig_;
  std::map<std::string, std::string> sym_cache_;
};

// ---------------------------------------------------------------- the ATen table

using LowerFn = std::function<void(Emitter&, const Node&, const std::string& out)>;

struct AtenEntry {
  std::string hfx_op;
  std::string target;  // "torch.ops.aten.<name>.<overload>"
  LowerFn lower;
  std::string note;
};

const Value* in(const Node& n, size_t i) { return i < n.inputs.size() ? n.inputs[i] : nullptr; }
const TensorType& out_t(const Node& n) { return n.outputs.at(0)->type; }

// All inputs contiguous and none broadcast: the output keeps a contiguous layout.
bool elementwise_contiguous(Emitter& e, const Node& n) {
  for (const Value* v : n.inputs) {
    if (!v) continue;
    if (!e.contiguous(v)) return false;
    if (v->type.shape.size() != out_t(n).shape.size()) return false;
    for (size_t i = 0; i < v->type.shape.size(); i++)
      if (!v->type.shape[i].same(out_t(n).shape[i])) return false;
  }
  return true;
}

std::vector<int64_t> reduce_dims(const Node& n) {
  std::vector<int64_t> d = n.attrs.ints("dim");
  if (d.empty())
    for (size_t i = 0; i < in(n, 0)->type.shape.size(); i++) d.push_back(static_cast<int64_t>(i));
  return d;
}

// Entry builders.
AtenEntry binary(const std::string& op, const std::string& target, const char* a = "self", const char* b = "other") {
  return {op, target, [target, a, b](Emitter& e, const Node& n, const std::string& out) {
            e.emit(target, json::array({named(a, e.tensor_arg(in(n, 0))), named(b, e.tensor_arg(in(n, 1)))}), out_t(n), out, n.name);
            e.set_contiguous(n.outputs[0], elementwise_contiguous(e, n));
          }, ""};
}
AtenEntry unary(const std::string& op, const std::string& target) {
  return {op, target, [target](Emitter& e, const Node& n, const std::string& out) {
            e.emit(target, json::array({named("self", e.tensor_arg(in(n, 0)))}), out_t(n), out, n.name);
            e.set_contiguous(n.outputs[0], elementwise_contiguous(e, n));
          }, ""};
}
// x OP scalar: aten.<op>.Tensor with a Python number, as torch.export records `x + 1.0`.
AtenEntry scalar_op(const std::string& op, const std::string& target, const char* attr) {
  return {op, target, [target, attr](Emitter& e, const Node& n, const std::string& out) {
            double v = n.attrs.f(attr);
            const Value* x = in(n, 0);
            bool int_tensor = !dtype_is_float(x->type.dtype);
            json s = (int_tensor && std::floor(v) == v && std::fabs(v) < 9e15) ? json{{"as_int", static_cast<int64_t>(v)}} : float_arg(v);
            if (int_tensor && s.contains("as_float")) {
              // torch promotes int ⊕ float to float; hfx keeps the int type: cast back.
              TensorType ft{DType::F32, out_t(n).shape};
              std::string tmp = e.fresh(out + "_f");
              e.emit(target, json::array({named("self", e.tensor_arg(x)), named("other", s)}), ft, tmp, n.name);
              e.emit("torch.ops.aten._to_copy.default",
                     json::array({named("self", json{{"as_tensor", {{"name", tmp}}}}), named("dtype", json{{"as_scalar_type", scalar_type(out_t(n).dtype)}}, true)}),
                     out_t(n), out, n.name);
            } else {
              e.emit(target, json::array({named("self", e.tensor_arg(x)), named("other", s)}), out_t(n), out, n.name);
            }
            e.set_contiguous(n.outputs[0], e.contiguous(x));
          }, "scalar operand as a Python number"};
}

json dtype_kw_if_int(const Node& n) {
  const Value* x = in(n, 0);
  if (dtype_is_float(x->type.dtype)) return nullptr;
  return named("dtype", json{{"as_scalar_type", scalar_type(out_t(n).dtype)}}, true);
}

const std::vector<AtenEntry>& aten_table() {
  static const std::vector<AtenEntry> t = [] {
    std::vector<AtenEntry> v;
    // ---- elementwise
    v.push_back(binary("aten.add.Tensor", "torch.ops.aten.add.Tensor"));
    v.push_back(binary("aten.sub.Tensor", "torch.ops.aten.sub.Tensor"));
    v.push_back(binary("aten.mul.Tensor", "torch.ops.aten.mul.Tensor"));
    v.push_back(binary("aten.div.Tensor", "torch.ops.aten.div.Tensor"));
    v.push_back(binary("aten.maximum", "torch.ops.aten.maximum.default"));
    v.push_back(binary("aten.minimum", "torch.ops.aten.minimum.default"));
    v.push_back(scalar_op("aten.add.Scalar", "torch.ops.aten.add.Tensor", "other"));
    v.push_back(scalar_op("aten.mul.Scalar", "torch.ops.aten.mul.Tensor", "other"));
    v.push_back({"aten.pow.Tensor_Scalar", "torch.ops.aten.pow.Tensor_Scalar", [](Emitter& e, const Node& n, const std::string& out) {
                   e.emit("torch.ops.aten.pow.Tensor_Scalar",
                          json::array({named("self", e.tensor_arg(in(n, 0))), named("exponent", float_arg(n.attrs.f("exponent")))}), out_t(n), out, n.name);
                   e.set_contiguous(n.outputs[0], e.contiguous(in(n, 0)));
                 }, ""});
    for (const char* c : {"eq", "lt", "le", "gt", "ge"})
      v.push_back(binary(fmt::format("aten.{}.Tensor", c), fmt::format("torch.ops.aten.{}.Tensor", c)));
    v.push_back(binary("aten.logical_and", "torch.ops.aten.logical_and.default"));
    v.push_back(binary("aten.logical_or", "torch.ops.aten.logical_or.default"));
    v.push_back(unary("aten.logical_not", "torch.ops.aten.logical_not.default"));
    v.push_back({"aten.where.self", "torch.ops.aten.where.self", [](Emitter& e, const Node& n, const std::string& out) {
                   e.emit("torch.ops.aten.where.self",
                          json::array({named("condition", e.tensor_arg(in(n, 0))), named("self", e.tensor_arg(in(n, 1))),
                                       named("other", e.tensor_arg(in(n, 2)))}),
                          out_t(n), out, n.name);
                   e.set_contiguous(n.outputs[0], elementwise_contiguous(e, n));
                 }, ""});
    for (const char* u : {"neg", "abs", "relu", "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "silu", "sin", "cos", "reciprocal", "erf"})
      v.push_back(unary(fmt::format("aten.{}", u), fmt::format("torch.ops.aten.{}.default", u)));
    v.push_back({"aten.gelu", "torch.ops.aten.gelu.default", [](Emitter& e, const Node& n, const std::string& out) {
                   json a = json::array({named("self", e.tensor_arg(in(n, 0)))});
                   if (n.attrs.s("approximate") != "none") a.push_back(named("approximate", json{{"as_string", n.attrs.s("approximate")}}, true));
                   e.emit("torch.ops.aten.gelu.default", a, out_t(n), out, n.name);
                   e.set_contiguous(n.outputs[0], e.contiguous(in(n, 0)));
                 }, ""});
    // ---- linear algebra (contiguous results)
    for (auto [op, tg, b] : {std::tuple{"aten.mm", "torch.ops.aten.mm.default", "mat2"}, std::tuple{"aten.bmm", "torch.ops.aten.bmm.default", "mat2"},
                             std::tuple{"aten.matmul", "torch.ops.aten.matmul.default", "other"}}) {
      std::string target = tg, bn = b;
      v.push_back({op, target, [target, bn](Emitter& e, const Node& n, const std::string& out) {
                     e.emit(target, json::array({named("self", e.tensor_arg(in(n, 0))), named(bn, e.tensor_arg(in(n, 1)))}), out_t(n), out, n.name);
                   }, ""});
    }
    v.push_back({"aten.linear", "torch.ops.aten.linear.default", [](Emitter& e, const Node& n, const std::string& out) {
                   json a = json::array({named("input", e.tensor_arg(in(n, 0))), named("weight", e.tensor_arg(in(n, 1)))});
                   if (in(n, 2)) a.push_back(named("bias", e.tensor_arg(in(n, 2))));
                   e.emit("torch.ops.aten.linear.default", a, out_t(n), out, n.name);
                 }, ""});
    // ---- reductions
    for (auto [op, tg] : {std::pair{"aten.sum.dim_IntList", "torch.ops.aten.sum.dim_IntList"}, std::pair{"aten.mean.dim", "torch.ops.aten.mean.dim"},
                          std::pair{"aten.amax", "torch.ops.aten.amax.default"}}) {
      std::string target = tg;
      bool has_dtype = std::string(op) != "aten.amax";
      v.push_back({op, target, [target, has_dtype](Emitter& e, const Node& n, const std::string& out) {
                     json a = json::array({named("self", e.tensor_arg(in(n, 0))), named("dim", json{{"as_ints", reduce_dims(n)}}),
                                           named("keepdim", json{{"as_bool", n.attrs.b("keepdim")}})});
                     if (has_dtype)
                       if (json k = dtype_kw_if_int(n); !k.is_null()) a.push_back(k);
                     e.emit(target, a, out_t(n), out, n.name);
                   }, "an empty dim list is written as every dim"});
    }
    v.push_back({"aten.argmax", "torch.ops.aten.argmax.default", [](Emitter& e, const Node& n, const std::string& out) {
                   e.emit("torch.ops.aten.argmax.default",
                          json::array({named("self", e.tensor_arg(in(n, 0))), named("dim", json{{"as_int", n.attrs.i("dim")}}),
                                       named("keepdim", json{{"as_bool", n.attrs.b("keepdim")}})}),
                          out_t(n), out, n.name);
                 }, ""});
    v.push_back({"aten.cumsum", "torch.ops.aten.cumsum.default", [](Emitter& e, const Node& n, const std::string& out) {
                   json a = json::array({named("self", e.tensor_arg(in(n, 0))), named("dim", json{{"as_int", n.attrs.i("dim")}})});
                   if (json k = dtype_kw_if_int(n); !k.is_null()) a.push_back(k);
                   e.emit("torch.ops.aten.cumsum.default", a, out_t(n), out, n.name);
                   e.set_contiguous(n.outputs[0], e.contiguous(in(n, 0)));
                 }, ""});
    for (auto [op, tg] : {std::pair{"aten._softmax", "torch.ops.aten._softmax.default"}, std::pair{"aten._log_softmax", "torch.ops.aten._log_softmax.default"}}) {
      std::string target = tg;
      v.push_back({op, target, [target](Emitter& e, const Node& n, const std::string& out) {
                     e.emit(target,
                            json::array({named("self", e.tensor_arg(in(n, 0))), named("dim", json{{"as_int", n.attrs.i("dim")}}),
                                         named("half_to_float", json{{"as_bool", false}})}),
                            out_t(n), out, n.name);
                     e.set_contiguous(n.outputs[0], e.contiguous(in(n, 0)));
                   }, ""});
    }
    v.push_back({"aten.layer_norm", "torch.ops.aten.layer_norm.default", [](Emitter& e, const Node& n, const std::string& out) {
                   const Value* x = in(n, 0);
                   json a = json::array({named("input", e.tensor_arg(x)), named("normalized_shape", e.syms_arg({x->type.shape.back()})),
                                         named("weight", in(n, 1) ? e.tensor_arg(in(n, 1)) : json{{"as_none", true}}),
                                         named("bias", in(n, 2) ? e.tensor_arg(in(n, 2)) : json{{"as_none", true}}),
                                         named("eps", float_arg(n.attrs.f("eps")))});
                   e.emit("torch.ops.aten.layer_norm.default", a, out_t(n), out, n.name);
                 }, ""});
    // ---- indexing and shape
    v.push_back({"aten.embedding", "torch.ops.aten.embedding.default", [](Emitter& e, const Node& n, const std::string& out) {
                   e.emit("torch.ops.aten.embedding.default", json::array({named("weight", e.tensor_arg(in(n, 0))), named("indices", e.tensor_arg(in(n, 1)))}),
                          out_t(n), out, n.name);
                 }, ""});
    v.push_back({"aten.index_select", "torch.ops.aten.index_select.default", [](Emitter& e, const Node& n, const std::string& out) {
                   e.emit("torch.ops.aten.index_select.default",
                          json::array({named("self", e.tensor_arg(in(n, 0))), named("dim", json{{"as_int", n.attrs.i("dim")}}),
                                       named("index", e.tensor_arg(in(n, 1)))}),
                          out_t(n), out, n.name);
                 }, ""});
    v.push_back({"aten.index_copy", "torch.ops.aten.index_copy.default", [](Emitter& e, const Node& n, const std::string& out) {
                   e.emit("torch.ops.aten.index_copy.default",
                          json::array({named("self", e.tensor_arg(in(n, 0))), named("dim", json{{"as_int", n.attrs.i("dim")}}),
                                       named("index", e.tensor_arg(in(n, 1))), named("source", e.tensor_arg(in(n, 2)))}),
                          out_t(n), out, n.name);
                   e.set_contiguous(n.outputs[0], e.contiguous(in(n, 0)));
                 }, ""});
    v.push_back({"aten.cat", "torch.ops.aten.cat.default", [](Emitter& e, const Node& n, const std::string& out) {
                   json ts = json::array();
                   for (const Value* x : n.inputs) ts.push_back(json{{"name", e.name_of(x)}});
                   e.emit("torch.ops.aten.cat.default", json::array({named("tensors", json{{"as_tensors", ts}}), named("dim", json{{"as_int", n.attrs.i("dim")}})}),
                          out_t(n), out, n.name);
                 }, ""});
    v.push_back({"aten.slice.Tensor", "torch.ops.aten.slice.Tensor", [](Emitter& e, const Node& n, const std::string& out) {
                   const Value* x = in(n, 0);
                   Sym end = n.attrs.sym("end");
                   json end_arg = (end.is_const() && end.value() >= SymRange::kInf) ? json{{"as_int", INT64_MAX}} : e.sym_arg(end);
                   int64_t d = n.attrs.i("dim");
                   e.emit("torch.ops.aten.slice.Tensor",
                          json::array({named("self", e.tensor_arg(x)), named("dim", json{{"as_int", d}}), named("start", e.sym_arg(n.attrs.sym("start"))),
                                       named("end", end_arg), named("step", json{{"as_int", n.attrs.i("step")}})}),
                          out_t(n), out, n.name);
                   int64_t r = static_cast<int64_t>(x->type.shape.size());
                   if (d < 0) d += r;
                   bool lead_ones = true;
                   for (int64_t i = 0; i < d; i++) lead_ones = lead_ones && x->type.shape[i].is_const() && x->type.shape[i].value() == 1;
                   e.set_contiguous(n.outputs[0], e.contiguous(x) && lead_ones && n.attrs.i("step") == 1);
                 }, "end past the size is written as sys.maxsize"});
    v.push_back({"aten.view", "torch.ops.aten.view.default", [](Emitter& e, const Node& n, const std::string& out) {
                   const Value* x = in(n, 0);
                   // aten.view needs compatible strides; a maybe-strided input gets aten.reshape (a copy when needed).
                   bool c = e.contiguous(x);
                   e.emit(c ? "torch.ops.aten.view.default" : "torch.ops.aten.reshape.default",
                          json::array({named("self", e.tensor_arg(x)), named(c ? "size" : "shape", e.syms_arg(out_t(n).shape))}), out_t(n), out, n.name);
                 }, "aten.reshape.default when the input may not be contiguous"});
    v.push_back({"aten.permute", "torch.ops.aten.permute.default", [](Emitter& e, const Node& n, const std::string& out) {
                   const auto& dims = n.attrs.ints("dims");
                   e.emit("torch.ops.aten.permute.default", json::array({named("self", e.tensor_arg(in(n, 0))), named("dims", json{{"as_ints", dims}})}),
                          out_t(n), out, n.name);
                   bool identity = true;
                   for (size_t i = 0; i < dims.size(); i++) identity = identity && dims[i] == static_cast<int64_t>(i);
                   e.set_contiguous(n.outputs[0], identity && e.contiguous(in(n, 0)));
                 }, ""});
    v.push_back({"aten.expand", "torch.ops.aten.expand.default", [](Emitter& e, const Node& n, const std::string& out) {
                   const Value* x = in(n, 0);
                   e.emit("torch.ops.aten.expand.default", json::array({named("self", e.tensor_arg(x)), named("size", e.syms_arg(out_t(n).shape))}),
                          out_t(n), out, n.name);
                   bool same = x->type.shape.size() == out_t(n).shape.size();
                   for (size_t i = 0; same && i < x->type.shape.size(); i++) same = x->type.shape[i].same(out_t(n).shape[i]);
                   e.set_contiguous(n.outputs[0], same && e.contiguous(x));
                 }, ""});
    v.push_back({"aten.unsqueeze", "torch.ops.aten.unsqueeze.default", [](Emitter& e, const Node& n, const std::string& out) {
                   e.emit("torch.ops.aten.unsqueeze.default", json::array({named("self", e.tensor_arg(in(n, 0))), named("dim", json{{"as_int", n.attrs.i("dim")}})}),
                          out_t(n), out, n.name);
                   e.set_contiguous(n.outputs[0], e.contiguous(in(n, 0)));
                 }, ""});
    v.push_back({"aten.squeeze.dim", "torch.ops.aten.squeeze.dim", [](Emitter& e, const Node& n, const std::string& out) {
                   e.emit("torch.ops.aten.squeeze.dim", json::array({named("self", e.tensor_arg(in(n, 0))), named("dim", json{{"as_int", n.attrs.i("dim")}})}),
                          out_t(n), out, n.name);
                   e.set_contiguous(n.outputs[0], e.contiguous(in(n, 0)));
                 }, ""});
    v.push_back({"aten._to_copy", "torch.ops.aten._to_copy.default", [](Emitter& e, const Node& n, const std::string& out) {
                   e.emit("torch.ops.aten._to_copy.default",
                          json::array({named("self", e.tensor_arg(in(n, 0))), named("dtype", json{{"as_scalar_type", scalar_type(n.attrs.dtype("dtype"))}}, true)}),
                          out_t(n), out, n.name);
                   e.set_contiguous(n.outputs[0], e.contiguous(in(n, 0)));
                 }, ""});
    // ---- factories
    v.push_back({"aten.arange.start", "torch.ops.aten.arange.start", [](Emitter& e, const Node& n, const std::string& out) {
                   e.emit("torch.ops.aten.arange.start",
                          json::array({named("start", e.sym_arg(n.attrs.sym("start"))), named("end", e.sym_arg(n.attrs.sym("end"))),
                                       named("dtype", json{{"as_scalar_type", scalar_type(n.attrs.dtype("dtype"))}}, true)}),
                          out_t(n), out, n.name);
                 }, ""});
    v.push_back({"aten.full", "torch.ops.aten.full.default", [](Emitter& e, const Node& n, const std::string& out) {
                   double val = n.attrs.f("value");
                   DType dt = n.attrs.dtype("dtype");
                   json fill = dt == DType::Bool ? json{{"as_bool", val != 0}}
                               : (!dtype_is_float(dt) && std::floor(val) == val) ? json{{"as_int", static_cast<int64_t>(val)}}
                                                                              : float_arg(val);
                   e.emit("torch.ops.aten.full.default",
                          json::array({named("size", e.syms_arg(n.attrs.syms("size"))), named("fill_value", fill),
                                       named("dtype", json{{"as_scalar_type", scalar_type(dt)}}, true)}),
                          out_t(n), out, n.name);
                 }, ""});
    // ---- composites with an exact ATen op
    v.push_back({"hfx.rms_norm", "torch.ops.aten.rms_norm.default", [](Emitter& e, const Node& n, const std::string& out) {
                   const Value* x = in(n, 0);
                   json w = e.tensor_arg(in(n, 1));
                   double off = n.attrs.f("weight_offset");
                   if (off != 0) {
                     std::string wn = e.fresh(out + "_weight");
                     e.emit("torch.ops.aten.add.Tensor", json::array({named("self", w), named("other", float_arg(off))}), in(n, 1)->type, wn, n.name);
                     w = json{{"as_tensor", {{"name", wn}}}};
                   }
                   e.emit("torch.ops.aten.rms_norm.default",
                          json::array({named("input", e.tensor_arg(x)), named("normalized_shape", e.syms_arg({x->type.shape.back()})), named("weight", w),
                                       named("eps", float_arg(n.attrs.f("eps")))}),
                          out_t(n), out, n.name);
                 }, "weight_offset as an aten.add of the weight"});
    v.push_back({"hfx.sdpa", "torch.ops.aten.scaled_dot_product_attention.default", [](Emitter& e, const Node& n, const std::string& out) {
                   const Value *q = in(n, 0), *k = in(n, 1), *val = in(n, 2), *mask = in(n, 3);
                   json a = json::array({named("query", e.tensor_arg(q)), named("key", e.tensor_arg(k)), named("value", e.tensor_arg(val)),
                                         named("attn_mask", mask ? e.tensor_arg(mask) : json{{"as_none", true}}),
                                         named("dropout_p", json{{"as_float", 0.0}}), named("is_causal", json{{"as_bool", n.attrs.b("causal")}}),
                                         named("scale", float_arg(n.attrs.f("scale")), true)});
                   if (!q->type.shape[1].same(k->type.shape[1])) a.push_back(named("enable_gqa", json{{"as_bool", true}}, true));
                   e.emit("torch.ops.aten.scaled_dot_product_attention.default", a, out_t(n), out, n.name);
                   e.set_contiguous(n.outputs[0], false);  // CPU flash attention returns a transposed layout
                 }, "only when exact: no window, no softcap, causal only without a mask and with S == T (else decomposed)"});
    return v;
  }();
  return t;
}

const AtenEntry* find_entry(const std::string& op) {
  for (const auto& e : aten_table())
    if (e.hfx_op == op) return &e;
  return nullptr;
}

bool sdpa_is_exact(const Node& n) {
  if (n.attrs.i("window") != 0 || n.attrs.f("softcap") != 0.0) return false;
  if (!n.attrs.b("causal")) return true;
  const Value *q = in(n, 0), *k = in(n, 1);
  return !in(n, 3) && q->type.shape[2].same(k->type.shape[2]);
}

}  // namespace

std::vector<AtenRow> aten_table_rows() {
  std::vector<AtenRow> rows;
  for (const auto& e : aten_table()) rows.push_back({e.hfx_op, e.target, e.note});
  rows.push_back({"hfx.rope", "(decomposed)", "no ATen op for rotary embedding"});
  rows.push_back({"hfx.moe", "(decomposed)", "no ATen op for mixture-of-experts: dense experts"});
  return rows;
}

int lower_composites(Graph& g) {
  std::vector<std::string> ops;
  int count = 0;
  bool rope = false, sdpa = false, moe = false;
  for (const auto& n : g.nodes()) {
    if (n->op == "hfx.rope") rope = true, count++;
    if (n->op == "hfx.moe") moe = true, count++;
    if (n->op == "hfx.sdpa" && !sdpa_is_exact(*n)) sdpa = true, count++;
  }
  if (rope) run_pass(g, decompose_pass({"hfx.rope"}));
  if (moe) run_pass(g, decompose_pass({"hfx.moe"}));
  if (sdpa) {
    // Decompose only the inexact ones: mark the exact ones by moving them aside is not possible with
    // decompose_pass, so decompose per node through the op table directly.
    std::vector<Node*> todo;
    for (const auto& n : g.nodes())
      if (n->op == "hfx.sdpa" && !sdpa_is_exact(*n)) todo.push_back(n.get());
    for (Node* n : todo) {
      const OpSchema& s = op_schema(n->op);
      TraceBuilder tb(g);
      tb.push_scope(n->name);
      std::vector<Var> ins;
      for (Value* v : n->inputs) ins.push_back(v ? tb.wrap(v) : Var());
      size_t before = g.nodes().size();
      std::vector<Var> outs = s.decompose(tb, ins, n->attrs);
      std::vector<Node*> fresh;
      auto it = g.nodes().begin();
      std::advance(it, before);
      for (; it != g.nodes().end(); ++it) fresh.push_back(it->get());
      for (Node* f : fresh) g.move_before(f, n);
      for (size_t i = 0; i < outs.size(); i++) g.replace_all_uses(n->outputs[i], outs[i].value());
      g.erase_node(n);
    }
  }
  return count;
}

SerializedProgram serialize_program(const Graph& g, const std::vector<Guard>& guards) {
  SerializedProgram sp;
  Emitter e(g);
  json inputs = json::array(), input_specs = json::array();

  // Symbols get torch names in the order they first appear in the user inputs.
  for (const Value* v : g.inputs())
    for (const auto& d : v->type.shape)
      for (const auto& s : d.free_symbols()) e.torch_symbol(s);

  // Placeholders: parameters, then constants, then user inputs (torch's lifted order).
  for (const Value* p : g.params()) {
    std::string name = e.fresh("p_" + p->name);
    e.bind(p, name);
    inputs.push_back(json{{"as_tensor", {{"name", name}}}});
    e.tensor_values[name] = e.tensor_meta(p->type);
    input_specs.push_back(json{{"parameter", {{"arg", {{"name", name}}}, {"parameter_name", p->name}}}});
    sp.parameters.push_back({p->name, name, p});
  }
  for (const Value* c : g.consts()) {
    std::string name = e.fresh("c_" + c->name);
    e.bind(c, name);
    inputs.push_back(json{{"as_tensor", {{"name", name}}}});
    e.tensor_values[name] = e.tensor_meta(c->type);
    std::string fqn = fx_name(c->name);
    input_specs.push_back(json{{"tensor_constant", {{"arg", {{"name", name}}}, {"tensor_constant_name", fqn}}}});
    sp.constants.push_back({fqn, name, c});
  }
  json call_inputs = json::array();
  for (const Value* u : g.inputs()) {
    std::string name = e.fresh(u->name);
    e.bind(u, name);
    json a{{"as_tensor", {{"name", name}}}};
    inputs.push_back(a);
    call_inputs.push_back(a);
    e.tensor_values[name] = e.tensor_meta(u->type);
    input_specs.push_back(json{{"user_input", {{"arg", a}}}});
    sp.user_inputs.push_back(u->name);
    for (size_t d = 0; d < u->type.shape.size(); d++)
      if (u->type.shape[d].kind() == Sym::Kind::Symbol && !e.sources.count(u->type.shape[d].name()))
        e.sources[u->type.shape[d].name()] = {name, static_cast<int>(d)};
  }

  // Deferred runtime asserts, as torch.export places them: right after the inputs.
  for (const Guard& gd : guards) {
    if (gd.expr.is_const()) continue;
    std::string msg = fmt::format("Runtime assertion failed for expression {} in [{}, {}] ({} at {})", gd.expr.str(), gd.lower, gd.upper, gd.what, gd.where);
    auto check = [&](const char* target, const char* rel, int64_t v) {
      std::string b = e.sym_bool(target, rel, gd.expr, v);
      e.emit_void("torch.ops.aten._assert_scalar.default",
                  json::array({named("self", json{{"as_sym_bool", {{"as_name", b}}}}), named("assert_msg", json{{"as_string", msg}})}));
    };
    if (gd.lower == gd.upper) {
      check("_operator.eq", "Eq", gd.lower);
    } else {
      if (gd.lower > INT64_MIN / 4) check("_operator.ge", "GreaterThan", gd.lower);
      if (gd.upper < SymRange::kInf) check("_operator.le", "LessThan", gd.upper);
    }
  }

  // Nodes.
  for (const auto& np : g.nodes()) {
    const Node& n = *np;
    const AtenEntry* entry = find_entry(n.op);
    if (!entry) HFX_THROW("dynamo", "expected an ATen mapping for op {} (node '{}'), got none; lower composites first", n.op, n.name);
    if (n.op == "hfx.sdpa" && !sdpa_is_exact(n))
      HFX_THROW("dynamo", "expected node '{}' (hfx.sdpa) to be decomposed: it has no exact aten.scaled_dot_product_attention form", n.name);
    if (n.outputs.size() != 1) HFX_THROW("dynamo", "expected one output of node '{}', got {}", n.name, n.outputs.size());
    std::string out = e.fresh(n.outputs[0]->name);
    e.bind(n.outputs[0], out);
    e.set_contiguous(n.outputs[0], true);
    entry->lower(e, n, out);
  }

  // Outputs.
  json outputs = json::array(), output_specs = json::array(), call_outputs = json::array();
  for (const Value* o : g.outputs()) {
    json a{{"as_tensor", {{"name", e.name_of(o)}}}};
    outputs.push_back(a);
    call_outputs.push_back(a);
    output_specs.push_back(json{{"user_output", {{"arg", a}}}});
    sp.user_outputs.push_back(o->name);
  }

  // Range constraints for every symbol that has a torch name.
  json ranges = json::object();
  for (const auto& [hfx, torch] : e.sym_names) {
    sp.symbols[torch] = hfx;
    SymRange r = g.env().has_symbol(hfx) ? g.env().range_of(hfx) : SymRange{};
    ranges[torch] = json{{"min_val", r.min}, {"max_val", r.bounded() ? json(r.max) : json(nullptr)}};
  }

  std::vector<std::string> arg_names;
  {
    std::vector<std::string> seen;
    const bool group = groups_kv_leaves(sp.user_inputs);
    for (const auto& n : sp.user_inputs) {
      int layer;
      std::string kind;
      std::string k = group && is_cache_leaf(n, "past_key_values", &layer, &kind) ? "past_key_values" : n;
      if (std::find(seen.begin(), seen.end(), k) == seen.end()) seen.push_back(k);
    }
    arg_names = seen;
  }

  json custom{{"hfx", {{"symbols", sp.symbols}}}};
  for (const auto& [k, v] : g.metadata()) custom["hfx"]["metadata"][k] = v;

  json graph{{"inputs", inputs},
             {"outputs", outputs},
             {"nodes", e.nodes},
             {"tensor_values", e.tensor_values},
             {"sym_int_values", e.sym_int_values},
             {"sym_bool_values", e.sym_bool_values},
             {"is_single_tensor_return", false},
             {"custom_obj_values", json::object()},
             {"sym_float_values", json::object()}};
  json signature{{"inputs", call_inputs},
                 {"outputs", call_outputs},
                 {"in_spec", input_treespec(sp.user_inputs)},
                 {"out_spec", output_treespec(sp.user_outputs)},
                 {"forward_arg_names", arg_names}};
  sp.program = json{{"graph_module",
                     {{"graph", graph},
                      {"signature", {{"input_specs", input_specs}, {"output_specs", output_specs}}},
                      {"module_call_graph", json::array({json{{"fqn", ""}, {"signature", signature}}})},
                      {"metadata", {{"custom", py_json(custom)}}}}},
                    {"opset_version", {{"aten", kAtenOpset}}},
                    {"range_constraints", ranges},
                    {"schema_version", {{"major", kSchemaMajor}, {"minor", kSchemaMinor}}},
                    {"verifiers", json::array({"ATEN"})},
                    {"torch_version", kTargetTorch}};
  return sp;
}

}  // namespace hfx::dynamo
