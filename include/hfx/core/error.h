// hfx/core/error.h — the one exception type hfx throws.
//
// Every error names its component and reads "[component] expected X, got Y" where that shape fits,
// followed by where it happened and how to fix it. The CLI prints `what()` and exits non-zero.
#pragma once
#include <stdexcept>
#include <string>

#include <fmt/format.h>

namespace hfx {

/// Error raised by any hfx component. `component()` is the short tag shown in brackets.
class Error : public std::runtime_error {
 public:
  Error(std::string component, const std::string& message)
      : std::runtime_error("[" + component + "] " + message), component_(std::move(component)) {}
  const std::string& component() const { return component_; }

 private:
  std::string component_;
};

/// Throws hfx::Error with a fmt-formatted message: HFX_THROW("safetensors", "expected {} bytes, got {}", a,
/// b).
#define HFX_THROW(component, ...) throw ::hfx::Error((component), ::fmt::format(__VA_ARGS__))

/// Checks a condition; on failure throws hfx::Error with the formatted message.
#define HFX_CHECK(cond, component, ...)                                       \
  do {                                                                        \
    if (!(cond)) throw ::hfx::Error((component), ::fmt::format(__VA_ARGS__)); \
  } while (0)

}  // namespace hfx
