// Guards in the .pte: a deferred runtime assert of the capture (a question the symbol ranges could not
// answer, e.g. gpt2's past + sequence <= n_positions) becomes a check instruction ahead of the model's
// (aten::full.out into a tensor bounded by the guard; ExecuTorch's resize refuses a size outside it, as
// it refuses any input beyond its bound), named by its stacktrace frame. The independent reader runs a
// call inside the guard and refuses one outside it with the guard's text; the ExecuTorch exporter caps
// the static cache at the model's max positions.
#include <algorithm>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "export/executorch/executorch_exporter.h"
#include "export/executorch/pte_writer.h"
#include "hfx/core/error.h"
#include "hfx/ops/functional.h"
#include "models/model_test_util.h"
#include "verify/pte_reader.h"

namespace hfx {
namespace {

// y = x + 1 over x [S, 4], S in [1, 64], with the guard S <= 40 recorded as a model's code would.
struct Guarded {
  std::shared_ptr<Graph> g;
  std::vector<Guard> guards;
};
Guarded guarded_graph(bool upper_only) {
  Guarded r;
  r.g = std::make_shared<Graph>();
  TraceBuilder tb(*r.g);
  Sym S = r.g->env().create_symbol("s", 1, 64, 8);
  Var x = tb.input("x", TensorType{DType::F32, {S, Sym(4)}});
  EXPECT_TRUE(r.g->env().le(S, Sym(40)));  // undecidable by [1, 64]: answered by the hint, guarded
  if (!upper_only) {
    EXPECT_TRUE(r.g->env().ge(S, Sym(3)));
  }
  r.g->add_output("y", F::add(x, 1.0).value());
  r.guards = r.g->env().guards();
  return r;
}

TEST(PteGuards, CallInsideRunsAndCallOutsideIsRefusedNamingTheGuard) {
  Guarded p = guarded_graph(false);
  ASSERT_EQ(p.guards.size(), 2u);
  et::PteMethodSpec m{"forward", p.g.get(), {}, p.guards};
  et::PteWriteResult r = et::write_pte({m}, {});
  EXPECT_TRUE(r.warnings.empty());
  auto pte = verify::PteProgram::load_bytes(r.bytes);
  auto ops = pte->operator_names("forward");
  EXPECT_NE(std::find(ops.begin(), ops.end(), "aten::full.out"), ops.end())
      << "the checks are portable kernel calls";
  auto& fwd = pte->method("forward");
  for (int64_t s : {3, 40}) {
    auto out = fwd.run({Tensor::full({s, 4}, 1.0)});
    EXPECT_EQ(std::get<Tensor>(out[0]).item({s - 1, 3}), 2.0) << s;
  }
  for (int64_t s : {41, 64, 2}) {
    try {
      fwd.run({Tensor::full({s, 4}, 1.0)});
      FAIL() << "expected S=" << s << " to be refused";
    } catch (const Error& e) {
      const std::string w = e.what();
      EXPECT_NE(w.find("expected a call inside the contract of method 'forward'"), std::string::npos) << w;
      EXPECT_NE(w.find(s > 40 ? "s <= 40" : "s >= 3"), std::string::npos) << w;
      EXPECT_NE(w.find("pte_guards_test.cpp"), std::string::npos)
          << "the frame names the code that asked: " << w;
    }
  }
  // Beyond the input's own bound (64) the input is refused before any instruction.
  try {
    fwd.run({Tensor::full({65, 4}, 1.0)});
    FAIL() << "expected S=65 to be refused";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("within its dynamic bound"), std::string::npos) << e.what();
  }
}

// A graph y = x + 1 over x [s, 4] with s in [min, 64] and no guard.
std::shared_ptr<Graph> unguarded_graph(int64_t min) {
  auto g = std::make_shared<Graph>();
  TraceBuilder tb(*g);
  Sym S = g->env().create_symbol("s", min, 64, 8);
  Var x = tb.input("x", TensorType{DType::F32, {S, Sym(4)}});
  g->add_output("y", F::add(x, 1.0).value());
  return g;
}

TEST(PteGuards, WithoutGuardsTheProgramHasNoCheck) {
  auto g = unguarded_graph(0);  // [0, 64]: ExecuTorch's bounded resize is the whole contract
  et::PteMethodSpec m{"forward", g.get(), {}, {}};
  et::PteWriteResult r = et::write_pte({m}, {});
  auto out = verify::PteProgram::load_bytes(r.bytes)->method("forward").run({Tensor::full({50, 4}, 1.0)});
  EXPECT_EQ(std::get<Tensor>(out[0]).item({49, 0}), 2.0) << "no guard given: S = 50 runs";
  EXPECT_EQ(r.operators, std::vector<std::string>{"aten::add.Scalar_out"});
}

// ExecuTorch's resize takes any size down to 0: a symbol whose range starts above 0 gets a check of its
// own, so an empty input is refused (found by tests/interop/test_conformance.py's min - 1 probes).
TEST(PteGuards, AMinimumAboveZeroIsChecked) {
  auto g = unguarded_graph(1);
  et::PteMethodSpec m{"forward", g.get(), {}, {}};
  et::PteWriteResult r = et::write_pte({m}, {});
  EXPECT_NE(std::find(r.operators.begin(), r.operators.end(), "aten::full.out"), r.operators.end());
  auto pte = verify::PteProgram::load_bytes(r.bytes);
  EXPECT_EQ(std::get<Tensor>(pte->method("forward").run({Tensor::full({1, 4}, 1.0)})[0]).item({0, 0}), 2.0);
  EXPECT_THROW(pte->method("forward").run({Tensor::full({0, 4}, 1.0)}), Error) << "an empty x ran";
}

TEST(PteGuards, StaticCacheIsCappedAtMaxPositions) {
  auto model = test::tiny_in_memory("gpt2", 0, {{"n_positions", 48}});
  ExecutorchConfig cfg;
  cfg.max_seq_len = 100000;
  et::ExecutorchProgram p = et::build_executorch_program(*model, cfg, CaptureOptions{});
  const int64_t npos = model->config().max_position_embeddings;
  ASSERT_EQ(npos, 48);
  bool warned = false;
  for (const auto& w : p.warnings)
    warned |= w.find(fmt::format("capped at max_position_embeddings {}", npos)) != std::string::npos;
  EXPECT_TRUE(warned);
  auto pte = verify::PteProgram::load_bytes(p.pte.bytes);
  EXPECT_EQ(std::get<int64_t>(pte->method("get_max_seq_len").run({}).at(0)), npos);
  EXPECT_EQ(pte->method("forward").input_bound(0).back(), npos);
}

}  // namespace
}  // namespace hfx
