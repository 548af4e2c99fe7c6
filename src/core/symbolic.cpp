// Symbolic integers. Simplification keeps sums in a canonical linear form (coefficient × base terms,
// sorted by text, constant last) so that structurally equal expressions print identically; this is
// what lets shape inference prove `s0 + 1 - 1 == s0` and lets export name a dim by its text.
#include "hfx/core/symbolic.h"

#include <fmt/format.h>
#include <algorithm>
#include <string_view>

#include "hfx/core/error.h"

namespace hfx {

struct Sym::Node {
  Kind kind;
  int64_t value = 0;
  std::string name;
  std::vector<Sym> args;
  std::string text;  // canonical text, computed once
};

namespace {

constexpr int64_t kInf = SymRange::kInf;

int64_t py_floordiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) q--;
  return q;
}
int64_t py_mod(int64_t a, int64_t b) { return a - py_floordiv(a, b) * b; }

// Guard places end up in artifacts (ONNX metadata, .pt2 assertion messages), so they must not depend on
// where hfx was built: std::source_location holds whatever path the compiler was given (absolute with
// CMake, "../src/..." through ccache's base dir). Keep the path from the last "src/", "include/",
// "tools/" or "tests/" folder on, i.e. relative to the source root; a caller outside such a tree keeps
// only its file name.
std::string source_relative(std::string_view file) {
  size_t from = std::string_view::npos;  // start of the last root folder component
  for (size_t start = 0; start < file.size();) {
    size_t end = std::min(file.find('/', start), file.size());
    std::string_view part = file.substr(start, end - start);
    if (end < file.size() && (part == "src" || part == "include" || part == "tools" || part == "tests"))
      from = start;
    start = end + 1;
  }
  if (from != std::string_view::npos) return std::string(file.substr(from));
  size_t slash = file.rfind('/');
  return std::string(slash == std::string_view::npos ? file : file.substr(slash + 1));
}

std::string place(const std::source_location& loc) {
  return fmt::format("{}:{}", source_relative(loc.file_name()), loc.line());
}

std::string make_text(Sym::Kind k, int64_t v, const std::string& name, const std::vector<Sym>& args) {
  switch (k) {
    case Sym::Kind::Const:
      return std::to_string(v);
    case Sym::Kind::Symbol:
      return name;
    case Sym::Kind::Add: {
      std::string s;
      for (size_t i = 0; i < args.size(); i++) {
        std::string t = args[i].str();
        if (i == 0) {
          s = t;
        } else if (!t.empty() && t[0] == '-') {
          s += " - " + t.substr(1);
        } else {
          s += " + " + t;
        }
      }
      return s;
    }
    case Sym::Kind::Mul: {
      std::string s;
      for (size_t i = 0; i < args.size(); i++) {
        std::string t = args[i].str();
        if (args[i].kind() == Sym::Kind::Add) t = "(" + t + ")";
        if (i == 0 && args[i].is_const() && args[i].value() == -1) {
          s = "-";
          continue;
        }
        if (!s.empty() && s != "-") s += "*";
        s += t;
      }
      return s;
    }
    case Sym::Kind::FloorDiv:
      return fmt::format("floordiv({}, {})", args[0].str(), args[1].str());
    case Sym::Kind::Mod:
      return fmt::format("mod({}, {})", args[0].str(), args[1].str());
    case Sym::Kind::Min:
      return fmt::format("min({}, {})", args[0].str(), args[1].str());
    case Sym::Kind::Max:
      return fmt::format("max({}, {})", args[0].str(), args[1].str());
  }
  return "?";
}

Sym make(Sym::Kind k, int64_t v, std::string name, std::vector<Sym> args) {
  auto n = std::make_shared<Sym::Node>();
  n->kind = k;
  n->value = v;
  n->name = std::move(name);
  n->args = std::move(args);
  n->text = make_text(k, n->value, n->name, n->args);
  return Sym(std::shared_ptr<const Sym::Node>(std::move(n)));
}

