// The `hfx._hfx` extension module: errors, JSON conversion, and the bindings of export and runtime.
#include <nanobind/stl/string.h>

#include "bindings.h"
#include "hfx/core/error.h"

namespace hfx::py {

nb::object to_python(const nlohmann::json& j) {
  return nb::module_::import_("json").attr("loads")(nb::str(j.dump().c_str()));
}

nlohmann::json from_python(const nb::handle& o, const char* what) {
  std::string text = nb::cast<std::string>(nb::module_::import_("json").attr("dumps")(o));
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    HFX_THROW("python", "expected {} as JSON-compatible values, got {} ({})", what, text.substr(0, 200),
              e.what());
  }
}

}  // namespace hfx::py

NB_MODULE(_hfx, m) {
  namespace nb = nanobind;
  m.doc() = "hfx's native core (libhfx); use the `hfx` package, not this module.";
  m.attr("__version__") = HFX_VERSION;
  // hfx::Error → the hfx.Error subclass of its component (python/hfx/errors.py holds the one table), with the
  // library's "[component] expected X, got Y" message and `.component`.
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const hfx::Error& e) {
      nb::object cls = nb::module_::import_("hfx.errors").attr("error_class")(e.component());
      nb::object err = cls(nb::str(e.what()), nb::str(e.component().c_str()));
      PyErr_SetObject(cls.ptr(), err.ptr());
    }
  });
  hfx::py::bind_export(m);
  hfx::py::bind_runtime(m);
}
