// IR: textual dump, verifier, dead-code elimination, and the decompose pass.
#include <gtest/gtest.h>

#include <algorithm>

#include "hfx/core/error.h"
#include "hfx/ops/functional.h"
#include "hfx/ops/op_schema.h"
#include "hfx/passes/pass.h"

using namespace hfx;

namespace {
struct Small {
  Graph g;
  TraceBuilder tb{g};
  Sym s = g.env().create_symbol("s", 1, 64, 4);
  Var x = tb.input("x", TensorType{DType::F32, {s, Sym(8)}});
};
}  // namespace

TEST(Graph, DumpIsReadable) {
  Small t;
  Var w = t.tb.param("model.norm.weight", Tensor::full({8}, 1.0));
  Var y;
  {
    Scope sc(t.tb, "model");
    Scope n(t.tb, "norm");
    y = F::rms_norm(t.x, w, 1e-6);
    t.tb.name_output(y);
  }
  t.g.add_output("y", y.value());
  std::string d = t.g.dump();
  EXPECT_NE(d.find("graph(%x: f32[s, 8])"), std::string::npos) << d;
  EXPECT_NE(d.find("sym s in [1, 64]"), std::string::npos) << d;
  EXPECT_NE(d.find("param %model.norm.weight: f32[8]"), std::string::npos) << d;
  EXPECT_NE(d.find("%y: f32[s, 8] = hfx.rms_norm(%x, %model.norm.weight) {eps=1e-06, weight_offset=0}"),
            std::string::npos)
      << d;
  verify_graph(t.g);
}

TEST(Graph, SymbolicShapeInference) {
  Small t;
  Var a = F::slice(t.x, 0, Sym(1), t.s);  // rows 1..s
  EXPECT_EQ(a.shape()[0].str(), "s - 1");
  Var r = F::reshape(t.x, {Sym(-1)});
  EXPECT_EQ(r.shape()[0].str(), "8*s");
  Var c = F::cat({t.x, t.x}, 0);
  EXPECT_EQ(c.shape()[0].str(), "2*s");
  Var ar = F::arange(t.tb, Sym(0), t.s + Sym(3));
  EXPECT_EQ(ar.shape()[0].str(), "s + 3");
  EXPECT_THROW(F::add(t.x, F::full(t.tb, {Sym(3)}, 1.0)), Error);
}

TEST(Graph, VerifierCatchesInconsistentTypes) {
  Small t;
  Var y = F::relu(t.x);
  t.g.add_output("y", y.value());
  verify_graph(t.g);
  // Corrupt the recorded type: the verifier re-infers and must complain, naming the node.
  y.value()->type.shape[1] = Sym(9);
  try {
    verify_graph(t.g);
    FAIL() << "verifier accepted a wrong type";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[verifier]"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("aten.relu"), std::string::npos);
  }
}

TEST(Graph, DeadCodeElimination) {
  Small t;
  F::exp(t.x);  // unused
  Var y = F::neg(t.x);
  t.g.add_output("y", y.value());
  Pass dce = dead_code_elimination_pass();
  EXPECT_TRUE(run_pass(t.g, dce));
  EXPECT_EQ(t.g.nodes().size(), 1u);
  EXPECT_FALSE(run_pass(t.g, dce));
}

