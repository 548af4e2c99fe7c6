// Pre-quantized GPTQ / AWQ checkpoints as models: `create-tiny --quantize gptq|awq` checkpoints (llama GPTQ
// 4-bit g32 v1 symmetric, llama AWQ 4-bit g32, qwen2 GPTQ 8-bit g64 v2 asymmetric with q/k/v biases) against
// goldens of the real transformers (4.47) on the same files de-quantized in Python by the AutoGPTQ /
// AutoAWQ formulas (tools/hf_goldens/make_prequant_goldens.py): logits ≤ 1e-4 at f32 (the same weights;
// summation order only) and 32 greedy tokens. Their ONNX exports, --target ort (MatMulNBits) and standard
// opset 21 (DequantizeLinear), keep the codes (no float copy of a quantized weight in the graph), pass
// `hfx verify`, and ONNX Runtime's greedy tokens equal the goldens. Refusals: other formats, --quantize on
// top, a standard export below opset 21, a config whose bits do not fit the tensors.
#include <gtest/gtest.h>

#include <onnx/onnx_pb.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "hfx/artifact/export_folder.h"
#include "hfx/export/exporter.h"
#include "hfx/io/safetensors.h"
#include "hfx/models/quantize_model.h"
#include "hfx/runtime/generator.h"
#include "hfx/verify/verify.h"
#include "models/model_test_util.h"
#include "quant/prequant_test_util.h"

