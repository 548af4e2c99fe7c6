// hfx/export/exporter.h — one exporter interface, several backends.
//
// Every backend (onnx, executorch, dynamo) implements `Exporter` with the same call shape and takes a
// config of its own that shares the common fields. Backends take any Model (hfx/models/model.h) and
// never assume a causal LM: `export_for_generation` records the real calls of the model's generation
// loop and writes each program the loop declares (prefill/decode/merged for decoder-only models; the
// encoder and the decoder with and without past for encoder-decoders; one `model` for encoders) as its
// own component; `export_model` writes one call (`opts.kind` for a causal LM). Configs round-trip through
// JSON and are found, like exporters, by format name in one registry (src/export/exporter.cpp).
#pragma once
#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "hfx/capture/capture.h"
#include "hfx/models/model.h"
#include "hfx/quant/quantize.h"

namespace hfx {

/// Fields every backend config has.
struct ExportConfig {
  virtual ~ExportConfig() = default;
  std::string format;  ///< "onnx", "executorch", "dynamo"
  bool dynamic = true;
  /// input name → axis → Dim; wins over `dynamic`.
  std::map<std::string, std::map<int, Dim>> dynamic_shapes;
  bool prefer_deferred_runtime_asserts_over_guards = true;
  /// Ranges used when `dynamic` is set and no explicit Dim names an axis.
  int64_t max_batch = 64;
  int64_t max_sequence = 4096;
  /// The bound this config puts on every sequence and past dim: max_sequence, and for ExecuTorch also its
  /// static cache length. contract_options resolves it with the model's max positions, once per export.
  virtual int64_t sequence_bound() const { return max_sequence; }
  /// Precision of the artifact's floating weights: "auto", "f32", "f16" or "bf16" (kExportDtypes).
  /// "auto" is what the backend's runtime computes in natively (auto_dtype); docs/precision.md has the
  /// table. The runtime's arithmetic stays what eager computes (f32 on ONNX Runtime CPU and ExecuTorch
  /// portable): f16/bf16 weights are widened where they are read. Weight quantization, when added, is
  /// a field of its own beside this one.
  std::string dtype = "auto";

  /// The dtype floating weights are stored in for a checkpoint of dtype `checkpoint` (the one place
  /// "auto" is resolved).
  DType weight_dtype(DType checkpoint) const;
  /// What "auto" means for this backend and checkpoint dtype.
  virtual DType auto_dtype(DType checkpoint) const = 0;
  /// The precision record of an export, kept in the manifest ("precision") and read by `hfx verify` to
  /// pick its tolerances: {"dtype": "bf16" (resolved), "requested": "auto", "checkpoint": "f32",
  /// "key": "bf16"}. `key` indexes verify's tolerance table (docs/precision.md): "exact" when the stored
  /// weights hold the checkpoint's values (same dtype, or widened to f32), else the dtype they were
  /// rounded to. A quantized export is verified against the eager model quantized the same way, so its
  /// key is the weights' too — unless its runtime computes other math (ONNX's --activations int8:
  /// "int8-activations").
  virtual nlohmann::json precision(DType checkpoint) const;

