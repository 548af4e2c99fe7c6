// hfx/export/gguf.h — the GGUF backend: one self-contained file for llama.cpp (`hfx export --format gguf`).
//
// llama.cpp runs its own graph per architecture, so a GGUF export captures no program: it writes the weights
// under llama.cpp's tensor names and layouts (convert_hf_to_gguf.py's transforms: the llama arch's q/k rows
// in interleaved rope order, Gemma's norms + 1, Mamba's A = -exp(A_log), ...), the metadata its loader reads
// (`general.*`, `<arch>.*`) and the tokenizer (`tokenizer.ggml.*`, the chat template). Weights stream: one
// tensor is read, converted and written at a time. Block formats are ggml's reference quantizers, byte for
// byte (ggml-quants.c quantize_row_q8_0_ref, q4_0_ref, q5_0_ref, q4_K_ref, q6_K_ref: what llama-quantize
// writes without an importance matrix; gguf-py's gguf.quants and llama.cpp's released libggml-base are the
// tests' oracles).
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "hfx/export/exporter.h"

namespace hfx {

/// ggml's tensor types that hfx writes (ggml.h's numbering).
enum class GgmlType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  BF16 = 30
};

/// The name GGUF tools print ("f32", "q8_0", ...).
const char* ggml_type_name(GgmlType t);
/// Elements per block (256 for the k-quants, 32 for q8_0 / q5_0 / q4_0, 1 for the float types) and bytes per
/// block.
int64_t ggml_block_size(GgmlType t);
int64_t ggml_block_bytes(GgmlType t);
/// llama.cpp's general.file_type (llama_ftype) of a file whose matrices are of type `t`.
uint32_t ggml_file_type(GgmlType t);
/// Every type hfx reads and writes, and whether a raw type number is one of them.
std::vector<GgmlType> ggml_types();
bool ggml_type_known(uint32_t t);
/// One row of `x` (x.size() a multiple of the block size) in type `t`, appended to `out`.
void ggml_encode_row(GgmlType t, std::span<const float> x, std::vector<uint8_t>& out);

/// `--format gguf`. `dtype` is the float type of the weight matrices (auto: the checkpoint's; f32, f16,
/// bf16); `quantize` ("" or "q8_0", "q4_0", "q4_k", "q4_k_m", "q5_k_m", "q6_k") quantizes them in ggml's
/// blocks instead. As convert_hf_to_gguf.py does, 1-D tensors and norms stay f32, and a matrix whose rows are
/// not whole blocks falls back to f16.
struct GgufConfig : ExportConfig {
  GgufConfig() { format = "gguf"; }
  std::string
      quantize;  ///< "", "q8_0", "q4_0", "q4_k", "q4_k_m", "q5_k_m" (llama-quantize's mixes) or "q6_k"
  /// The checkpoint's own dtype: what convert_hf_to_gguf.py's --outtype auto keeps.
  DType auto_dtype(DType checkpoint) const override { return checkpoint; }
  /// The type the weight matrices are stored in.
  GgmlType matrix_type(DType checkpoint) const;
  nlohmann::json precision(DType checkpoint) const override;
  nlohmann::json to_json() const override;
  void from_json(const nlohmann::json& j) override;
  std::unique_ptr<ExportConfig> clone() const override { return std::make_unique<GgufConfig>(*this); }
};

/// One tensor of a GGUF file as GgufReader reads its table.
struct GgufTensor {
  std::string name;
  Shape shape;  ///< torch order (outermost first; the file lists the innermost first)
  GgmlType type = GgmlType::F32;
  uint64_t offset = 0;  ///< of its data, from the start of the file
  uint64_t bytes = 0;
};

