// ONNX lowering without a runtime: the proto's signature (dim_params, fixed dims), the translation
// override, stage-5 IR fixes, external data layout, the registry listing.
#include <gtest/gtest.h>

#include <fstream>

#include "export/onnx/onnx_test_util.h"
#include "hfx/core/error.h"
#include "hfx/export/registry.h"
#include "hfx/io/safetensors.h"
#include "hfx/models/tiny.h"
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

const onnx::ValueInfoProto& find_vi(const google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>& v,
                                    const std::string& n) {
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
  auto prev =
      onnx_export::register_onnx_translation("aten.neg", [](onnx_export::LoweringContext& cx, const Node& n) {
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
  for (const auto& e : fs::directory_iterator(dir.path))
    EXPECT_EQ(e.path().string().find(".tmp"), std::string::npos) << e.path();
}

std::string read_bytes(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

const onnx::TensorProto& find_init(const onnx::ModelProto& m, const std::string& n) {
  for (const auto& t : m.graph().initializer())
    if (t.name() == n) return t;
  throw std::runtime_error("no initializer " + n);
}

std::map<std::string, std::string> ext_of(const onnx::TensorProto& t) {
  std::map<std::string, std::string> kv;
  for (const auto& e : t.external_data()) kv[e.key()] = e.value();
  return kv;
}

// x [B, 8] * to(w_bf16, f32) + to(b_f16, f32); rows of a bf16 table e gathered, then cast; and a bf16
// param u read as bf16 by a bf16 mul.
std::unique_ptr<Graph> half_param_graph() {
  auto g = std::make_unique<Graph>();
  Sym B = g->env().create_symbol("batch_size", 1, 64, 2);
  TraceBuilder tb(*g);
  Var x = tb.input("x", TensorType{DType::F32, {B, Sym(8)}});
  std::vector<float> wv(8), bv(8);
  for (int i = 0; i < 8; i++)
    wv[i] = 0.25f * static_cast<float>(i) - 1.0f, bv[i] = 0.125f * static_cast<float>(i);
  Var w = tb.param("w", Tensor::from_floats({8}, wv, DType::BF16));
  Var b = tb.param("b", Tensor::from_floats({8}, bv, DType::F16));
  Var u = tb.param("u", Tensor::from_floats({8}, wv, DType::BF16));
  std::vector<float> ev(10 * 8);
  for (size_t i = 0; i < ev.size(); i++) ev[i] = 0.0625f * static_cast<float>(i) - 2.0f;
  Var e = tb.param("e", Tensor::from_floats({10, 8}, ev, DType::BF16));
  Var ids = tb.input("ids", TensorType{DType::I64, {B, Sym(3)}});
  Var y = F::add(F::mul(x, F::to(w, DType::F32)), F::to(b, DType::F32));
  Var z = F::to(F::mul(F::to(x, DType::BF16), u), DType::F32);  // u is read as bf16, not through a cast
  Var rows = F::to(F::embedding(e, ids), DType::F32);
  g->add_output("y", y.value());
  g->add_output("z", z.value());
  g->add_output("rows", rows.value());
  return g;
}

TEST(OnnxLowering, HalfParamsCastToF32KeepTheirDtypeBehindOneCast) {
  auto g = half_param_graph();
  auto lm = onnx_export::lower_graph(*g, {});
  EXPECT_EQ(find_init(lm.model, "w").data_type(), onnx::TensorProto::BFLOAT16);
  EXPECT_EQ(find_init(lm.model, "b").data_type(), onnx::TensorProto::FLOAT16);
  EXPECT_EQ(find_init(lm.model, "e").data_type(), onnx::TensorProto::BFLOAT16);  // gathered rows, cast after
  EXPECT_EQ(find_init(lm.model, "u").data_type(),
            onnx::TensorProto::FLOAT);  // a reader that is not a cast: widened
  int casts_of_w = 0;
  for (const auto& n : lm.model.graph().node())
    if (n.op_type() == "Cast" && n.input(0) == "w") {
      casts_of_w++;
      ASSERT_EQ(n.attribute_size(), 1);
      EXPECT_EQ(n.attribute(0).i(), onnx::TensorProto::FLOAT);
    }
  EXPECT_EQ(casts_of_w, 1);

  // The external data holds the checkpoint's bf16/f16 bytes as they are; u is converted to f32.
  TempDir dir("half");
  auto st = onnx_export::write_onnx_model(lm, (dir.path / "model.onnx").string(), true);
  EXPECT_EQ(st.initializers, 4);
  std::string data = read_bytes(dir.path / "model.onnx_data");
  auto check = [&](const std::string& name, const Tensor& want) {
    auto kv = ext_of(find_init(lm.model, name));
    ASSERT_EQ(kv["location"], "model.onnx_data") << name;
    EXPECT_EQ(std::stoull(kv["offset"]) % 4096, 0u) << name;
    ASSERT_EQ(std::stoull(kv["length"]), want.nbytes()) << name;
    EXPECT_EQ(data.substr(std::stoull(kv["offset"]), want.nbytes()),
              std::string(static_cast<const char*>(want.raw()), want.nbytes()))
        << name;
  };
  check("w", g->find_param("w")->data);
  check("b", g->find_param("b")->data);
  check("e", g->find_param("e")->data);
  check("u", g->find_param("u")->data.to(DType::F32));

  // Opting out widens every floating parameter to f32, as before.
  onnx_export::LowerOptions lo;
  lo.keep_param_dtype = false;
  auto wide = onnx_export::lower_graph(*g, lo);
  for (const auto& t : wide.model.graph().initializer())
    if (t.name() == "w" || t.name() == "b" || t.name() == "u" || t.name() == "e") {
      EXPECT_EQ(t.data_type(), onnx::TensorProto::FLOAT) << t.name();
    }
}

TEST(OnnxLowering, ExternalDataFileIsSharedByGraphsWrittenThroughIt) {
  TempDir dir("shared");
  auto g = small_graph();
  auto a = onnx_export::lower_graph(*g, {});
  auto b = onnx_export::lower_graph(*g, {});
  {
    onnx_export::ExternalDataFile data((dir.path / "model.onnx_data").string());
    onnx_export::write_onnx_model(a, (dir.path / "prefill.onnx").string(), &data);
    onnx_export::write_onnx_model(b, (dir.path / "model.onnx").string(), &data);
    EXPECT_EQ(data.tensors(), 1);
    data.finish();
  }
  EXPECT_EQ(fs::file_size(dir.path / "model.onnx_data"), 8 * 4u);  // written once
  EXPECT_FALSE(fs::exists(dir.path / "prefill.onnx_data"));
  for (const char* f : {"prefill.onnx", "model.onnx"}) {
    onnx::ModelProto back;
    std::ifstream in(dir.path / f, std::ios::binary);
    ASSERT_TRUE(back.ParseFromIstream(&in)) << f;
    auto kv = ext_of(find_init(back, "w"));
    EXPECT_EQ(kv["location"], "model.onnx_data") << f;
    EXPECT_EQ(kv["offset"], "0") << f;
    EXPECT_EQ(kv["length"], "32") << f;
  }
  for (const auto& e : fs::directory_iterator(dir.path))
    EXPECT_EQ(e.path().string().find(".tmp"), std::string::npos) << e.path();

  // A data file never finished (an export that failed half-way) leaves nothing behind.
  {
    onnx_export::ExternalDataFile data((dir.path / "other.onnx_data").string());
    data.add("w", g->find_param("w")->data, DType::F32);
  }
  EXPECT_FALSE(fs::exists(dir.path / "other.onnx_data"));
  for (const auto& e : fs::directory_iterator(dir.path))
    EXPECT_EQ(e.path().string().find(".tmp"), std::string::npos) << e.path();
}

TEST(OnnxLowering, ExternalDataStreamsFromTheCheckpointFile) {
  // A bf16 checkpoint on disk: bytes kept as bf16 are copied from the file, those widened to f32 are read
  // and converted in chunks; both equal what the mapped tensors hold, at 4096-aligned offsets.
  TempDir dir("stream");
  TinyOptions o;
  o.dtype = DType::BF16;
  create_tiny("llama", (dir.path / "ckpt").string(), o);
  auto store = io::WeightStore::open_dir((dir.path / "ckpt").string());
  std::vector<std::string> names = store->names();
  ASSERT_GE(names.size(), 3u);
  std::vector<std::pair<std::string, DType>> plan = {
      {names[0], DType::BF16},
      {names[1], DType::F32},
      {names[2], DType::BF16},
      {names[0], DType::BF16}};  // the repeat is not written again
  std::vector<onnx_export::ExternalDataFile::Extent> ext;
  {
    onnx_export::ExternalDataFile data((dir.path / "out" / "model.onnx_data").string(), store.get());
    for (const auto& [n, as] : plan) ext.push_back(data.add(n, store->get(n), as));
    EXPECT_EQ(data.tensors(), 3);
    data.finish();
  }
  EXPECT_EQ(ext[3].offset, ext[0].offset);
  std::string bytes = read_bytes(dir.path / "out" / "model.onnx_data");
  EXPECT_EQ(bytes.size(), ext[2].offset + ext[2].length);
  for (size_t i = 0; i < plan.size(); i++) {
    Tensor want = store->get(plan[i].first).to(plan[i].second).contiguous();
    EXPECT_EQ(ext[i].offset % 4096, 0u) << plan[i].first;
    ASSERT_EQ(ext[i].length, want.nbytes()) << plan[i].first;
    EXPECT_EQ(bytes.substr(ext[i].offset, ext[i].length),
              std::string(static_cast<const char*>(want.raw()), want.nbytes()))
        << plan[i].first;
  }
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

// Linear weights are stored transposed ([in, out], what MatMul reads: nothing for ONNX Runtime to fold at
// load); a table that is both an embedding and a tied lm_head is stored once, [H, V], and gathered on axis 1.
// The external data holds the source bytes transposed (and widened from bf16 with weight_dtype f32).
TEST(OnnxLowering, LinearWeightsAreStoredTransposedAndTiedTablesGatheredOnAxisOne) {
  auto g = std::make_unique<Graph>();
  Sym B = g->env().create_symbol("batch_size", 1, 64, 2);
  TraceBuilder tb(*g);
  Var ids = tb.input("ids", TensorType{DType::I64, {B, Sym(3)}});
  std::vector<float> ev(10 * 4), wv(6 * 4);
  for (size_t i = 0; i < ev.size(); i++) ev[i] = 0.125f * static_cast<float>(i) - 2.0f;
  for (size_t i = 0; i < wv.size(); i++) wv[i] = 0.25f * static_cast<float>(i) - 3.0f;
  Var e = tb.param("e", Tensor::from_floats({10, 4}, ev, DType::BF16));  // [V, H], tied
  Var w = tb.param("w", Tensor::from_floats({6, 4}, wv));                // [out, in]
  Var h = F::to(F::embedding(e, ids), DType::F32);
  g->add_output("y", F::linear(h, w).value());
  g->add_output("logits", F::linear(h, F::to(e, DType::F32)).value());
  onnx_export::LowerOptions lo;
  lo.weight_dtype = DType::F32;
  auto lm = onnx_export::lower_graph(*g, lo);
  const auto& ei = find_init(lm.model, "e");
  const auto& wi = find_init(lm.model, "w");
  EXPECT_EQ(std::vector<int64_t>(ei.dims().begin(), ei.dims().end()), (std::vector<int64_t>{4, 10}));
  EXPECT_EQ(std::vector<int64_t>(wi.dims().begin(), wi.dims().end()), (std::vector<int64_t>{4, 6}));
  EXPECT_EQ(ei.data_type(), onnx::TensorProto::FLOAT);
  int gathers_axis1 = 0;
  for (const auto& n : lm.model.graph().node()) {
    EXPECT_FALSE((n.op_type() == "Transpose" || n.op_type() == "Cast") &&
                 (n.input(0) == "e" || n.input(0) == "w"))
        << n.op_type();
    if (n.op_type() == "Gather" && n.input(0) == "e")
      for (const auto& a : n.attribute()) gathers_axis1 += a.name() == "axis" && a.i() == 1;
  }
  EXPECT_EQ(gathers_axis1, 1);
  TempDir dir("layout");
  onnx_export::write_onnx_model(lm, (dir.path / "model.onnx").string(), true);
  std::string data = read_bytes(dir.path / "model.onnx_data");
  for (auto [name, src] :
       {std::pair{"e", g->find_param("e")->data}, std::pair{"w", g->find_param("w")->data}}) {
    Tensor want = src.transpose(0, 1).contiguous().to(DType::F32);
    auto kv = ext_of(find_init(lm.model, name));
    EXPECT_EQ(data.substr(std::stoull(kv["offset"]), want.nbytes()),
              std::string(static_cast<const char*>(want.raw()), want.nbytes()))
        << name;
  }
  // PyTorch's layout on request (the load bench's baseline shape): MatMul(x, Transpose(w)).
  lo.pretranspose_weights = false;
  auto torch_like = onnx_export::lower_graph(*g, lo);
  int transposes = 0;
  for (const auto& n : torch_like.model.graph().node())
    transposes += n.op_type() == "Transpose" && n.input(0) == "w";
  EXPECT_EQ(transposes, 1);
}

}  // namespace
}  // namespace hfx::onnx_test
