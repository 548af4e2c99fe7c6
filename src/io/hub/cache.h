// src/io/hub/cache.h — the huggingface_hub cache layout, read and written. Internal to src/io/hub.
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace hfx::hub::detail {

/// True for a full 40-hex git commit hash (what refs/ files hold and snapshots/ folders are named).
bool is_commit_hash(const std::string& s);

/// The commit that refs/<revision> names in `repo_dir`, if the file is there and holds a hash.
std::optional<std::string> read_ref(const std::string& repo_dir, const std::string& revision);
/// Writes refs/<revision> = commit (temp file + rename). `revision` may hold '/' (refs/pr/1).
void write_ref(const std::string& repo_dir, const std::string& revision, const std::string& commit);

/// <repo_dir>/snapshots/<commit>
std::string snapshot_dir(const std::string& repo_dir, const std::string& commit);
/// True when snapshots/<commit>/<file> exists and resolves to a readable file.
bool snapshot_has(const std::string& repo_dir, const std::string& commit, const std::string& file);
/// <repo_dir>/blobs/<etag>
std::string blob_path(const std::string& repo_dir, const std::string& etag);
/// Moves a complete, checked download into blobs/<etag> (rename; an existing blob is kept).
void place_blob(const std::string& repo_dir, const std::string& downloaded, const std::string& etag);
/// Points snapshots/<commit>/<file> at ../../blobs/<etag> with a relative symlink (made beside it, then
/// renamed over it, so a reader never sees a missing link).
void link_snapshot(const std::string& repo_dir, const std::string& commit, const std::string& file,
                   const std::string& etag);

/// The weight files a checkpoint folder still lacks: model.safetensors, or the shards that
/// model.safetensors.index.json lists. Empty when the weights are complete.
std::vector<std::string> missing_weights(const std::string& dir);
/// The shard names an index file lists (sorted, unique). Throws hfx::Error("hub") on a bad index.
std::vector<std::string> index_shards(const std::string& index_path);

}  // namespace hfx::hub::detail
