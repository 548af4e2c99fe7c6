// `hfx verify OUT [--reference MODEL] [--shapes SPEC] [--json FILE] [--html FILE] [--tokens N]`: checks an
// export folder against its model (src/verify/verify.cpp), prints the table, writes the JSON and HTML
// reports and the manifest's verify section, and exits non-zero with the first failure. MODEL, and the
// source the manifest records when --reference is absent, may be a model id (resolve_model).
#include <cstdio>
#include <filesystem>

#include <fmt/format.h>

#include "commands.h"
#include "hfx/artifact/manifest.h"
#include "hfx/core/error.h"
#include "hfx/core/progress.h"
#include "hfx/io/hub.h"
#include "hfx/verify/verify.h"

namespace fs = std::filesystem;

namespace hfx::cli {

namespace {

// Without --reference, verify.cpp takes the weights in OUT, else the manifest's source folder. When that
// folder is gone (another machine, a cleaned cache) but the manifest names a hub snapshot (model id and
// commit), the same snapshot is resolved through the cache or the Hub. Empty: leave it to verify.cpp.
std::string manifest_model(const std::string& out) {
  if (fs::exists(fs::path(out) / "model.safetensors") ||
      fs::exists(fs::path(out) / "model.safetensors.index.json") ||
      !fs::exists(fs::path(out) / "manifest.json"))
    return "";
  artifact::Manifest m;
  try {
    m = artifact::Manifest::read(out);
  } catch (const Error&) {
    return "";  // verify reports the unreadable manifest
  }
  std::error_code ec;
  if (m.source_path.empty() || fs::is_directory(m.source_path, ec) || m.revision.empty()) return "";
  const std::string id = m.model_id + "@" + m.revision;
  if (!hub::parse_model_id(id)) return "";
  return resolve_model(id);
}

}  // namespace

void register_verify(CLI::App& app) {
  auto o = std::make_shared<verify::VerifyOptions>();
  auto* cmd = app.add_subcommand(
      "verify", "Check an export folder against its model: checksums, signature, numerics, shapes, latency");
  cmd->footer(
      "Example:\n  hfx verify tiny-llama-onnx                  (reference: the manifest's source)\n"
      "  hfx verify tiny-llama-onnx --reference tiny-llama\n"
      "  hfx verify smollm2-onnx --reference HuggingFaceTB/SmolLM2-135M");
  cmd->add_option("out", o->out_dir, "Export folder")->required()->check(CLI::ExistingDirectory);
  cmd->add_option(
      "--reference", o->reference,
      "Checkpoint folder or model id ORG/NAME[@REVISION] (default: the checkpoint files in OUT, else the "
      "manifest's source)");
  cmd->add_option("--shapes", o->shapes,
                  "Shapes to check, BATCHxSEQ[+PAST] comma-separated (default: from the contract)");
  cmd->add_option("--json", o->json_path, "JSON report (default OUT/verify.json)");
  cmd->add_option("--html", o->html_path, "HTML report (default OUT/verify.html)");
  cmd->add_option("--tokens", o->tokens, "Greedy end-to-end length (default 32)");
  cmd->add_option("--threads", o->threads, "ONNX Runtime and kernel threads (default 2)");
  cmd->add_option("--warm-runs", o->warm_runs, "Runs per shape for the warm median (default 5)");
  cmd->add_option(
      "--save-calls", o->save_calls,
      "Also write each replayed .pte method call (inputs, eager's outputs) and each "
      "out-of-contract probe to DIR as call fixtures, for ExecuTorch's runtime to replay "
      "(hfx verify replays them in ExecuTorch's Python runtime itself when the project's Python is there)");
  cmd->add_flag(
      "--no-manifest", [o](int64_t) { o->write_manifest = false; },
      "Do not record the result in manifest.json");
  cmd->callback([o] {
    verify::VerifyOptions opt = *o;
    opt.reference = opt.reference.empty() ? manifest_model(opt.out_dir) : resolve_model(opt.reference);
    Progress bar("verify " + fs::path(opt.out_dir).filename().string(), 0, Progress::Unit::kSteps);
    opt.on_check = [&bar](size_t done, const std::string& last) { bar.update(done, last); };
    opt.on_step = [&bar](size_t done, const std::string& what) { bar.update(done, what); };
    verify::VerifyReport r = verify::run_verify(opt);
    bar.finish();
    std::fputs(verify::render_table(r).c_str(), stdout);
    std::fflush(stdout);
    if (r.verdict == "not_judged") throw Error("verify", "NOT JUDGED (not a pass): " + r.not_judged);
    if (!r.passed) throw Error("verify", "FAILED: " + r.first_failure);
  });
}

}  // namespace hfx::cli
