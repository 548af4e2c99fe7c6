// `hfx registries [--backend B]`: every patch, fix, translation, IR fix and list entry with its stage
// and reason.
#include <fmt/format.h>

#include "commands.h"
#include "hfx/export/registry.h"

namespace hfx::cli {

void register_registries(CLI::App& app) {
  auto* cmd = app.add_subcommand("registries",
                                 "List export patches, fixes, translations and lists with stage and reason");
  cmd->footer("Example:\n  hfx registries --backend onnx");
  auto backend = std::make_shared<std::string>();
  cmd->add_option("--backend", *backend, "onnx | executorch | dynamo");
  cmd->callback([backend] {
    auto lines = registry_listing(*backend);
    fmt::print("{:<18} {:<11} {:<6} {:<40} {}\n", "kind", "backend", "stage", "name", "reason");
    for (const auto& l : lines)
      fmt::print("{:<18} {:<11} {:<6} {:<40} {}\n", l.kind, l.backend,
                 l.stage ? std::to_string(l.stage) : "-", l.name, l.reason);
  });
}

}  // namespace hfx::cli
