// Reading Graph::dump's text back (hfx/passes/ir_text.h). A line-oriented reader: the symbol lines first
// (the header's types name them), then the header, params, consts, nodes and the return line in order.
// Errors say what was expected and quote the line.
#include "hfx/passes/ir_text.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <string>
#include <vector>

#include "hfx/core/error.h"
#include "hfx/ops/op_schema.h"

namespace hfx {
namespace {

constexpr const char* kC = "ir text";

struct Reader {
  Graph& g;
  std::map<std::string, Value*> values;
  int line_no = 0;
  std::string line;

  [[noreturn]] void fail(const std::string& what) const {
    HFX_THROW(kC, "expected {} at line {}: {}", what, line_no, line);
  }
  Value* value(const std::string& name) const {
    auto it = values.find(name);
    if (it == values.end()) fail("a value defined before its use, got '%" + name + "'");
    return it->second;
  }
};

std::string trim(std::string_view s) {
  size_t a = 0, b = s.size();
  while (a < b && std::isspace(static_cast<unsigned char>(s[a]))) a++;
  while (b > a && std::isspace(static_cast<unsigned char>(s[b - 1]))) b--;
  return std::string(s.substr(a, b - a));
}

// Splits at top-level commas (not inside [], (), {} or quotes).
std::vector<std::string> split_top(std::string_view s) {
  std::vector<std::string> out;
  int depth = 0;
  bool quoted = false;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); i++) {
    const char c = s[i];
    if (c == '\'') quoted = !quoted;
    if (quoted) continue;
    if (c == '[' || c == '(' || c == '{') depth++;
    if (c == ']' || c == ')' || c == '}') depth--;
    if (c == ',' && depth == 0) {
      out.push_back(trim(s.substr(start, i - start)));
      start = i + 1;
    }
  }
  if (!trim(s.substr(start)).empty()) out.push_back(trim(s.substr(start)));
  return out;
}

bool is_int(const std::string& s) {
  size_t i = (!s.empty() && s[0] == '-') ? 1 : 0;
  if (i == s.size()) return false;
  for (; i < s.size(); i++)
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) return false;
  return true;
}

// A dim: sums of products of integers and declared symbols ("2*s0 + 1").
Sym parse_dim(const Reader& r, const std::string& text) {
  Sym total(0);
  for (size_t at = 0; at <= text.size();) {
    size_t plus = text.find(" + ", at);
    const std::string term = trim(text.substr(at, plus == std::string::npos ? std::string::npos : plus - at));
    Sym prod(1);
    for (size_t f = 0; f <= term.size();) {
      size_t star = term.find('*', f);
      const std::string factor =
          trim(term.substr(f, star == std::string::npos ? std::string::npos : star - f));
      if (is_int(factor))
        prod = prod * Sym(static_cast<int64_t>(std::stoll(factor)));
      else if (r.g.env().has_symbol(factor))
        prod = prod * Sym::symbol(factor);
      else
        r.fail("a dim of integers and declared symbols (a `sym NAME in [MIN, MAX]` line), got '" + factor +
               "'");
      if (star == std::string::npos) break;
      f = star + 1;
    }
    total = total + prod;
    if (plus == std::string::npos) break;
    at = plus + 3;
  }
  return total;
}

// "f32[s0, 4]" → TensorType.
TensorType parse_type(const Reader& r, const std::string& text) {
  const size_t open = text.find('['), close = text.rfind(']');
  if (open == std::string::npos || close != text.size() - 1)
    r.fail("a type such as f32[s0, 4], got '" + text + "'");
  static const std::map<std::string, DType> dtypes = {
      {"f32", DType::F32}, {"f16", DType::F16}, {"bf16", DType::BF16}, {"i64", DType::I64},
      {"i32", DType::I32}, {"i8", DType::I8},   {"u8", DType::U8},     {"bool", DType::Bool}};
  auto it = dtypes.find(text.substr(0, open));
  if (it == dtypes.end())
    r.fail("a dtype of f32, f16, bf16, i64, i32, i8, u8, bool, got '" + text.substr(0, open) + "'");
  TensorType t{it->second, {}};
  for (const std::string& d : split_top(text.substr(open + 1, close - open - 1)))
    t.shape.push_back(parse_dim(r, d));
  return t;
}

// "%name: TYPE" → (name, type).
std::pair<std::string, TensorType> parse_decl(const Reader& r, const std::string& text) {
  const size_t colon = text.find(':');
  if (text.empty() || text[0] != '%' || colon == std::string::npos) r.fail("%name: TYPE, got '" + text + "'");
  return {trim(text.substr(1, colon - 1)), parse_type(r, trim(text.substr(colon + 1)))};
}

