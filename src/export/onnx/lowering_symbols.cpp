// Symbolic sizes in the ONNX graph (LoweringContext::sym and its helpers): each symbol is read from the graph
// input axis that defines it (or solved from a linear input dim such as attention_mask's past + sequence)
// with Shape(start, end), and an expression is rebuilt from integer ops, cached per canonical text so that a
// size used by twenty nodes is computed once.
#include "export/onnx/lowering.h"

#include <algorithm>

#include <fmt/format.h>

#include "hfx/core/error.h"

namespace hfx::onnx_export {

bool LoweringContext::sym_available(const Sym& e) const {
  for (const auto& s : e.free_symbols()) {
    if (origins_.count(s)) continue;
    auto d = derived_.find(s);
    if (d == derived_.end() || !sym_available(d->second)) return false;
  }
  return true;
}

std::string LoweringContext::sym(const Sym& e) {
  if (e.is_const()) return i64s({e.value()});
  auto it = sym_cache_.find(e.str());
  if (it != sym_cache_.end()) return it->second;
  std::string nm = sym_node(e);
  sym_cache_[e.str()] = nm;
  return nm;
}

std::string LoweringContext::sym_node(const Sym& e) {
  const std::string label = "sym(" + e.str() + ")";
  auto emit1 = [&](const std::string& op_type, const std::vector<std::string>& ins) {
    std::string o = unique(label);
    auto& p = emit(op_type, ins, {o});
    p.set_name(unique("node:" + label));
    return std::make_pair(o, &p);
  };
  switch (e.kind()) {
    case Sym::Kind::Const:
      return i64s({e.value()});
    case Sym::Kind::Symbol: {
      auto o = origins_.find(e.name());
      if (o != origins_.end()) {
        auto [nm, p] = emit1("Shape", {o->second.input});
        attr(*p, "start", static_cast<int64_t>(o->second.axis));
        attr(*p, "end", static_cast<int64_t>(o->second.axis + 1));
        return nm;
      }
      auto d = derived_.find(e.name());
      if (d != derived_.end()) return sym(d->second);
      std::string known;
      for (const auto& [k, v] : origins_)
        if (k.rfind("__", 0) != 0) known += (known.empty() ? "" : ", ") + k;
      HFX_THROW("onnx",
                "expected symbol '{}' to be defined by an axis of a graph input (known: [{}]), got none; a "
                "size that "
                "no input carries cannot be computed at run time",
                e.name(), known);
    }
    case Sym::Kind::Add: {
      const auto& a = e.args();
      std::string acc = sym(a[0]);
      for (size_t i = 1; i < a.size(); i++) {
        const Sym& t = a[i];
        bool neg = (t.is_const() && t.value() < 0) ||
                   (t.kind() == Sym::Kind::Mul && t.args()[0].is_const() && t.args()[0].value() < 0);
        if (neg)
          acc = emit1("Sub", {acc, sym(-t)}).first;
        else
          acc = emit1("Add", {acc, sym(t)}).first;
      }
      return acc;
    }
    case Sym::Kind::Mul: {
      const auto& a = e.args();
      std::string acc = sym(a[0]);
      for (size_t i = 1; i < a.size(); i++) acc = emit1("Mul", {acc, sym(a[i])}).first;
      return acc;
    }
    case Sym::Kind::FloorDiv: {
      const Sym &a = e.args()[0], &b = e.args()[1];
      std::string sa = sym(a), sb = sym(b);
      // ONNX integer Div truncates; it equals floor division when both sides are non-negative.
      if (g_.env().bounds(a).min >= 0 && g_.env().bounds(b).min > 0) return emit1("Div", {sa, sb}).first;
      auto [m, pm] = emit1("Mod", {sa, sb});
      attr(*pm, "fmod", int64_t{0});
      std::string d = emit1("Sub", {sa, m}).first;
      return emit1("Div", {d, sb}).first;
    }
    case Sym::Kind::Mod: {
      auto [m, pm] = emit1("Mod", {sym(e.args()[0]), sym(e.args()[1])});
      attr(*pm, "fmod", int64_t{0});
      return m;
    }
    case Sym::Kind::Min:
      return emit1("Min", {sym(e.args()[0]), sym(e.args()[1])}).first;
    case Sym::Kind::Max:
      return emit1("Max", {sym(e.args()[0]), sym(e.args()[1])}).first;
  }
  HFX_THROW("onnx", "expected a known symbolic expression kind, got '{}'", e.str());
}

std::string LoweringContext::sym_scalar(const Sym& e) {
  if (e.is_const()) return i64(e.value());
  auto it = sym_scalar_cache_.find(e.str());
  if (it != sym_scalar_cache_.end()) return it->second;
  std::string o = unique("sym(" + e.str() + ")/scalar");
  emit("Squeeze", {sym(e), i64s({0})}, {o});
  sym_scalar_cache_[e.str()] = o;
  return o;
}

std::string LoweringContext::syms(const std::vector<Sym>& es) {
  bool all_const = true;
  for (const auto& s : es) all_const = all_const && s.is_const();
  if (all_const) {
    std::vector<int64_t> v;
    for (const auto& s : es) v.push_back(s.value());
    return i64s(v);
  }
  std::string key = "[";
  for (const auto& s : es) key += s.str() + ", ";
  key += "]";
  auto it = sym_cache_.find(key);
  if (it != sym_cache_.end()) return it->second;
  // Runs of constants go in one initializer.
  std::vector<std::string> parts;
  std::vector<int64_t> run;
  for (const auto& s : es) {
    if (s.is_const()) {
      run.push_back(s.value());
      continue;
    }
    if (!run.empty()) parts.push_back(i64s(run)), run.clear();
    parts.push_back(sym(s));
  }
  if (!run.empty()) parts.push_back(i64s(run));
  std::string o = unique("shape" + key);
  auto& p = emit("Concat", parts, {o});
  attr(p, "axis", int64_t{0});
  sym_cache_[key] = o;
  return o;
}

}  // namespace hfx::onnx_export
