// ONNX lowering without a runtime: the proto's signature (dim_params, fixed dims), the translation
// override, stage-5 IR fixes, external data layout, the registry listing.
#include <gtest/gtest.h>

#include <fstream>

#include "export/onnx/onnx_test_util.h"
#include "hfx/core/error.h"
#include "hfx/export/registry.h"
#include "hfx/ops/functional.h"

namespace hfx::onnx_test {
namespace {

// x[batch_size, sequence_length, 8] → view [B, S, 2, 4] → linear-free little chain; past [B, 2, P, 4].
std::unique_ptr<Graph> small_graph() {
  auto g = std::make_unique<Graph>();
  Sym B = g->env().create_symbol("batch_size", 1, 64, 2);
  Sym S = g->env().create_symbol("sequence_length", 1, 128, 5);
  Sym P = g->env().create_symbol("past_sequence_length", 0, 128, 3);
  TraceBuilder tb(*g);
  Var x = tb.input("x", TensorType{DType::F32, {B, S, Sym(8)}});
  Var past = tb.input("past_key_values.0.key", TensorType{DType::F32, {B, Sym(2), P, Sym(4)}});
  Var k = F::permute(F::reshape(x, {B, S, Sym(2), Sym(4)}), {0, 2, 1, 3});
  Var present = F::cat({past, k}, 2);
  Var w = tb.param("w", Tensor::full({8}, 0.5));
  g->add_output("y", F::neg(F::mul(x, w)).value());
  g->add_output("present.0.key", present.value());
  return g;
}

const onnx::ValueInfoProto& find_vi(const google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>& v, const std::string& n) {
  for (const auto& x : v)
    if (x.name() == n) return x;
  throw std::runtime_error("no " + n);
}

TEST(OnnxLowering, SignatureHasSymbolicNamesAndFixedKvDims) {
  auto g = small_graph();
  auto lm = onnx_export::lower_graph(*g, {});
  const auto& gp = lm.model.graph();
  const auto& past = find_vi(gp.input(), "past_key_values.0.key").type().tensor_type().shape();
  EXPECT_EQ(past.dim(0).dim_param(), "batch_size");
  EXPECT_EQ(past.dim(1).dim_value(), 2);
  EXPECT_EQ(past.dim(2).dim_param(), "past_sequence_length");
  EXPECT_EQ(past.dim(3).dim_value(), 4);
  const auto& pres = find_vi(gp.output(), "present.0.key").type().tensor_type().shape();
  EXPECT_EQ(pres.dim(2).dim_param(), "past_sequence_length + sequence_length");
  EXPECT_EQ(lm.model.ir_version(), 8);
  EXPECT_EQ(lm.model.opset_import(0).version(), 18);
  bool has_contract = false;
  for (const auto& p : lm.model.metadata_props()) has_contract = has_contract || p.key() == "hfx.contract";
  EXPECT_TRUE(has_contract);
  // The view's sizes are read at run time from x's shape (no number baked in for B or S).
  bool has_shape = false;
  for (const auto& n : gp.node()) has_shape = has_shape || n.op_type() == "Shape";
  EXPECT_TRUE(has_shape);
}

TEST(OnnxLowering, Opset23UsesIrVersion11) {
  auto g = small_graph();
  onnx_export::LowerOptions lo;
  lo.opset = 23;
  EXPECT_EQ(onnx_export::lower_graph(*g, lo).model.ir_version(), 11);
  lo.opset = 17;
  EXPECT_THROW(onnx_export::lower_graph(*g, lo), Error);
}

int count_op(const onnx::ModelProto& m, const std::string& op) {
  int c = 0;
  for (const auto& n : m.graph().node()) c += n.op_type() == op;
  return c;
}

TEST(OnnxLowering, TranslationOverrideChangesTheEmittedNodeAndRestores) {
  auto g = small_graph();
  EXPECT_EQ(count_op(onnx_export::lower_graph(*g, {}).model, "Neg"), 1);
  auto prev = onnx_export::register_onnx_translation("aten.neg", [](onnx_export::LoweringContext& cx, const Node& n) {
    cx.emit("Mul", {cx.in(n, 0), cx.scalar(-1.0, DType::F32)}, {cx.out(n)}, &n);
  });
  ASSERT_TRUE(static_cast<bool>(prev));
  auto overridden = onnx_export::lower_graph(*g, {});
  EXPECT_EQ(count_op(overridden.model, "Neg"), 0);
  EXPECT_EQ(count_op(overridden.model, "Mul"), 2);
  onnx_export::register_onnx_translation("aten.neg", prev);
  EXPECT_EQ(count_op(onnx_export::lower_graph(*g, {}).model, "Neg"), 1);
}

TEST(OnnxLowering, MissingTranslationNamesTheOpAndNode) {
  auto g = small_graph();
  auto prev = onnx_export::register_onnx_translation("aten.neg", nullptr);
  try {
    onnx_export::lower_graph(*g, {});
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("aten.neg"), std::string::npos) << e.what();
  }
  onnx_export::register_onnx_translation("aten.neg", prev);
}

TEST(OnnxLowering, IrFixRunsAtStageFiveOnly) {
  int calls = 0;
  int nodes_seen = -1;
  auto& fixes = onnx_export::onnx_ir_fixes();
  fixes.push_back({"test_marker",
                   [&](onnx::ModelProto& m, std::vector<std::string>&) {
                     calls++;
                     nodes_seen = m.graph().node_size();
                     auto* p = m.add_metadata_props();
                     p->set_key("test.marker");
                     p->set_value("stage5");
                     return true;
                   },
                   "test"});
  auto g = small_graph();
  auto lm = onnx_export::lower_graph(*g, {});  // stage 4 alone
  EXPECT_EQ(calls, 0);
  std::vector<std::string> warnings;
  auto changed = onnx_export::apply_onnx_ir_fixes(lm.model, warnings);  // stage 5
  fixes.pop_back();
  EXPECT_EQ(calls, 1);
  EXPECT_GT(nodes_seen, 0) << "the fix sees the translated ONNX graph";
  EXPECT_NE(std::find(changed.begin(), changed.end(), "test_marker"), changed.end());
}

TEST(OnnxLowering, PruneDeadNodesRemovesUnreadNodesAndInitializers) {
  auto g = small_graph();
  auto lm = onnx_export::lower_graph(*g, {});
  auto* n = lm.model.mutable_graph()->add_node();
  n->set_op_type("Neg");
  n->add_input("x");
  n->add_output("dead");
  auto* t = lm.model.mutable_graph()->add_initializer();
  t->set_name("unused_init");
  t->set_data_type(onnx::TensorProto::FLOAT);
  std::vector<std::string> w;
  auto changed = onnx_export::apply_onnx_ir_fixes(lm.model, w);
  EXPECT_NE(std::find(changed.begin(), changed.end(), "prune_dead_nodes"), changed.end());
  for (const auto& x : lm.model.graph().node()) EXPECT_NE(x.output(0), "dead");
  for (const auto& x : lm.model.graph().initializer()) EXPECT_NE(x.name(), "unused_init");
}

TEST(OnnxLowering, ExternalDataIsAlignedAndReferenced) {
  auto g = small_graph();
  TempDir dir("ext");
  auto lm = onnx_export::lower_graph(*g, {});
  auto st = onnx_export::write_onnx_model(lm, (dir.path / "model.onnx").string(), true);
  EXPECT_EQ(st.initializers, 1);
  EXPECT_TRUE(fs::exists(dir.path / "model.onnx_data"));
  EXPECT_EQ(fs::file_size(dir.path / "model.onnx_data"), 8 * 4u);
  onnx::ModelProto back;
  std::ifstream f(dir.path / "model.onnx", std::ios::binary);
  ASSERT_TRUE(back.ParseFromIstream(&f));
  bool found = false;
  for (const auto& t : back.graph().initializer()) {
    if (t.name() != "w") continue;
    found = true;
    EXPECT_EQ(t.data_location(), onnx::TensorProto::EXTERNAL);
    EXPECT_FALSE(t.has_raw_data());
    std::map<std::string, std::string> kv;
    for (const auto& e : t.external_data()) kv[e.key()] = e.value();
    EXPECT_EQ(kv["location"], "model.onnx_data");
    EXPECT_EQ(std::stoll(kv["offset"]) % 4096, 0);
    EXPECT_EQ(kv["length"], "32");
  }
  EXPECT_TRUE(found);
  // No temp file left behind.
  for (const auto& e : fs::directory_iterator(dir.path)) EXPECT_EQ(e.path().string().find(".tmp"), std::string::npos) << e.path();
}

TEST(OnnxLowering, OutputIsDeterministic) {
  TempDir dir("det");
  auto g = small_graph();
  auto a = onnx_export::lower_graph(*g, {});
  auto b = onnx_export::lower_graph(*g, {});
  onnx_export::write_onnx_model(a, (dir.path / "a.onnx").string(), false);
  onnx_export::write_onnx_model(b, (dir.path / "b.onnx").string(), false);
  auto read = [](const fs::path& p) {
    std::ifstream f(p, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  };
  EXPECT_EQ(read(dir.path / "a.onnx"), read(dir.path / "b.onnx"));
}

TEST(OnnxLowering, RegistryListsTranslationsAndIrFixes) {
  auto lines = onnx_registry_lines();
  int translations = 0, fixes = 0;
  for (const auto& l : lines) {
    EXPECT_EQ(l.backend, "onnx");
    EXPECT_FALSE(l.reason.empty()) << l.name;
    if (l.kind == "onnx-translation") {
      translations++;
      EXPECT_EQ(l.stage, 4);
    }
    if (l.kind == "onnx-ir-fix") {
      fixes++;
      EXPECT_EQ(l.stage, 5);
    }
  }
  EXPECT_EQ(translations, static_cast<int>(onnx_export::onnx_translation_table().size()));
  EXPECT_GE(fixes, 2);
}

}  // namespace
}  // namespace hfx::onnx_test
