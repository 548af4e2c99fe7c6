// Python-style JSON (json.dumps' separators and escapes, as torch's serializer writes it), the pytree specs
// of an ExportedProgram's inputs and outputs (KV-cache leaves grouped per layer) and FX node names.
#include "export/dynamo/program.h"

#include <fmt/format.h>

#include <cmath>

#include "hfx/core/error.h"

namespace hfx::dynamo {

using json = nlohmann::json;

// ---------------------------------------------------------------- python-style json, treespecs

namespace {

void py_str(std::string& out, const std::string& s) {
  out.push_back('"');
  for (size_t i = 0; i < s.size(); i++) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20 || c >= 0x7f) {
          // ASCII escape of UTF-8 (BMP code points only: names here are ASCII in practice).
          uint32_t cp = c;
          int extra = 0;
          if (c >= 0xf0)
            cp = c & 0x07, extra = 3;
          else if (c >= 0xe0)
            cp = c & 0x0f, extra = 2;
          else if (c >= 0xc0)
            cp = c & 0x1f, extra = 1;
          for (int k = 0; k < extra && i + 1 < s.size(); k++)
            cp = (cp << 6) | (static_cast<unsigned char>(s[++i]) & 0x3f);
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
    case J::value_t::null:
      out += "null";
      break;
    case J::value_t::boolean:
      out += j.template get<bool>() ? "true" : "false";
      break;
    case J::value_t::string:
      py_str(out, j.template get_ref<const std::string&>());
      break;
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
    default:
      out += j.dump();
  }
}

// ordered_json keeps insertion order, as Python dicts do.
using ojson = nlohmann::ordered_json;

ojson leaf_spec() {
  return ojson{{"type", nullptr}, {"context", nullptr}, {"children_spec", ojson::array()}};
}
ojson node_spec(const char* type, const std::string& context, ojson children) {
  return ojson{{"type", type}, {"context", context}, {"children_spec", std::move(children)}};
}

}  // namespace

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

namespace {

// Groups names into (plain keys, cache layers). Cache leaves become one list of (key, value) tuples
// (unless groups_kv_leaves says they stay flat). `keywords`: the keys are a forward's keyword arguments
// (kwarg_name), which torch's unlifted module writes as Python parameters.
ojson dict_spec(const std::vector<std::string>& names, const char* cache_prefix, const char* cache_key,
                bool keywords) {
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
    keys.push_back(keywords ? kwarg_name(n) : n);
    children.push_back(leaf_spec());
  }
  if (cache_seen) {
    ojson layer_specs = ojson::array();
    for (int i = 0; i < layers; i++)
      layer_specs.push_back(node_spec("builtins.tuple", "null", ojson::array({leaf_spec(), leaf_spec()})));
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
    if ((n.rfind("past_", 0) == 0 && n.rfind("past_key_values.", 0) != 0) || n.rfind("present_", 0) == 0)
      return false;
  return true;
}

std::string input_treespec(const std::vector<std::string>& input_names) {
  ojson args = node_spec("builtins.tuple", "null", ojson::array());
  ojson kwargs = dict_spec(input_names, "past_key_values", "past_key_values", true);
  return dump_spec(node_spec("builtins.tuple", "null", ojson::array({args, kwargs})));
}

std::string output_treespec(const std::vector<std::string>& output_names) {
  return dump_spec(dict_spec(output_names, "present", "past_key_values", false));
}

// ---------------------------------------------------------------- names

std::string fx_name(const std::string& raw) {
  static const std::set<std::string> reserved = {
      "False",   "None",     "True",      "and",    "as",   "assert", "async",  "await",     "break",
      "class",   "continue", "def",       "del",    "elif", "else",   "except", "finally",   "for",
      "from",    "global",   "if",        "import", "in",   "is",     "lambda", "nonlocal",  "not",
      "or",      "pass",     "raise",     "return", "try",  "while",  "with",   "yield",     "self",
      "torch",   "operator", "_operator", "math",   "inf",  "nan",    "device", "fx_pytree", "pytree",
      "getattr", "print",    "match",     "case",   "type", "input",  "output"};
  std::string s;
  for (char c : raw) s.push_back(std::isalnum(static_cast<unsigned char>(c)) || c == '_' ? c : '_');
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) s = "_" + s;
  if (reserved.count(s)) s += "_1";
  return s;
}

std::string kwarg_name(const std::string& leaf) { return fx_name(leaf); }

}  // namespace hfx::dynamo
