// src/export/onnx/quant_lowering.h — the ONNX translation of hfx.linear_q (weight-only quantized linear).
#pragma once
#include "export/onnx/lowering.h"

namespace hfx::onnx_export {

/// target=ort: com.microsoft.MatMulNBits over the codes as they are stored (hfx/quant/quantize.h's
/// layout is MatMulNBits'). target=standard (opset ≥ 21): the weight as a uint4/uint8 initializer
/// [K, N] with blocked scales and zero points [K / group, N], DequantizeLinear (axis 0, block_size) into
/// MatMul — the pattern ONNX Runtime fuses back into MatMulNBits when it loads the graph.
void linear_q_translation(LoweringContext& cx, const Node& n);

/// hfx.embedding_q on either target: Gather of the packed rows (codes, scales, zero points), unpacked with
/// Mod / BitShift and de-quantized with Sub and Mul — standard ops only, exact f32 (code − zp) · scale.
void embedding_q_translation(LoweringContext& cx, const Node& n);

}  // namespace hfx::onnx_export