// Deterministic data for a param or const of `t` (the dump prints none): small values, not all equal.
Tensor fill(const Reader& r, const TensorType& t) {
  Shape shape;
  for (const Sym& d : t.shape) {
    if (!d.maybe_value()) r.fail("a param or const of fixed dims, got a symbolic one");
    shape.push_back(*d.maybe_value());
  }
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; i++) v[static_cast<size_t>(i)] = 0.01f * static_cast<float>(i % 13) + 0.5f;
  return Tensor::from_floats(shape, v).to(t.dtype);
}

// One attribute value, typed by the schema's default when the attribute has one (`like`; a required float
// attribute's placeholder is a float), else by its spelling: 'text', true/false, [list], an integer, a
// float, a dtype name.
AttrValue parse_attr(const Reader& r, const std::string& v, const AttrValue* like) {
  auto list = [&](auto conv) {
    using T = decltype(conv(std::string()));
    std::vector<T> out;
    for (const std::string& e : split_top(v.substr(1, v.size() - 2))) out.push_back(conv(e));
    return out;
  };
  auto to_double = [](const std::string& e) { return std::stod(e); };
  auto to_int = [&](const std::string& e) {
    if (!is_int(e)) r.fail("an integer, got '" + e + "'");
    return static_cast<int64_t>(std::stoll(e));
  };
  if (like && std::holds_alternative<double>(*like)) return to_double(v);
  if (like && std::holds_alternative<std::vector<double>>(*like)) return list(to_double);
  if (like && std::holds_alternative<DType>(*like)) return dtype_from_name(v);
  if (like && std::holds_alternative<std::vector<Sym>>(*like))
    return list([&](const std::string& e) { return parse_dim(r, e); });
  if (v.size() >= 2 && v.front() == '\'' && v.back() == '\'') return v.substr(1, v.size() - 2);
  if (v == "true" || v == "false") return v == "true";
  if (!v.empty() && v.front() == '[') {
    const std::vector<std::string> items = split_top(v.substr(1, v.size() - 2));
    bool ints = true;
    for (const std::string& e : items) ints = ints && is_int(e);
    if (ints) return list(to_int);
    return list([&](const std::string& e) { return parse_dim(r, e); });
  }
  if (is_int(v)) return to_int(v);
  if (!v.empty() && (std::isdigit(static_cast<unsigned char>(v[0])) || v[0] == '-')) return to_double(v);
  return dtype_from_name(v);
}

Attrs parse_attrs(const Reader& r, const OpSchema& op, const std::string& text) {
  Attrs a;
  if (text.empty()) return a;
  if (text.front() != '{' || text.back() != '}') r.fail("attributes {name=value, ...}, got '" + text + "'");
  for (const std::string& item : split_top(text.substr(1, text.size() - 2))) {
    const size_t eq = item.find('=');
    if (eq == std::string::npos) r.fail("name=value, got '" + item + "'");
    const std::string name = trim(item.substr(0, eq));
    const AttrValue* like = nullptr;
    for (const AttrSpec& spec : op.attrs)  // a required attribute's placeholder is typed only when a float
      if (spec.name == name && (!spec.required || !std::holds_alternative<int64_t>(spec.default_value)))
        like = &spec.default_value;
    a.set(name, parse_attr(r, trim(item.substr(eq + 1)), like));
  }
  return a;
}

