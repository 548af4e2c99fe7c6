// Lookup and attribute normalization over the op table.
#include <algorithm>
#include <unordered_map>

#include "hfx/core/error.h"
#include "hfx/ops/op_schema.h"

namespace hfx {

const char* route_name(Route r) {
  switch (r) {
    case Route::hand_written:
      return "hand_written";
    case Route::decomposed:
      return "decomposed";
    case Route::refused:
      return "refused";
    case Route::not_delegated:
      return "not_delegated";
    default:
      return "unsaid";
  }
}

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

namespace {
// One declared call per target: two ops may not claim the same callee, or a reader could not invert it.
using TargetIndex = std::unordered_map<std::string, const OpSchema*>;
TargetIndex target_index(const CallDecl OpLowering::*decl, const char* backend) {
  TargetIndex m;
  for (const OpSchema& s : op_table()) {
    const CallDecl& c = s.lower.*decl;
    if (!c.declared()) continue;
    if (auto [it, fresh] = m.emplace(c.target, &s); !fresh)
      throw Error("ops", "expected one op per " + std::string(backend) + " call, got '" + c.target +
                             "' declared by " + it->second->name + " and " + s.name);
  }
  return m;
}
const OpSchema* find_in(const TargetIndex& m, std::string_view target) {
  auto it = m.find(std::string(target));
  return it == m.end() ? nullptr : it->second;
}
}  // namespace

const OpSchema* find_op_by_executorch_kernel(std::string_view kernel) {
  static const TargetIndex m = target_index(&OpLowering::executorch, "ExecuTorch");
  return find_in(m, kernel);
}

const OpSchema* find_op_by_aten_target(std::string_view target) {
  static const TargetIndex m = target_index(&OpLowering::aten, "ATen");
  return find_in(m, target);
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
