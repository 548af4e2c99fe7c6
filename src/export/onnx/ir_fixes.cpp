// Stage 5 of the ONNX exporter: fixes over the lowered onnx::ModelProto, declared here once, each with
// the reason it exists. They run after every translation, on the proto that will be written.
#include <map>
#include <set>

#include "export/onnx/lowering.h"
#include "hfx/core/error.h"

namespace hfx::onnx_export {
namespace {

// Removes nodes none of whose outputs is read (iterated to a fixed point), then initializers no node reads.
bool prune_dead(onnx::ModelProto& m, std::vector<std::string>&) {
  auto* g = m.mutable_graph();
  std::set<std::string> outputs;
  for (const auto& o : g->output()) outputs.insert(o.name());
  bool changed = false, again = true;
  while (again) {
    again = false;
    std::map<std::string, int> reads;
    for (const auto& n : g->node())
      for (const auto& i : n.input()) reads[i]++;
    google::protobuf::RepeatedPtrField<onnx::NodeProto> kept;
    for (auto& n : *g->mutable_node()) {
      bool live = false;
      for (const auto& o : n.output()) live = live || (!o.empty() && (reads.count(o) || outputs.count(o)));
      if (live)
        kept.Add()->Swap(&n);
      else
        again = changed = true;
    }
    g->mutable_node()->Swap(&kept);
  }
  std::set<std::string> reads;
  for (const auto& n : g->node())
    for (const auto& i : n.input()) reads.insert(i);
  for (const auto& o : g->output()) reads.insert(o.name());
  google::protobuf::RepeatedPtrField<onnx::TensorProto> inits;
  for (auto& t : *g->mutable_initializer()) {
    if (reads.count(t.name()))
      inits.Add()->Swap(&t);
    else
      changed = true;
  }
  g->mutable_initializer()->Swap(&inits);
  return changed;
}

// Transformers.js creates the first (empty) past from the declared input shapes, resolving only the
// batch dim; any other symbolic dim becomes 0. KV heads and head size must therefore be numbers.
bool check_fixed_kv_dims(onnx::ModelProto& m, std::vector<std::string>&) {
  for (const auto& in : m.graph().input()) {
    if (in.name().rfind("past_key_values.", 0) != 0) continue;
    const auto& sh = in.type().tensor_type().shape();
    if (sh.dim_size() != 4)
      HFX_THROW("onnx", "expected past input '{}' of rank 4 [B, Hkv, P, D], got rank {}", in.name(),
                sh.dim_size());
    for (int a : {1, 3})
      if (!sh.dim(a).has_dim_value())
        HFX_THROW("onnx",
                  "expected a fixed size at axis {} of '{}' (Transformers.js builds the empty past from it), "
                  "got '{}'",
                  a, in.name(), sh.dim(a).dim_param());
  }
  return false;
}

}  // namespace

std::vector<OnnxIrFix>& onnx_ir_fixes() {
  static std::vector<OnnxIrFix> fixes = {
      {"prune_dead_nodes", prune_dead,
       "the exporter's own dead-code elimination of the ModelProto: nodes and initializers no output "
       "depends on (a translation's helper values, a shape read only by a guard the graph drops); ORT keeps "
       "dead nodes when graph optimization is off and warns about unused initializers. Fusions do not rely "
       "on it: what a fused op computes alone is not emitted (skip_rms_norm_fusion, gqa_fusion). Permanent."},
      {"check_fixed_kv_dims", check_fixed_kv_dims,
       "Transformers.js 4.x builds the first empty past_key_values from the declared input shapes resolving "
       "only the "
       "batch dim; a symbolic head count or head size becomes 0 and the first run fails. Remove when "
       "Transformers.js "
       "reads head sizes from config.json."},
  };
  return fixes;
}

}  // namespace hfx::onnx_export
