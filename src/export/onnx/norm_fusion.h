// src/export/onnx/norm_fusion.h — the stage-3 program fix skip_rms_norm_fusion (target ort).
//
// ONNX Runtime's com.microsoft SkipSimplifiedLayerNormalization computes a residual add and the RMSNorm that
// follows it in one CPU kernel, its 4th output being the sum. The pass decides per hfx.rms_norm whether it
// applies — the norm reads an aten.add.Tensor of two operands of its own type (no broadcast), rank 3,
// computed in float32 — and records it in ExportContext::skip_rms_norm; a residual add that no node reads
// before its fused norm (and that is no graph output) is recorded as absorbed and emits nothing, so no dead
// node is left for an IR fix to remove. The stage-4 translation of hfx.rms_norm follows the record.
#pragma once
#include <string>
#include <vector>

#include "hfx/export/registry.h"
#include "hfx/ir/graph.h"

namespace hfx::onnx_export {

/// Reads ExportContext::onnx_target, writes ExportContext::skip_rms_norm; leaves the graph unchanged.
/// Returns whether it recorded a fusion.
bool fix_skip_rms_norm_fusion(Graph& g, ExportContext& ctx, std::vector<std::string>& warnings);

}  // namespace hfx::onnx_export
