// Shape restrictions of a contract (see include/hfx/runtime/shape_restriction.h).
#include "hfx/runtime/shape_restriction.h"

#include <fmt/format.h>

#include "hfx/core/error.h"

namespace hfx::rt {

namespace {

AxisCondition condition_from(const nlohmann::json& j) {
  if (!j.is_object() || !j.contains("input") || !j["input"].is_string() || !j.contains("axis") ||
      !j["axis"].is_number_integer())
    HFX_THROW("contract", "expected a restriction condition {{input, axis, min?, max?}}, got {}", j.dump());
  AxisCondition c;
  c.input = j["input"].get<std::string>();
  c.axis = j["axis"].get<int>();
  if (j.contains("min")) c.min = j["min"].get<int64_t>();
  if (j.contains("max")) c.max = j["max"].get<int64_t>();
  if (c.axis < 0 || c.min > c.max)
    HFX_THROW("contract", "expected an axis >= 0 and min <= max in a restriction, got {}", j.dump());
  return c;
}

}  // namespace

std::string AxisCondition::str() const {
  const bool lo = min != std::numeric_limits<int64_t>::min(), hi = max != std::numeric_limits<int64_t>::max();
  if (lo && hi)
    return min == max ? fmt::format("{} axis {} == {}", input, axis, min)
                      : fmt::format("{} axis {} in [{}, {}]", input, axis, min, max);
  if (lo) return fmt::format("{} axis {} >= {}", input, axis, min);
  if (hi) return fmt::format("{} axis {} <= {}", input, axis, max);
  return fmt::format("{} axis {} (any size)", input, axis);
}

nlohmann::json AxisCondition::to_json() const {
  nlohmann::json j = {{"input", input}, {"axis", axis}};
  if (min != std::numeric_limits<int64_t>::min()) j["min"] = min;
  if (max != std::numeric_limits<int64_t>::max()) j["max"] = max;
  return j;
}

nlohmann::json ShapeRestriction::to_json() const {
  nlohmann::json w = nlohmann::json::array();
  for (const auto& c : when) w.push_back(c.to_json());
  return {{"when", w}, {"require", require.to_json()}, {"why", why}};
}

std::vector<ShapeRestriction> restrictions_from_contract(const nlohmann::json& contract) {
  std::vector<ShapeRestriction> out;
  if (!contract.is_object() || !contract.contains("restrictions")) return out;
  const auto& rs = contract["restrictions"];
  if (!rs.is_array()) HFX_THROW("contract", "expected 'restrictions' to be an array, got {}", rs.dump());
  for (const auto& r : rs) {
    if (!r.is_object() || !r.contains("when") || !r["when"].is_array() || !r.contains("require"))
      HFX_THROW("contract", "expected a restriction {{when: [...], require: {{...}}, why}}, got {}",
                r.dump());
    ShapeRestriction x;
    for (const auto& c : r["when"]) x.when.push_back(condition_from(c));
    x.require = condition_from(r["require"]);
    if (r.contains("why") && r["why"].is_string()) x.why = r["why"].get<std::string>();
    out.push_back(std::move(x));
  }
  return out;
}

std::vector<ShapeRestriction> axis_ranges_from_contract(const nlohmann::json& contract,
                                                        const std::string& hint) {
  std::vector<ShapeRestriction> out;
  if (!contract.is_object() || !contract.contains("inputs") || !contract["inputs"].is_object()) return out;
  for (const auto& [input, axes] : contract["inputs"].items()) {
    if (!axes.is_array()) continue;
    for (size_t a = 0; a < axes.size(); a++) {
      const auto& ax = axes[a];
      const std::string sym = ax.is_object() ? ax.value("symbol", std::string()) : std::string();
      if (sym.empty() || !ax.contains("min") || !ax.contains("max")) continue;
      ShapeRestriction r;
      r.require =
          AxisCondition{input, static_cast<int>(a), ax["min"].get<int64_t>(), ax["max"].get<int64_t>()};
      r.why = fmt::format("{} in [{}, {}]; {}", sym, r.require.min, r.require.max, hint);
      out.push_back(std::move(r));
    }
  }
  return out;
}

const ShapeRestriction* broken_restriction(const std::vector<ShapeRestriction>& rs, const AxisSize& size) {
  for (const auto& r : rs) {
    bool applies = true;
    for (const auto& c : r.when) {
      const int64_t s = size(c.input, c.axis);
      applies = applies && s >= 0 && c.holds(s);
    }
    const int64_t got = size(r.require.input, r.require.axis);
    if (applies && got >= 0 && !r.require.holds(got)) return &r;
  }
  return nullptr;
}

void check_restrictions(const std::vector<ShapeRestriction>& rs, const AxisSize& size,
                        const std::string& component) {
  const ShapeRestriction* r = broken_restriction(rs, size);
  if (!r) return;
  std::string when, sizes;
  for (const auto& c : r->when) {
    when += (when.empty() ? "" : " and ") + c.str();
    sizes +=
        fmt::format("{}{} axis {} = {}", sizes.empty() ? "" : ", ", c.input, c.axis, size(c.input, c.axis));
  }
  if (r->when.empty())
    HFX_THROW(component, "expected {} (the graph's contract: {}), got {} axis {} = {}", r->require.str(),
              r->why, r->require.input, r->require.axis, size(r->require.input, r->require.axis));
  HFX_THROW(component, "expected {} when {} (out of the graph's contract: {}), got {} axis {} = {} ({})",
            r->require.str(), when, r->why, r->require.input, r->require.axis,
            size(r->require.input, r->require.axis), sizes);
}

}  // namespace hfx::rt
