// The hfx binary: parses the command line and dispatches to the subcommands registered below.
// Exit status: 0 success, 1 failure (an hfx::Error from any component, printed as one line on stderr),
// 2 usage error (an unknown command, an unknown option, a missing or invalid argument).
#include <cstdio>
#include <cstring>
#include <string>

#include "commands.h"
#include "hfx/core/error.h"
#include "hfx/core/progress.h"

namespace {
// The one list of subcommands.
const hfx::cli::Register kCommands[] = {
    hfx::cli::register_ops,        hfx::cli::register_registries,    hfx::cli::register_export,
    hfx::cli::register_generate,   hfx::cli::register_release,       hfx::cli::register_rollback,
    hfx::cli::register_verify,     hfx::cli::register_create_tiny,   hfx::cli::register_embed,
    hfx::cli::register_inspect,    hfx::cli::register_sweep,         hfx::cli::register_preprocess,
    hfx::cli::register_transcribe, hfx::cli::register_architectures,
};

bool has_command(const CLI::App& app, const std::string& name) {
  return !app.get_subcommands([&](const CLI::App* c) { return c->check_name(name); }).empty();
}

std::string command_list(const CLI::App& app) {
  std::string s;
  for (const CLI::App* c : app.get_subcommands([](const CLI::App*) { return true; }))
    s += "  " + c->get_name() + std::string(c->get_name().size() < 14 ? 14 - c->get_name().size() : 1, ' ') +
         c->get_description() + "\n";
  return s;
}
}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "hfx: export Hugging Face checkpoints to verified ONNX, ExecuTorch and ExportedProgram artifacts"};
  app.require_subcommand(1);
  app.set_version_flag("--version", HFX_VERSION_STRING);
  // Progress bars (stderr, only on a terminal) off; accepted before or after the command's own options.
  app.add_flag_callback(
      "-q,--quiet", [] { hfx::set_progress_enabled(false); }, "No progress bars on stderr");
  app.fallthrough();
  for (auto reg : kCommands) reg(app);
  app.footer("Run 'hfx COMMAND --help' for a command's options and an example.");
  // An unknown command or none: CLI11 would say "A subcommand is required" (exit 106). The command is the
  // first word that is not an option (only --quiet, a flag, may come before it).
  int first = 1;
  while (first < argc && argv[first][0] == '-') first++;
  if (argc < 2 || (first < argc && !has_command(app, argv[first]))) {
    if (argc < 2)
      std::fprintf(stderr, "hfx: expected a command, got none\n");
    else
      std::fprintf(stderr, "hfx: unknown command '%s'\n", argv[first]);
    std::fprintf(stderr, "commands:\n%s", command_list(app).c_str());
    return 2;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version are "errors" with status 0; every other parse error is a usage error.
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  } catch (const hfx::cli::UsageError& e) {
    std::fprintf(stderr, "hfx: %s\nRun with --help for more information.\n", e.what());
    return 2;
  } catch (const hfx::Error& e) {
    std::fprintf(stderr, "hfx: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hfx: [internal] %s\n", e.what());
    return 1;
  }
  return 0;
}
