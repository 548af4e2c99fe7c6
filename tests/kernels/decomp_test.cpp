// Each composite op's fused kernel against its reference decomposition run through EagerBuilder (the
// same primitive kernels a decomposed export would use), and the decompositions traced with symbolic
// S and T (the causal mask comes from arange over symbolic sizes).
#include <memory>

#include <fmt/format.h>

#include "hfx/core/error.h"
#include "hfx/ir/graph.h"
#include "hfx/ops/builder.h"
#include "hfx/ops/functional.h"
#include "hfx/ops/op_schema.h"
#include "kernels/kernel_ref.h"
#include "ops/decompositions.h"

namespace {
using namespace kt;

// Fused and decomposed both compute in f32 from the same stored inputs, but round intermediates at
// different points (scale folded into sgemm vs a separate multiply; softmax normalization; rsqrt then
// multiply): a few f32 ulp of O(1) values, so 1e-5 absolute + 1e-5 relative for f32. f16/bf16
// outputs round once at the end: results can land one storage ulp apart (2·eps relative).
double rtol_for(DType dt) { return dt == DType::F32 ? 1e-5 : 2 * dtype_eps(dt) + 1e-5; }

void compare(EagerBuilder& b, const std::string& op, const std::vector<Var>& in, const Attrs& attrs,
             const std::string& what) {
  const OpSchema& s = op_schema(op);
  ASSERT_TRUE(s.composite()) << op;
  Attrs norm = normalize_attrs(s, attrs);
  Var fused = b.call(op, in, attrs).at(0);
  Var dec = s.decompose(b, in, norm).at(0);
  const Tensor& f = fused.tensor();
  const Tensor& d = dec.tensor();
  ASSERT_EQ(f.dtype(), d.dtype()) << what;
  expect_close(d, f.shape(), f.dtype(), vals(f), rtol_for(f.dtype()), 1e-5, what);
}

TEST(KernelsDecomp, RmsNormFusedMatchesDecomposition) {
  EagerBuilder b;
  uint32_t seed = 1;
  for (DType dt : {DType::F32, DType::F16, DType::BF16})
    for (double off : {0.0, 1.0})
      for (const Shape& s : std::vector<Shape>{{2, 5, 64}, {1, 1}, {3, 1000}}) {
        Var x = b.wrap(rand_t(s, dt, seed++, -3, 3)), w = b.wrap(rand_t({s.back()}, dt, seed++));
        compare(b, "hfx.rms_norm", {x, w}, {{"eps", 1e-5}, {"weight_offset", off}},
                std::string("rms_norm ") + dtype_name(dt) + " " + shape_to_string(s));
      }
}

TEST(KernelsDecomp, RopeFusedMatchesDecomposition) {
  EagerBuilder b;
  uint32_t seed = 50;
  for (DType dt : {DType::F32, DType::F16, DType::BF16})
    for (bool inter : {false, true})
      for (auto [B, H, S, D, R] :
           std::vector<std::array<int64_t, 5>>{{2, 3, 5, 16, 16}, {1, 2, 4, 32, 16}, {1, 1, 1, 8, 4}}) {
        Var x = b.wrap(rand_t({B, H, S, D}, dt, seed++));
        Var c = b.wrap(rand_t({B, S, R}, dt, seed++, -1, 1)),
            s = b.wrap(rand_t({B, S, R}, dt, seed++, -1, 1));
        compare(b, "hfx.rope", {x, c, s}, {{"interleaved", inter}},
                std::string("rope ") + dtype_name(dt) + (inter ? " interleaved" : " half") + " R " +
                    std::to_string(R));
      }
}

// The sparse kernel (experts on their routed rows only) against the dense form, for both weight layouts
// (stacked gate|up, interleaved, per expert), every activation, top-1/top-k/all experts, with and
// without renormalization, on [B, S, H] and flat [T, H] inputs.
TEST(KernelsDecomp, MoeSparseKernelMatchesDenseDecomposition) {
  EagerBuilder b;
  uint32_t seed = 300;
  const int64_t E = 4, H = 16, I = 8;
  for (const char* act : {"silu", "relu", "gelu", "gelu_tanh"})
    for (int64_t k : {int64_t{1}, int64_t{2}, E})
      for (bool norm : {false, true})
        for (int layout = 0; layout < 3; layout++) {
          Shape xs = layout == 1 ? Shape{7, H} : Shape{2, 5, H}, ls = xs;
          ls.back() = E;
          std::vector<Var> in{b.wrap(rand_t(xs, DType::F32, seed++)), b.wrap(rand_t(ls, DType::F32, seed++))};
          if (layout < 2) {
            in.push_back(b.wrap(rand_t({E, 2 * I, H}, DType::F32, seed++, -0.5f, 0.5f)));
            in.push_back(b.wrap(rand_t({E, H, I}, DType::F32, seed++, -0.5f, 0.5f)));
          } else {
            for (int64_t e = 0; e < E; e++) {
              in.push_back(b.wrap(rand_t({I, H}, DType::F32, seed++, -0.5f, 0.5f)));
              in.push_back(b.wrap(rand_t({I, H}, DType::F32, seed++, -0.5f, 0.5f)));
              in.push_back(b.wrap(rand_t({H, I}, DType::F32, seed++, -0.5f, 0.5f)));
            }
          }
          compare(
              b, "hfx.moe", in,
              {{"top_k", k}, {"normalize", norm}, {"act", std::string(act)}, {"interleaved", layout == 1}},
              fmt::format("moe {} k {} norm {} layout {}", act, k, norm, layout));
        }
}

TEST(KernelsDecomp, MoeRejectsMisShapedExperts) {
  EagerBuilder b;
  Var x = b.wrap(rand_t({1, 3, 16}, DType::F32, 1)), l = b.wrap(rand_t({1, 3, 4}, DType::F32, 2));
  Var gu = b.wrap(rand_t({4, 16, 16}, DType::F32, 3)), down_bad = b.wrap(rand_t({4, 16, 7}, DType::F32, 4));
  EXPECT_THROW(F::moe(x, l, {gu, down_bad}, 2, true), hfx::Error);  // down [E, H, I] with I 7 != 16/2
  EXPECT_THROW(F::moe(x, l, {gu, b.wrap(rand_t({4, 16, 8}, DType::F32, 5))}, 5, true),
               hfx::Error);                               // top_k > E
  EXPECT_THROW(F::moe(x, l, {gu}, 2, true), hfx::Error);  // too few inputs
  EXPECT_NO_THROW(F::moe(x, l, {gu, b.wrap(rand_t({4, 16, 8}, DType::F32, 6))}, 2, true));
}

TEST(KernelsDecomp, SdpaFusedMatchesDecomposition) {
  EagerBuilder b;
  struct C {
    int64_t B, Hq, Hkv, S, T, D;
    bool causal;
    int64_t window;
    double softcap;
    int mask;
  };
  const std::vector<C> cases = {
      {2, 4, 2, 7, 7, 16, true, 0, 0.0, 0}, {1, 8, 2, 1, 40, 16, true, 0, 0.0, 1},
      {1, 4, 4, 5, 12, 8, true, 3, 0.0, 0}, {1, 4, 1, 6, 6, 8, true, 0, 30.0, 1},
      {2, 2, 2, 4, 9, 8, false, 0, 0.0, 2}, {1, 2, 1, 5, 3, 8, true, 0, 0.0, 0},  // S > T: zero rows
  };
  uint32_t seed = 100;
  for (const auto& c : cases)
    for (DType dt : {DType::F32, DType::F16, DType::BF16}) {
      Var q = b.wrap(rand_t({c.B, c.Hq, c.S, c.D}, dt, seed++)),
          k = b.wrap(rand_t({c.B, c.Hkv, c.T, c.D}, dt, seed++)),
          v = b.wrap(rand_t({c.B, c.Hkv, c.T, c.D}, dt, seed++));
      std::vector<Var> in = {q, k, v};
      if (c.mask == 1) in.push_back(b.wrap(rand_t({c.B, 1, c.S, c.T}, DType::F32, seed++, -2, 0)));
      if (c.mask == 2) in.push_back(b.wrap(randint_t({c.S, c.T}, DType::Bool, seed++, 0, 1)));
      Attrs a{{"scale", 1.0 / std::sqrt(static_cast<double>(c.D))},
              {"causal", c.causal},
              {"window", c.window},
              {"softcap", c.softcap}};
      compare(b, "hfx.sdpa", in, a,
              "sdpa S " + std::to_string(c.S) + " T " + std::to_string(c.T) + " " + dtype_name(dt));
    }
}

TEST(KernelsDecomp, DecompositionsTraceWithSymbolicSizes) {
  Graph g(std::make_shared<ShapeEnv>());
  Sym S = g.env().create_symbol("s", 1, 4096, 7);
  Sym T = g.env().create_symbol("t", 1, 8192, 19);
  TraceBuilder tb(g);
  Var q = tb.input("q", TensorType{DType::BF16, {Sym(1), Sym(8), S, Sym(16)}});
  Var k = tb.input("k", TensorType{DType::BF16, {Sym(1), Sym(2), T, Sym(16)}});
  Var v = tb.input("v", TensorType{DType::BF16, {Sym(1), Sym(2), T, Sym(16)}});
  Var cs = tb.input("cos", TensorType{DType::BF16, {Sym(1), S, Sym(8)}});
  Var sn = tb.input("sin", TensorType{DType::BF16, {Sym(1), S, Sym(8)}});
  Var w = tb.input("w", TensorType{DType::BF16, {Sym(16)}});
  Attrs sa = normalize_attrs(op_schema("hfx.sdpa"), {{"scale", 0.25}, {"window", int64_t{4}}});
  Var o = hfx::decomp::sdpa(tb, {q, k, v}, sa).at(0);
  EXPECT_EQ(o.dtype(), DType::BF16);
  EXPECT_EQ(shape_str(o.shape()), shape_str({Sym(1), Sym(8), S, Sym(16)}));
  for (bool inter : {false, true}) {
    Var r = hfx::decomp::rope(tb, {q, cs, sn}, {{"interleaved", inter}}).at(0);
    EXPECT_EQ(shape_str(r.shape()), shape_str(q.shape()));
  }
  Var n = hfx::decomp::rms_norm(tb, {q, w}, normalize_attrs(op_schema("hfx.rms_norm"), {})).at(0);
  EXPECT_EQ(shape_str(n.shape()), shape_str(q.shape()));
  g.add_output("o", o.value());
  g.add_output("n", n.value());
  EXPECT_NO_THROW(verify_graph(g)) << g.dump();
  // the graph uses arange over the symbolic sizes, not constants
  bool saw_arange = false;
  for (const auto& node : g.nodes())
    if (node->op == "aten.arange.start") saw_arange = true;
  EXPECT_TRUE(saw_arange);
}

}  // namespace
