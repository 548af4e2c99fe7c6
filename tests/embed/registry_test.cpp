// Registry behaviour: patches are active only during their scope and restored after an exception;
// fixes apply at their stage only; the export-skip list refuses with its reason.
#include <gtest/gtest.h>

#include <cstdlib>

#include "hfx/core/error.h"
#include "hfx/export/exporter.h"
#include "hfx/export/registry.h"
#include "hfx/ops/functional.h"
#include "hfx/ops/op_schema.h"
#include "hfx/passes/pass.h"

using namespace hfx;

namespace {
// Appends an entry for the test's duration.
template <typename Vec>
struct Temp {
  Vec& v;
  size_t n;
  Temp(Vec& vec, typename Vec::value_type e) : v(vec), n(vec.size()) { v.push_back(std::move(e)); }
  ~Temp() { v.resize(n); }
};

int count_op(const Graph& g, const std::string& op) {
  int c = 0;
  for (const auto& n : g.nodes()) c += n->op == op;
  return c;
}
}  // namespace

TEST(Registry, PatchIsActiveOnlyInsideItsScopeAndRestoredAfterThrow) {
  // Replace aten.exp by exp(x) * 1 ... observable as an extra mul node while the patch is active.
  Temp t(patch_registry(),
         PatchEntry{"test",
                    1,
                    {"aten.exp"},
                    [](const OpHandler*, ExportContext&) {
                      return OpHandler([](Builder& b, const std::vector<Var>& in, const Attrs& a) {
                        Var e = b.call("aten.exp", in, a).at(0);  // the original (no recursion)
                        return std::vector<Var>{F::mul(e, 1.0)};
                      });
                    },
                    "test patch"});
  ExportContext ctx;
  auto trace = [](PatchTable* patches) {
    Graph g;
    TraceBuilder tb(g, patches);
    Var x = tb.input("x", TensorType{DType::F32, {Sym(2)}});
    g.add_output("y", F::exp(x).value());
    return std::make_pair(count_op(g, "aten.exp"), count_op(g, "aten.mul.Scalar"));
  };
  EXPECT_EQ(trace(&ctx.patches), std::make_pair(1, 0));
  {
    PatchScope scope(ctx, "test", 1);
    EXPECT_EQ(scope.installed(), 1);
    EXPECT_EQ(trace(&ctx.patches), std::make_pair(1, 1));
    // Per export: a trace over another export's table (or none) does not see this scope's patch.
    ExportContext other;
    EXPECT_EQ(trace(&other.patches), std::make_pair(1, 0));
    EXPECT_EQ(trace(nullptr), std::make_pair(1, 0));
  }
  EXPECT_EQ(trace(&ctx.patches), std::make_pair(1, 0));
  EXPECT_EQ(ctx.patches.size(), 0u);
  try {
    PatchScope scope(ctx, "test", 1);
    throw Error("test", "boom");
  } catch (const Error&) {
  }
  EXPECT_EQ(ctx.patches.size(), 0u);
  EXPECT_EQ(trace(&ctx.patches), std::make_pair(1, 0));
  // A scope for another stage installs nothing.
  PatchScope other(ctx, "test", 2);
  EXPECT_EQ(other.installed(), 0);
}

// A factory that throws after earlier patches of the same scope were installed: the scope undoes
// them, its members are destroyed once (the old constructor ran its own destructor and then the
// members' destructors again: a double free that the asan preset reports), and the table is back to
// what it was, including a patch installed by an enclosing scope.
TEST(Registry, PatchScopeUndoesItsPatchesWhenAFactoryThrows) {
  auto mul_by = [](double k) {
    return [k](const OpHandler*, ExportContext&) {
      return OpHandler([k](Builder& b, const std::vector<Var>& in, const Attrs& a) {
        return std::vector<Var>{F::mul(b.call("aten.exp", in, a).at(0), k)};
      });
    };
  };
  Temp outer(patch_registry(), PatchEntry{"test", 1, {"aten.exp"}, mul_by(2.0), "outer"});
  Temp first(patch_registry(),
             PatchEntry{"test", 2, {"aten.exp", "aten.neg"}, mul_by(3.0), "installed, then undone"});
  Temp thrower(patch_registry(), PatchEntry{"test",
                                            2,
                                            {"aten.tanh"},
                                            [](const OpHandler*, ExportContext&) -> OpHandler {
                                              HFX_THROW("test",
                                                        "expected a factory that works, got one that throws");
                                            },
                                            "throws"});
  ExportContext ctx;
  PatchScope outer_scope(ctx, "test", 1);
  const OpHandler* before = ctx.patches.active("aten.exp");
  ASSERT_NE(before, nullptr);
  for (int attempt = 0; attempt < 3; attempt++) {
    try {
      PatchScope scope(ctx, "test", 2);
      ADD_FAILURE() << "expected the throwing factory to abort the scope";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("got one that throws"), std::string::npos) << e.what();
    }
    EXPECT_EQ(ctx.patches.size(), 1u);
    EXPECT_EQ(ctx.patches.active("aten.exp"), before);
    EXPECT_EQ(ctx.patches.active("aten.neg"), nullptr);
    EXPECT_EQ(ctx.patches.active("aten.tanh"), nullptr);
  }
}

