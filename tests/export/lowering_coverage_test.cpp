// Every op of the op table has a way through every backend: ONNX (OnnxOpConformance checks its translation
// table), ExecuTorch and Dynamo here — the op is in the backend's lowering table, or a patch of one of the
// backend's declared stages decomposes it before lowering, or one of its node fixes rewrites it away
// (NodeFixEntry::ops), or the backend refuses the models that carry it
// before capture (quantized weights: ExecuTorch and Dynamo refuse --quantize and pre-quantized
// checkpoints). A new op without any of them fails this test naming the op and the backend, instead of an
// export that meets it later.
#include <gtest/gtest.h>

#include <set>

#include "export/dynamo/aten_table.h"
#include "export/executorch/method_emitter.h"
#include "hfx/export/registry.h"
#include "hfx/ops/op_schema.h"
#include "support/registry_ops.h"

namespace {

// Ops whose models a backend refuses before capture, with where it does.
const std::map<std::string, std::string> kRefusedByExecutorchAndDynamo = {
    {"hfx.linear_q",
     "quantized weights: no portable kernel (ExecutorchConfig refuses --quantize but on --backend xnnpack, "
     "whose partitioner takes it: PteOpConformance.linear_q_int4_sym_xnnpack); dynamo decomposes it (a "
     "stage-2 patch: DynamoOpConformance.linear_q_*)"},
    {"hfx.embedding_q", "quantized embedding table: refused with --quantize-embedding by both"},
};

using hfx::testsupport::ops_rewritten_by;

}  // namespace

TEST(LoweringCoverage, EveryOpLowersDecomposesOrIsRefusedOnExecutorchAndDynamo) {
  const auto& et = hfx::et::detail::lowering_table();
  const std::set<std::string> et_patched = ops_rewritten_by("executorch"),
                              dyn_patched = ops_rewritten_by("dynamo");
  int checked = 0;
  for (const hfx::OpSchema* s : hfx::all_op_schemas()) {
    const bool refused = kRefusedByExecutorchAndDynamo.count(s->name) > 0;
    EXPECT_TRUE(et.count(s->name) || et_patched.count(s->name) || refused)
        << s->name
        << ": no ExecuTorch lowering (src/export/executorch/pte_lowering_table.cpp), no executorch "
        << "patch or node fix that removes it, and not refused";
    EXPECT_TRUE(hfx::dynamo::detail::find_entry(s->name) || dyn_patched.count(s->name) || refused)
        << s->name
        << ": no ATen entry (src/export/dynamo/aten_table.cpp), no dynamo patch that decomposes it, "
        << "and not refused";
    checked++;
  }
  EXPECT_GT(checked, 50);
  // The refusal list names only ops that exist and that the backends really lack.
  for (const auto& [op, why] : kRefusedByExecutorchAndDynamo) {
    EXPECT_NE(hfx::find_op_schema(op), nullptr) << op;
    EXPECT_FALSE(et.count(op)) << op << " is lowered after all: drop it from the refusal list";
  }
}
