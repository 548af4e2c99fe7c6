// hfx/export/gguf.h — the GGUF backend: one self-contained file for llama.cpp (`hfx export --format gguf`).
//
// llama.cpp runs its own graph per architecture, so a GGUF export captures no program: it writes the weights
// under llama.cpp's tensor names and layouts (convert_hf_to_gguf.py's transforms: the llama arch's q/k rows
// in interleaved rope order, Gemma's norms + 1, Mamba's A = -exp(A_log), ...), the metadata its loader reads
// (`general.*`, `<arch>.*`) and the tokenizer (`tokenizer.ggml.*`, the chat template). Weights stream: one
// tensor is read, converted and written at a time. Block formats are ggml's reference quantizers, byte for
// byte (ggml-quants.c quantize_row_q8_0_ref / q4_0_ref; gguf-py's gguf.quants is the test's oracle).
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "hfx/export/exporter.h"

namespace hfx {

/// ggml's tensor types that hfx writes (ggml.h's numbering).
enum class GgmlType : uint32_t { F32 = 0, F16 = 1, Q4_0 = 2, Q8_0 = 8, BF16 = 30 };

/// The name GGUF tools print ("f32", "q8_0", ...).
const char* ggml_type_name(GgmlType t);
/// Elements per block (32 for q8_0 / q4_0, 1 for the float types) and bytes per block.
int64_t ggml_block_size(GgmlType t);
int64_t ggml_block_bytes(GgmlType t);
/// One row of `x` (x.size() a multiple of the block size) in type `t`, appended to `out`.
void ggml_encode_row(GgmlType t, std::span<const float> x, std::vector<uint8_t>& out);

/// `--format gguf`. `dtype` is the float type of the weight matrices (auto: the checkpoint's; f32, f16,
/// bf16); `quantize` ("" or "q8_0", "q4_0") quantizes them in ggml's blocks instead. As convert_hf_to_gguf.py
/// does, 1-D tensors and norms stay f32, and a matrix whose rows are not whole blocks falls back to f16.
struct GgufConfig : ExportConfig {
  GgufConfig() { format = "gguf"; }
  std::string quantize;  ///< "", "q8_0" or "q4_0"
  /// The checkpoint's own dtype: what convert_hf_to_gguf.py's --outtype auto keeps.
  DType auto_dtype(DType checkpoint) const override { return checkpoint; }
  /// The type the weight matrices are stored in.
  GgmlType matrix_type(DType checkpoint) const;
  nlohmann::json precision(DType checkpoint) const override;
  nlohmann::json to_json() const override;
  void from_json(const nlohmann::json& j) override;
  std::unique_ptr<ExportConfig> clone() const override { return std::make_unique<GgufConfig>(*this); }
};

/// The values GgufConfig::quantize takes.
inline constexpr const char* kGgufQuantTypes[] = {"q8_0", "q4_0"};

/// llama.cpp's architecture name for a model_type hfx exports to GGUF, or "" where llama.cpp runs none hfx
/// maps (the exporter then refuses before writing anything).
std::string gguf_arch_of(const std::string& model_type);
/// The model_types gguf_arch_of maps, in the registry's order.
std::vector<std::string> gguf_model_types();

}  // namespace hfx