TEST(Registry, NodeFixAppliesAtItsStageOnly) {
  Temp t(node_fix_registry(),
         NodeFixEntry{"test", 3, "neg_to_mul",
                      [](Graph& g, Node& n) {
                        if (n.op != "aten.neg") return false;
                        Node* m = add_node(g, "aten.mul.Scalar", n.inputs, Attrs{{"other", -1.0}}, n.name);
                        g.move_before(m, &n);
                        g.replace_all_uses(n.outputs[0], m->outputs[0]);
                        return true;
                      },
                      "test fix"});
  Graph g;
  TraceBuilder tb(g);
  Var x = tb.input("x", TensorType{DType::F32, {Sym(2)}});
  g.add_output("y", F::neg(x).value());
  EXPECT_EQ(apply_node_fixes("test", 2, g), 0);
  EXPECT_EQ(count_op(g, "aten.neg"), 1);
  EXPECT_EQ(apply_node_fixes("test", 3, g), 1);
  EXPECT_EQ(count_op(g, "aten.neg"), 0);
  EXPECT_EQ(count_op(g, "aten.mul.Scalar"), 1);
  verify_graph(g);
}

namespace {
// HFX_VERIFY_PASSES=1 for the scope (the verifier after each pass, fix and stage), restored after.
struct VerifierOn {
  const char* was = std::getenv("HFX_VERIFY_PASSES");
  std::string saved = was ? was : "";
  VerifierOn() { setenv("HFX_VERIFY_PASSES", "1", 1); }
  ~VerifierOn() { was ? setenv("HFX_VERIFY_PASSES", saved.c_str(), 1) : unsetenv("HFX_VERIFY_PASSES"); }
};
}  // namespace

// A node fix that declares the ops it removes (NodeFixEntry::ops) is held to it when the verifier runs
// (Debug builds; HFX_VERIFY_PASSES=1, as CI's release suite sets and this test does): a neg it leaves
// behind is an error naming it.
TEST(Registry, NodeFixContractOnItsOpsIsChecked) {
  VerifierOn on;
  ASSERT_TRUE(verify_passes_enabled());
  NodeFixEntry broken{"test", 3, "neg_kept", [](Graph&, Node&) { return false; }, "test fix"};
  broken.ops = {"aten.neg"};
  Temp t(node_fix_registry(), broken);
  Graph g;
  TraceBuilder tb(g);
  Var x = tb.input("x", TensorType{DType::F32, {Sym(2)}});
  g.add_output("y", F::neg(x).value());
  try {
    apply_node_fixes("test", 3, g);
    ADD_FAILURE() << "expected the contract check to refuse";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("expected no aten.neg after node fix 'neg_kept'"), std::string::npos)
        << e.what();
  }
}

// Each backend is a declared list of named stages whose numbers are their positions; the driver's step
// (run_stage) looks a stage up by name and verifies the graph after it, naming the stage that broke it.
TEST(Registry, RunStageNumbersStagesByPositionAndNamesTheStageThatBrokeTheGraph) {
  int position = 0;
  std::string last;
  for (const StageDecl& d : declared_stages()) {
    position = d.backend == last ? position + 1 : 1;
    last = d.backend;
    EXPECT_EQ(d.stage, position) << d.backend << " " << d.name;
    EXPECT_EQ(stage_of(d.backend, d.name), d.stage);
  }
  EXPECT_EQ(stage_of("onnx", "fx_fixes"), 3);  // the seeds' "stage 3: FX node fixes"
  try {
    stage_of("onnx", "fx_fixs");
    ADD_FAILURE() << "expected an unknown stage to be refused";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "expected a declared stage of onnx (torch_patches, onnx_patches, fx_fixes"),
              std::string::npos)
        << e.what();
  }
  VerifierOn on;
  Graph g;
  TraceBuilder tb(g);
  Var x = tb.input("x", TensorType{DType::F32, {Sym(2)}});
  g.add_output("y", F::neg(x).value());
  int ran = 0;
  // Negative control: a stage that keeps the graph valid passes, and its number is handed to its body.
  EXPECT_EQ(run_stage("onnx", "fx_fixes", &g, [&](int stage) { ran = stage; }), 3);
  EXPECT_EQ(ran, 3);
  // A stage that leaves a node typed unlike its op's inference: the error names the backend, stage and name.
  auto breaks = [&](int) { g.nodes().front()->outputs[0]->type.dtype = DType::I64; };
  try {
    run_stage("onnx", "fx_fixes", &g, breaks);
    ADD_FAILURE() << "expected the verifier to refuse the broken graph";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("expected a valid graph after onnx stage 3 'fx_fixes'"),
              std::string::npos)
        << e.what();
  }
  // A stage that does not rewrite the hfx graph (null) is not verified.
  EXPECT_NO_THROW(run_stage("onnx", "translations", nullptr, [](int) {}));
}

