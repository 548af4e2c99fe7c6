// hfx/quant/quantize.h — weight-only quantization (round-to-nearest, blockwise along K).
//
// A linear weight W [N, K] (out features × in features, Hugging Face's layout) is cut into blocks of
// `group_size` consecutive input features per output row; each block gets one f32 scale and, when
// asymmetric, one unsigned zero point, and each weight becomes an unsigned code q in [0, 2^bits − 1]:
//
//     W[n, k] ≈ (q[n, k] − zp[n, k / group]) · scale[n, k / group]
//
// Asymmetric (the default): the block range [min(w, 0), max(w, 0)] is mapped onto the codes
// (scale = (max − min) / (2^bits − 1), zp = round(−min / scale)), so 0 is exact and the worst error per
// weight is scale / 2. Symmetric: zp is fixed at 2^(bits−1) and scale = max|w| / (2^(bits−1) − 1)
// (codes 1 … 2^bits − 1 are used; one code is left unused so the range is symmetric).
//
// The stored layout is com.microsoft MatMulNBits' (ONNX Runtime contrib ops), so `--target ort` writes
// the bytes as they are and the eager kernel reads the same bytes:
//   qweight      uint8 [N, K / group, group · bits / 8]  codes packed along K, low nibble first (4-bit)
//   scales       f32   [N, K / group]
//   zero_points  uint8 [N, ceil(K / group · bits / 8)]   packed like the codes (absent when symmetric:
//                                                        2^(bits−1), MatMulNBits' default)
// A quantized model keeps these three tensors in its WeightStore instead of the float weight, under
// `<weight>_q`, `<weight>_scale`, `<weight>_zero_point` (quant_names); the models' linear blocks read
// them when present (src/models/blocks.cpp), so eager generation and every export run the same math.
#pragma once
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "hfx/core/tensor.h"

namespace hfx::quant {

/// What --quantize, --group-size and --symmetric ask for.
struct QuantOptions {
  int bits = 0;         ///< 0 = no quantization, 4 or 8
  int group_size = 32;  ///< 32, 64 or 128 input features per block (a power of two, as MatMulNBits wants)
  bool symmetric = false;
  /// ONNX Runtime (`--target ort`) only: MatMulNBits with accuracy_level 4, i.e. the activations quantized
  /// to int8 per block at run time (ONNX Runtime's fast CPU path). Other math than the eager kernels' (f32
  /// activations): verify measures it against its own tolerance row ("int8-activations").
  bool int8_activations = false;
  /// Also quantize the token embedding table (`model.embed_tokens.weight` of the shared decoder blocks) the
  /// same way: gathered rows are de-quantized (hfx.embedding_q); a tied LM head reads the same codes.
  bool embedding = false;
  /// Each block scale rounded to bfloat16 before the codes are chosen (JSON "scales": "bf16"). XNNPACK's
  /// 4-bit blockwise kernels read bf16 scales (ExecuTorch's XnnpackBackend converts f32 ones at load), so
  /// the ExecuTorch xnnpack export quantizes this way and eager (hfx verify's reference) runs the very
  /// weights the delegate runs.
  bool bf16_scales = false;
  /// One scale per output row (JSON "per_channel": true), stored blockwise as every other scale — each block
  /// of a row holds the row's scale — so the layout and the eager kernel stay the same. XNNPACK's 8-bit
  /// weights are per channel (qcint8): the ExecuTorch xnnpack export of int8 quantizes this way. Symmetric
  /// codes only.
  bool per_channel = false;
  bool enabled() const { return bits != 0; }
  /// "none", "int4", "int8".
  std::string method() const;
};

/// Parses "none" | "int4" | "int8", the group size and the activations ("f32" | "int8", the latter only with
/// a method); throws hfx::Error("quant", ...).
QuantOptions parse_options(const std::string& method, int group_size, bool symmetric,
                           const std::string& activations = "f32");

/// The three tensors of one quantized weight (layout in the header comment).
struct QuantizedWeight {
  Tensor qweight, scales, zero_points;  ///< zero_points undefined when symmetric
  int bits = 0;
  int64_t group_size = 0;
  int64_t N = 0, K = 0;
  int64_t blocks() const { return K / group_size; }
};

/// Store names of a quantized weight's tensors.
struct QuantNames {
  std::string qweight, scales, zero_points;
};
QuantNames quant_names(const std::string& weight);

/// Round-to-nearest quantization of a 2-d float weight [N, K] (any float dtype). K must be a multiple
/// of the group size; throws hfx::Error("quant", ...) naming `name` otherwise.
QuantizedWeight quantize_weight(const Tensor& w, const QuantOptions& o, const std::string& name = "weight");
/// (q − zp) · scale as f32 [N, K] (tests and the standard ONNX path's reference).
Tensor dequantize(const QuantizedWeight& q);
/// Reads bits and group size back from a weight's tensor shapes (qweight [N, B, blob], scales [N, B])
/// given K; throws hfx::Error("quant", ...) naming `name` when the shapes do not fit together.
QuantizedWeight describe(const Tensor& qweight, const Tensor& scales, const Tensor& zero_points, int64_t K,
                         const std::string& name);

/// {"method": "int4", "group_size": 32, "symmetric": false, "activations": "f32", "embedding": false} (the
/// manifest / export_config form; "activations" may be absent, meaning "f32", and "embedding", meaning
/// false; "scales": "bf16" appears only with QuantOptions::bf16_scales, "per_channel": true only with
/// QuantOptions::per_channel).
nlohmann::json to_json(const QuantOptions& o);
/// The quantization an export folder was written with (its export_config.json's "quantize"; none
/// when absent). Eager references (hfx generate --engine eager, hfx verify) quantize the same way.
QuantOptions export_quantization(const std::string& export_dir);
/// The inverse of to_json; throws hfx::Error("config", ...) on unknown keys or values.
QuantOptions from_json(const nlohmann::json& j);

}  // namespace hfx::quant
