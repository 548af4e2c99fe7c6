// python/src/bindings.h — the pieces of the `hfx._hfx` extension module (nanobind), shared by its files.
//
// The module is a thin layer over libhfx: it converts Python values to the library's types, releases the GIL
// for every long call (export, verify, generation) and re-acquires it only to call back into Python
// (progress, token streams). Everything the package does is decided in C++; python/hfx/ only shapes the API.
#pragma once
#include <nanobind/nanobind.h>

#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace hfx {
class Model;
}

namespace hfx::py {

namespace nb = nanobind;

/// Thrown by a callback bridge when the Python callback raised (KeyboardInterrupt included): unwinds the C++
/// call (an export's staged folder is removed on the way), then `CallbackGuard::rethrow` re-raises the Python
/// error. Not an hfx::Error, so no library code turns it into a message.
struct CallbackRaised : std::exception {
  const char* what() const noexcept override { return "a Python callback raised"; }
};

/// Holds the Python error of a callback (with the GIL) until the C++ call has unwound.
class CallbackGuard {
 public:
  /// Calls `fn` (GIL taken here); if it raises, or a signal (Ctrl-C) is pending, keeps the error and throws
  /// CallbackRaised.
  template <typename Fn>
  void call(Fn&& fn) {
    nb::gil_scoped_acquire gil;
    try {
      fn();
      if (PyErr_CheckSignals() != 0) throw nb::python_error();
    } catch (nb::python_error& e) {
      error_.emplace(std::move(e));
      throw CallbackRaised();
    }
  }
  /// Re-raises the kept Python error (call with the GIL held, after catching CallbackRaised).
  [[noreturn]] void rethrow() {
    if (error_) throw std::move(*error_);
    throw std::runtime_error("hfx: a callback raised, but its error was lost");
  }

 private:
  std::optional<nb::python_error> error_;
};

/// JSON ↔ Python through the json module (dicts, lists, str, int, float, bool, None).
nb::object to_python(const nlohmann::json& j);
nlohmann::json from_python(const nb::handle& o, const char* what);

/// The model of a live object: its config.json dict and its weights (name → CPU array, viewed in place
/// through DLPack; each array is kept alive by the model's storage).
std::unique_ptr<Model> live_model(const nb::dict& model_config, const nb::dict& tensors);

void bind_export(nb::module_& m);
void bind_runtime(nb::module_& m);

}  // namespace hfx::py
