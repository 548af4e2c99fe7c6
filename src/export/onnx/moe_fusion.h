// src/export/onnx/moe_fusion.h — hfx.moe in the ONNX backend.
//
// target=ort: ONNX Runtime's contrib com.microsoft.MoE (CPU kernel in 1.30: f32/f16, softmax over the
// router logits → top-k → optional renormalization, experts gated only as a fused SwiGLU
// G·sigmoid(alpha·G)·(L + beta) over one fc1 [E, 2I, H] whose rows interleave gate and up, FC3
// unimplemented) computes exactly an hfx.moe with act silu (alpha 1, beta 0, no clamp). Stage 3 packs
// such a node's weights into that layout (moe_pack_for_ort) and the translation emits the op. Every
// other hfx.moe (target standard: ai.onnx has no MoE op; ort with another activation) is replaced by
// the op table's dense decomposition (moe_dense_experts). Both are program fixes registered by
// register_onnx_entries(); the target comes from ExportContext::onnx_target, which the exporter sets.
#pragma once
#include <string>
#include <vector>

#include "hfx/export/registry.h"
#include "hfx/ir/graph.h"

namespace hfx::onnx_export {

class LoweringContext;

/// Stage 3 (ort): each hfx.moe that com.microsoft.MoE computes exactly gets its weights packed as
/// new parameters fc1 [E, 2I, H] (gate, up rows interleaved) and fc2 [E, H, I], attribute interleaved.
/// Others get a warning naming why. Returns whether the graph changed.
bool fix_moe_pack_for_ort(Graph& g, ExportContext& ctx, std::vector<std::string>& warnings);
/// Stage 3: every hfx.moe not packed for com.microsoft.MoE → its dense decomposition.
bool fix_moe_dense_experts(Graph& g, ExportContext& ctx, std::vector<std::string>& warnings);
/// Stage 4 translation of a packed hfx.moe → com.microsoft.MoE; throws for an unpacked one.
void moe_translation(LoweringContext& cx, const Node& n);

}  // namespace hfx::onnx_export
