// `hfx release OUT --into RELEASES/`, `hfx rollback RELEASES/`, and `hfx manifest OUT` (write or check
// the release manifest of an export folder). The work is in src/artifact/release.cpp; these only parse and
// print.
#include <fmt/format.h>

#include <filesystem>
#include "commands.h"
#include "hfx/artifact/manifest.h"
#include "hfx/core/error.h"
#include "hfx/export/exporter.h"
#include "hfx/io/safetensors.h"
#include "hfx/models/model.h"

namespace hfx::cli {

namespace {

struct ManifestArgs {
  std::string out, source;
  bool check = false;
};

void run_manifest(const ManifestArgs& a) {
  if (a.check) {
    artifact::Manifest m = artifact::Manifest::read(a.out);
    if (auto mm = m.verify_checksums(a.out))
      throw Error("manifest", mm->message().substr(std::string("[manifest] ").size()));
    fmt::print("{}: {} files match; model {} {}; verify {}\n", a.out, m.files.size(), m.model_id, m.revision,
               m.verify.status);
    return;
  }
  HFX_CHECK(!a.source.empty(), "manifest",
            "expected --source MODEL (the checkpoint folder exported) to write a manifest, got none");
  nlohmann::json cfg;
  std::string format;
  const std::string cfg_path = a.out + "/export_config.json";
  if (std::filesystem::exists(cfg_path)) {
    cfg = nlohmann::json::parse(io::read_file(cfg_path));
    format = cfg.value("format", "");
  }
  const std::string source = resolve_model(a.source);
  artifact::Manifest m = artifact::build_manifest(a.out, source, format, cfg, {});
  // The precision record (verify's tolerance key) from the export config and the checkpoint's dtype.
  if (cfg.is_object() && cfg.contains("format"))
    m.precision = config_from_json(cfg)->precision(load_model(source)->config().dtype);
  m.write(a.out);
  fmt::print("wrote {}/manifest.json ({} files, model {}{}{})\n", a.out, m.files.size(), m.model_id,
             m.revision.empty() ? "" : " @ ", m.revision);
}

}  // namespace

void register_release(CLI::App& app) {
  auto out = std::make_shared<std::string>();
  auto into = std::make_shared<std::string>();
  auto* cmd =
      app.add_subcommand("release", "Copy a verified export into RELEASES/ and make it current (atomically)");
  cmd->footer("Example:\n  hfx release tiny-llama-onnx --into releases/");
  cmd->add_option("out", *out, "Export folder with a passed manifest.json")
      ->required()
      ->check(CLI::ExistingDirectory);
  cmd->add_option("--into", *into, "Releases folder")->required();
  cmd->callback([out, into] {
    std::string name = artifact::release(*out, *into);
    fmt::print("released {} as {}/{} (now current)\n", *out, *into, name);
  });

  auto m = std::make_shared<ManifestArgs>();
  auto* mc = app.add_subcommand("manifest", "Write (--source MODEL) or check (--check) OUT/manifest.json");
  mc->footer("Example:\n  hfx manifest tiny-llama-onnx --check");
  mc->add_option("out", m->out, "Export folder")->required()->check(CLI::ExistingDirectory);
  mc->add_option("--source", m->source,
                 "Checkpoint folder or model id ORG/NAME[@REVISION] the export came from");
  mc->add_flag("--check", m->check, "Re-hash every file against the manifest");
  mc->callback([m] { run_manifest(*m); });
}

void register_rollback(CLI::App& app) {
  auto dir = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand("rollback", "Point RELEASES/current at the previous verified release");
  cmd->footer("Example:\n  hfx rollback releases/");
  cmd->add_option("releases", *dir, "Releases folder")->required()->check(CLI::ExistingDirectory);
  cmd->callback([dir] {
    std::string name = artifact::rollback(*dir);
    fmt::print("current is now {}/{}\n", *dir, name);
  });
}

}  // namespace hfx::cli
