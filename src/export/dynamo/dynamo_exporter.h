// DynamoExporter: hfx's torch.export backend. Writes each captured call as a .pt2 archive that
// torch.export.load accepts (see pt2_archive.h, program.h). Registered as format "dynamo" by
// make_dynamo_exporter() in the exporter table (src/export/exporter.cpp).
#pragma once
#include <memory>

#include "hfx/export/exporter.h"

namespace hfx {

class DynamoExporter : public Exporter {
 public:
  std::string format() const override { return "dynamo"; }
  /// Writes OUT/model.pt2 for the call `opts.kind`.
  ExportResult export_model(const CausalLM& model, const CaptureOptions& opts, const ExportConfig& config,
                            const std::string& out_dir) override;
  /// Writes OUT/prefill.pt2 and OUT/decode.pt2 (the two real calls of generation).
  ExportResult export_for_generation(const CausalLM& model, const CaptureOptions& opts,
                                     const std::map<std::string, const ExportConfig*>& configs,
                                     const std::string& out_dir) override;

  /// Captures and writes one component to `path`; appends to `result`.
  void export_component(const CausalLM& model, CaptureOptions opts, const ExportConfig& config, const std::string& component,
                        const std::string& out_dir, const std::string& file, ExportResult& result);
};

std::unique_ptr<Exporter> make_dynamo_exporter();

}  // namespace hfx
