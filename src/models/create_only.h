// Architectures hfx can create and check (create-tiny, weight names and shapes) but not run or export yet:
// the vision-language models of issue 13 while their components are being built. find_architecture finds
// them; all_architectures(), which every capture, export and verify sweep walks, does not list them, and
// their `create` refuses with a clear error. Also the create-tiny hooks such a checkpoint needs beyond the
// generic config, weights and tokenizer (an image token, processor files).
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "hfx/models/model.h"

namespace hfx::models {

std::vector<const Architecture*> create_only_architectures();

/// create-tiny's extra steps for one architecture; either member may be null.
struct TinyHooks {
  /// After the generic config and tokenizer: edits of config.json and the tokenizer files.
  void (*text)(nlohmann::json& config, std::string& tokenizer_json,
               std::string& tokenizer_config_json) = nullptr;
  /// The checkpoint's other files (processor configs, chat_template.json), written into `dir`.
  void (*files)(const std::string& dir, const nlohmann::json& config) = nullptr;
};
/// The hooks of `model_type`, or null when it has none.
const TinyHooks* tiny_hooks(const std::string& model_type);

}  // namespace hfx::models
