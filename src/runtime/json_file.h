// Reading an optional JSON side file of a model folder (generation_config.json, config.json …) in the
// runtime's generators (generator.cpp, text2text.cpp, transcribe.cpp). Private to src/runtime.
#pragma once

#include <filesystem>
#include <optional>

#include <nlohmann/json.hpp>

#include "hfx/core/error.h"
#include "hfx/io/safetensors.h"

namespace hfx::runtime_detail {

/// The parsed file, or nullopt when it does not exist; invalid JSON is a `[component]` error naming the file.
inline std::optional<nlohmann::json> read_json_if_exists(const std::filesystem::path& p,
                                                         const char* component) {
  if (!std::filesystem::exists(p)) return std::nullopt;
  try {
    return nlohmann::json::parse(io::read_file(p.string()));
  } catch (const nlohmann::json::exception& e) {
    HFX_THROW(component, "expected valid JSON in {}, got: {}", p.string(), e.what());
  }
}

}  // namespace hfx::runtime_detail