namespace hfx::test {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// ---- models and exports ----

struct Variant {
  std::string name, arch, method;
  int bits;
  int64_t group;
  bool sym, v2;
};
const std::vector<Variant> kVariants = {{"llama_gptq", "llama", "gptq", 4, 32, true, false},
                                        {"llama_awq", "llama", "awq", 4, 32, false, false},
                                        {"qwen2_gptq8", "qwen2", "gptq", 8, 64, false, true}};
class PrequantizedModel : public ::testing::TestWithParam<Variant> {};

std::string golden_path(const Variant& v) {
  std::string f = v.name;
  std::replace(f.begin(), f.end(), '_', '-');
  return std::string(HFX_SOURCE_DIR) + "/tests/data/goldens/prequant-" + f + ".json";
}

int count_nodes(const fs::path& file, const std::string& op, int* float_weights) {
  onnx::ModelProto m;
  std::ifstream f(file, std::ios::binary);
  if (!m.ParseFromIstream(&f)) return -1;
  int n = 0;
  for (const auto& node : m.graph().node()) n += node.op_type() == op;
  for (const auto& init : m.graph().initializer())
    *float_weights += init.name().find("proj.weight") != std::string::npos &&
                      init.data_type() == onnx::TensorProto::FLOAT && !init.name().ends_with("_scale");
  return n;
}

TEST_P(PrequantizedModel, EagerAndOnnxMatchTransformers) {
  const Variant& v = GetParam();
  const json g = json::parse(io::read_file(golden_path(v)));
  TempDir dir("prequant_" + v.name);
  create_tiny(v.arch, dir.path.string(), TinyOptions{});
  ASSERT_EQ(
      quant::write_prequantized_checkpoint(dir.path.string(), cq_of(v.method, v.bits, v.group, v.sym, v.v2)),
      14);
  std::shared_ptr<const Model> base(load_model(dir.path.string()));
  EXPECT_EQ(base->config().prequantized.bits, v.bits);
  auto lm = std::dynamic_pointer_cast<const CausalLM>(base);
  ASSERT_TRUE(lm);
  const double worst = worst_vs_golden(*lm, g);
  for (const auto& c : g["cases"]) {
    const auto ids = c["input_ids"].get<std::vector<int64_t>>();
    Generator gen(std::make_unique<EagerEngine>(lm), nullptr, {});
    GenerationOptions o;
    o.max_new_tokens = 32;
    o.ignore_eos = true;
    EXPECT_EQ(gen.generate_ids({ids}, o).ids[0], c["greedy"].get<std::vector<int64_t>>());
  }
  EXPECT_LE(worst, 1e-4);
  std::printf("  [%s] eager vs transformers (de-quantized in Python): worst |logit diff| %.3g\n",
              v.name.c_str(), worst);

  for (const std::string target : {"ort", "standard"}) {
    SCOPED_TRACE(target);
    OnnxConfig oc;
    oc.format = "onnx";
    oc.target = target;
    oc.opset = 21;
    const fs::path out = dir.path / ("onnx-" + target);
    artifact::export_folder(*base, dir.path.string(), out.string(), oc);
    const json ec = json::parse(io::read_file((out / "export_config.json").string()));
    EXPECT_EQ(ec["quantize"]["method"], "int" + std::to_string(v.bits));
    int float_weights = 0;
    const int nodes = count_nodes(out / "onnx" / "model.onnx",
                                  target == "ort" ? "MatMulNBits" : "DequantizeLinear", &float_weights);
    EXPECT_EQ(nodes, 14);
    EXPECT_EQ(float_weights, 0) << "a quantized weight was written as float";
    expect_verified(out.string(), dir.path.string());
    Generator ort(make_ort_engine(out.string(), 2), nullptr, {});
    GenerationOptions o;
    o.max_new_tokens = 32;
    o.ignore_eos = true;
    for (const auto& c : g["cases"])
      EXPECT_EQ(ort.generate_ids({c["input_ids"].get<std::vector<int64_t>>()}, o).ids[0],
                c["greedy"].get<std::vector<int64_t>>());
  }
}

INSTANTIATE_TEST_SUITE_P(Ckpt, PrequantizedModel, ::testing::ValuesIn(kVariants),
                         [](const auto& i) { return i.param.name; });

// A .pt2 keeps a GPTQ or AWQ checkpoint's codes (de-quantized in the graph: no hfx.linear_q is left, the
// codes are uint8 weights of the program; ExecuTorch: tests/quant/et_prequantized_test.cpp); a second
// quantization and an ONNX opset that cannot hold them are refused before anything is written.
TEST(Prequantized, DynamoKeepsTheCodesAndRequantizationIsRefused) {
  for (const auto& [method, sym] : {std::pair<const char*, bool>{"gptq", true}, {"awq", false}}) {
    SCOPED_TRACE(method);
    TempDir d(std::string("prequant_pt2_") + method);
    create_tiny("llama", d.path.string(), TinyOptions{});
    quant::write_prequantized_checkpoint(d.path.string(), cq_of(method, 4, 32, sym));
    auto pm = load_model(d.path.string());
    DynamoConfig dc;
    artifact::export_folder(*pm, d.path.string(), (d.path / "pt2").string(), dc);
    const json ec = json::parse(io::read_file((d.path / "pt2" / "export_config.json").string()));
    EXPECT_EQ(ec["quantize"]["method"], "int4");
    EXPECT_EQ(ec["quantize"]["symmetric"], sym);
    const std::string doc = io::read_file((d.path / "pt2" / "decode.pt2").string());
    EXPECT_EQ(doc.find("hfx.linear_q"), std::string::npos);
    EXPECT_NE(doc.find("mlp.up_proj.weight_q"), std::string::npos) << "the codes are the program's weights";
    EXPECT_EQ(doc.find("\"mlp.up_proj.weight\""), std::string::npos) << "a float copy of a quantized weight";
  }
  TempDir dir("prequant_refuse");
  create_tiny("llama", dir.path.string(), TinyOptions{});
  quant::write_prequantized_checkpoint(dir.path.string(), cq_of("gptq", 4, 32, true));
  auto m = load_model(dir.path.string());
  OnnxConfig oc;
  oc.format = "onnx";
  oc.target = "ort";
  oc.quantize = quant::parse_options("int4", 32, false);
  expect_error([&] { artifact::export_folder(*m, dir.path.string(), (dir.path / "q").string(), oc); },
               {"already quantized"});
  oc.quantize = {};
  oc.target = "standard";
  oc.opset = 18;
  expect_error([&] { artifact::export_folder(*m, dir.path.string(), (dir.path / "s").string(), oc); },
               {"opset", "21"});
  expect_error([&] { quant::quantize_model(*m, quant::parse_options("int8", 32, false)); },
               {"already quantized"});
  // a config whose bits do not match the tensors fails at load, naming a tensor
  json cfg = json::parse(io::read_file((dir.path / "config.json").string()));
  cfg["quantization_config"]["bits"] = 8;
  io::write_file_atomic((dir.path / "config.json").string(), cfg.dump());
  expect_error([&] { load_model(dir.path.string()); }, {".qzeros", "8 bits"});
}

}  // namespace
}  // namespace hfx::test
