// Per-op conformance of the Dynamo backend: every case of tests/support/op_cases.h (at least one per op of
// the op table) is traced through the backend's stage-2 patches and fixes, its composites lowered, the
// graph serialized as an ExportedProgram (the models/model.json a .pt2 holds), and that document run by the
// test interpreter (dynamo_interpreter.h: each ATen target mapped back to an hfx kernel) at two sizes
// against the eager kernel. An op without an ATen mapping, with arguments serialized wrong, or one the
// interpreter cannot read back fails here, naming the op. hfx.linear_q runs as its decomposition (the
// codes de-quantized in the graph); hfx.embedding_q, whose models the backend refuses before capture
// (--quantize-embedding), is skipped, as lowering_coverage_test.cpp says.
#include <gtest/gtest.h>

#include <random>

#include "export/dynamo/dynamo_interpreter.h"
#include "export/dynamo/program.h"
#include "export/onnx/onnx_test_util.h"
#include "hfx/core/error.h"
#include "hfx/export/registry.h"
#include "hfx/ops/builder.h"
#include "support/op_cases.h"

namespace hfx {
namespace {

using op_cases::OpCase;

std::vector<size_t> case_indices() {
  std::vector<size_t> v;
  const auto cs = op_cases::cases();
  for (size_t c = 0; c < cs.size(); c++)
    if (cs[c].op != "hfx.embedding_q") v.push_back(c);
  return v;
}

class DynamoOpConformance : public ::testing::TestWithParam<size_t> {};

// The tensor a placeholder of the program stands for: a lifted parameter or constant, else the next user
// input.
Tensor placeholder(const dynamo::SerializedProgram& sp, const nlohmann::json& spec,
                   const std::vector<Tensor>& feeds, size_t& user) {
  for (const char* kind : {"parameter", "tensor_constant"}) {
    if (!spec.contains(kind)) continue;
    const std::string fqn =
        spec[kind][std::string(kind) == "parameter" ? "parameter_name" : "tensor_constant_name"];
    for (const auto* lifted : {&sp.parameters, &sp.constants})
      for (const auto& l : *lifted)
        if (l.fqn == fqn) return l.value->data;
    HFX_THROW("test", "expected lifted tensor '{}' in the program", fqn);
  }
  return feeds.at(user++);
}

TEST_P(DynamoOpConformance, MatchesEagerAtTwoSizes) {
  const OpCase oc = op_cases::cases()[GetParam()];
  std::mt19937 rng(static_cast<uint32_t>(std::hash<std::string>{}(oc.name)));
  ExportContext ctx;
  op_cases::CaseGraph cg;
  {
    PatchScope patches(ctx, "dynamo", 2);
    cg = op_cases::build_case_graph(oc, rng, &ctx.patches);
  }
  Graph& g = *cg.graph;
  std::vector<std::string> warnings;
  apply_node_fixes("dynamo", 2, g);
  apply_program_fixes("dynamo", 2, g, ctx, warnings);
  dynamo::lower_composites(g);
  g.eliminate_dead_code();
  dynamo::SerializedProgram sp;
  try {
    sp = dynamo::serialize_program(g);
  } catch (const Error& e) {
    FAIL() << oc.op << " does not serialize as an ExportedProgram: " << e.what();
  }
  const nlohmann::json& graph = sp.program["graph_module"]["graph"];
  const nlohmann::json& specs = sp.program["graph_module"]["signature"]["input_specs"];
  for (const auto& binding : oc.sizes) {
    SCOPED_TRACE(::testing::Message()
                 << "B=" << binding.at("B") << " S=" << binding.at("S") << " T=" << binding.at("T"));
    const op_cases::CaseRun run = op_cases::eager_case_run(oc, cg, binding, rng);
    const std::vector<Tensor>& feeds = run.feeds;
    const Tensor& ref = run.ref;
    dynamo::interp::Interpreter it;
    size_t user = 0;
    for (size_t i = 0; i < specs.size(); i++)
      it.tensors[graph["inputs"][i]["as_tensor"]["name"]] = placeholder(sp, specs[i], feeds, user);
    try {
      it.run(graph);
    } catch (const Error& e) {
      FAIL() << oc.op << ": the written program does not run in the interpreter: " << e.what();
    }
    const Tensor out = it.tensors.at(graph["outputs"][0]["as_tensor"]["name"]);
    ASSERT_EQ(out.shape(), ref.shape()) << oc.op;
    const double err = op_cases::max_rel_diff(out, ref);
    EXPECT_LE(err, oc.tol) << oc.op;
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, DynamoOpConformance, ::testing::ValuesIn(case_indices()),
                         [](const auto& info) { return op_cases::cases()[info.param].name; });

}  // namespace
}  // namespace hfx
