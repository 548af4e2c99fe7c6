// Every architecture of the model library exports with --quantize int4 and int8 (ONNX, --target ort:
// MatMulNBits at accuracy level 0, the eager kernels' math) and passes `hfx verify` against the eager
// model quantized the same way; the graphs hold MatMulNBits nodes, so the quantization is not a label.
// What is not quantized: embeddings, norms, MoE experts, and the vision towers / projectors of image-text
// models (their language model is). gpt2 (Conv1D weights stored [in, out]) is refused naming the weight.
#include <gtest/gtest.h>

#include <onnx/onnx_pb.h>

#include <filesystem>
#include <fstream>

#include "hfx/artifact/export_folder.h"
#include "hfx/export/exporter.h"
#include "hfx/models/tiny.h"
#include "hfx/verify/verify.h"
#include "models/model_test_util.h"
#include "quant/prequant_test_util.h"

namespace hfx::test {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> archs() {
  std::vector<std::string> r;
  for (const Architecture* a : all_architectures())
    if (a->model_type != "gpt2") r.push_back(a->model_type);
  return r;
}

int matmul_nbits(const fs::path& dir) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(dir / "onnx")) {
    if (e.path().extension() != ".onnx") continue;
    onnx::ModelProto m;
    std::ifstream f(e.path(), std::ios::binary);
    if (!m.ParseFromIstream(&f)) return -1;
    for (const auto& node : m.graph().node()) n += node.op_type() == "MatMulNBits";
  }
  return n;
}

class QuantArchs : public ::testing::TestWithParam<std::string> {};

TEST_P(QuantArchs, ExportsAndVerifiesWithInt4AndInt8) {
  const std::string arch = GetParam();
  TempDir dir("quant_arch_" + arch);
  create_tiny(arch, (dir.path / "ck").string(), TinyOptions{});
  std::unique_ptr<Model> m = load_model((dir.path / "ck").string());
  for (const char* method : {"int4", "int8"}) {
    SCOPED_TRACE(method);
    OnnxConfig oc;
    oc.format = "onnx";
    oc.target = "ort";
    oc.quantize = quant::parse_options(method, 32, false);
    const fs::path out = dir.path / method;
    artifact::export_folder(*m, (dir.path / "ck").string(), out.string(), oc);
    EXPECT_GT(matmul_nbits(out), 0) << "no linear layer of " << arch << " was quantized";
    verify::VerifyOptions vo;
    vo.out_dir = out.string();
    vo.reference = (dir.path / "ck").string();
    vo.quiet = true;
    vo.write_manifest = false;
    vo.tokens = 8;
    const verify::VerifyReport r = verify::run_verify(vo);
    EXPECT_TRUE(r.passed) << r.first_failure;
  }
}

INSTANTIATE_TEST_SUITE_P(Archs, QuantArchs, ::testing::ValuesIn(archs()),
                         [](const auto& i) { return param_name(i.param); });

TEST(QuantArchs, Gpt2IsRefusedNamingItsConv1DWeight) {
  TempDir dir("quant_arch_gpt2");
  create_tiny("gpt2", (dir.path / "ck").string(), TinyOptions{});
  std::unique_ptr<Model> m = load_model((dir.path / "ck").string());
  OnnxConfig oc;
  oc.format = "onnx";
  oc.target = "ort";
  oc.quantize = quant::parse_options("int4", 32, false);
  expect_error(
      [&] { artifact::export_folder(*m, (dir.path / "ck").string(), (dir.path / "q").string(), oc); },
      {"transformer.h.0.attn.c_attn.weight", "does not support --quantize"});
  EXPECT_FALSE(fs::exists(dir.path / "q"));
}

}  // namespace
}  // namespace hfx::test
