// hfx/quant/checkpoint_formats.h — pre-quantized GPTQ and AWQ checkpoints, read into (and written from)
// the MatMulNBits layout of hfx/quant/quantize.h without going through float.
//
// config.json's `quantization_config` says which format a checkpoint uses:
//   GPTQ (AutoGPTQ / GPTQModel, `"quant_method": "gptq"`, bits 4 or 8): per linear layer
//     qweight int32 [K·bits/32, N]  codes packed along K, element k in bits (k mod 32/bits)·bits …
//     qzeros  int32 [K/group, N·bits/32]  zero points packed along N the same way; checkpoint_format
//                                         "gptq" (v1, the default) stores zero − 1, "gptq_v2" the zero
//     scales  fp16  [K/group, N]
//     g_idx   int32 [K]  (optional) the group of each input feature; only k / group is accepted (act-order
//                        checkpoints, desc_act with a permuted g_idx, are refused)
//   AWQ (AutoAWQ GEMM, `"quant_method": "awq"`, `"version": "gemm"`, bits 4):
//     qweight int32 [K, N/8]  codes packed along N in AutoAWQ's order: output n = 8c + j of column c sits
//                             in nibble [0, 4, 1, 5, 2, 6, 3, 7][j]
//     qzeros  int32 [K/group, N/8]  packed the same way
//     scales  fp16  [K/group, N]
// and W[n, k] = (q[k, n] − zero[k / group, n]) · scale[k / group, n] in both.
//
// Reading re-packs the codes into MatMulNBits' [N, blocks, blob] layout with the scales as f32 (exact)
// and blocks of min(group, 128) features (a group of 256 or a whole row, group_size −1, is cut into
// blocks that repeat its scale and zero point, which is exact too). Symmetric GPTQ (`sym`: every zero
// point 2^(bits−1)) drops the zero points, as MatMulNBits defaults them.
#pragma once
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "hfx/core/tensor.h"
#include "hfx/quant/quantize.h"

namespace hfx::quant {

/// What a checkpoint's quantization_config says.
struct CheckpointQuant {
  std::string method;        ///< "gptq" | "awq"
  int bits = 4;              ///< 4 or 8 (AWQ: 4)
  int64_t group_size = 128;  ///< features per group; -1 = one group per row
  bool symmetric = true;     ///< GPTQ `sym`; AWQ: false (zero_point true is required)
  bool v2 = false;           ///< GPTQ checkpoint_format "gptq_v2" (zero points stored as they are)
};

/// Reads config.json's quantization_config; throws hfx::Error("quant", ...) for a method other than gptq /
/// awq, bits other than 4 / 8 (AWQ 4), a group size that is not −1 or a positive multiple of 32, GPTQ
/// desc_act with a non-trivial g_idx (checked per tensor) and AWQ versions other than "gemm".
CheckpointQuant parse_checkpoint_quant(const nlohmann::json& quantization_config);

/// The MatMulNBits block size a checkpoint group of `group` features (−1: K) on a row of K becomes.
int64_t block_size_for(int64_t group, int64_t K);

/// The tensors of one quantized linear layer, as the checkpoint stores them.
struct PackedLinear {
  Tensor qweight, qzeros, scales, g_idx;  ///< g_idx undefined when absent
};

/// GPTQ / AWQ tensors of layer `prefix` (e.g. "model.layers.0.self_attn.q_proj") → MatMulNBits layout.
/// Every dtype and shape is checked against `cq` and the other tensors; errors name the tensor
/// ("[quant] expected 'P.qzeros' as int32 [8, 16] (GPTQ, 4 bits, group 128, N 128), got int32 [8, 32]").
QuantizedWeight from_packed(const CheckpointQuant& cq, const PackedLinear& t, const std::string& prefix);

/// The inverse for a weight quantized with groups of q.group_size (create-tiny's GPTQ / AWQ checkpoints):
/// scales rounded to fp16 as the formats store them. GPTQ v1 cannot store a zero point of 0 (it writes
/// zero − 1): throws naming `prefix` (use symmetric quantization).
PackedLinear to_packed(const CheckpointQuant& cq, const QuantizedWeight& q, const std::string& prefix);

/// The quantization_config a checkpoint of `cq` carries (what to_packed's output needs to be read back).
nlohmann::json checkpoint_quant_json(const CheckpointQuant& cq);

/// The QuantOptions equal to a checkpoint read with from_packed on rows of K features (bits, block size,
/// symmetric), so exports and references name the same codes.
QuantOptions options_of(const CheckpointQuant& cq, int64_t K);

}  // namespace hfx::quant
