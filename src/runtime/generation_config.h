// src/runtime/generation_config.h — token ids of generation_config.json / config.json (not a public header;
// generation_config.cpp is small so that the fuzz target of generation_config.json builds it alone).
#pragma once
#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

namespace hfx {

/// The ids under `key` (eos_token_id, pad_token_id): an int, a list of ints, or absent/null (empty).
/// Throws hfx::Error("generate", ...) for anything else.
std::vector<int64_t> ids_of(const nlohmann::json& j, const char* key);

}  // namespace hfx
