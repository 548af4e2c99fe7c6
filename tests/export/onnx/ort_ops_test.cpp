// Per-op conformance of the ONNX lowering: for every op of the op table, a tiny graph traced with
// symbolic dims goes through the ONNX backend's stage-3 program fixes and is lowered (opset 18, opset 23,
// target ort), run in ONNX Runtime at two different sizes,
// and compared with the eager kernel. The cases are data: op, inputs (symbolic dims, generator),
// attributes, tolerance. A test checks that every op of the table has at least one case.
#include <gtest/gtest.h>

#include <set>

#include "export/onnx/moe_fusion.h"
#include "export/onnx/onnx_test_util.h"
#include "hfx/core/error.h"
#include "hfx/export/registry.h"
#include "hfx/ops/op_schema.h"
#include "support/op_cases.h"

namespace hfx::onnx_test {
namespace {

using op_cases::cases;
using op_cases::In;
using op_cases::make_input;
using op_cases::OpCase;

struct Config {
  int opset;
  std::string target;
};
const std::vector<Config> kConfigs = {{18, "standard"}, {23, "standard"}, {18, "ort"}};

struct Param {
  size_t c, k;
};

class OrtOpConformance : public ::testing::TestWithParam<Param> {};

TEST_P(OrtOpConformance, MatchesEagerAtTwoSizes) {
  const OpCase oc = cases()[GetParam().c];
  const Config cfg = kConfigs[GetParam().k];
  std::mt19937 rng(static_cast<uint32_t>(std::hash<std::string>{}(oc.name)));
  op_cases::CaseGraph cg = op_cases::build_case_graph(oc, rng);
  Graph& g = *cg.graph;
  const bool dims_input = cg.dims_input;
  const std::map<std::string, Tensor>& params = cg.params;

  // The backend's stage-3 program fixes (hfx.moe: packed for com.microsoft.MoE, or dense experts).
  ExportContext ctx;
  ctx.onnx_target = cfg.target;
  std::vector<std::string> warnings;
  apply_program_fixes("onnx", 3, g, ctx, warnings);
  TempDir dir(oc.name);
  onnx_export::LowerOptions lo;
  lo.opset = cfg.opset;
  lo.target = cfg.target;
  lo.gqa = &ctx.gqa;
  lo.skip_rms_norm = &ctx.skip_rms_norm;
  if (cfg.target == "standard" && cfg.opset < oc.min_opset) {
    EXPECT_THROW(lower_and_write(g, lo, dir.path), Error) << oc.op << " at opset " << cfg.opset;
    return;
  }
  std::string path = lower_and_write(g, lo, dir.path);
  rt::SessionOptions so;
  if (oc.basic_opt) so.graph_opt = rt::GraphOpt::Basic;
  rt::OrtSession sess(path, so);
  for (const auto& binding : oc.sizes) {
    SCOPED_TRACE(::testing::Message()
                 << "B=" << binding.at("B") << " S=" << binding.at("S") << " T=" << binding.at("T"));
    EagerBuilder eb;
    std::vector<Var> ev;
    rt::NamedTensors feeds;
    for (const auto& in : oc.ins) {
      if (in.name.empty()) {
        ev.push_back(Var());
        continue;
      }
      if (in.param) {
        ev.push_back(eb.wrap(params.at(in.name)));
        continue;
      }
      Tensor t = make_input(in, concrete(op_cases::symbolic_dims(in), binding), rng);
      ev.push_back(eb.wrap(t));
      feeds.push_back({in.name, to_rt(t)});
    }
    if (dims_input)
      feeds.push_back(
          {"dims", rt::RtTensor::zeros("float32", {binding.at("B"), binding.at("S"), binding.at("T")})});
    Tensor ref = eb.call(oc.op, ev, concrete_attrs(oc.attrs, binding))[0].tensor();
    auto got = sess.run(feeds);
    ASSERT_EQ(got.size(), 1u);
    double err = max_rel_err(got[0].second, ref);
    ASSERT_GE(err, 0) << "shape mismatch: ORT " << ::testing::PrintToString(got[0].second.shape)
                      << " vs eager " << shape_to_string(ref.shape());
    EXPECT_LE(err, oc.tol) << oc.op;
  }
}

std::vector<Param> all_params() {
  std::vector<Param> p;
  for (size_t c = 0; c < cases().size(); c++)
    for (size_t k = 0; k < kConfigs.size(); k++) p.push_back({c, k});
  return p;
}

INSTANTIATE_TEST_SUITE_P(Ops, OrtOpConformance, ::testing::ValuesIn(all_params()), [](const auto& info) {
  const Config& k = kConfigs[info.param.k];
  return cases()[info.param.c].name + "_opset" + std::to_string(k.opset) + "_" + k.target;
});

TEST(OnnxOpConformance, EveryOpOfTheTableHasACaseAndATranslation) {
  std::set<std::string> covered;
  for (const auto& c : cases()) covered.insert(c.op);
  const auto& table = onnx_export::onnx_translation_table();
  for (const OpSchema* s : all_op_schemas()) {
    EXPECT_TRUE(covered.count(s->name)) << "no conformance case for " << s->name;
    EXPECT_TRUE(table.count(s->name)) << "no ONNX translation for " << s->name;
  }
}

}  // namespace
}  // namespace hfx::onnx_test
