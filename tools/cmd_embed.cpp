// `hfx embed MODEL --text T [--text T2 ...] [--pooling mean|cls|max] [--json]`: pooled (and, when the
// folder's modules.json says so, normalized) sentence embeddings of each text, from a checkpoint (eager)
// or an export folder (ONNX Runtime); see hfx/runtime/embed.h.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "hfx/core/error.h"
#include "hfx/runtime/embed.h"

namespace hfx::cli {

void register_embed(CLI::App& app) {
  struct Args {
    std::string model, pooling;
    std::vector<std::string> texts;
    bool json = false;
  };
  auto a = std::make_shared<Args>();
  auto* cmd = app.add_subcommand(
      "embed", "Sentence embeddings (pooled, normalized) from a checkpoint or an export folder");
  cmd->footer(
      "Example:\n  hfx create-tiny bert -o tiny-bert --sentence-transformers\n  hfx embed tiny-bert --text "
      "'hello world' --json");
  cmd->add_option("model", a->model,
                  "checkpoint folder, export folder (onnx/model.onnx) or model id ORG/NAME[@REVISION]")
      ->required();
  cmd->add_option("--text", a->texts, "a text to embed (repeatable)");
  cmd->add_option("--pooling", a->pooling,
                  "mean | cls | max (default: the folder's 1_Pooling/config.json, else mean)");
  cmd->add_flag("--json", a->json, "print one JSON object");
  cmd->callback([a] {
    if (a->texts.empty()) throw UsageError("embed", "expected at least one --text, got none");
    std::optional<rt::Pooling> pooling;
    if (!a->pooling.empty()) pooling = rt::pooling_from_name(a->pooling);
    rt::EmbedResult r = rt::embed(resolve_model(a->model), a->texts, pooling);
    const size_t dim = r.vectors.empty() ? 0 : r.vectors.front().size();
    if (a->json) {
      nlohmann::json j = {{"model", a->model},
                          {"engine", r.engine},
                          {"pooling", rt::pooling_name(r.settings.pooling)},
                          {"normalize", r.settings.normalize},
                          {"settings_from", r.settings.source},
                          {"dim", dim},
                          {"texts", a->texts},
                          {"embeddings", r.vectors}};
      fmt::print("{}\n", j.dump());
      return;
    }
    fmt::print("{} embeddings of dim {} ({} pooling{}, {})\n", r.vectors.size(), dim,
               rt::pooling_name(r.settings.pooling), r.settings.normalize ? ", normalized" : "", r.engine);
    for (size_t i = 0; i < r.vectors.size(); i++)
      fmt::print("[{}] {:.6f}\n", i, fmt::join(r.vectors[i], " "));
  });
}

}  // namespace hfx::cli
