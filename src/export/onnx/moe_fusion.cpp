// hfx.moe for the ONNX backend: packing for com.microsoft.MoE (target=ort), the dense fallback, and
// the translation. See moe_fusion.h for what the fused op computes and why only act silu maps onto it.
#include "export/onnx/moe_fusion.h"

#include <fmt/format.h>

#include "export/onnx/lowering.h"
#include "hfx/core/error.h"
#include "hfx/passes/pass.h"

namespace hfx::onnx_export {
namespace {

// The data behind a weight input: a parameter or constant, possibly through the models' casts to f32.
const Tensor* weight_data(const Value* v) {
  while (v && v->kind == ValueKind::NodeOutput && v->producer->op == "aten._to_copy")
    v = v->producer->inputs.at(0);
  if (v && (v->kind == ValueKind::Param || v->kind == ValueKind::Const) && v->data.defined()) return &v->data;
  return nullptr;
}

bool packed_for_ort(const Node& n) {
  return n.attrs.b("interleaved") && n.attrs.s("act") == "silu" && n.inputs.size() == 4;
}

// Why com.microsoft.MoE cannot compute `n` ("" = it can).
std::string why_not_fused(const Node& n) {
  if (n.attrs.s("act") != "silu")
    return fmt::format("act '{}' (the CPU kernel gates experts only as SwiGLU, i.e. silu(gate)·up)",
                       n.attrs.s("act"));
  for (size_t i = 2; i < n.inputs.size(); i++)
    if (!weight_data(n.inputs[i]))
      return fmt::format("expert weight input {} is computed, not a parameter", i);
  return "";
}

// fc1 [E, 2I, H] with rows gate_0, up_0, gate_1, up_1, ... and fc2 [E, H, I], in f32.
std::pair<Tensor, Tensor> pack(const Node& n, int64_t E) {
  const bool stacked = n.inputs.size() == 4 && n.inputs[2]->type.shape.size() == 3;
  auto expert = [&](int64_t e, int which) -> Tensor {  // 0 gate [I, H], 1 up [I, H], 2 down [H, I]
    if (!stacked) return *weight_data(n.inputs[2 + 3 * e + which]);
    if (which == 2) return weight_data(n.inputs[3])->select(0, e);
    Tensor gu = weight_data(n.inputs[2])->select(0, e);
    const int64_t I = gu.size(0) / 2;
    return which == 0 ? gu.slice(0, 0, I) : gu.slice(0, I, 2 * I);
  };
  const int64_t I = expert(0, 0).size(0), H = expert(0, 0).size(1);
  std::vector<float> fc1(static_cast<size_t>(E * 2 * I * H)), fc2(static_cast<size_t>(E * H * I));
  for (int64_t e = 0; e < E; e++) {
    std::vector<float> g = expert(e, 0).to_floats(), u = expert(e, 1).to_floats(),
                       d = expert(e, 2).to_floats();
    for (int64_t r = 0; r < I; r++) {
      std::copy_n(g.data() + r * H, H, fc1.data() + (e * 2 * I + 2 * r) * H);
      std::copy_n(u.data() + r * H, H, fc1.data() + (e * 2 * I + 2 * r + 1) * H);
    }
    std::copy(d.begin(), d.end(), fc2.data() + e * H * I);
  }
  return {Tensor::from_floats({E, 2 * I, H}, fc1), Tensor::from_floats({E, H, I}, fc2)};
}

}  // namespace

bool fix_moe_pack_for_ort(Graph& g, ExportContext& ctx, std::vector<std::string>& warnings) {
  if (ctx.onnx_target != "ort") return false;
  bool changed = false;
  for (const auto& up : g.nodes()) {
    Node& n = *up;
    if (n.op != "hfx.moe" || packed_for_ort(n)) continue;
    if (std::string why = why_not_fused(n); !why.empty()) {
      warnings.push_back(
          fmt::format("hfx.moe '{}': com.microsoft.MoE does not apply ({}); dense experts", n.name, why));
      continue;
    }
    const int64_t E = n.inputs[1]->type.shape.back().value();
    auto [fc1, fc2] = pack(n, E);
    Value* w1 = g.add_param(n.name + ".fc1_gate_up_interleaved", fc1);
    Value* w2 = g.add_param(n.name + ".fc2_down", fc2);
    n.inputs = {n.inputs[0], n.inputs[1], w1, w2};
    n.attrs.set("interleaved", true);
    changed = true;
  }
  if (changed) g.eliminate_dead_code();
  return changed;
}

bool fix_moe_dense_experts(Graph& g, ExportContext& ctx, std::vector<std::string>&) {
  const bool ort = ctx.onnx_target == "ort";
  std::vector<Node*> todo;
  for (const auto& n : g.nodes())
    if (n->op == "hfx.moe" && !(ort && packed_for_ort(*n))) todo.push_back(n.get());
  for (Node* n : todo) decompose_node(g, n);
  return !todo.empty();
}

void moe_translation(LoweringContext& cx, const Node& n) {
  if (cx.target() != "ort" || !packed_for_ort(n))
    HFX_THROW("onnx",
              "expected hfx.moe '{}' to be packed for com.microsoft.MoE (target ort, act silu) or decomposed "
              "by the stage-3 "
              "fixes moe_pack_for_ort / moe_dense_experts, got target '{}', act '{}'; export through the "
              "ONNX exporter",
              n.name, cx.target(), n.attrs.s("act"));
  const int64_t E = n.inputs[1]->type.shape.back().value();
  std::string router =
      cx.op(&n, "Reshape", {cx.in_as(n, 1, DType::F32), cx.i64s({-1, E})}, "router_logits_2d");
  auto& p = cx.emit("MoE", {cx.in_as(n, 0, DType::F32), router, cx.in(n, 2), "", cx.in(n, 3)}, {cx.out(n)},
                    &n, "com.microsoft");
  LoweringContext::attr(p, "k", n.attrs.i("top_k"));
  LoweringContext::attr(p, "normalize_routing_weights", static_cast<int64_t>(n.attrs.b("normalize")));
  LoweringContext::attr(p, "activation_type", std::string("swiglu"));
  LoweringContext::attr(p, "swiglu_fusion", int64_t{1});
  LoweringContext::attr(p, "activation_alpha", 1.0);
  LoweringContext::attr(p, "activation_beta", 0.0);
}

}  // namespace hfx::onnx_export
