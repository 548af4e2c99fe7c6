// hfx/io/hub.h — model ids `ORG/NAME[@REVISION]` resolved through the Hugging Face cache.
//
// The cache is the one huggingface_hub writes, so hfx and Python transformers share downloads:
//   $HF_HUB_CACHE (else $HUGGINGFACE_HUB_CACHE, else $HF_HOME/hub, else $XDG_CACHE_HOME/huggingface/hub,
//   else ~/.cache/huggingface/hub) / models--ORG--NAME / {blobs/<etag>, refs/<revision> (the commit hash),
//   snapshots/<commit>/<file> (a relative symlink to ../../blobs/<etag>)}.
// With HF_HUB_OFFLINE=1 only the cache is read. Otherwise the files an export needs (config, generation
// config, tokenizer and processor files, model.safetensors or the shards its index lists) are downloaded
// from $HF_ENDPOINT (default https://huggingface.co) with $HF_TOKEN, the revision pinned to the commit
// the Hub resolves it to; interrupted downloads resume with a Range request, LFS files are checked for
// size and sha256 before they enter blobs/, and every placement is a rename. Errors read
// "[hub] expected X, got Y" and say what to do.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace hfx::hub {

/// A parsed `ORG/NAME[@REVISION]`.
struct ModelId {
  std::string repo;      ///< "ORG/NAME"
  std::string revision;  ///< branch, tag or commit hash; "main" when none was given
};

/// Parses `ORG/NAME[@REVISION]` with huggingface_hub's repo-id rules (letters, digits, '-', '_', '.';
/// no "--" or ".." ; at most 96 characters). Returns nullopt and sets `why` when `text` is not an id.
std::optional<ModelId> parse_model_id(const std::string& text, std::string* why = nullptr);

/// True when `text` is meant as a model id rather than a path: it has a '/', does not start with
/// '/', '.' or '~', and has no second '/' before an '@'. Such text that fails parse_model_id is a
/// malformed id, not a missing folder.
bool looks_like_model_id(const std::string& text);

/// Where and how to resolve, read from the environment by from_env().
struct HubOptions {
  std::string cache_dir;  ///< the hub cache root (HF_HUB_CACHE rules above)
  std::string endpoint;   ///< HF_ENDPOINT without a trailing '/'
  std::string token;      ///< HF_TOKEN, else the file $HF_TOKEN_PATH or $HF_HOME/token; empty: anonymous
  bool offline = false;   ///< HF_HUB_OFFLINE in {1, ON, YES, TRUE}
  int threads = 4;        ///< parallel weight-shard downloads
  /// Called with (bytes done, bytes total) while files download; may be empty.
  std::function<void(uint64_t, uint64_t)> on_bytes;
  static HubOptions from_env();
};

/// A resolved snapshot: a folder of the cache that reads like a checkpoint folder.
struct Snapshot {
  std::string repo;
  std::string revision;                 ///< as asked
  std::string commit;                   ///< the 40-hex commit hash it resolved to
  std::string dir;                      ///< <cache>/models--ORG--NAME/snapshots/<commit>
  std::vector<std::string> downloaded;  ///< files fetched by this call (empty when all were cached)
};

/// The cache folder of a repo: <cache>/models--ORG--NAME.
std::string repo_cache_dir(const std::string& cache_dir, const std::string& repo);

/// Resolves `id` to a snapshot folder holding what an export needs, downloading what is missing unless
/// offline. Throws hfx::Error("hub", ...) naming the repo, the revision and what to do.
Snapshot resolve(const ModelId& id, const HubOptions& options);

/// The files of a repo's file list that an export needs, weights excepted (those come from
/// select_weights). Exposed for tests and for `hfx inspect`-style listings.
std::vector<std::string> select_side_files(const std::vector<std::string>& siblings);

}  // namespace hfx::hub
