// export_folder: the export, its side files and its manifest, staged and swapped into place. Moved here
// from the CLI so that `hfx export` and programs embedding hfx write the same folder (one implementation).
#include "hfx/artifact/export_folder.h"

#include <algorithm>
#include <filesystem>

#include "hfx/core/error.h"
#include "hfx/export/registry.h"
#include "hfx/io/safetensors.h"
#include "hfx/io/staged_dir.h"

namespace fs = std::filesystem;

namespace hfx::artifact {

const std::vector<std::string>& export_side_files() {
  static const std::vector<std::string> files{
      "config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json",
      "special_tokens_map.json", "chat_template.jinja", "chat_template.json", "preprocessor_config.json",
      "processor_config.json",  // audio / image processors
      // sentence-transformers: the modules after the Transformer (pooling, normalization)
      "modules.json", "sentence_bert_config.json", "config_sentence_transformers.json",
      "1_Pooling/config.json"};
  return files;
}

namespace {

// The tokenizer, config and sentence-transformers files beside the artifacts, and export_config.json.
// The checkpoint's side files (tokenizer, config, processor...), copied before the exporter runs: a backend
// that carries the tokenizer in its file (GGUF) reads it from the output folder.
void copy_side_files(const std::string& dir, const fs::path& tmp) {
  for (const std::string& f : export_side_files()) {
    fs::path src = fs::path(dir) / f;
    if (!fs::exists(src)) continue;
    fs::create_directories((tmp / f).parent_path());
    fs::copy_file(src, tmp / f, fs::copy_options::overwrite_existing);
  }
  if (fs::is_directory(fs::path(dir) / "2_Normalize")) fs::create_directories(tmp / "2_Normalize");
}

// What the side files say of the export: Transformers.js' external-data map, export_config.json.
void finish_side_files(const fs::path& tmp, const ExportConfig& cfg, const ExportResult& r) {
  // Transformers.js loads external data only where config.json says so, per graph: {"<graph>": 1} fetches
  // onnx/<graph>.onnx_data beside onnx/<graph>.onnx (the graphs it does not list are read as they are).
  nlohmann::json external = nlohmann::json::object();
  for (const auto& f : r.files)
    if (f.role == "weights" && f.path.ends_with(".onnx_data")) external[fs::path(f.path).stem().string()] = 1;
  if (cfg.format == "onnx" && !external.empty() && fs::exists(tmp / "config.json")) {
    auto j = nlohmann::json::parse(io::read_file((tmp / "config.json").string()));
    j["transformers.js_config"]["use_external_data_format"] = external;
    io::write_file_atomic((tmp / "config.json").string(), j.dump(2));
  }
  io::write_file_atomic((tmp / "export_config.json").string(), cfg.to_json().dump(2));
}

// A program's calling convention as manifest.json states it (Manifest::signatures): inputs and outputs in the
// artifact's order, so a consumer (the conformance tester, a runtime binding) needs no hfx internals to call
// an ExecuTorch method whose arguments have no names in the file.
nlohmann::json program_signature(const CapturedProgram& p) {
  nlohmann::json ins = nlohmann::json::array(), outs = nlohmann::json::array();
  for (const Value* v : p.graph->inputs()) {
    nlohmann::json in = {{"name", v->name}, {"dtype", dtype_name(v->type.dtype)}};
    if (std::find(p.state.begin(), p.state.end(), v->name) != p.state.end()) in["state"] = true;
    ins.push_back(std::move(in));
  }
  for (const Value* v : p.graph->outputs()) outs.push_back(v->name);
  return {{"inputs", ins}, {"outputs", outs}};
}

// The capture's deferred guards, the relations the per-axis ranges cannot state (Manifest::relations).
nlohmann::json program_relations(const CapturedProgram& p) {
  nlohmann::json out = nlohmann::json::array();
  for (const Guard& g : p.guards)
    out.push_back({{"what", g.what},
                   {"expr", g.expr.str()},
                   {"lower", g.lower},
                   {"upper", g.upper},
                   {"where", g.where}});
  return out;
}

// Exports into `tmp` (removed by the caller's StagedDir on failure): the programs, side files, manifest.
ExportFolderResult export_into(const Model& model, const std::string& dir, const ExportConfig& cfg,
                               const fs::path& tmp, const ExportFolderProgress& progress,
                               bool for_generation) {
  auto report = [&](const std::string& stage, const ExportStep* step) {
    if (progress) progress(stage, step);
  };
  try {
    // The contract is resolved here, once, and every backend reads its bounds from it (exporter.h).
    CaptureOptions opts = contract_options(model, cfg);
    report("plan", nullptr);
    auto exporter = make_exporter(cfg.format);
    exporter->set_progress([&report](const ExportStep& s) { report(s.stage, &s); });
    std::map<std::string, const ExportConfig*> configs{{"*", &cfg}};
    ExportFolderResult out;
    copy_side_files(dir, tmp);
    out.export_result = for_generation ? exporter->export_for_generation(model, opts, configs, tmp.string())
                                       : exporter->export_model(model, opts, cfg, tmp.string());
    report("side files", nullptr);
    finish_side_files(tmp, cfg, out.export_result);
    // The release manifest: checksums of every file, versions, config and the shape contract per component.
    report("manifest", nullptr);
    std::map<std::string, ShapeContract> contracts;
    for (const auto& p : out.export_result.programs) contracts[p.component] = p.contract;
    std::map<std::string, std::pair<uint64_t, std::string>> hashed;  // computed while the files were written
    for (const auto& f : out.export_result.files)
      if (!f.sha256.empty()) hashed[f.path] = {f.size, f.sha256};
    out.manifest = build_manifest(tmp.string(), dir, cfg.format, cfg.to_json(), contracts, hashed);
    for (const auto& p : out.export_result.programs) {
      if (!p.graph) continue;
      out.manifest.signatures[p.component] = program_signature(p);
      if (!p.guards.empty()) out.manifest.relations[p.component] = program_relations(p);
    }
    out.manifest.precision = cfg.precision(model.config().dtype);
    out.manifest.warnings = out.export_result.warnings;
    out.manifest.notes = out.export_result.notes;
    out.manifest.write(tmp.string());
    return out;
  } catch (const fs::filesystem_error& e) {
    HFX_THROW("export", "expected to write the export into {}, got {} ({}); the previous output is unchanged",
              tmp.string(), e.code().message(), e.what());
  }
}

}  // namespace

ExportFolderResult export_folder(const Model& model, const std::string& source_dir,
                                 const std::string& out_dir, const ExportConfig& config,
                                 const ExportFolderProgress& progress, bool for_generation) {
  check_export_skip(config.format, model.config().model_type);
  // A GPTQ / AWQ checkpoint exports its codes: the config says so (export_config.json, manifest, verify).
  const std::unique_ptr<ExportConfig> resolved = config_for_checkpoint(model, config);
  const ExportConfig& cfg = resolved ? *resolved : config;
  // Everything goes to a temp folder beside OUT, swapped into place when complete (hfx/io/staged_dir.h):
  // a failed or killed export leaves the previous OUT as it was.
  fs::path out = fs::absolute(out_dir);
  io::StagedDir staged(out.string());
  ExportFolderResult r = export_into(model, source_dir, cfg, staged.path(), progress, for_generation);
  staged.commit();
  r.out_dir = out.string();
  return r;
}

}  // namespace hfx::artifact
