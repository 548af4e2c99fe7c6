// src/export/executorch/executorch_exporter.h — the ExecuTorch backend: stages, program, artifact.
//
// ExecutorchExporter (format "executorch") captures a causal LM's forward(tokens, input_pos) over a static
// KV cache and writes one .pte holding that method and the metadata methods ExecuTorch's LLM runners
// read; other structures get one method per component program (encoder-only: forward; encoder-decoder:
// encoder, decoder, decoder_with_past). Its stages, in order (each a `// ── Stage N ──` block in the .cpp):
//   1. Backend preparation — the backend-preparation table below (portable: CPU f32, portable kernels;
//      xnnpack: CPU f32, the XNNPACK partitioner at stage 6).
//   2. Torch patches — PatchScope("executorch", 2) around capture: hfx.sdpa / hfx.rms_norm / hfx.rope
//      replaced by their op-table decompositions, so only portable ops remain.
//   3. ExecuTorch patches — PatchScope("executorch", 3) around capture: static-cache attention masked by
//      input_pos.
//   4. Program fixes — registered ProgramFixEntry (cap dims without an upper bound, constant dtype).
//   5. Node fixes — registered NodeFixEntry (pow → mul chain, silu/linear/matmul → portable ops, ...).
//   6. Partitioner — the row's partitioner, run by the writer: XNNPACK takes the runs of nodes its op table
//      (xnnpack_delegate.h) supports into XnnpackBackend delegate calls.
// Then the .pte writer (pte_writer.h). Entries of stages 2–5 live in registrations.cpp.
#pragma once
#include <string>
#include <vector>

#include "export/executorch/pte_writer.h"
#include "hfx/export/exporter.h"

namespace hfx::et {

/// One row of the backend-preparation table (declared once, in executorch_exporter.cpp).
struct BackendPrep {
  std::string name;         ///< "portable"
  std::string device;       ///< where ExecuTorch runs it: "cpu"
  DType constant_dtype;     ///< dtype of the weights in the program
  std::string partitioner;  ///< the ExecuTorch partitioner whose delegate payloads hfx writes ("" = none,
                            ///< portable ops)
  std::string warning;      ///< said at every export with this backend ("" = none)
  std::string reason;       ///< why the row exists
};
const std::vector<BackendPrep>& backend_prep_table();
/// The row named `name`; throws hfx::Error("executorch", "expected a backend among [...]").
const BackendPrep& backend_prep(const std::string& name);

/// A built program before it is written to disk.
struct ExecutorchProgram {
  CapturedProgram forward;  ///< the forward graph after stages 4–5 (the first method's, for components)
  /// Models that are not decoder-only: one program per method (encoder-only: forward; encoder-decoder:
  /// encoder, decoder, decoder_with_past), named by the method.
  std::vector<CapturedProgram> components;
  PteWriteResult pte;
  std::vector<std::string> warnings;
  std::vector<PteConstMethod> metadata;
};

/// Runs stages 1–5 and the writer. `opts` gives the sample size (sample_sequence) and explicit Dims.
ExecutorchProgram build_executorch_program(const CausalLM& model, const ExecutorchConfig& cfg,
                                           const CaptureOptions& opts);
/// The same stages for a model of another structure: each program the generation loop declares with an
/// ExecuTorch method (capture/generation_loops.h) becomes that method, its signature the program's (cache
/// leaves are plain inputs and outputs, dims bounded by max_seq_len), plus metadata methods.
ExecutorchProgram build_component_program(const Model& model, const ExecutorchConfig& cfg,
                                          const CaptureOptions& opts);

class ExecutorchExporter : public Exporter {
 public:
  std::string format() const override { return "executorch"; }
  /// Writes OUT/model.pte (one forward method serves prefill and decode).
  ExportResult export_model(const Model& model, const CaptureOptions& opts, const ExportConfig& config,
                            const std::string& out_dir) override;
  /// Same artifact: ExecuTorch runners call forward for both the prompt and each token. Uses the
  /// config given for "model" (or "forward", or the only one).
  ExportResult export_for_generation(const Model& model, const CaptureOptions& opts,
                                     const std::map<std::string, const ExportConfig*>& configs,
                                     const std::string& out_dir) override;
};

}  // namespace hfx::et
