// hfx/artifact/export_folder.h — an export folder written whole: what `hfx export` does, as a library call.
//
// export_folder(model, source, out, config) resolves the export's contract once (contract_options), runs
// the format's exporter over the model's generation programs, copies the tokenizer, config and
// sentence-transformers files of the checkpoint beside the artifacts (config.json gains
// transformers.js_config.use_external_data_format when ONNX weights went to external data), writes
// export_config.json and the release manifest (checksums of every file, versions, config, precision, the
// contract per component, the exporter's warnings: hfx/artifact/manifest.h). Everything is written into a
// temp folder beside OUT and swapped into place only when complete (hfx/io/staged_dir.h), so a failed or
// killed export leaves the previous OUT as it was. The CLI (tools/cmd_export.cpp) only turns flags into an
// ExportConfig, loads the model and prints; another program embedding hfx gets the same folder, byte for
// byte (tests/artifact/export_folder_test.cpp), and can `hfx verify` / `hfx release` it as usual.
#pragma once
#include <functional>
#include <string>

#include "hfx/artifact/manifest.h"
#include "hfx/export/exporter.h"
#include "hfx/models/model.h"

namespace hfx::artifact {

/// Where export_folder stands: `step` is the exporter's (a component's stage, with bytes written) while
/// programs are exported, nullptr for export_folder's own stages "plan", "side files" and "manifest".
using ExportFolderProgress = std::function<void(const std::string& stage, const ExportStep* step)>;

/// What export_folder wrote.
struct ExportFolderResult {
  std::string out_dir;         ///< absolute OUT
  ExportResult export_result;  ///< the artifact files, captured programs and warnings
  Manifest manifest;           ///< as written to OUT/manifest.json
};

/// Exports `model` (loaded from the checkpoint folder `source_dir`, whose side files are copied and whose
/// identity the manifest records) in `config.format` into `out_dir`, replacing it atomically. Throws
/// hfx::Error naming the component ("export", "config", a backend's, "io") on failure; OUT is then unchanged.
/// SOURCE_DATE_EPOCH pins the manifest's time (reproducible folders).
/// `for_generation` false writes the one call of Exporter::export_model instead of the generation programs
/// (HfExporters' `export`: a single graph, the merged call of a decoder; the Python package's
/// Exporter.export).
ExportFolderResult export_folder(const Model& model, const std::string& source_dir,
                                 const std::string& out_dir, const ExportConfig& config,
                                 const ExportFolderProgress& progress = {}, bool for_generation = true);

/// The checkpoint files export_folder copies beside the artifacts when present, relative to the checkpoint.
const std::vector<std::string>& export_side_files();

}  // namespace hfx::artifact
