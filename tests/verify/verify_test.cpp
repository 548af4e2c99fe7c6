// hfx verify without ONNX Runtime: shape specs, error statistics (max abs/rel, top-k agreement), the
// per-layer comparison, the debug copy of a graph with module outputs, and the HTML page (self-contained:
// no script, no external reference).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <onnx/onnx_pb.h>

#include "hfx/core/error.h"
#include "hfx/verify/verify.h"

namespace fs = std::filesystem;
namespace V = hfx::verify;
using hfx::Tensor;

TEST(VerifyShapes, ParsesSpecAndRejectsBadText) {
  auto v = V::parse_shape_spec("1x1, 2x16,4X8+32");
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[1].batch, 2);
  EXPECT_EQ(v[1].sequence, 16);
  EXPECT_EQ(v[2].past, 32);
  EXPECT_EQ(v[2].label, "4x8+32");
  EXPECT_THROW(V::parse_shape_spec("2by3"), hfx::Error);
  EXPECT_THROW(V::parse_shape_spec("0x3"), hfx::Error);
  try {
    V::parse_shape_spec("1x");
  } catch (const hfx::Error& e) {
    EXPECT_NE(std::string(e.what()).find("BATCHxSEQUENCE"), std::string::npos) << e.what();
  }
}

TEST(VerifyStats, MaxAbsRelAndTopK) {
  std::vector<float> ref = {1, 2, 3, 4, 5, 6, -1, -2, -3, -4, -5, -6};
  std::vector<float> got = ref;
  got[0] += 0.5f;  // row 0: order of top-5 unchanged (1.5 < 2)
  auto s = V::error_stats(got, ref, 6, 5);
  EXPECT_NEAR(s.max_abs, 0.5, 1e-6);
  EXPECT_NEAR(s.max_rel, 0.5 / 6, 1e-6);
  EXPECT_EQ(s.rows, 2);
  EXPECT_DOUBLE_EQ(s.topk_agreement, 1.0);
  got[7] = -7;  // row 1: the order changes
  s = V::error_stats(got, ref, 6, 5);
  EXPECT_DOUBLE_EQ(s.topk_agreement, 0.5);
  got[3] = NAN;
  s = V::error_stats(got, ref, 6, 5);
  EXPECT_FALSE(s.finite);
  EXPECT_TRUE(std::isinf(s.max_abs));
}

TEST(VerifyLayers, FirstDivergenceInGivenOrder) {
  std::map<std::string, Tensor> eager, art;
  for (const char* n :
       {"model.embed_tokens", "model.layers.0", "model.layers.1.self_attn", "model.layers.1", "model.norm"}) {
    eager[n] = Tensor::from_floats({4}, {1, 2, 3, 4});
    art[n] = Tensor::from_floats({4}, {1, 2, 3, 4.00001f});
  }
  art["model.layers.1.self_attn"] = Tensor::from_floats({4}, {1, 2, 3.5f, 4});
  art["model.layers.1"] = Tensor::from_floats({4}, {1, 2, 9, 4});
  std::vector<std::string> order = {"model.embed_tokens", "model.layers.0", "model.layers.1.self_attn",
                                    "model.layers.1",     "model.norm",     "not.in.eager"};
  auto d = V::compare_layers(order, eager, art, 1e-4, 1e-4);
  ASSERT_TRUE(d.first_divergence.has_value());
  EXPECT_EQ(d.first_divergence->name, "model.layers.1.self_attn");
  EXPECT_NEAR(d.first_divergence->max_abs, 0.5, 1e-6);
  EXPECT_EQ(d.layers.size(), 5u);
  EXPECT_FALSE(d.layers[0].diverged);
  auto j = d.to_json();
  EXPECT_EQ(j["first_divergence"]["name"], "model.layers.1.self_attn");
}

TEST(VerifyLayers, DebugCopyAddsModuleOutputs) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(18);
  auto* g = m.mutable_graph();
  g->set_name("g");
  auto* in = g->add_input();
  in->set_name("x");
  in->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  auto add = [&](const std::string& i, const std::string& o) {
    auto* n = g->add_node();
    n->set_op_type("Relu");
    n->add_input(i);
    n->add_output(o);
  };
  add("x", "model.embed_tokens");
  add("model.embed_tokens", "model.layers.0.self_attn/sdpa/qk");
  add("model.layers.0.self_attn/sdpa/qk", "model.layers.0.self_attn");
  add("model.layers.0.self_attn", "model.layers.0");
  add("model.layers.0", "logits");
  g->add_output()->set_name("logits");
  fs::path dir = fs::path(testing::TempDir()) / ("hfx_verify_unit_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::string bytes;
  m.SerializeToString(&bytes);
  std::ofstream(dir / "g.onnx", std::ios::binary) << bytes;
  auto names = V::onnx_module_values((dir / "g.onnx").string());
  EXPECT_EQ(names, (std::vector<std::string>{"model.embed_tokens", "model.layers.0.self_attn",
                                             "model.layers.0", "logits"}));
  V::write_debug_onnx((dir / "g.onnx").string(), names, (dir / "dbg.onnx").string());
  onnx::ModelProto d;
  std::ifstream f(dir / "dbg.onnx", std::ios::binary);
  ASSERT_TRUE(d.ParseFromIstream(&f));
  std::vector<std::string> outs;
  for (const auto& o : d.graph().output()) outs.push_back(o.name());
  EXPECT_EQ(outs, (std::vector<std::string>{"logits", "model.embed_tokens", "model.layers.0.self_attn",
                                            "model.layers.0"}));
  fs::remove_all(dir);
}

TEST(VerifyHtml, SelfContainedWithPlots) {
  nlohmann::json r = {
      {"passed", false},
      {"first_failure", "model numerics: <bad> & worse"},
      {"out_dir", "/tmp/x"},
      {"checks",
       {{{"component", "model"}, {"check", "numerics"}, {"status", "failed"}, {"message", "a < b"}}}},
      {"layer_diff",
       {{"component", "model"},
        {"layers",
         {{{"name", "model.layers.0"}, {"max_abs", 1e-7}, {"diverged", false}},
          {{"name", "model.layers.1"}, {"max_abs", 0.3}, {"diverged", true}}}},
        {"first_divergence", {{"name", "model.layers.1"}}}}},
      {"tolerances", {{"layer_abs", 1e-4}}},
      {"components",
       {{"model",
         {{"latency",
           {{{"shape", "min"}, {"batch", 1}, {"sequence", 1}, {"past", 0}, {"warm_median_ms", 0.4}}}}}}}}};
  std::string h = V::render_html(r);
  EXPECT_NE(h.find("<svg"), std::string::npos);
  EXPECT_NE(h.find("model.layers.1"), std::string::npos);
  EXPECT_NE(h.find("&lt;bad&gt; &amp; worse"), std::string::npos);
  EXPECT_EQ(h.find("<script"), std::string::npos);
  EXPECT_EQ(h.find("http://"), h.find("http://www.w3.org/2000/svg"));  // only the SVG namespace
  EXPECT_EQ(h.find("https://"), std::string::npos);
}