// Splits a term into (coefficient, base). A base of Const(1) means the term is a constant.
std::pair<int64_t, Sym> split_coef(const Sym& t) {
  if (t.is_const()) return {t.value(), Sym(int64_t{1})};
  if (t.kind() == Sym::Kind::Mul && t.args()[0].is_const()) {
    const auto& a = t.args();
    if (a.size() == 2) return {a[0].value(), a[1]};
    return {a[0].value(), make(Sym::Kind::Mul, 0, "", std::vector<Sym>(a.begin() + 1, a.end()))};
  }
  return {1, t};
}

Sym scale(int64_t c, const Sym& base) {
  if (c == 0) return Sym(int64_t{0});
  if (base.is_const()) return Sym(c * base.value());
  if (c == 1) return base;
  std::vector<Sym> f{Sym(c)};
  if (base.kind() == Sym::Kind::Mul) {
    for (const auto& x : base.args()) f.push_back(x);
  } else {
    f.push_back(base);
  }
  return make(Sym::Kind::Mul, 0, "", std::move(f));
}

Sym build_sum(const std::vector<Sym>& terms) {
  std::map<std::string, std::pair<int64_t, Sym>> acc;
  int64_t constant = 0;
  auto add_term = [&](const Sym& t, auto& self) -> void {
    if (t.kind() == Sym::Kind::Add) {
      for (const auto& x : t.args()) self(x, self);
      return;
    }
    auto [c, b] = split_coef(t);
    if (b.is_const()) {
      constant += c * b.value();
      return;
    }
    auto it = acc.find(b.str());
    if (it == acc.end()) {
      acc.emplace(b.str(), std::make_pair(c, b));
    } else {
      it->second.first += c;
    }
  };
  for (const auto& t : terms) add_term(t, add_term);
  std::vector<Sym> out;
  for (auto& [k, cb] : acc)
    if (cb.first != 0) out.push_back(scale(cb.first, cb.second));
  if (constant != 0 || out.empty()) out.push_back(Sym(constant));
  if (out.size() == 1) return out[0];
  return make(Sym::Kind::Add, 0, "", std::move(out));
}

// True when every coefficient of the linear form (and its constant) is divisible by c.
bool divisible(const Sym& e, int64_t c) {
  if (e.is_const()) return e.value() % c == 0;
  if (e.kind() == Sym::Kind::Add) {
    for (const auto& t : e.args())
      if (!divisible(t, c)) return false;
    return true;
  }
  return split_coef(e).first % c == 0;
}
Sym divide_exact(const Sym& e, int64_t c) {
  if (e.is_const()) return Sym(e.value() / c);
  if (e.kind() == Sym::Kind::Add) {
    std::vector<Sym> t;
    for (const auto& x : e.args()) t.push_back(divide_exact(x, c));
    return build_sum(t);
  }
  auto [k, b] = split_coef(e);
  return scale(k / c, b);
}

int64_t sat_add(int64_t a, int64_t b) {
  if (a >= kInf || b >= kInf) return kInf;
  if (a <= -kInf || b <= -kInf) return -kInf;
  return std::clamp<int64_t>(a + b, -kInf, kInf);
}
int64_t sat_mul(int64_t a, int64_t b) {
  if (a == 0 || b == 0) return 0;
  __int128 r = static_cast<__int128>(a) * b;
  if (r >= kInf) return kInf;
  if (r <= -kInf) return -kInf;
  return static_cast<int64_t>(r);
}

}  // namespace

Sym::Sym(int64_t v) : n_(make(Kind::Const, v, "", {}).n_) {}
Sym Sym::symbol(const std::string& name) { return make(Kind::Symbol, 0, name, {}); }
Sym::Kind Sym::kind() const { return n_->kind; }
int64_t Sym::value() const {
  if (!is_const()) HFX_THROW("symbolic", "expected a constant, got symbolic expression '{}'", str());
  return n_->value;
}
std::optional<int64_t> Sym::maybe_value() const {
  if (is_const()) return n_->value;
  return std::nullopt;
}
const std::string& Sym::name() const { return n_->name; }
const std::vector<Sym>& Sym::args() const { return n_->args; }
std::string Sym::str() const { return n_->text; }

