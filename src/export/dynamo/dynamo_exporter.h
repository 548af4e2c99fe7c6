// DynamoExporter: hfx's torch.export backend. Writes each captured call as a .pt2 archive that
// torch.export.load accepts (see pt2_archive.h, program.h). Registered as format "dynamo" by
// make_dynamo_exporter() in the exporter table (src/export/exporter.cpp).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "hfx/export/exporter.h"

namespace hfx {

class DynamoExporter : public Exporter {
 public:
  std::string format() const override { return "dynamo"; }
  /// Writes OUT/model.pt2 for the call `opts.kind` of a causal LM (other structures: as for generation).
  ExportResult export_model(const Model& model, const CaptureOptions& opts, const ExportConfig& config,
                            const std::string& out_dir) override;
  /// Writes one OUT/<program>.pt2 per program of the recorded generation that covers one kind of call
  /// (prefill.pt2 and decode.pt2; encoder_model.pt2, decoder_model.pt2, decoder_with_past_model.pt2).
  /// Merged programs, which take empty caches on their first call, are an ONNX layout and not written.
  ExportResult export_for_generation(const Model& model, const CaptureOptions& opts,
                                     const std::map<std::string, const ExportConfig*>& configs,
                                     const std::string& out_dir) override;

  /// One program to write: its spec, config and file name in OUT.
  struct Job {
    ProgramSpec spec;
    const ExportConfig* config;
    std::string file;
  };
  /// Exports `jobs` in order, reporting each to the progress callback (Exporter::set_progress).
  void export_jobs(const Model& model, const std::vector<Job>& jobs, const std::string& out_dir,
                   ExportResult& r);
  /// Captures one program and writes it to OUT/`file`; appends to `result`.
  void export_component(const Model& model, const ProgramSpec& spec, const ExportConfig& config,
                        const std::string& out_dir, const std::string& file, ExportResult& result);
};

std::unique_ptr<Exporter> make_dynamo_exporter();

}  // namespace hfx