TEST(Registry, ExportSkipRefusesWithItsReason) {
  Temp t(export_skip_registry(),
         ExportSkipEntry{"onnx", "test-arch", "needs a vectorized router in the model"});
  EXPECT_NO_THROW(check_export_skip("onnx", "llama"));
  try {
    check_export_skip("onnx", "test-arch");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("needs a vectorized router"), std::string::npos);
  }
  EXPECT_NO_THROW(check_export_skip("dynamo", "test-arch"));
}

TEST(Registry, ListingNamesStageAndReason) {
  Temp t(disable_optimize_registry(), DisableOptimizeEntry{"test", "arch-x", "upstream#123"});
  std::string why;
  EXPECT_TRUE(optimize_disabled("test", "arch-x", &why));
  EXPECT_EQ(why, "upstream#123");
  auto lines = registry_listing("test");
  ASSERT_FALSE(lines.empty());
  bool found = false;
  for (const auto& l : lines) found |= l.kind == "disable_optimize" && l.reason == "upstream#123";
  EXPECT_TRUE(found);
  for (const auto& e : patch_registry()) EXPECT_FALSE(e.reason.empty()) << e.paths.at(0);
  for (const auto& e : node_fix_registry()) EXPECT_FALSE(e.reason.empty()) << e.name;
  for (const auto& e : program_fix_registry()) EXPECT_FALSE(e.reason.empty()) << e.name;
  for (const auto& e : disable_optimize_registry()) EXPECT_FALSE(e.upstream_bug.empty()) << e.model_type;
  for (const auto& e : export_skip_registry()) EXPECT_FALSE(e.reason.empty()) << e.model_type;
}

TEST(ExportConfig, RoundTripsThroughJson) {
  OnnxConfig c;
  c.opset = 23;
  c.external_data = true;
  c.target = "ort";
  c.dynamic_shapes["input_ids"][1] = Dim{"seq", 1, 512};
  OnnxConfig d;
  d.from_json(c.to_json());
  EXPECT_EQ(d.to_json(), c.to_json());
  EXPECT_EQ(d.dynamic_shapes["input_ids"][1].max, 512);
  nlohmann::json bad = c.to_json();
  bad["opset"] = 30;
  EXPECT_THROW(d.from_json(bad), Error);
  bad = c.to_json();
  bad["opsett"] = 18;
  EXPECT_THROW(d.from_json(bad), Error);
  ExecutorchConfig e;
  e.max_seq_len = 77;
  ExecutorchConfig f;
  f.from_json(e.to_json());
  EXPECT_EQ(f.backend, "portable");
  EXPECT_EQ(f.max_seq_len, 77);
  e.backend = "cuda";  // hfx writes no CUDA delegate: refused, not silently portable
  EXPECT_THROW(f.from_json(e.to_json()), Error);
  EXPECT_THROW(config_from_json(nlohmann::json{{"format", "tflite"}}), Error);
}

