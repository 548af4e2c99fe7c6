// The Dynamo backend's registry entries (called once from src/export/registry_table.cpp).
//
// Stage 2 patch: hfx.rope has no ATen op, so capture records its decomposition directly (the nodes
// are then named after the attention module that applied it). lower_composites does the same for a
// graph captured without the patch, so the patch is an optimisation of naming, not of correctness.
// hfx.moe likewise: no ATen op, so its dense decomposition is recorded. hfx.linear_q (--quantize) too:
// its codes are de-quantized in the graph.
#include "export/weight_dtype.h"
#include "hfx/export/registry.h"
#include "hfx/ops/op_schema.h"

namespace hfx {

void register_dynamo_entries() {
  patch_registry().push_back(decomposition_patch(
      "dynamo", 2, "hfx.rope",
      "torch has no rotary-embedding ATen op (aten has no rope); remove when one exists in core ATen"));
  patch_registry().push_back(decomposition_patch(
      "dynamo", 2, "hfx.moe",
      "core ATen has no mixture-of-experts or grouped-matmul op: the routed experts are recorded as the op "
      "table's "
      "dense form (top-k by repeated argmax, every expert on every token, weighted sum); remove when core "
      "ATen gets one"));
  patch_registry().push_back(decomposition_patch(
      "dynamo", 2, "hfx.linear_q",
      "core ATen has no weight-only quantized matmul (torchao's ops are a separate library): --quantize "
      "records the op table's decomposition, the uint8 codes split into nibbles by a gather from a [256, 2] "
      "table, (q - zero point) * scale, then aten.linear; remove when core ATen gets one"));
  program_fix_registry().push_back(
      {"dynamo",
       2,
       "weight_dtype",
       fix_weight_dtype,
       "--dtype: parameters stored in the export's weight dtype (auto: the checkpoint's), "
       "widened back to the dtype the model reads them in by one _to_copy each.",
       {Fact::weight_dtype}});
}

}  // namespace hfx
