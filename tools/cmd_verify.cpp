// `hfx verify OUT [--reference MODEL] [--shapes SPEC] [--json FILE] [--html FILE] [--tokens N]`: checks an
// export folder against its model (src/verify/verify.cpp), prints the table, writes the JSON and HTML
// reports and the manifest's verify section, and exits non-zero with the first failure.
#include <cstdio>

#include <fmt/format.h>

#include "commands.h"
#include "hfx/core/error.h"
#include "hfx/verify/verify.h"

namespace hfx::cli {

void register_verify(CLI::App& app) {
  auto o = std::make_shared<verify::VerifyOptions>();
  auto* cmd = app.add_subcommand("verify", "Check an export folder against its model: checksums, signature, numerics, shapes, latency");
  cmd->footer("Example:\n  hfx verify tiny-llama-onnx                  (reference: the manifest's source)\n  hfx verify tiny-llama-onnx --reference tiny-llama");
  cmd->add_option("out", o->out_dir, "Export folder")->required()->check(CLI::ExistingDirectory);
  cmd->add_option("--reference", o->reference, "Checkpoint folder (default: the checkpoint files copied into OUT)");
  cmd->add_option("--shapes", o->shapes, "Shapes to check, BATCHxSEQ[+PAST] comma-separated (default: from the contract)");
  cmd->add_option("--json", o->json_path, "JSON report (default OUT/verify.json)");
  cmd->add_option("--html", o->html_path, "HTML report (default OUT/verify.html)");
  cmd->add_option("--tokens", o->tokens, "Greedy end-to-end length (default 32)");
  cmd->add_option("--threads", o->threads, "ONNX Runtime and kernel threads (default 2)");
  cmd->add_option("--warm-runs", o->warm_runs, "Runs per shape for the warm median (default 5)");
  cmd->add_flag("--no-manifest", [o](int64_t) { o->write_manifest = false; }, "Do not record the result in manifest.json");
  cmd->callback([o] {
    verify::VerifyReport r = verify::run_verify(*o);
    std::fputs(verify::render_table(r).c_str(), stdout);
    std::fflush(stdout);
    if (!r.passed) throw Error("verify", "FAILED: " + r.first_failure);
  });
}

}  // namespace hfx::cli
