// hfx/ir/attrs.h — typed op attributes: an op's state.
//
// Attributes are a sorted list of (name, value). They are the whole state of an op call besides its
// inputs: equality, hashing, printing and every serializer derive from them (MLX's `state()`).
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "hfx/core/dtype.h"
#include "hfx/core/error.h"
#include "hfx/core/symbolic.h"

namespace hfx {

using AttrValue = std::variant<int64_t, double, bool, std::string, std::vector<int64_t>, std::vector<double>,
                               DType, Sym, std::vector<Sym>>;

/// Printable form of one attribute value ("3", "1e-06", "true", "'tanh'", "[0, 2, 1]", "float32", "s0 + 1").
std::string attr_to_string(const AttrValue& v);
bool attr_equal(const AttrValue& a, const AttrValue& b);

class Attrs {
 public:
  Attrs() = default;
  Attrs(std::initializer_list<std::pair<std::string, AttrValue>> init);

  Attrs& set(const std::string& name, AttrValue v);
  bool has(const std::string& name) const;
  const AttrValue& at(const std::string& name) const;

  template <typename T>
  const T& get(const std::string& name) const {
    const AttrValue& v = at(name);
    if (auto* p = std::get_if<T>(&v)) return *p;
    HFX_THROW("attrs", "expected attribute '{}' of another type, got {}", name, attr_to_string(v));
  }
  int64_t i(const std::string& n) const { return get<int64_t>(n); }
  double f(const std::string& n) const { return get<double>(n); }
  bool b(const std::string& n) const { return get<bool>(n); }
  const std::string& s(const std::string& n) const { return get<std::string>(n); }
  const std::vector<int64_t>& ints(const std::string& n) const { return get<std::vector<int64_t>>(n); }
  DType dtype(const std::string& n) const { return get<DType>(n); }
  /// Symbolic integer (an int64 attribute is accepted and widened).
  Sym sym(const std::string& n) const;
  /// Symbolic list (an int list is accepted and widened).
  std::vector<Sym> syms(const std::string& n) const;

  const std::vector<std::pair<std::string, AttrValue>>& items() const { return items_; }
  std::string str() const;
  bool operator==(const Attrs& o) const;

 private:
  std::vector<std::pair<std::string, AttrValue>> items_;  // sorted by name
};

}  // namespace hfx
