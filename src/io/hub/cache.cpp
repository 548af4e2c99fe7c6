// src/io/hub/cache.cpp — the cache as huggingface_hub lays it out: blobs/ named by ETag (sha256 for LFS
// files, the git blob sha1 otherwise), snapshots/<commit>/ of relative symlinks into blobs/, refs/
// files holding commit hashes. Every write is a rename, so a reader (hfx or Python) sees either the old
// state or the new one.
#include "io/hub/cache.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>

#include <nlohmann/json.hpp>

#include "hfx/core/error.h"
#include "hfx/io/safetensors.h"

namespace fs = std::filesystem;

namespace hfx::hub::detail {

bool is_commit_hash(const std::string& s) {
  static const std::regex kHash("[0-9a-f]{40}");
  return std::regex_match(s, kHash);
}

std::optional<std::string> read_ref(const std::string& repo_dir, const std::string& revision) {
  std::ifstream f(fs::path(repo_dir) / "refs" / revision);
  if (!f) return std::nullopt;
  std::string commit;
  f >> commit;
  if (!is_commit_hash(commit)) return std::nullopt;
  return commit;
}

void write_ref(const std::string& repo_dir, const std::string& revision, const std::string& commit) {
  fs::path p = fs::path(repo_dir) / "refs" / revision;
  fs::create_directories(p.parent_path());
  // huggingface_hub writes the bare hash, no newline.
  io::write_file_atomic(p.string(), commit);
}

std::string snapshot_dir(const std::string& repo_dir, const std::string& commit) {
  return (fs::path(repo_dir) / "snapshots" / commit).string();
}

bool snapshot_has(const std::string& repo_dir, const std::string& commit, const std::string& file) {
  std::error_code ec;
  return fs::is_regular_file(fs::path(snapshot_dir(repo_dir, commit)) / file, ec);
}

std::string blob_path(const std::string& repo_dir, const std::string& etag) {
  return (fs::path(repo_dir) / "blobs" / etag).string();
}

void place_blob(const std::string& repo_dir, const std::string& downloaded, const std::string& etag) {
  fs::path dst = blob_path(repo_dir, etag);
  fs::create_directories(dst.parent_path());
  std::error_code ec;
  if (fs::is_regular_file(dst, ec)) {
    fs::remove(downloaded, ec);  // the same content is already there (same ETag)
    return;
  }
  fs::rename(downloaded, dst);
}

void link_snapshot(const std::string& repo_dir, const std::string& commit, const std::string& file,
                   const std::string& etag) {
  fs::path link = fs::path(snapshot_dir(repo_dir, commit)) / file;
  fs::create_directories(link.parent_path());
  fs::path target = fs::relative(blob_path(repo_dir, etag), link.parent_path());
  fs::path tmp =
      link.parent_path() / (".hfx-link." + std::to_string(::getpid()) + "." + link.filename().string());
  std::error_code ec;
  fs::remove(tmp, ec);
  fs::create_symlink(target, tmp);
  fs::rename(tmp, link);
}

std::vector<std::string> index_shards(const std::string& index_path) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(io::read_file(index_path));
  } catch (const nlohmann::json::exception& e) {
    HFX_THROW("hub", "expected a JSON weight index in {}, got a parse error: {}", index_path, e.what());
  }
  if (!j.contains("weight_map") || !j["weight_map"].is_object())
    HFX_THROW("hub", "expected a \"weight_map\" object in {}, got none", index_path);
  std::set<std::string> shards;
  for (const auto& [name, file] : j["weight_map"].items()) {
    if (!file.is_string())
      HFX_THROW("hub", "expected a file name for weight {} in {}, got {}", name, index_path, file.dump());
    std::string f = file.get<std::string>();
    // A shard name is a file of the repo: no absolute paths, no way out of the snapshot.
    if (f.empty() || f[0] == '/' || f.find("..") != std::string::npos)
      HFX_THROW("hub", "expected a relative shard file name in {}, got '{}'", index_path, f);
    shards.insert(f);
  }
  return {shards.begin(), shards.end()};
}

std::vector<std::string> missing_weights(const std::string& dir) {
  std::error_code ec;
  const fs::path index = fs::path(dir) / "model.safetensors.index.json";
  if (fs::is_regular_file(index, ec)) {
    std::vector<std::string> missing;
    for (const auto& s : index_shards(index.string()))
      if (!fs::is_regular_file(fs::path(dir) / s, ec)) missing.push_back(s);
    return missing;
  }
  if (fs::is_regular_file(fs::path(dir) / "model.safetensors", ec)) return {};
  return {"model.safetensors"};
}

}  // namespace hfx::hub::detail
