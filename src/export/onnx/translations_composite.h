// src/export/onnx/translations_composite.h — private to the ONNX translation table (translations.cpp): the
// translations of the composite ops (hfx.rms_norm, hfx.rope, hfx.sdpa) per opset and target, and the two
// helpers they share with the primitive ones.
#pragma once
#include <cstdint>

#include "export/onnx/lowering.h"

namespace hfx::onnx_export::detail {

inline int64_t rank_of(const Value* v) { return static_cast<int64_t>(v->type.shape.size()); }
/// The node the context emitted last.
inline onnx::NodeProto& last(LoweringContext& cx) {
  return *cx.proto().mutable_node(cx.proto().node_size() - 1);
}

/// hfx.rms_norm: SimplifiedLayerNormalization (ort; Skip… when it follows a residual add), RMSNormalization
/// (opset 23), else primitive ops.
void rms_norm(LoweringContext& cx, const Node& n);
/// hfx.rope: com.microsoft RotaryEmbedding (ort), RotaryEmbedding (opset 23), else primitive ops.
void rope(LoweringContext& cx, const Node& n);
/// hfx.sdpa: com.microsoft GroupQueryAttention (ort, gqa_fusion.h), Attention (opset 23), else primitive ops.
void sdpa(LoweringContext& cx, const Node& n);

}  // namespace hfx::onnx_export::detail