  virtual nlohmann::json to_json() const;
  virtual void from_json(
      const nlohmann::json& j);  ///< throws hfx::Error("config", ...) on unknown keys or bad types
  virtual std::unique_ptr<ExportConfig> clone() const = 0;
};

struct OnnxConfig : ExportConfig {
  OnnxConfig() { format = "onnx"; }
  /// The opsets hfx writes; the default is declared here only (the CLI and the lowering read it).
  static constexpr int kDefaultOpset = 18, kMinOpset = 18, kMaxOpset = 23;
  int opset = kDefaultOpset;
  bool external_data = false;
  bool optimize = true;
  std::string target = "standard";  ///< "standard" (ai.onnx ops only) or "ort" (com.microsoft fused ops)
  /// float32: ONNX Runtime's CPU kernels compute in f32, so f32 weights load without a Cast to fold.
  DType auto_dtype(DType) const override { return DType::F32; }
  nlohmann::json precision(DType checkpoint) const override;
  /// Weight-only quantization of the linear layers (JSON "quantize": {"method", "group_size",
  /// "symmetric"}): the exporter quantizes the model first (quant::quantize_model).
  quant::QuantOptions quantize;
  nlohmann::json to_json() const override;
  void from_json(const nlohmann::json& j) override;
  std::unique_ptr<ExportConfig> clone() const override { return std::make_unique<OnnxConfig>(*this); }
};

struct ExecutorchConfig : ExportConfig {
  /// max_batch defaults to 1 here: a program's memory plan reserves its largest call, so a batch bound of
  /// 64 made a tiny whisper encoder's arena 5 GB (79 MiB at 1); a device runs one stream. --max-batch N
  /// (JSON "max_batch") raises it.
  ExecutorchConfig() {
    format = "executorch";
    max_batch = 1;
  }
  std::string backend =
      "portable";  ///< "portable": CPU f32, portable kernels only (no delegate payloads yet)
  /// The static KV cache's length: a further bound on every sequence dim (a position lives in the cache).
  /// The program's length is the resolved contract's sequence max (contract_options), never more.
  int64_t max_seq_len = 128;
  int64_t sequence_bound() const override { return std::min(max_sequence, max_seq_len); }
  /// The backend-preparation row's weight dtype (portable: float32, what its kernels compute in).
  DType auto_dtype(DType) const override;
  /// Quantized linear layers (JSON "quantize", as OnnxConfig's): backend xnnpack only, symmetric codes —
  /// ExecuTorch's dynamically quantized linear (activations quantized to int8 per token at run time,
  /// XNNConvert, into XNNFullyConnected): int4 in blocks of 32/64/128 with bf16 block scales (8da4w), int8
  /// with one scale per output channel (8da8w). from_json refuses what XNNPACK cannot run (portable
  /// backend, asymmetric codes, the embedding) and sets bf16_scales (int4) or per_channel (int8).
  quant::QuantOptions quantize;
  /// Key "int8-dynamic-activations" when quantized: the activations are rounded at run time.
  nlohmann::json precision(DType checkpoint) const override;
  nlohmann::json to_json() const override;
  void from_json(const nlohmann::json& j) override;
  std::unique_ptr<ExportConfig> clone() const override { return std::make_unique<ExecutorchConfig>(*this); }

 private:
  void check_executorch_quantize();
};

struct DynamoConfig : ExportConfig {
  DynamoConfig() { format = "dynamo"; }
  /// The checkpoint's dtype: PyTorch runs bf16/f16 tensors natively and the program widens weights at
  /// use exactly as the Hugging Face module does.
  DType auto_dtype(DType checkpoint) const override { return checkpoint; }
  /// Weight-only quantization (JSON "quantize", as OnnxConfig's): the program holds each quantized linear's
  /// codes, scales and zero points as uint8 / f32 constants and de-quantizes them in the graph with core
  /// ATen ops (the op table's hfx.linear_q decomposition) before an aten.linear, so torch.export.load
  /// needs no quantization library. f32 activations only; the embedding table stays float.
  quant::QuantOptions quantize;
  nlohmann::json to_json() const override;
  void from_json(const nlohmann::json& j) override;
  std::unique_ptr<ExportConfig> clone() const override { return std::make_unique<DynamoConfig>(*this); }
};

/// One written artifact file of a component.
struct ArtifactFile {
  std::string component;  ///< "model", "prefill", "decode"
  std::string path;       ///< relative to the output folder
  std::string role;       ///< "graph", "weights", "program", ...
  /// The file's SHA-256 (hex) when the exporter computed it while writing (the manifest then uses it for a
  /// file still of that size); "" otherwise.
  std::string sha256{};
  uint64_t size = 0;  ///< with sha256: the size it was computed at
};

struct ExportResult {
  std::string out_dir;
  std::vector<ArtifactFile> files;
  std::vector<CapturedProgram> programs;  ///< what was captured, per component
  std::vector<std::string> warnings;
  /// Facts about the artifact a user should see (ExecuTorch with a delegate: the share of nodes and work
  /// each method's delegates take); kept in manifest.json.
  std::vector<std::string> notes;
};

/// Where an export stands, as an exporter reports it to a progress callback (`hfx export`'s bar): the
/// component at work (`component_index` of `components`, both known once the generation is planned), its
/// stage (`stage_index` of `stages`: e.g. "capture", "fixes", "lower", "write"), and the bytes of weights
/// and programs written to OUT so far (during "write" they grow tensor by tensor where weights stream to
/// an external data file).
struct ExportStep {
  std::string component, stage;
  size_t component_index = 0, components = 1;
  int stage_index = 0, stages = 1;
  uint64_t bytes_written = 0;
};
using ExportProgressFn = std::function<void(const ExportStep&)>;

class Exporter {
 public:
  virtual ~Exporter() = default;
  /// Called as the export moves through components, stages and weight bytes (from the exporting thread).
  void set_progress(ExportProgressFn fn) { progress_ = std::move(fn); }
  virtual std::string format() const = 0;
  /// Exports one call (`opts.kind`) of `model` into `out_dir`.
  virtual ExportResult export_model(const Model& model, const CaptureOptions& opts,
                                    const ExportConfig& config, const std::string& out_dir) = 0;
  /// Records the model's real generation calls and exports each declared program as its own graph
  /// (configs per component name, or one for all under "*").
  virtual ExportResult export_for_generation(const Model& model, const CaptureOptions& opts,
                                             const std::map<std::string, const ExportConfig*>& configs,
                                             const std::string& out_dir) = 0;