std::vector<std::string> Sym::free_symbols() const {
  std::vector<std::string> out;
  auto walk = [&](const Sym& s, auto& self) -> void {
    if (s.kind() == Kind::Symbol) out.push_back(s.name());
    for (const auto& a : s.args()) self(a, self);
  };
  walk(*this, walk);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

int64_t Sym::eval(const std::map<std::string, int64_t>& b) const {
  switch (kind()) {
    case Kind::Const:
      return n_->value;
    case Kind::Symbol: {
      auto it = b.find(n_->name);
      if (it == b.end())
        HFX_THROW("symbolic", "expected a value for symbol '{}', got none in the binding", n_->name);
      return it->second;
    }
    case Kind::Add: {
      int64_t s = 0;
      for (const auto& a : args()) s += a.eval(b);
      return s;
    }
    case Kind::Mul: {
      int64_t s = 1;
      for (const auto& a : args()) s *= a.eval(b);
      return s;
    }
    case Kind::FloorDiv: {
      int64_t d = args()[1].eval(b);
      if (d == 0) HFX_THROW("symbolic", "expected a non-zero divisor in '{}', got 0", str());
      return py_floordiv(args()[0].eval(b), d);
    }
    case Kind::Mod: {
      int64_t d = args()[1].eval(b);
      if (d == 0) HFX_THROW("symbolic", "expected a non-zero divisor in '{}', got 0", str());
      return py_mod(args()[0].eval(b), d);
    }
    case Kind::Min:
      return std::min(args()[0].eval(b), args()[1].eval(b));
    case Kind::Max:
      return std::max(args()[0].eval(b), args()[1].eval(b));
  }
  return 0;
}

Sym Sym::subs(const std::map<std::string, Sym>& m) const {
  switch (kind()) {
    case Kind::Const:
      return *this;
    case Kind::Symbol: {
      auto it = m.find(n_->name);
      return it == m.end() ? *this : it->second;
    }
    case Kind::Add: {
      std::vector<Sym> t;
      for (const auto& a : args()) t.push_back(a.subs(m));
      return build_sum(t);
    }
    case Kind::Mul: {
      Sym r(int64_t{1});
      for (const auto& a : args()) r = r * a.subs(m);
      return r;
    }
    case Kind::FloorDiv:
      return floordiv(args()[0].subs(m), args()[1].subs(m));
    case Kind::Mod:
      return mod(args()[0].subs(m), args()[1].subs(m));
    case Kind::Min:
      return sym_min(args()[0].subs(m), args()[1].subs(m));
    case Kind::Max:
      return sym_max(args()[0].subs(m), args()[1].subs(m));
  }
  return *this;
}

Sym operator+(const Sym& a, const Sym& b) {
  if (a.is_const() && b.is_const()) return Sym(a.value() + b.value());
  return build_sum({a, b});
}
Sym operator-(const Sym& a) { return Sym(int64_t{-1}) * a; }
Sym operator-(const Sym& a, const Sym& b) { return a + (-b); }

Sym operator*(const Sym& a, const Sym& b) {
  if (a.is_const() && b.is_const()) return Sym(a.value() * b.value());
  if (a.is_const() || b.is_const()) {
    const Sym& c = a.is_const() ? a : b;
    const Sym& x = a.is_const() ? b : a;
    int64_t k = c.value();
    if (k == 0) return Sym(int64_t{0});
    if (k == 1) return x;
    if (x.kind() == Sym::Kind::Add) {  // distribute constants over sums: keeps the linear form
      std::vector<Sym> scaled;
      for (const auto& y : x.args()) {
        auto [cy, by] = split_coef(y);
        scaled.push_back(scale(k * cy, by));
      }
      return build_sum(scaled);
    }
    auto [cx, bx] = split_coef(x);
    return scale(k * cx, bx);
  }
  auto [ca, ba] = split_coef(a);
  auto [cb, bb] = split_coef(b);
  std::vector<Sym> f;
  auto push = [&](const Sym& s) {
    if (s.kind() == Sym::Kind::Mul) {
      for (const auto& x : s.args()) f.push_back(x);
    } else {
      f.push_back(s);
    }
  };
  push(ba);
  push(bb);
  std::sort(f.begin(), f.end(), [](const Sym& x, const Sym& y) { return x.str() < y.str(); });
  Sym prod = make(Sym::Kind::Mul, 0, "", std::move(f));
  return scale(ca * cb, prod);
}

Sym floordiv(const Sym& a, const Sym& b) {
  if (b.is_const()) {
    int64_t d = b.value();
    if (d == 0) HFX_THROW("symbolic", "expected a non-zero divisor for floordiv({}, 0), got 0", a.str());
    if (a.is_const()) return Sym(py_floordiv(a.value(), d));
    if (d == 1) return a;
    if (d > 0 && divisible(a, d)) return divide_exact(a, d);
  }
  if (a.same(b)) return Sym(int64_t{1});
  return make(Sym::Kind::FloorDiv, 0, "", {a, b});
}

Sym mod(const Sym& a, const Sym& b) {
  if (b.is_const()) {
    int64_t d = b.value();
    if (d == 0) HFX_THROW("symbolic", "expected a non-zero divisor for mod({}, 0), got 0", a.str());
    if (a.is_const()) return Sym(py_mod(a.value(), d));
    if (d == 1 || (d > 0 && divisible(a, d))) return Sym(int64_t{0});
  }
  if (a.same(b)) return Sym(int64_t{0});
  return make(Sym::Kind::Mod, 0, "", {a, b});
}

Sym sym_min(const Sym& a, const Sym& b) {
  if (a.is_const() && b.is_const()) return Sym(std::min(a.value(), b.value()));
  if (a.same(b)) return a;
  Sym d = a - b;
  if (d.is_const()) return d.value() <= 0 ? a : b;
  return a.str() < b.str() ? make(Sym::Kind::Min, 0, "", {a, b}) : make(Sym::Kind::Min, 0, "", {b, a});
}
Sym sym_max(const Sym& a, const Sym& b) {
  if (a.is_const() && b.is_const()) return Sym(std::max(a.value(), b.value()));
  if (a.same(b)) return a;
  Sym d = a - b;
  if (d.is_const()) return d.value() >= 0 ? a : b;
  return a.str() < b.str() ? make(Sym::Kind::Max, 0, "", {a, b}) : make(Sym::Kind::Max, 0, "", {b, a});
}

std::string shape_str(const SymShape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); i++) r += (i ? ", " : "") + s[i].str();
  return r + "]";
}

