// Per-op conformance of the ExecuTorch backend: every case of tests/support/op_cases.h (at least one per op
// of the op table) is traced through the backend's stage-2 patches, its stage-4 program fixes and stage-5
// node fixes, written as a .pte — portable kernels only, and with the XNNPACK partitioner — and run by the
// .pte reader (its kernel table and its XNNGraph interpreter) at two sizes, against the eager kernel. An op
// that does not lower, or lowers to wrong numbers, fails here naming the op and the backend. The quantized
// ops run only where hfx's config lets them: hfx.linear_q with symmetric codes on xnnpack (ExecuTorch's
// 8da4w, and 8da8w with per-row scales; the cases feed activations on an int8 grid, which XNNPACK's per-token
// rounding keeps exact); the
// portable kernels have none (the config refuses --quantize there), as lowering_coverage_test says.
#include <gtest/gtest.h>

#include <random>

#include "export/executorch/pte_writer.h"
#include "export/onnx/onnx_test_util.h"
#include "hfx/core/error.h"
#include "hfx/export/registry.h"
#include "hfx/ops/builder.h"
#include "hfx/ops/op_schema.h"
#include "support/op_cases.h"
#include "verify/pte_reader.h"

namespace hfx {
namespace {

using op_cases::OpCase;

struct Param {
  size_t c;
  std::string backend;  // "portable" | "xnnpack"
};

std::vector<Param> all_params() {
  std::vector<Param> p;
  const auto cs = op_cases::cases();
  for (size_t c = 0; c < cs.size(); c++) {
    if (cs[c].name == "linear_q_int4_sym" || cs[c].name == "linear_q_int8_channel")
      p.push_back({c, "xnnpack"});
    if (cs[c].op == "hfx.linear_q" || cs[c].op == "hfx.embedding_q") continue;  // refused by the config
    for (const char* b : {"portable", "xnnpack"}) p.push_back({c, b});
  }
  return p;
}

class PteOpConformance : public ::testing::TestWithParam<Param> {};

TEST_P(PteOpConformance, MatchesEagerAtTwoSizes) {
  const OpCase oc = op_cases::cases()[GetParam().c];
  std::mt19937 rng(static_cast<uint32_t>(std::hash<std::string>{}(oc.name)));
  ExportContext ctx;
  op_cases::CaseGraph cg;
  {
    PatchScope torch_patches(ctx, "executorch", 2);
    cg = op_cases::build_case_graph(oc, rng, &ctx.patches);
  }
  Graph& g = *cg.graph;
  ctx.constant_dtype = DType::F32;
  std::vector<std::string> warnings;
  apply_program_fixes("executorch", 4, g, ctx, warnings);
  apply_node_fixes("executorch", 5, g);
  g.eliminate_dead_code();
  et::PteMethodSpec m;
  m.name = "forward";
  m.graph = &g;
  et::PteWriteOptions wo;
  if (GetParam().backend == "xnnpack") wo.delegate = "xnnpack";
  et::PteWriteResult r;
  try {
    r = et::write_pte({m}, {}, wo);
  } catch (const Error& e) {
    FAIL() << oc.op << " does not lower to a .pte (" << GetParam().backend << "): " << e.what();
  }
  auto prog = verify::PteProgram::load_bytes(r.bytes);
  auto& fwd = prog->method("forward");
  for (const auto& binding : oc.sizes) {
    SCOPED_TRACE(::testing::Message()
                 << "B=" << binding.at("B") << " S=" << binding.at("S") << " T=" << binding.at("T"));
    const op_cases::CaseRun run = op_cases::eager_case_run(oc, cg, binding, rng);
    const std::vector<Tensor>& feeds = run.feeds;
    const Tensor& ref = run.ref;
    std::vector<verify::PteOutput> got;
    try {
      got = fwd.run(feeds);
    } catch (const Error& e) {
      FAIL() << oc.op << " (" << GetParam().backend << ") failed in the .pte reader: " << e.what();
    }
    ASSERT_EQ(got.size(), 1u);
    const Tensor& out = std::get<Tensor>(got[0]);
    ASSERT_EQ(out.shape(), ref.shape()) << oc.op;
    const double err = op_cases::max_rel_diff(out, ref);
    EXPECT_LE(err, oc.tol) << oc.op << " (" << GetParam().backend << ")";
  }
  if (GetParam().backend == "xnnpack") RecordProperty("delegate_calls", r.methods.at(0).delegate_calls);
}

INSTANTIATE_TEST_SUITE_P(Ops, PteOpConformance, ::testing::ValuesIn(all_params()), [](const auto& info) {
  return op_cases::cases()[info.param.c].name + "_" + info.param.backend;
});

// The XNNPACK partitioner takes what its table says: the cases of the ops it has rules for, and the case of
// every op whose entry in the op table declares an XNNPACK node, become one delegate call each.
TEST(PteOpConformance, TheXnnpackPartitionerTakesItsOps) {
  std::vector<std::string> names = {"bmm", "gelu", "linear_q_int4_sym", "linear_q_int8_channel"};
  for (const auto& c : op_cases::cases())
    if (!op_schema(c.op).lower.xnnpack.empty() && c.name.find("broadcast") == std::string::npos &&
        c.name.find("int") == std::string::npos)
      names.push_back(c.name);
  EXPECT_GT(names.size(), 20u);
  for (const std::string& name : names) {
    OpCase oc;
    for (const auto& c : op_cases::cases())
      if (c.name == name) oc = c;
    ASSERT_FALSE(oc.op.empty()) << name;
    std::mt19937 rng(1);
    op_cases::CaseGraph cg = op_cases::build_case_graph(oc, rng);
    et::PteMethodSpec m;
    m.name = "forward";
    m.graph = cg.graph.get();
    et::PteWriteOptions wo;
    wo.delegate = "xnnpack";
    et::PteWriteResult r = et::write_pte({m}, {}, wo);
    EXPECT_EQ(r.methods.at(0).delegate_calls, 1) << name;
    EXPECT_EQ(r.methods.at(0).delegated_nodes, r.methods.at(0).nodes) << name;
  }
}

}  // namespace
}  // namespace hfx
