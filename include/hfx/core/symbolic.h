// hfx/core/symbolic.h — symbolic integers for dynamic shapes.
//
// A `Sym` is an immutable integer expression over named symbols: constants, symbols, +, ×, floordiv,
// mod, min and max (− is + with a −1 coefficient). Expressions are simplified as they are built
// (constant folding, collection of like terms, exact division of linear forms, min/max decided by
// ranges). A `ShapeEnv` owns the symbols with their integer ranges [min, max] and a hint (the sample
// value). When code asks a question that the ranges cannot answer (`env.ge(s, 128)`), the env answers
// from the hints and records a *guard* — the condition under which the answer holds, with the place
// in the code that asked. Export turns guards into runtime asserts (deferred) or into errors.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <source_location>
#include <string>
#include <vector>

namespace hfx {

class ShapeEnv;

/// Inclusive integer range. `kInf` stands for "no upper bound".
struct SymRange {
  static constexpr int64_t kInf = INT64_MAX / 4;
  int64_t min = 0;
  int64_t max = kInf;
  bool bounded() const { return max < kInf; }
};

/// An immutable symbolic integer expression (cheap to copy: shared node).
class Sym {
 public:
  enum class Kind : uint8_t { Const, Symbol, Add, Mul, FloorDiv, Mod, Min, Max };

  Sym() : Sym(int64_t{0}) {}
  Sym(int64_t v);                               // NOLINT: implicit from integers, as in torch's SymInt
  Sym(int v) : Sym(static_cast<int64_t>(v)) {}  // NOLINT
  static Sym symbol(const std::string& name);

  Kind kind() const;
  bool is_const() const { return kind() == Kind::Const; }
  /// The constant value; throws hfx::Error if the expression is symbolic.
  int64_t value() const;
  std::optional<int64_t> maybe_value() const;
  /// Symbol name (Kind::Symbol only).
  const std::string& name() const;
  /// Operands for compound kinds. For Add: terms (constant last, if any); for Mul: factors.
  const std::vector<Sym>& args() const;
  /// The names of all symbols in the expression, sorted.
  std::vector<std::string> free_symbols() const;

  /// Canonical text: "s0", "2*s0 + 1", "floordiv(s0, 2)", "min(s0, 4096)".
  std::string str() const;
  /// Structural equality of canonical forms.
  bool same(const Sym& o) const { return str() == o.str(); }

  /// Evaluates under a binding of every free symbol; throws if one is missing.
  int64_t eval(const std::map<std::string, int64_t>& binding) const;
  /// Replaces symbols by expressions.
  Sym subs(const std::map<std::string, Sym>& m) const;

  friend Sym operator+(const Sym& a, const Sym& b);
  friend Sym operator-(const Sym& a, const Sym& b);
  friend Sym operator*(const Sym& a, const Sym& b);
  friend Sym operator-(const Sym& a);
  friend Sym floordiv(const Sym& a, const Sym& b);
  friend Sym mod(const Sym& a, const Sym& b);
  /// min/max without ranges (folds constants and identical operands only). Use ShapeEnv::min/max
  /// to decide with ranges.
  friend Sym sym_min(const Sym& a, const Sym& b);
  friend Sym sym_max(const Sym& a, const Sym& b);

  struct Node;
  explicit Sym(std::shared_ptr<const Node> n) : n_(std::move(n)) {}
  const Node& node() const { return *n_; }

 private:
  std::shared_ptr<const Node> n_;
};

using SymShape = std::vector<Sym>;
std::string shape_str(const SymShape& s);

/// A condition recorded when a question about symbols was answered from hints rather than ranges.
struct Guard {
  Sym expr;           ///< The guarded quantity.
  int64_t lower;      ///< expr >= lower must hold (use lower = upper for equality).
  int64_t upper;      ///< expr <= upper must hold.
  std::string where;  ///< file:line of the code that asked, relative to the source root (no build path).
  std::string what;   ///< the question, e.g. "s1 > 4096".
};

/// Symbols with ranges and hints, and the guards recorded while code ran on them.
class ShapeEnv {
 public:
  /// Creates (or returns, if it exists with the same range) a symbol with range and sample hint.
  Sym create_symbol(const std::string& name, int64_t min, int64_t max, int64_t hint);
  bool has_symbol(const std::string& name) const { return ranges_.count(name) != 0; }
  SymRange range_of(const std::string& name) const;
  int64_t hint_of(const std::string& name) const;
  void set_range(const std::string& name, SymRange r);
  const std::map<std::string, SymRange>& ranges() const { return ranges_; }
  const std::map<std::string, int64_t>& hints() const { return hints_; }

  /// Interval bounds of an expression under the symbol ranges (sound, maybe loose).
  SymRange bounds(const Sym& e) const;
  /// Value under the hints.
  int64_t hint(const Sym& e) const;

  /// e >= v ? Decided by ranges when possible; otherwise answered from hints and guarded.
  bool ge(const Sym& e, const Sym& v, std::source_location loc = std::source_location::current());
  bool gt(const Sym& e, const Sym& v, std::source_location loc = std::source_location::current());
  bool le(const Sym& e, const Sym& v, std::source_location loc = std::source_location::current());
  bool lt(const Sym& e, const Sym& v, std::source_location loc = std::source_location::current());
  bool eq(const Sym& e, const Sym& v, std::source_location loc = std::source_location::current());
  /// Specializes e to its hint value, recording an equality guard (what `int(sym)` does in torch).
  int64_t specialize(const Sym& e, std::source_location loc = std::source_location::current());

  /// min/max decided by ranges when possible, else left symbolic.
  Sym min(const Sym& a, const Sym& b) const;
  Sym max(const Sym& a, const Sym& b) const;

  const std::vector<Guard>& guards() const { return guards_; }
  void clear_guards() { guards_.clear(); }

 private:
  bool decide(const Sym& diff, int64_t lower, std::source_location loc, const std::string& what);
  std::map<std::string, SymRange> ranges_;
  std::map<std::string, int64_t> hints_;
  std::vector<Guard> guards_;
};

}  // namespace hfx