/// A GGUF v3 file read back: its key/value pairs and tensor table, and any tensor decoded to f32 (ggml's
/// dequantize_row_*). Every length, count and offset is checked against the file's size; a truncated or
/// crafted file, a tensor type other than those hfx writes, or a duplicate key or tensor name throws
/// hfx::Error("gguf", ...).
class GgufReader {
 public:
  explicit GgufReader(const std::string& path);
  /// Every key/value pair: numbers, bools, strings, arrays of them (JSON's types).
  const nlohmann::json& metadata() const { return meta_; }
  /// The tensor table in the file's order.
  const std::vector<GgufTensor>& tensors() const { return tensors_; }
  /// The tensor named `name`, or null.
  const GgufTensor* find(const std::string& name) const;
  /// `t`'s values in f32, in its shape.
  Tensor decode(const GgufTensor& t) const;

 private:
  std::string path_;
  std::shared_ptr<const char> map_;  ///< the file, mapped read-only
  size_t size_ = 0;
  nlohmann::json meta_ = nlohmann::json::object();
  std::vector<GgufTensor> tensors_;
};

/// `n` values of type `type` (whole blocks) at `p`, decoded to f32 into `out` (ggml's dequantize_row_*).
void ggml_decode(GgmlType type, const uint8_t* p, int64_t n, float* out);

/// A GGUF file read back into hfx's eager engine (read_back_gguf).
struct GgufReadBack {
  /// The reference's architecture and config over the file's weights (decoded to f32, llama.cpp's layouts
  /// undone) and llama.cpp's GELU (the tanh GELU as ggml's f16 lookup, activation "gelu_ggml"): what the file
  /// computes, the reference llama.cpp is held to.
  std::unique_ptr<Model> model;
  GgmlType matrix = GgmlType::F32;  ///< the type of the file's weight matrices
  bool ggml_gelu = false;           ///< the model's tanh GELU became ggml's table ("gelu_ggml")
  /// What differs from the file hfx would write for the reference: a tensor missing, extra, of another shape
  /// or type, or a weight further from the reference's than its type's rounding allows. Empty: none.
  std::vector<std::string> problems;
  /// Per file type: {"weights", "max_rel_error" (to the tensor's max |w|), "bound", "worst" (its name)}.
  nlohmann::json weights = nlohmann::json::object();
};
/// Reads `file` back as `reference`'s weights: the tensors the exporter writes for `reference` (by their
/// names, with the matrix type that matches the file), each decoded and its transform undone. Throws
/// hfx::Error("gguf", ...) for a model_type GGUF does not map, hfx::Error("model", ...) when the weights read
/// back do not make the model (a tensor missing).
GgufReadBack read_back_gguf(const GgufReader& file, const Model& reference);
/// The base model's config and weights from a checkpoint llama.cpp's bert arch runs (BertModel,
/// DistilBertModel, RobertaModel by config.json's model_type; the masked-LM form's weights without their
/// `<model_type>.` scope, a zero pooler where the base model has one and the checkpoint none): the model the
/// file holds, which read_back_gguf builds and `hfx verify` compares the checkpoint as.
void as_bert_model(nlohmann::json& config, std::map<std::string, Tensor>& weights);

/// The values GgufConfig::quantize takes.
inline constexpr const char* kGgufQuantTypes[] = {"q8_0", "q4_0", "q4_k", "q4_k_m", "q5_k_m", "q6_k"};

/// llama.cpp's architecture name for a model_type hfx exports to GGUF, or "" where llama.cpp runs none hfx
/// maps (the exporter then refuses before writing anything).
std::string gguf_arch_of(const std::string& model_type);
/// Whether llama.cpp's `arch` is an embedding model's (bert, modern-bert): pooled vectors, no generation.
bool gguf_embedding_arch(const std::string& arch);
/// Why a model of `model_type` and `structure` cannot be written as GGUF ("expected ..., got ..."), or ""
/// when it can: a decoder-only model_type gguf_arch_of maps, or an encoder of an embedding arch.
/// The exporter and `hfx inspect` both ask this.
std::string gguf_refusal(const std::string& model_type, Structure structure);
/// The model_types gguf_arch_of maps, in the registry's order.
std::vector<std::string> gguf_model_types();

}  // namespace hfx
