// Lookup and attribute normalization over the op table.
#include <algorithm>
#include <unordered_map>

#include "hfx/core/error.h"
#include "hfx/ops/op_schema.h"

namespace hfx {

namespace {
const std::unordered_map<std::string_view, const OpSchema*>& index() {
  static const auto* idx = [] {
    auto* m = new std::unordered_map<std::string_view, const OpSchema*>();
    for (const OpSchema& s : op_table()) {
      if (!m->emplace(s.name, &s).second)
        throw Error("ops", "expected unique op names, got '" + s.name + "' twice");
    }
    return m;
  }();
  return *idx;
}
}  // namespace

const OpSchema* find_op_schema(std::string_view name) {
  auto it = index().find(name);
  return it == index().end() ? nullptr : it->second;
}

const OpSchema& op_schema(std::string_view name) {
  if (const OpSchema* s = find_op_schema(name)) return *s;
  HFX_THROW("ops", "expected a known op (see `hfx ops`), got '{}'", name);
}

std::vector<const OpSchema*> all_op_schemas() {
  std::vector<const OpSchema*> v;
  for (const OpSchema& s : op_table()) v.push_back(&s);
  std::sort(v.begin(), v.end(), [](auto* a, auto* b) { return a->name < b->name; });
  return v;
}

Attrs normalize_attrs(const OpSchema& op, const Attrs& attrs) {
  Attrs out;
  for (const auto& [k, v] : attrs.items()) {
    bool known =
        std::any_of(op.attrs.begin(), op.attrs.end(), [&](const AttrSpec& a) { return a.name == k; });
    if (!known)
      HFX_THROW("ops", "expected attributes of {} to be among its schema, got unknown '{}'", op.name, k);
    out.set(k, v);
  }
  for (const AttrSpec& a : op.attrs) {
    if (out.has(a.name)) continue;
    if (a.required) HFX_THROW("ops", "expected required attribute '{}' for {}, got none", a.name, op.name);
    out.set(a.name, a.default_value);
  }
  return out;
}

}  // namespace hfx
