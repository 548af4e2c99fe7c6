// hfx/runtime/shape_restriction.h — shape rules of an artifact's contract beyond per-axis ranges.
//
// Some graphs serve every axis inside its range but not every combination: ONNX Runtime's
// com.microsoft GroupQueryAttention (`hfx export --target ort`) takes several new tokens over a
// non-empty past only at batch 1. The exporter states such a rule in the graph's contract (ONNX metadata
// "hfx.contract", key "restrictions"), and hfx's ONNX Runtime paths (OrtSession::run, the ORT generation
// engine) refuse a call that breaks it with an out-of-contract error before ONNX Runtime runs it:
//
//   "restrictions": [{"when": [{"input": "input_ids", "axis": 1, "min": 2},
//                              {"input": "past_key_values.0.key", "axis": 2, "min": 1}],
//                     "require": {"input": "input_ids", "axis": 0, "max": 1},
//                     "why": "ONNX Runtime's GroupQueryAttention ..."}]
#pragma once
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace hfx::rt {

/// min <= size of `input` along `axis` <= max.
struct AxisCondition {
  std::string input;
  int axis = 0;
  int64_t min = std::numeric_limits<int64_t>::min();
  int64_t max = std::numeric_limits<int64_t>::max();
  bool holds(int64_t size) const { return size >= min && size <= max; }
  /// "input_ids axis 1 >= 2", "input_ids axis 0 in [1, 4]".
  std::string str() const;
  nlohmann::json to_json() const;
};

/// When every `when` condition holds, `require` must hold.
struct ShapeRestriction {
  std::vector<AxisCondition> when;
  AxisCondition require;
  std::string why;  ///< who imposes it, and what to do instead
  nlohmann::json to_json() const;
};

/// The "restrictions" of an hfx.contract JSON object (none when the key is absent). Throws
/// hfx::Error("contract", ...) on a malformed entry.
std::vector<ShapeRestriction> restrictions_from_contract(const nlohmann::json& contract);

/// The per-axis ranges of an hfx.contract JSON object's "inputs" (each dynamic axis: its symbol's [min,
/// max]), as restrictions with no `when`: a generation engine checks a step against them before ONNX Runtime
/// runs it, so a prompt past the export's bounds is refused in the contract's words rather than by the
/// graph's check node (whose message is ONNX Runtime's Reshape error). `hint` says what widens the contract.
std::vector<ShapeRestriction> axis_ranges_from_contract(const nlohmann::json& contract,
                                                        const std::string& hint);

/// Size of a fed input along an axis, or -1 when that input is not fed (or has fewer axes).
using AxisSize = std::function<int64_t(const std::string& input, int axis)>;

/// The first restriction `size` breaks, or nullptr. A condition on an input that is not fed is false.
const ShapeRestriction* broken_restriction(const std::vector<ShapeRestriction>& rs, const AxisSize& size);

/// Throws hfx::Error(component, "expected ... when ..., got ...") naming the restriction and its reason
/// when `size` breaks one.
void check_restrictions(const std::vector<ShapeRestriction>& rs, const AxisSize& size,
                        const std::string& component);

}  // namespace hfx::rt
