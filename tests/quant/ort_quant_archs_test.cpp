// Every architecture of the model library exports with --quantize int4 and int8 (ONNX, --target ort:
// MatMulNBits at accuracy level 0, the eager kernels' math) and passes `hfx verify` against the eager
// model quantized the same way; the graphs hold MatMulNBits nodes, so the quantization is not a label.
// What is not quantized: embeddings, norms, MoE experts, and the vision towers / projectors of image-text
// models (their language model is). gpt2's Conv1D weights (stored [in, out]) are quantized transposed.
#include <gtest/gtest.h>

#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "hfx/artifact/export_folder.h"
#include "hfx/export/exporter.h"
#include "hfx/models/quantize_model.h"
#include "hfx/models/tiny.h"
#include "hfx/verify/verify.h"
#include "models/model_test_util.h"
#include "quant/prequant_test_util.h"

namespace hfx::test {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> archs() {
  std::vector<std::string> r;
  for (const Architecture* a : all_architectures()) r.push_back(a->model_type);
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

// The codes mean the float weights, gpt2's transposed Conv1D codes included: eager logits of the int8 model
// stay near the float model's. Measured max |Δ|: gpt2 0.054 (max |logit| 2.75), llama 0.043 (3.23); a
// weight quantized in the wrong orientation or order moves logits by about their own size.
TEST(QuantArchs, Int8StaysNearTheFloatModel) {
  for (const char* arch : {"gpt2", "llama"}) {
    TempDir dir(std::string("quant_arch_near_") + arch);
    create_tiny(arch, dir.path.string(), TinyOptions{});
    std::shared_ptr<const Model> f(load_model(dir.path.string()));
    std::shared_ptr<const Model> q(quant::quantize_model(*f, quant::parse_options("int8", 32, false)));
    auto logits = [](const Model& m) {
      EagerBuilder eb;
      ForwardArgs a;
      a.input_ids = eb.wrap(ints({1, 6}, {1, 17, 42, 99, 7, 250}));
      return as_causal_lm(m).forward(eb, a).logits.tensor().contiguous().to_floats();
    };
    const std::vector<float> lf = logits(*f), lq = logits(*q);
    ASSERT_EQ(lf.size(), lq.size());
    double worst = 0;
    for (size_t i = 0; i < lf.size(); i++)
      worst = std::max(worst, std::fabs(static_cast<double>(lf[i] - lq[i])));
    EXPECT_LT(worst, 0.1) << arch;
    double mx = 0;
    for (float v : lf) mx = std::max(mx, std::fabs(static_cast<double>(v)));
    std::printf("  [%s] int8 vs float eager logits: max |diff| %.3g, max |logit| %.3g\n", arch, worst, mx);
  }
}

// --quantize-embedding quantizes the architecture's own table (gpt_neox.embed_in, not a Llama name it lacks)
// and the forward gathers from its codes; an architecture without a quantized gather (gpt2) is refused
// instead of exporting a float table under that flag.
TEST(QuantArchs, EmbeddingTableQuantizedUnderItsOwnNameOrRefused) {
  auto opts = quant::parse_options("int8", 32, false);
  opts.embedding = true;
  {
    TempDir dir("quant_embed_neox");
    create_tiny("gpt_neox", dir.path.string(), TinyOptions{});
    std::shared_ptr<const Model> f(load_model(dir.path.string()));
    std::shared_ptr<const Model> q(quant::quantize_model(*f, opts));
    EXPECT_FALSE(q->weights().has("gpt_neox.embed_in.weight"));
    EXPECT_TRUE(q->weights().has(quant::quant_names("gpt_neox.embed_in.weight").qweight));
    EagerBuilder eb;
    ForwardArgs a;
    a.input_ids = eb.wrap(ints({1, 3}, {1, 17, 42}));
    EXPECT_NO_THROW(as_causal_lm(*q).forward(eb, a));
  }
  TempDir dir("quant_embed_gpt2");
  create_tiny("gpt2", dir.path.string(), TinyOptions{});
  std::shared_ptr<const Model> f(load_model(dir.path.string()));
  try {
    quant::quantize_model(*f, opts);
    ADD_FAILURE() << "gpt2 --quantize-embedding accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "[quant] expected an architecture whose token embedding table hfx "
                  "can gather quantized with --quantize-embedding, got the decoder-only model gpt2"),
              std::string::npos)
        << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(Archs, QuantArchs, ::testing::ValuesIn(archs()),
                         [](const auto& i) { return param_name(i.param); });

}  // namespace
}  // namespace hfx::test