 protected:
  void report(const ExportStep& step) const {
    if (progress_) progress_(step);
  }

 private:
  ExportProgressFn progress_;
};

/// `base` with what the config decides: dynamic, explicit Dims (winning over base's), guard policy.
CaptureOptions merge_config(const CaptureOptions& base, const ExportConfig& config);
/// The capture options of one export of `model` under `config`, resolved once per export: batch range
/// [1, max_batch]; sequence range [1, min(config.sequence_bound(), max positions)] and past ranges capped
/// so that past + sequence never exceeds it. The one place the contract's bounds are decided: export_folder
/// (hfx/artifact/export_folder.h) passes it to every backend, and each backend (ExecuTorch's static cache
/// length included) reads its bounds from it, so all formats of one export promise the same contract.
CaptureOptions contract_options(const Model& model, const ExportConfig& config);

/// The quantization every component of a generation export shares (one model serves all programs); none
/// for configs without it. Throws hfx::Error("export", ...) naming two components that disagree.
quant::QuantOptions common_quantize(const std::map<std::string, const ExportConfig*>& configs);

/// The config an export of `model` runs with. For a GPTQ / AWQ checkpoint (ModelConfig::prequantized): a
/// copy of the ONNX, ExecuTorch or Dynamo config whose quantize is the checkpoint's codes (the export writes
/// them as they are; export_config.json, the manifest and `hfx verify` record them). The config's own
/// quantize checks apply: ONNX's opset rule; ExecuTorch's backend xnnpack, which takes only 4-bit symmetric
/// codes (XNNPACK's fixed zero point 8) and marks the block scales bf16, so the export and verify's
/// reference both round them (quant::quantize_model). Null when the model is float. Throws
/// hfx::Error("export", ...) for codes ExecuTorch cannot hold or an explicit --quantize.
std::unique_ptr<ExportConfig> config_for_checkpoint(const Model& model, const ExportConfig& config);
/// The programs an export writes: for_generation → the recorded generation's programs; otherwise one
/// program of kind opts.kind for a causal LM (the generation programs for other structures).
std::vector<ProgramSpec> export_programs(const Model& model, const CaptureOptions& opts, bool for_generation);
/// The programs of export_for_generation, each planned under its own config (config_for its name) from
/// one recorded generation.
std::vector<std::pair<ProgramSpec, const ExportConfig*>> generation_plan(
    const Model& model, const CaptureOptions& opts,
    const std::map<std::string, const ExportConfig*>& configs);
/// The config for `component` in a per-component map ("*", "default" or "" as fallbacks).
const ExportConfig& config_for(const std::map<std::string, const ExportConfig*>& configs,
                               const std::string& component);

/// The values `ExportConfig::dtype` takes, in the CLI's order.
inline constexpr const char* kExportDtypes[] = {"auto", "f32", "f16", "bf16"};
/// The DType of an export dtype name other than "auto" ("f32" → F32, ...); throws "[config] expected ...".
DType export_dtype_from_name(const std::string& name);
/// The short name of a float dtype as `--dtype` spells it (F32 → "f32").
const char* export_dtype_name(DType dt);

/// Exporter and default config by format name ("onnx", "executorch", "dynamo").
std::unique_ptr<Exporter> make_exporter(const std::string& format);
std::unique_ptr<ExportConfig> make_config(const std::string& format);
std::vector<std::string> exporter_formats();
/// Parses a config from JSON ({"format": "onnx", ...}).
std::unique_ptr<ExportConfig> config_from_json(const nlohmann::json& j);

/// Registration of a backend (called from the one table in src/export/exporter.cpp).
struct ExporterEntry {
  std::string format;
  std::unique_ptr<Exporter> (*make)();
  std::unique_ptr<ExportConfig> (*make_config)();
};

}  // namespace hfx
