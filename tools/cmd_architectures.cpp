// `hfx architectures [--markdown | --json]`: every model type of the model registry with its generation
// structure and the export backends it supports, computed as `hfx inspect` computes them for a checkpoint
// (backends_json: the export-skip registry, the ExecuTorch backends, the ort target's rule) from the
// architecture's own tiny config.json. README.md's table is this command's --markdown output
// (scripts/gen_docs.py keeps it current), so it cannot drift from the registry.
#include <fmt/format.h>

#include <map>
#include <vector>

#include "commands.h"
#include "hfx/models/model.h"

namespace hfx::cli {

namespace {

struct Row {
  std::string structure;  // "decoder-only", ..., "encoder-decoder (speech)"
  std::vector<bool> supported;
  std::vector<std::string> types;
};

nlohmann::ordered_json architectures_json() {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const Architecture* a : all_architectures()) {
    nlohmann::json cfg = a->tiny_config("tiny");
    if (!cfg.contains("model_type")) cfg["model_type"] = a->model_type;
    const Structure s = structure_of_config(cfg);
    std::string label = structure_name(s);
    if (cfg.contains("num_mel_bins")) label += " (speech)";
    nlohmann::json backends = backends_json(s, a->model_type);
    nlohmann::ordered_json supported = nlohmann::ordered_json::object();
    for (const auto& b : backends) supported[b["backend"].get<std::string>()] = b["supported"].get<bool>();
    out.push_back({{"model_type", a->model_type}, {"structure", label}, {"backends", supported}});
  }
  return out;
}

// One row per structure and set of supported backends, the model types in registry order.
std::string markdown(const nlohmann::ordered_json& archs) {
  std::vector<std::string> backends;
  for (const auto& [name, v] : archs.at(0)["backends"].items()) backends.push_back(name);
  std::vector<Row> rows;
  for (const auto& a : archs) {
    Row key{a["structure"].get<std::string>(), {}, {}};
    for (const auto& b : backends) key.supported.push_back(a["backends"][b].get<bool>());
    auto it = std::find_if(rows.begin(), rows.end(), [&](const Row& r) {
      return r.structure == key.structure && r.supported == key.supported;
    });
    if (it == rows.end()) it = rows.insert(rows.end(), key);
    it->types.push_back(a["model_type"].get<std::string>());
  }
  std::string s =
      "| structure | " + fmt::format("{}", fmt::join(backends, " | ")) + " | model types |\n|---|";
  for (size_t i = 0; i < backends.size(); i++) s += "---|";
  s += "---|\n";
  for (const auto& r : rows) {
    s += "| " + r.structure + " |";
    for (bool b : r.supported) s += b ? " yes |" : " no |";
    s += fmt::format(" {} ({}) |\n", fmt::join(r.types, ", "), r.types.size());
  }
  return s + fmt::format("\n{} model types.\n", archs.size());
}

}  // namespace

void register_architectures(CLI::App& app) {
  auto format = std::make_shared<std::string>("text");
  auto* cmd = app.add_subcommand(
      "architectures",
      "List every supported model type with its structure and the export backends it supports");
  cmd->add_option("--format", *format, "text | markdown | json")
      ->check(CLI::IsMember({"text", "markdown", "json"}));
  cmd->footer("Example:\n  hfx architectures --format markdown   (README.md's table)");
  cmd->callback([format] {
    const nlohmann::ordered_json archs = architectures_json();
    if (*format == "json") return fmt::print("{}\n", archs.dump(2));
    if (*format == "markdown") return fmt::print("{}", markdown(archs));
    for (const auto& a : archs) {
      std::vector<std::string> yes;
      for (const auto& [b, ok] : a["backends"].items())
        if (ok.get<bool>()) yes.push_back(b);
      fmt::print("{:<20} {:<26} {}\n", a["model_type"].get<std::string>(), a["structure"].get<std::string>(),
                 fmt::join(yes, ", "));
    }
  });
}

}  // namespace hfx::cli