// "%a: T[, %b: T] = op(%x, %y) {attrs}": added through the op table; the declared types must be the
// inferred ones.
void parse_node(Reader& r, const std::string& text) {
  const size_t eq = text.find(" = "), open = text.find('(', eq), close = text.find(')', open);
  if (eq == std::string::npos || open == std::string::npos || close == std::string::npos)
    r.fail("a node '%out: TYPE = op(%in, ...) {attrs}'");
  std::vector<std::pair<std::string, TensorType>> outs;
  for (const std::string& d : split_top(text.substr(0, eq))) outs.push_back(parse_decl(r, d));
  const std::string op = trim(text.substr(eq + 3, open - eq - 3));
  const OpSchema* schema = find_op_schema(op);
  if (!schema) r.fail("an op of the op table, got '" + op + "'");
  std::vector<Value*> inputs;
  for (const std::string& a : split_top(text.substr(open + 1, close - open - 1))) {
    if (a == "None")
      inputs.push_back(nullptr);
    else if (a.size() > 1 && a[0] == '%')
      inputs.push_back(r.value(a.substr(1)));
    else
      r.fail("an input %name or None, got '" + a + "'");
  }
  Node* n = add_node(r.g, op, inputs, parse_attrs(r, *schema, trim(text.substr(close + 1))), outs[0].first);
  if (n->outputs.size() != outs.size())
    r.fail(std::to_string(n->outputs.size()) + " output(s) of " + op + ", got " +
           std::to_string(outs.size()));
  for (size_t i = 0; i < outs.size(); i++) {
    if (!n->outputs[i]->type.same(outs[i].second))
      r.fail("%" + outs[i].first + ": " + n->outputs[i]->type.str() + " as the op table infers, got " +
             outs[i].second.str());
    n->outputs[i]->name = outs[i].first;  // the node took the name; its value reads as written
    r.values[outs[i].first] = n->outputs[i];
  }
  if (n->outputs.size() == 1 && n->name != outs[0].first)
    r.fail("a new value name, got '%" + outs[0].first + "' again");
}

// "sym s0 in [1, 64]" (max may be "inf").
void parse_symbol(Reader& r, const std::string& text) {
  const size_t in = text.find(" in [");
  if (in == std::string::npos || text.back() != ']') r.fail("sym NAME in [MIN, MAX]");
  const std::string name = trim(text.substr(4, in - 4));
  const std::vector<std::string> range = split_top(text.substr(in + 5, text.size() - in - 6));
  if (range.size() != 2 || !is_int(range[0]) || (range[1] != "inf" && !is_int(range[1])))
    r.fail("sym NAME in [MIN, MAX] with integer bounds (MAX may be inf)");
  const int64_t lo = std::stoll(range[0]), hi = range[1] == "inf" ? SymRange::kInf : std::stoll(range[1]);
  r.g.env().create_symbol(name, lo, hi, std::min(hi, std::max<int64_t>(lo, 4)));
}

void parse_line(Reader& r, const std::string& text, bool& done) {
  if (text.rfind("graph(", 0) == 0) {
    const size_t close = text.rfind(") {");
    if (close == std::string::npos) r.fail("graph(%in: TYPE, ...) {");
    for (const std::string& d : split_top(text.substr(6, close - 6))) {
      auto [name, type] = parse_decl(r, d);
      r.values[name] = r.g.add_input(name, type);
    }
  } else if (text.rfind("param ", 0) == 0 || text.rfind("const ", 0) == 0) {
    auto [name, type] = parse_decl(r, trim(text.substr(6)));
    r.values[name] = text[0] == 'p' ? r.g.add_param(name, fill(r, type)) : r.g.add_const(fill(r, type), name);
  } else if (text.rfind("return (", 0) == 0) {
    for (const std::string& o : split_top(text.substr(8, text.size() - 9))) {
      if (o.size() < 2 || o[0] != '%') r.fail("return (%out, ...)");
      r.g.add_output(o.substr(1), r.value(o.substr(1)));
    }
  } else if (text == "}") {
    done = true;
  } else if (!text.empty() && text[0] == '%') {
    parse_node(r, text);
  } else if (text.rfind("sym ", 0) != 0 && !text.empty()) {
    r.fail("a graph line (graph(...) {, sym, param, const, %node = op(...), return (...), })");
  }
}

}  // namespace

std::unique_ptr<Graph> parse_graph(std::string_view text) {
  auto g = std::make_unique<Graph>();
  Reader r{*g, {}, 0, {}};
  std::vector<std::string> lines;
  for (size_t at = 0; at <= text.size();) {
    const size_t nl = text.find('\n', at);
    lines.push_back(trim(text.substr(at, nl == std::string_view::npos ? std::string_view::npos : nl - at)));
    if (nl == std::string_view::npos) break;
    at = nl + 1;
  }
  for (size_t i = 0; i < lines.size(); i++)  // symbols first: the header's types name them
    if (lines[i].rfind("sym ", 0) == 0) {
      r.line_no = static_cast<int>(i + 1);
      r.line = lines[i];
      parse_symbol(r, lines[i]);
    }
  bool done = false;
  for (size_t i = 0; i < lines.size() && !done; i++) {
    r.line_no = static_cast<int>(i + 1);
    r.line = lines[i];
    parse_line(r, lines[i], done);
  }
  if (!done) HFX_THROW(kC, "expected a closing '}}' line, got the end of the text");
  return g;
}

}  // namespace hfx
