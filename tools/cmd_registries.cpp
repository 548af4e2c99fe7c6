// `hfx registries [--backend B] [--stages]`: every patch, fix, translation, IR fix and list entry with its
// stage and reason; --stages: the declared stages themselves (hfx/export/registry.h, declared_stages) and
// the kinds of entries each applies.
#include <fmt/format.h>

#include "commands.h"
#include "hfx/export/registry.h"

namespace hfx::cli {

void register_registries(CLI::App& app) {
  auto* cmd = app.add_subcommand("registries",
                                 "List export patches, fixes, translations and lists with stage and reason");
  cmd->footer("Example:\n  hfx registries --backend onnx");
  auto backend = std::make_shared<std::string>();
  auto stages = std::make_shared<bool>(false);
  cmd->add_option("--backend", *backend, "onnx | executorch | dynamo | gguf");
  cmd->add_flag("--stages", *stages, "List the declared stages of each backend and what they apply");
  cmd->callback([backend, stages] {
    if (*stages) {
      // One line per stage, in the order its exporter runs them (the number is the position).
      fmt::print("{:<11} {:<6} {:<19} {:<27} {:<15} {}\n", "backend", "stage", "name", "applies", "sets",
                 "what");
      for (const StageDecl& d : declared_stages()) {
        if (!backend->empty() && d.backend != *backend) continue;
        std::string runs, sets;
        for (EntryKind k : d.runs) runs += (runs.empty() ? "" : ",") + std::string(entry_kind_name(k));
        for (Fact f : d.sets) sets += (sets.empty() ? "" : ",") + std::string(fact_name(f));
        fmt::print("{:<11} {:<6} {:<19} {:<27} {:<15} {}\n", d.backend, d.stage, d.name,
                   runs.empty() ? "-" : runs, sets.empty() ? "-" : sets, d.what);
      }
      return;
    }
    auto lines = registry_listing(*backend);
    fmt::print("{:<18} {:<11} {:<6} {:<40} {}\n", "kind", "backend", "stage", "name", "reason");
    for (const auto& l : lines)
      fmt::print("{:<18} {:<11} {:<6} {:<40} {}\n", l.kind, l.backend,
                 l.stage ? std::to_string(l.stage) : "-", l.name, l.reason);
  });
}

}  // namespace hfx::cli
