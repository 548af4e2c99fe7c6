// hfx/ir/contract.h — the dynamic-shape contract of a program's inputs.
//
// Capture derives it (hfx/capture/capture.h: CapturedProgram::contract), every backend writes it into its
// artifact, the manifest records it per component and verify and the runtimes read it back. It is a plain
// value type in the ir layer so that the artifact layer (hfx/artifact/manifest.h) needs no capture code.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace hfx {

/// The dynamic-shape contract of a captured graph: per input, per axis, a symbol and its range or a fixed
/// size.
struct AxisContract {
  std::string symbol;        ///< empty if static
  int64_t min = 0, max = 0;  ///< for static: both equal the size
};
using ShapeContract = std::map<std::string, std::vector<AxisContract>>;

}  // namespace hfx
