// torch.save's file format, written natively: a stored zip ("archive/") holding data.pkl (a protocol-2
// pickle that rebuilds tensors with torch._utils._rebuild_tensor_v2 over persistent storages),
// data/<key> (raw little-endian bytes), byteorder and version. Used for the sample inputs of a .pt2
// archive (data/sample_inputs/<model>.pt), which torch.export.load reads with torch.load; the pickle
// uses only globals that torch.load(weights_only=True) allows.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "hfx/core/tensor.h"

namespace hfx::dynamo {

/// A Python value made of what sample inputs need: None, int, str, tensor, tuple, list, dict[str, ...].
struct PyObj {
  enum class Kind { None, Int, Str, Tensor, Tuple, List, Dict } kind = Kind::None;
  int64_t i = 0;
  std::string s;
  Tensor t;
  std::vector<PyObj> items;                            ///< Tuple, List
  std::vector<std::pair<std::string, PyObj>> entries;  ///< Dict (insertion order)

  // Declared here, defined below the struct: a member defined inside (the implicit ones too) would
  // instantiate std::pair<std::string, PyObj> while PyObj is still incomplete (clang rejects it).
  PyObj();
  PyObj(const PyObj&);
  PyObj(PyObj&&) noexcept;
  PyObj& operator=(const PyObj&);
  PyObj& operator=(PyObj&&) noexcept;
  ~PyObj();
  static PyObj none();
  static PyObj integer(int64_t v);
  static PyObj str(std::string v);
  static PyObj tensor(Tensor v);
  static PyObj tuple(std::vector<PyObj> v);
  static PyObj list(std::vector<PyObj> v);
  static PyObj dict(std::vector<std::pair<std::string, PyObj>> v);
};

inline PyObj::PyObj() = default;
inline PyObj::PyObj(const PyObj&) = default;
inline PyObj::PyObj(PyObj&&) noexcept = default;
inline PyObj& PyObj::operator=(const PyObj&) = default;
inline PyObj& PyObj::operator=(PyObj&&) noexcept = default;
inline PyObj::~PyObj() = default;
inline PyObj PyObj::none() { return {}; }
inline PyObj PyObj::integer(int64_t v) {
  PyObj o;
  o.kind = Kind::Int;
  o.i = v;
  return o;
}
inline PyObj PyObj::str(std::string v) {
  PyObj o;
  o.kind = Kind::Str;
  o.s = std::move(v);
  return o;
}
inline PyObj PyObj::tensor(Tensor v) {
  PyObj o;
  o.kind = Kind::Tensor;
  o.t = std::move(v);
  return o;
}
inline PyObj PyObj::tuple(std::vector<PyObj> v) {
  PyObj o;
  o.kind = Kind::Tuple;
  o.items = std::move(v);
  return o;
}
inline PyObj PyObj::list(std::vector<PyObj> v) {
  PyObj o;
  o.kind = Kind::List;
  o.items = std::move(v);
  return o;
}
inline PyObj PyObj::dict(std::vector<std::pair<std::string, PyObj>> v) {
  PyObj o;
  o.kind = Kind::Dict;
  o.entries = std::move(v);
  return o;
}

/// The bytes of `torch.save(obj)` (zip format, pickle protocol 2).
std::string torch_save(const PyObj& obj);

/// Reads back what torch_save wrote (the same subset of pickle): for tests and the interpreter.
PyObj torch_load(const std::string& bytes);

}  // namespace hfx::dynamo
