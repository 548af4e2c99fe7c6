// tests/support/artifact_files.h — what an export folder's artifact is, for tests that compare two exports.
#pragma once
#include <filesystem>
#include <map>
#include <string>

#include "hfx/io/safetensors.h"

namespace hfx::testsupport {

/// sha256 of every file under `dir` by its relative path, manifest.json left out (it records the settings
/// and the time, not what they did to the artifact).
inline std::map<std::string, std::string> artifact_hashes(const std::filesystem::path& dir) {
  std::map<std::string, std::string> r;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file() || e.path().filename() == "manifest.json") continue;
    r[std::filesystem::relative(e.path(), dir).generic_string()] = io::sha256_file(e.path().string());
  }
  return r;
}

}  // namespace hfx::testsupport