// ---- ShapeEnv ----

Sym ShapeEnv::create_symbol(const std::string& name, int64_t min, int64_t max, int64_t hint) {
  if (min > max) HFX_THROW("symbolic", "expected min <= max for symbol '{}', got [{}, {}]", name, min, max);
  auto it = ranges_.find(name);
  if (it != ranges_.end() && (it->second.min != min || it->second.max != max))
    HFX_THROW("symbolic", "expected symbol '{}' to keep its range [{}, {}], got [{}, {}]", name,
              it->second.min, it->second.max, min, max);
  if (hint < min || hint > max)
    HFX_THROW("symbolic", "expected the sample value of '{}' inside [{}, {}], got {}", name, min, max, hint);
  ranges_[name] = SymRange{min, max};
  hints_[name] = hint;
  return Sym::symbol(name);
}

SymRange ShapeEnv::range_of(const std::string& name) const {
  auto it = ranges_.find(name);
  if (it == ranges_.end()) HFX_THROW("symbolic", "expected a known symbol, got '{}'", name);
  return it->second;
}
int64_t ShapeEnv::hint_of(const std::string& name) const {
  auto it = hints_.find(name);
  if (it == hints_.end()) HFX_THROW("symbolic", "expected a known symbol, got '{}'", name);
  return it->second;
}
void ShapeEnv::set_range(const std::string& name, SymRange r) { ranges_[name] = r; }

