// hfx/export/onnx.h — the ONNX backend's entry point.
//
// `make_exporter("onnx")` finds it through the exporter table; this header is for code that wants the
// backend directly. Files written by `export_model` / `export_for_generation` under OUT:
//   onnx/<component>.onnx        component = "model" (merged), "prefill", "decode" (or "forward")
//   onnx/<component>.onnx_data   with OnnxConfig::external_data (4096-aligned tensors)
//   onnx/session_options.json    the ONNX Runtime session settings each graph wants (OrtSessionAdvice)
// The CLI copies config.json, generation_config.json and the tokenizer files next to onnx/.
#pragma once
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "hfx/export/exporter.h"

namespace hfx {

/// The ONNX exporter (format "onnx").
std::unique_ptr<Exporter> make_onnx_exporter();

/// The ONNX Runtime session settings an exported graph wants, decided at export from what the graph holds
/// and written beside the graphs (onnx/session_options.json), so every consumer — `hfx generate`,
/// `hfx verify`, the C++ Generator, a user's own session — creates its session the way it runs best.
/// MLAS prepacking (a packed copy of constant MatMul weights made at load): a float graph does not want it
/// (at 1B it is most of the session's creation and a second copy of the weights; single-row decode MatMuls do
/// not use it); a graph with block-quantized MatMuls does (MatMulNBits computes from the packed blocks: ~100x
/// slower decode without them, docs/benchmarks.md).
struct OrtSessionAdvice {
  bool prepacking = false;
  std::string why;  ///< the graph content that decided it, for people
  /// The settings as ONNX Runtime's session config entries (SessionOptions::AddConfigEntry), e.g.
  /// {"session.disable_prepacking", "1"}: what the file holds for other consumers.
  std::map<std::string, std::string> config_entries() const;
};

/// The advice for a graph holding these ONNX op types (op_type → node count).
OrtSessionAdvice advise_ort_session(const std::map<std::string, int64_t>& op_counts);

/// The advice the export wrote for the graph file `model` (OUT/onnx/<program>.onnx): nullopt where the folder
/// has no onnx/session_options.json or the file does not name that program (a graph hfx did not export, an
/// export made before the file existed). Throws hfx::Error("onnx", ...) on a file that does not parse.
std::optional<OrtSessionAdvice> read_ort_session_advice(const std::filesystem::path& model);

/// Writes onnx/session_options.json under `out_dir` for these programs (program → advice).
void write_ort_session_advice(const std::string& out_dir,
                              const std::map<std::string, OrtSessionAdvice>& advice);

}  // namespace hfx
