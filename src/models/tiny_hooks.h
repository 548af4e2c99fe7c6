// The create-tiny hooks a checkpoint may need beyond the generic config, weights and tokenizer: llava's
// image token and processor files (preprocessor_config.json, processor_config.json, chat_template.json).
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "hfx/models/model.h"

namespace hfx::models {

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

/// Appends `tokens` (id, content) to tokenizer.json's added_tokens as special tokens and rebuilds
/// tokenizer_config.json's added_tokens_decoder from all of them, as a saved tokenizer has them (the vision
/// models' image tokens).
void add_special_tokens(nlohmann::json& tokenizer, nlohmann::json& tokenizer_config,
                        const std::vector<std::pair<int64_t, std::string>>& tokens);

}  // namespace hfx::models