TEST(Graph, DecomposePassMatchesFusedKernel) {
  // The decomposed graph of rms_norm, run eagerly node by node, equals the fused kernel.
  Small t;
  Var w = t.tb.param("w", Tensor::from_floats({8}, {1, 2, 3, 4, 5, 6, 7, 8}));
  Var y = F::rms_norm(t.x, w, 1e-5, 1.0);
  t.g.add_output("y", y.value());
  EXPECT_TRUE(run_pass(t.g, decompose_pass({"hfx.rms_norm"})));
  for (const auto& n : t.g.nodes()) EXPECT_NE(n->op, "hfx.rms_norm");
  verify_graph(t.g);
  // Execute the graph with the kernels.
  std::vector<float> xs(4 * 8);
  for (size_t i = 0; i < xs.size(); i++) xs[i] = 0.1f * static_cast<float>(i) - 1.0f;
  Tensor xin = Tensor::from_floats({4, 8}, xs);
  std::map<const Value*, Tensor> env{{t.g.inputs()[0], xin}};
  for (Value* p : t.g.params()) env[p] = p->data;
  for (Value* c : t.g.consts()) env[c] = c->data;
  for (const auto& n : t.g.nodes()) {
    std::vector<Tensor> in;
    for (Value* v : n->inputs) in.push_back(v ? env.at(v) : Tensor());
    auto out = op_schema(n->op).kernel(in, n->attrs);
    for (size_t i = 0; i < out.size(); i++) env[n->outputs[i]] = out[i];
  }
  EagerBuilder eb;
  Var ref = F::rms_norm(eb.wrap(xin), eb.wrap(t.g.params()[0]->data), 1e-5, 1.0);
  auto a = env.at(t.g.outputs()[0]).to_floats(), b = ref.tensor().to_floats();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); i++) EXPECT_NEAR(a[i], b[i], 1e-5f);
}

TEST(OpTable, EveryOpHasKernelAndInference) {
  for (const OpSchema* s : all_op_schemas()) {
    EXPECT_TRUE(static_cast<bool>(s->infer)) << s->name;
    EXPECT_TRUE(static_cast<bool>(s->kernel)) << s->name;
  }
  EXPECT_TRUE(op_schema("hfx.sdpa").composite());
  EXPECT_THROW(op_schema("aten.nonexistent"), Error);
  EXPECT_THROW(normalize_attrs(op_schema("aten.gelu"), Attrs{{"approx", std::string("tanh")}}), Error);
  EXPECT_THROW(normalize_attrs(op_schema("aten._softmax"), Attrs{}), Error);
}

// The backends' one-call lowerings are data beside each op (hfx/ops/op_lowering.h): every argument names
// an input the op has or an attribute of its schema, and each declared callee maps back to its op alone
// (the `.pte` reader and the Dynamo interpreters read calls through that inverse).
TEST(OpTable, DeclaredLoweringsNameRealArgumentsAndInvert) {
  int declared = 0;
  for (const OpSchema* s : all_op_schemas()) {
    for (const CallDecl* c : {&s->lower.executorch, &s->lower.aten}) {
      if (!c->declared()) continue;
      declared++;
      for (const CallArg& a : c->args) {
        if (a.kind == CallArg::Kind::Input) {
          EXPECT_TRUE(a.input >= 0 && (s->max_inputs < 0 || a.input < s->max_inputs)) << s->name;
        }
        if (a.kind == CallArg::Kind::Attr) {
          EXPECT_TRUE(std::any_of(s->attrs.begin(), s->attrs.end(),
                                  [&](const AttrSpec& x) { return x.name == a.attr; }))
              << s->name << " declares attribute " << a.attr;
        }
      }
    }
    if (s->lower.executorch.declared()) {
      EXPECT_EQ(find_op_by_executorch_kernel(s->lower.executorch.target), s);
    }
    if (s->lower.aten.declared()) {
      EXPECT_EQ(find_op_by_aten_target(s->lower.aten.target), s);
    }
    if (s->lower.onnx_form != OnnxForm::None) {
      EXPECT_FALSE(s->lower.onnx.empty()) << s->name;
    }
  }
  EXPECT_GE(declared, 80);  // 44 ExecuTorch + 41 ATen calls when written
  EXPECT_EQ(find_op_by_executorch_kernel("aten::erf.out"), &op_schema("aten.erf"));
  EXPECT_EQ(find_op_by_aten_target("torch.ops.aten.argmax.default"), &op_schema("aten.argmax"));
  EXPECT_EQ(find_op_by_executorch_kernel("aten::cat.out"), nullptr);  // hand-written: a tensor list
}

TEST(OpTable, FunctionalOpCallsAnyOpByName) {
  Small t;
  Var y = F::op("aten.erf", {t.x});
  ASSERT_NE(y.value()->producer, nullptr);
  EXPECT_EQ(y.value()->producer->op, "aten.erf");
  EXPECT_THROW(F::op("aten.nonexistent", {t.x}), Error);
}
