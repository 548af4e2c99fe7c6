// Symbolic shapes: simplification, evaluation, range reasoning and guards.
#include <gtest/gtest.h>

#include "hfx/core/error.h"
#include "hfx/core/symbolic.h"

using namespace hfx;

TEST(Symbolic, ConstantsFold) {
  Sym a(3), b(4);
  EXPECT_EQ((a + b).value(), 7);
  EXPECT_EQ((a * b - Sym(2)).value(), 10);
  EXPECT_EQ(floordiv(Sym(-7), Sym(2)).value(), -4);  // Python floor semantics
  EXPECT_EQ(mod(Sym(-7), Sym(2)).value(), 1);
  EXPECT_EQ(sym_min(a, b).value(), 3);
  EXPECT_EQ(sym_max(a, b).value(), 4);
}

TEST(Symbolic, LinearFormsCollectLikeTerms) {
  Sym s = Sym::symbol("s"), t = Sym::symbol("t");
  EXPECT_TRUE((s + Sym(1) - Sym(1)).same(s));
  EXPECT_EQ((s + s + t).str(), "2*s + t");
  EXPECT_TRUE((s - s).is_const());
  EXPECT_EQ((s - s).value(), 0);
  EXPECT_EQ((Sym(3) * (s + Sym(2))).str(), "3*s + 6");
  EXPECT_TRUE((t + s).same(s + t));  // canonical order
  EXPECT_EQ((s * t).str(), (t * s).str());
}

TEST(Symbolic, ExactDivisionAndMod) {
  Sym s = Sym::symbol("s");
  EXPECT_TRUE(floordiv(Sym(4) * s + Sym(8), Sym(4)).same(s + Sym(2)));
  EXPECT_EQ(mod(Sym(6) * s, Sym(3)).value(), 0);
  EXPECT_EQ(floordiv(s, Sym(2)).str(), "floordiv(s, 2)");
  EXPECT_TRUE(floordiv(s, s).is_const());
  EXPECT_THROW(floordiv(s, Sym(0)), Error);
}

TEST(Symbolic, EvalAndSubs) {
  Sym s = Sym::symbol("s"), t = Sym::symbol("t");
  Sym e = floordiv(s * t + Sym(3), Sym(2)) + sym_max(s, t);
  EXPECT_EQ(e.eval({{"s", 5}, {"t", 7}}), (5 * 7 + 3) / 2 + 7);
  EXPECT_THROW(e.eval({{"s", 5}}), Error);
  Sym f = e.subs({{"t", Sym(1)}});
  EXPECT_EQ(f.eval({{"s", 5}}), (5 + 3) / 2 + 5);
  EXPECT_EQ(e.free_symbols(), (std::vector<std::string>{"s", "t"}));
}

TEST(Symbolic, RangesDecideWithoutGuards) {
  ShapeEnv env;
  Sym s = env.create_symbol("s", 1, 512, 8);
  Sym p = env.create_symbol("p", 0, 512, 4);
  EXPECT_TRUE(env.ge(s, Sym(1)));
  EXPECT_TRUE(env.gt(s + p, Sym(0)));
  EXPECT_FALSE(env.gt(s, Sym(1000)));
  EXPECT_TRUE(env.guards().empty());
  EXPECT_TRUE(env.min(s, Sym(1000)).same(s));
  EXPECT_EQ(env.bounds(s * Sym(2) + p).max, 1536);
  EXPECT_EQ(env.bounds(floordiv(s, Sym(2))).min, 0);
}

TEST(Symbolic, UndecidableQuestionsRecordGuards) {
  ShapeEnv env;
  Sym s = env.create_symbol("s", 1, 4096, 100);
  EXPECT_FALSE(env.gt(s, Sym(2048)));  // answered from the hint
  ASSERT_EQ(env.guards().size(), 1u);
  const Guard& g = env.guards()[0];
  // The place is relative to the source root, whatever path the compiler was given (no build paths in
  // artifacts): "tests/core/symbolic_test.cpp:LINE".
  EXPECT_EQ(g.where.rfind("tests/core/symbolic_test.cpp:", 0), 0u) << g.where;
  EXPECT_NE(g.what.find("s > 2048"), std::string::npos);
  // the guard says s - 2048 <= 0
  EXPECT_EQ(g.upper, 0);
  EXPECT_EQ(env.specialize(s), 100);
  ASSERT_EQ(env.guards().size(), 2u);
  EXPECT_EQ(env.guards()[1].lower, 100);
  EXPECT_EQ(env.guards()[1].upper, 100);
}

TEST(Symbolic, SymbolRangesAreChecked) {
  ShapeEnv env;
  EXPECT_THROW(env.create_symbol("s", 5, 1, 3), Error);
  EXPECT_THROW(env.create_symbol("s", 1, 8, 9), Error);
  env.create_symbol("s", 1, 8, 4);
  EXPECT_THROW(env.create_symbol("s", 1, 9, 4), Error);
  EXPECT_NO_THROW(env.create_symbol("s", 1, 8, 4));
}
