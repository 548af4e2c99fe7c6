// src/io/hub/download.h — fetching files of one repo at one commit into the cache. Internal to src/io/hub.
#pragma once
#include <atomic>
#include <mutex>
#include <string>
#include <vector>

#include "hfx/io/hub.h"
#include "io/hub/http.h"

namespace hfx::hub::detail {

/// Throws hfx::Error("hub") for a non-2xx answer, naming the repo, the revision (and `file` when not
/// empty) and what to do: 401/403 → HF_TOKEN and the model's access terms; 404 → check the id, the
/// revision or the file.
void check_response(const HttpResponse& r, const std::string& repo, const std::string& revision,
                    const std::string& file, const std::string& url, const HubOptions& o);

/// Downloads the files a snapshot lacks. fetch() asks the Hub for each missing file's metadata (HEAD),
/// then downloads them, `threads` at a time, each into blobs/<etag>.incomplete (resumed with a Range
/// request after a dropped connection), checks size and, for LFS files, sha256, renames it into
/// blobs/ and links it from snapshots/<commit>/.
class Downloader {
 public:
  Downloader(ModelId id, std::string commit, std::string repo_dir, const HubOptions& options);
  void fetch(const std::vector<std::string>& files);
  const std::string& snapshot() const { return snapshot_; }
  const std::vector<std::string>& downloaded() const { return downloaded_; }

  /// What one file's HEAD said.
  struct Plan {
    std::string file, etag, url;  ///< url: where the bytes are (the redirect target for LFS files)
    uint64_t size = 0;
    bool lfs = false;
  };

 private:
  Plan head(const std::string& file) const;
  void download(const Plan& p);
  bool transfer(const Plan& p, const std::string& incomplete, std::string* failure);
  void add_bytes(int64_t n);

  ModelId id_;
  std::string commit_, repo_dir_, snapshot_;
  const HubOptions& o_;
  std::vector<std::string> downloaded_;
  std::mutex mu_;
  int64_t done_ = 0, total_ = 0;
};

}  // namespace hfx::hub::detail
