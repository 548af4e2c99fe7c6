// Mixture-of-experts decoders in ONNX Runtime, step by step against the eager engine: a left-padded batch
// of 3 (prompts of 48, 21 and 3 tokens, so one row's prefill is long and two rows are padded) through
// the merged model.onnx, then 32 greedy decode steps. Every step's last-position logits agree with eager
// to ≤ 1e-4 (relative to max(1, |ref|)), and ORT's argmax is eager's at every step, for opset 18 and
// --target ort. (OrtExportModels covers prefill/decode/merged graphs with the present KV; OrtGeneration
// and TransformersJs the tokens through each consumer.) With --target ort every sparse layer is one
// com.microsoft.MoE in each graph (moe_fusion.h) and the dense expert form is gone; opset 18 has none.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>

#include "export/onnx/onnx_test_util.h"
#include "hfx/core/error.h"
#include "hfx/export/exporter.h"
#include "hfx/export/onnx.h"
#include "hfx/export/registry.h"
#include "hfx/runtime/generator.h"
#include "models/model_test_util.h"

namespace hfx::onnx_test {
namespace {

constexpr double kTol = 1e-4;

struct P {
  std::string arch, target;
};

class OrtMoe : public ::testing::TestWithParam<P> {};

double rel_err(const std::vector<float>& a, const std::vector<float>& b) {
  double e = 0;
  for (size_t i = 0; i < a.size(); i++)
    e = std::max(
        e, std::fabs(static_cast<double>(a[i]) - b[i]) / std::max(1.0, std::fabs(static_cast<double>(b[i]))));
  return e;
}

// (com.microsoft.MoE nodes, ArgMax nodes) of an ONNX file.
std::pair<int, int> moe_and_argmax(const fs::path& file) {
  onnx::ModelProto m;
  std::ifstream in(file, std::ios::binary);
  EXPECT_TRUE(m.ParseFromIstream(&in)) << file;
  int moe = 0, argmax = 0;
  for (const auto& n : m.graph().node()) {
    moe += n.op_type() == "MoE" && n.domain() == "com.microsoft";
    argmax += n.op_type() == "ArgMax";
  }
  return {moe, argmax};
}

TEST_P(OrtMoe, LeftPaddedBatch3LongPrefillAnd32DecodeStepsMatchEager) {
  const P& p = GetParam();
  std::shared_ptr<const CausalLM> model(test::tiny_in_memory(p.arch, 5));
  TempDir dir(p.arch + "_moe_" + p.target);
  OnnxConfig oc;
  oc.target = p.target;
  auto exp = make_onnx_exporter();
  exp->export_for_generation(*model, CaptureOptions{}, {{"default", &oc}}, dir.path.string());
  int sparse = 0;  // one router per sparse layer: <block>.gate, GraniteMoE's <block>.router.layer
  auto ends = [](const std::string& w, const std::string& t) {
    return w.size() > t.size() && w.compare(w.size() - t.size(), t.size(), t) == 0;
  };
  for (const auto& [w, shape] : architecture(p.arch).weight_specs(model->config()))
    sparse += ends(w, ".gate.weight") || ends(w, ".router.layer.weight");
  ASSERT_GT(sparse, 0);
  for (const char* comp : {"prefill", "decode", "model"}) {
    auto [moe, argmax] = moe_and_argmax(dir.path / "onnx" / (std::string(comp) + ".onnx"));
    // The dense form picks the top-k by k ArgMax nodes per layer; the fused op leaves none.
    EXPECT_EQ(moe, p.target == "ort" ? sparse : 0) << comp;
    if (p.target == "ort")
      EXPECT_EQ(argmax, 0) << comp;
    else
      EXPECT_GT(argmax, 0) << comp;
  }
  auto ort = make_ort_engine(dir.path.string(), 2);
  EagerEngine eager(model);

  std::vector<std::vector<int64_t>> rows(3);
  for (int64_t i = 0; i < 48; i++) rows[0].push_back((i * 37 + 11) % 500 + 3);
  for (int64_t i = 0; i < 21; i++) rows[1].push_back((i * 53 + 7) % 500 + 3);
  rows[2] = {400, 6, 91};
  test::Batch b = test::left_pad(rows);
  const int64_t B = b.B, V = model->config().vocab_size;
  std::vector<int64_t> ids = b.ids, mask = b.mask, pos = b.pos;
  std::vector<float> le, lo;
  eager.step(ids, mask, pos, B, b.T, le);
  ort->step(ids, mask, pos, B, b.T, lo);
  double worst = rel_err(lo, le);
  EXPECT_LE(worst, kTol) << "prefill";
  std::vector<int64_t> last(B);
  for (int64_t r = 0; r < B; r++) last[r] = pos[r * b.T + b.T - 1];
  for (int step = 0; step < 32; step++) {
    std::vector<int64_t> next(B), npos(B);
    for (int64_t r = 0; r < B; r++) {
      auto beg = le.begin() + r * V, beg_o = lo.begin() + r * V;
      next[r] = std::max_element(beg, beg + V) - beg;
      EXPECT_EQ(std::max_element(beg_o, beg_o + V) - beg_o, next[r]) << "step " << step << " row " << r;
      npos[r] = ++last[r];
    }
    std::vector<int64_t> m2;
    const int64_t T = static_cast<int64_t>(mask.size()) / B;
    for (int64_t r = 0; r < B; r++) {
      m2.insert(m2.end(), mask.begin() + r * T, mask.begin() + (r + 1) * T);
      m2.push_back(1);
    }
    mask = m2;
    eager.step(next, mask, npos, B, 1, le);
    ort->step(next, mask, npos, B, 1, lo);
    double e = rel_err(lo, le);
    EXPECT_LE(e, kTol) << "decode step " << step;
    worst = std::max(worst, e);
  }
  std::printf(
      "  [%s %s] batch 3 left-padded, 48-token prefill + 32 decode steps: worst relative error %.3g\n",
      p.arch.c_str(), p.target.c_str(), worst);
}

// The two stage-3 registry entries are what decides the graph: without moe_pack_for_ort, --target ort
// keeps the dense form; without moe_dense_experts, the standard export has no lowering for hfx.moe and
// fails naming the fix.
TEST(OrtMoeRegistry, EachStage3EntryChangesTheExport) {
  std::shared_ptr<const CausalLM> model(test::tiny_in_memory("mixtral", 5));
  auto without = [&](const std::string& fix, const std::string& target) {
    auto& reg = program_fix_registry();
    auto it = std::find_if(reg.begin(), reg.end(),
                           [&](const ProgramFixEntry& e) { return e.backend == "onnx" && e.name == fix; });
    EXPECT_NE(it, reg.end()) << fix;
    ProgramFixEntry saved = *it;
    size_t at = static_cast<size_t>(it - reg.begin());
    reg.erase(it);
    TempDir dir("moe_without_" + fix);
    OnnxConfig oc;
    oc.target = target;
    std::string error;
    try {
      make_onnx_exporter()->export_for_generation(*model, CaptureOptions{}, {{"default", &oc}},
                                                  dir.path.string());
    } catch (const Error& e) {
      error = e.what();
    }
    reg.insert(reg.begin() + static_cast<ptrdiff_t>(at), saved);
    int moe = -1;
    if (error.empty()) moe = moe_and_argmax(dir.path / "onnx" / "model.onnx").first;
    return std::make_pair(error, moe);
  };
  auto [err_pack, moe_pack] = without("moe_pack_for_ort", "ort");
  EXPECT_EQ(err_pack, "");
  EXPECT_EQ(moe_pack, 0) << "--target ort without moe_pack_for_ort must keep the dense experts";
  auto [err_dense, moe_dense] = without("moe_dense_experts", "standard");
  EXPECT_NE(err_dense.find("moe_dense_experts"), std::string::npos) << err_dense;
}

INSTANTIATE_TEST_SUITE_P(Moe, OrtMoe,
                         ::testing::Values(P{"mixtral", "standard"}, P{"qwen2_moe", "standard"},
                                           P{"qwen3_moe", "standard"}, P{"olmoe", "standard"},
                                           P{"granitemoe", "standard"}, P{"mixtral", "ort"},
                                           P{"qwen2_moe", "ort"}, P{"qwen3_moe", "ort"}, P{"olmoe", "ort"},
                                           P{"granitemoe", "ort"}),
                         [](const auto& i) { return i.param.arch + "_" + i.param.target; });

}  // namespace
}  // namespace hfx::onnx_test
