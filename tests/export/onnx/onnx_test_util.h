// Helpers for the ONNX backend tests: tiny traced graphs, lowering to a temp file, hfx ↔ ORT tensors.
#pragma once
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "export/onnx/lowering.h"
#include "hfx/core/tensor.h"
#include "hfx/ir/graph.h"
#include "hfx/ops/builder.h"

#ifdef HFX_HAVE_ORT
#include "hfx/runtime/ort_session.h"
#endif

namespace hfx::onnx_test {

namespace fs = std::filesystem;

/// A fresh temp folder, removed with the object.
struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& tag) {
    static int counter = 0;
    path = fs::temp_directory_path() /
           ("hfx_onnx_" + tag + "_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

/// Attributes with every Sym (and Sym list) evaluated under `binding`.
inline Attrs concrete_attrs(const Attrs& a, const std::map<std::string, int64_t>& binding) {
  Attrs out;
  for (const auto& [k, v] : a.items()) {
    if (auto* s = std::get_if<Sym>(&v)) {
      out.set(k, Sym(s->eval(binding)));
    } else if (auto* l = std::get_if<std::vector<Sym>>(&v)) {
      std::vector<Sym> c;
      for (const auto& x : *l) c.push_back(Sym(x.eval(binding)));
      out.set(k, c);
    } else {
      out.set(k, v);
    }
  }
  return out;
}

inline Shape concrete(const SymShape& s, const std::map<std::string, int64_t>& binding) {
  Shape out;
  for (const auto& d : s) out.push_back(d.eval(binding));
  return out;
}

/// Lowers `g` (stage 4 + 5) and writes it under `dir` as `file`. Returns the path.
inline std::string lower_and_write(const Graph& g, const onnx_export::LowerOptions& lo, const fs::path& dir,
                                   const std::string& file = "model.onnx", bool external = false,
                                   std::vector<std::string>* warnings = nullptr) {
  auto lm = onnx_export::lower_graph(g, lo);
  onnx_export::apply_onnx_ir_fixes(lm.model, lm.warnings);
  std::string path = (dir / file).string();
  onnx_export::write_onnx_model(lm, path, external);
  if (warnings) *warnings = lm.warnings;
  return path;
}

#ifdef HFX_HAVE_ORT
inline rt::RtTensor to_rt(const Tensor& t0) {
  Tensor t = t0.contiguous();
  rt::RtTensor r;
  r.shape = t.shape();
  switch (t.dtype()) {
    case DType::F32:
      r.dtype = "float32";
      break;
    case DType::I64:
      r.dtype = "int64";
      break;
    case DType::I32:
      r.dtype = "int32";
      break;
    case DType::Bool:
      r.dtype = "bool";
      break;
    case DType::U8:
      r.dtype = "uint8";
      break;
    default:
      t = t.to(DType::F32), r.dtype = "float32";
      break;
  }
  const uint8_t* p = static_cast<const uint8_t*>(t.raw());
  r.data.assign(p, p + t.nbytes());
  return r;
}

/// Max |a - b| / max(1, |b|) over all elements (NaN == NaN); -1 on a shape mismatch.
inline double max_rel_err(const rt::RtTensor& got, const Tensor& ref) {
  if (got.shape != ref.shape()) return -1;
  bool is_float = dtype_is_float(ref.dtype());
  if (!is_float) {
    auto a = got.to_i64();
    auto b = ref.to_ints();
    double e = 0;
    for (size_t i = 0; i < a.size(); i++) e = std::max(e, static_cast<double>(std::llabs(a[i] - b[i])));
    return e;
  }
  auto a = got.to_f32();
  auto b = ref.to_floats();
  double e = 0;
  for (size_t i = 0; i < a.size(); i++) {
    if (std::isnan(a[i]) && std::isnan(b[i])) continue;
    if (std::isinf(a[i]) && std::isinf(b[i]) && (a[i] > 0) == (b[i] > 0)) continue;
    double d =
        std::fabs(static_cast<double>(a[i]) - b[i]) / std::max(1.0, std::fabs(static_cast<double>(b[i])));
    if (std::isnan(d)) return 1e30;
    e = std::max(e, d);
  }
  return e;
}
#endif

}  // namespace hfx::onnx_test