SymRange ShapeEnv::bounds(const Sym& e) const {
  switch (e.kind()) {
    case Sym::Kind::Const:
      return {e.value(), e.value()};
    case Sym::Kind::Symbol: {
      auto it = ranges_.find(e.name());
      if (it == ranges_.end()) return {-kInf, kInf};
      return it->second;
    }
    case Sym::Kind::Add: {
      SymRange r{0, 0};
      for (const auto& a : e.args()) {
        SymRange x = bounds(a);
        r.min = sat_add(r.min, x.min);
        r.max = sat_add(r.max, x.max);
      }
      return r;
    }
    case Sym::Kind::Mul: {
      SymRange r{1, 1};
      for (const auto& a : e.args()) {
        SymRange x = bounds(a);
        int64_t c[4] = {sat_mul(r.min, x.min), sat_mul(r.min, x.max), sat_mul(r.max, x.min),
                        sat_mul(r.max, x.max)};
        r.min = *std::min_element(c, c + 4);
        r.max = *std::max_element(c, c + 4);
      }
      return r;
    }
    case Sym::Kind::FloorDiv: {
      SymRange a = bounds(e.args()[0]);
      SymRange b = bounds(e.args()[1]);
      if (b.min > 0 && b.min == b.max) {
        int64_t lo = a.min <= -kInf ? -kInf : py_floordiv(a.min, b.min);
        int64_t hi = a.max >= kInf ? kInf : py_floordiv(a.max, b.min);
        return {lo, hi};
      }
      return {-kInf, kInf};
    }
    case Sym::Kind::Mod: {
      SymRange a = bounds(e.args()[0]);
      SymRange b = bounds(e.args()[1]);
      if (b.min > 0) {
        if (a.min >= 0 && a.max < b.min) return a;
        return {0, b.max - 1};
      }
      return {-kInf, kInf};
    }
    case Sym::Kind::Min: {
      SymRange a = bounds(e.args()[0]), b = bounds(e.args()[1]);
      return {std::min(a.min, b.min), std::min(a.max, b.max)};
    }
    case Sym::Kind::Max: {
      SymRange a = bounds(e.args()[0]), b = bounds(e.args()[1]);
      return {std::max(a.min, b.min), std::max(a.max, b.max)};
    }
  }
  return {-kInf, kInf};
}

int64_t ShapeEnv::hint(const Sym& e) const { return e.eval(hints_); }

bool ShapeEnv::decide(const Sym& diff, int64_t lower, std::source_location loc, const std::string& what) {
  SymRange r = bounds(diff);
  if (r.min >= lower) return true;
  if (r.max < lower) return false;
  bool result = hint(diff) >= lower;
  std::string where = place(loc);
  if (result) {
    guards_.push_back(Guard{diff, lower, kInf, where, what});
  } else {
    guards_.push_back(Guard{diff, -kInf, lower - 1, where, "not (" + what + ")"});
  }
  return result;
}

bool ShapeEnv::ge(const Sym& e, const Sym& v, std::source_location loc) {
  return decide(e - v, 0, loc, e.str() + " >= " + v.str());
}
bool ShapeEnv::gt(const Sym& e, const Sym& v, std::source_location loc) {
  return decide(e - v, 1, loc, e.str() + " > " + v.str());
}
bool ShapeEnv::le(const Sym& e, const Sym& v, std::source_location loc) {
  return decide(v - e, 0, loc, e.str() + " <= " + v.str());
}
bool ShapeEnv::lt(const Sym& e, const Sym& v, std::source_location loc) {
  return decide(v - e, 1, loc, e.str() + " < " + v.str());
}
bool ShapeEnv::eq(const Sym& e, const Sym& v, std::source_location loc) {
  Sym d = e - v;
  SymRange r = bounds(d);
  if (r.min == 0 && r.max == 0) return true;
  if (r.min > 0 || r.max < 0) return false;
  std::string where = place(loc);
  int64_t h = hint(d);
  if (h == 0) {
    guards_.push_back(Guard{d, 0, 0, where, e.str() + " == " + v.str()});
    return true;
  }
  guards_.push_back(Guard{d, h > 0 ? 1 : -kInf, h > 0 ? kInf : -1, where, e.str() + " != " + v.str()});
  return false;
}

int64_t ShapeEnv::specialize(const Sym& e, std::source_location loc) {
  if (e.is_const()) return e.value();
  int64_t h = hint(e);
  SymRange r = bounds(e);
  if (r.min == r.max) return r.min;
  guards_.push_back(Guard{e, h, h, place(loc), fmt::format("{} specialized to {}", e.str(), h)});
  return h;
}

Sym ShapeEnv::min(const Sym& a, const Sym& b) const {
  SymRange d = bounds(a - b);
  if (d.max <= 0) return a;
  if (d.min >= 0) return b;
  return sym_min(a, b);
}
Sym ShapeEnv::max(const Sym& a, const Sym& b) const {
  SymRange d = bounds(a - b);
  if (d.min >= 0) return a;
  if (d.max <= 0) return b;
  return sym_max(a, b);
}

}  // namespace hfx
