// The hfx binary: parses the command line and dispatches to the subcommands registered below.
// Errors from any component are printed as one line on stderr and exit with status 1.
#include <cstdio>

#include "commands.h"
#include "hfx/core/error.h"

namespace {
// The one list of subcommands.
const hfx::cli::Register kCommands[] = {
    hfx::cli::register_ops,
    hfx::cli::register_registries,
    hfx::cli::register_export,
    hfx::cli::register_generate,
    hfx::cli::register_release,
    hfx::cli::register_rollback,
    hfx::cli::register_verify,
    hfx::cli::register_create_tiny,
    hfx::cli::register_embed,
};
}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"hfx: export Hugging Face checkpoints to verified ONNX, ExecuTorch and ExportedProgram artifacts"};
  app.require_subcommand(1);
  app.set_version_flag("--version", HFX_VERSION_STRING);
  for (auto reg : kCommands) reg(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const hfx::Error& e) {
    std::fprintf(stderr, "hfx: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hfx: [internal] %s\n", e.what());
    return 1;
  }
  return 0;
}
