#include "hfx/ir/attrs.h"

#include <fmt/format.h>
#include <algorithm>

namespace hfx {

std::string attr_to_string(const AttrValue& v) {
  struct V {
    std::string operator()(int64_t x) const { return std::to_string(x); }
    std::string operator()(double x) const { return fmt::format("{}", x); }
    std::string operator()(bool x) const { return x ? "true" : "false"; }
    std::string operator()(const std::string& x) const { return "'" + x + "'"; }
    std::string operator()(const std::vector<int64_t>& x) const {
      return fmt::format("[{}]", fmt::join(x, ", "));
    }
    std::string operator()(const std::vector<double>& x) const {
      return fmt::format("[{}]", fmt::join(x, ", "));
    }
    std::string operator()(DType x) const { return dtype_name(x); }
    std::string operator()(const Sym& x) const { return x.str(); }
    std::string operator()(const std::vector<Sym>& x) const { return shape_str(x); }
  };
  return std::visit(V{}, v);
}

bool attr_equal(const AttrValue& a, const AttrValue& b) {
  if (a.index() != b.index()) return false;
  if (auto* s = std::get_if<Sym>(&a)) return s->same(std::get<Sym>(b));
  if (auto* s = std::get_if<std::vector<Sym>>(&a)) {
    const auto& t = std::get<std::vector<Sym>>(b);
    if (s->size() != t.size()) return false;
    for (size_t i = 0; i < s->size(); i++)
      if (!(*s)[i].same(t[i])) return false;
    return true;
  }
  return attr_to_string(a) == attr_to_string(b);  // shortest round-trip printing: exact
}

Attrs::Attrs(std::initializer_list<std::pair<std::string, AttrValue>> init) {
  for (const auto& [k, v] : init) set(k, v);
}

Attrs& Attrs::set(const std::string& name, AttrValue v) {
  auto it = std::lower_bound(items_.begin(), items_.end(), name,
                             [](const auto& p, const std::string& n) { return p.first < n; });
  if (it != items_.end() && it->first == name) {
    it->second = std::move(v);
  } else {
    items_.insert(it, {name, std::move(v)});
  }
  return *this;
}

bool Attrs::has(const std::string& name) const {
  for (const auto& p : items_)
    if (p.first == name) return true;
  return false;
}

const AttrValue& Attrs::at(const std::string& name) const {
  for (const auto& p : items_)
    if (p.first == name) return p.second;
  HFX_THROW("attrs", "expected attribute '{}', got only {}", name, str());
}

Sym Attrs::sym(const std::string& n) const {
  const AttrValue& v = at(n);
  if (auto* p = std::get_if<Sym>(&v)) return *p;
  if (auto* p = std::get_if<int64_t>(&v)) return Sym(*p);
  HFX_THROW("attrs", "expected symbolic int attribute '{}', got {}", n, attr_to_string(v));
}

std::vector<Sym> Attrs::syms(const std::string& n) const {
  const AttrValue& v = at(n);
  if (auto* p = std::get_if<std::vector<Sym>>(&v)) return *p;
  if (auto* p = std::get_if<std::vector<int64_t>>(&v)) return std::vector<Sym>(p->begin(), p->end());
  HFX_THROW("attrs", "expected symbolic int list attribute '{}', got {}", n, attr_to_string(v));
}

std::string Attrs::str() const {
  std::string s = "{";
  for (size_t i = 0; i < items_.size(); i++)
    s += (i ? ", " : "") + items_[i].first + "=" + attr_to_string(items_[i].second);
  return s + "}";
}

bool Attrs::operator==(const Attrs& o) const {
  if (items_.size() != o.items_.size()) return false;
  for (size_t i = 0; i < items_.size(); i++)
    if (items_[i].first != o.items_[i].first || !attr_equal(items_[i].second, o.items_[i].second))
      return false;
  return true;
}

}  // namespace hfx