// --dtype: one field of every config, round-tripping; "auto" resolved per backend in one place.
TEST(ExportConfig, DtypeRoundTripsAndAutoIsWhatEachRuntimeComputesIn) {
  for (const std::string format : {"onnx", "executorch", "dynamo"}) {
    auto c = make_config(format);
    EXPECT_EQ(c->dtype, "auto");
    for (const char* d : kExportDtypes) {
      c->dtype = d;
      auto back = config_from_json(c->to_json());
      EXPECT_EQ(back->dtype, d) << format;
      EXPECT_EQ(back->to_json(), c->to_json()) << format;
    }
    c->dtype = "f16";
    EXPECT_EQ(c->weight_dtype(DType::BF16), DType::F16) << format;
    EXPECT_EQ(c->precision(DType::F32)["key"], "f16");
    EXPECT_EQ(c->precision(DType::F16)["key"], "exact");  // the checkpoint's own values
    nlohmann::json bad = c->to_json();
    bad["dtype"] = "float16";
    try {
      config_from_json(bad);
      ADD_FAILURE() << "dtype float16 accepted for " << format;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("expected dtype among [auto, f32, f16, bf16], got 'float16'"),
                std::string::npos)
          << e.what();
    }
  }
  EXPECT_EQ(OnnxConfig().weight_dtype(DType::BF16), DType::F32);        // ONNX Runtime CPU computes in f32
  EXPECT_EQ(ExecutorchConfig().weight_dtype(DType::BF16), DType::F32);  // portable kernels: f32
  EXPECT_EQ(DynamoConfig().weight_dtype(DType::BF16), DType::BF16);     // PyTorch runs the checkpoint's dtype
  nlohmann::json p = OnnxConfig().precision(DType::BF16);
  EXPECT_EQ(
      p, (nlohmann::json{{"dtype", "f32"}, {"requested", "auto"}, {"checkpoint", "bf16"}, {"key", "exact"}}));
}

// The registries are checked against the declared stages when they are filled (the real entries pass);
// an entry on a backend, stage or kind no exporter runs, a patch path that is no op, or an entry without a
// reason fails check_registries() with an error naming it; an exporter that applies an undeclared stage of
// a declared backend fails at that call.
TEST(Registry, EntriesAndStagesAreCheckedAgainstTheDeclaredStages) {
  EXPECT_NO_THROW(check_registries());
  auto fails = [](const char* want) {
    try {
      check_registries();
      ADD_FAILURE() << "expected check_registries to fail with '" << want << "'";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
    }
  };
  auto identity = [](const OpHandler*, ExportContext&) { return OpHandler(); };
  {
    Temp t(patch_registry(), PatchEntry{"onx", 1, {"aten.exp"}, identity, "a typo in the backend"});
    fails("got backend 'onx' stage 1");
  }
  {
    Temp t(patch_registry(), PatchEntry{"executorch", 4, {"aten.exp"}, identity, "stage 4 runs no patches"});
    fails(
        "expected patch entry 'aten.exp' on a patch stage of executorch (2, 3), got backend 'executorch' "
        "stage 4");
  }
  {
    Temp t(patch_registry(), PatchEntry{"onnx", 1, {"aten.expp"}, identity, "a typo in the op"});
    fails("got 'aten.expp'");
  }
  {
    Temp t(node_fix_registry(),
           NodeFixEntry{"dynamo", 3, "late_fix", [](Graph&, Node&) { return false; }, "x"});
    fails("expected node_fix entry 'late_fix' on a node_fix stage of dynamo (2)");
  }
  {
    Temp t(program_fix_registry(),
           ProgramFixEntry{"onnx", 3, "no_reason",
                           [](Graph&, ExportContext&, std::vector<std::string>&) { return false; }, ""});
    fails("expected a reason for program_fix entry 'no_reason'");
  }
  {
    // A fact no stage of the backend sets before the fix, and no earlier fix writes: the GQA record is the
    // ONNX backend's; an ExecuTorch fix reading it would read an empty record, silently.
    Temp t(program_fix_registry(),
           ProgramFixEntry{"executorch",
                           4,
                           "reads_gqa",
                           [](Graph&, ExportContext&, std::vector<std::string>&) { return false; },
                           "x",
                           {Fact::gqa_fusion}});
    fails(
        "expected program fix 'reads_gqa' (executorch stage 4) to read facts set before it, got "
        "'gqa_fusion'");
  }
  {
    Temp t(export_skip_registry(), ExportSkipEntry{"tensorrt", "llama", "not a backend"});
    fails("got backend 'tensorrt'");
  }
  EXPECT_NO_THROW(check_registries());  // the temporary entries are gone
  ExportContext ctx;
  EXPECT_THROW(PatchScope(ctx, "onnx", 7), Error);
  Graph g;
  EXPECT_THROW(apply_node_fixes("executorch", 2, g), Error);
  std::vector<std::string> warnings;
  EXPECT_THROW(apply_program_fixes("dynamo", 5, g, ctx, warnings), Error);
  EXPECT_NO_THROW(apply_program_fixes("onnx", 3, g, ctx, warnings));
}
