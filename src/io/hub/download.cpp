// src/io/hub/download.cpp — one repo's files into the cache, as huggingface_hub's hf_hub_download does:
//   HEAD {endpoint}/{repo}/resolve/{commit}/{file} without following redirects: X-Repo-Commit (must be
//   that commit), X-Linked-Etag (the sha256 of an LFS file) or ETag (the git blob sha1), X-Linked-Size
//   or Content-Length, and for LFS files a redirect to where the bytes are (a relative redirect is a
//   renamed repo and is followed).
//   GET that URL into blobs/<etag>.incomplete, with "Range: bytes=N-" when N bytes are already there,
//   under the same lock file huggingface_hub takes (.locks/models--ORG--NAME/<etag>.lock).
// A complete file is checked (size; sha256 for LFS) before it is renamed into blobs/; a bad one is
// removed, so the cache never holds a blob that is not what its name says.
#include "io/hub/download.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <thread>

#include "hfx/core/error.h"
#include "hfx/io/safetensors.h"
#include "io/hub/cache.h"

namespace fs = std::filesystem;

namespace hfx::hub::detail {

namespace {

constexpr int kAttempts = 5;  // huggingface_hub's http_get retries a dropped transfer 5 times as well

std::string normalize_etag(std::string e) {
  if (e.rfind("W/", 0) == 0) e = e.substr(2);
  if (e.size() >= 2 && e.front() == '"' && e.back() == '"') e = e.substr(1, e.size() - 2);
  return e;
}

bool is_sha256(const std::string& s) {
  if (s.size() != 64) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

std::string where(const std::string& repo, const std::string& revision, const std::string& file) {
  return file.empty() ? fmt::format("{}@{}", repo, revision)
                      : fmt::format("{} of {}@{}", file, repo, revision);
}

// An exclusive flock held for one blob's download (released when the object goes).
class BlobLock {
 public:
  explicit BlobLock(const fs::path& path) {
    fs::create_directories(path.parent_path());
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT, 0644);
    if (fd_ >= 0) ::flock(fd_, LOCK_EX);
  }
  ~BlobLock() {
    if (fd_ >= 0) ::close(fd_);
  }
  BlobLock(const BlobLock&) = delete;
  BlobLock& operator=(const BlobLock&) = delete;

 private:
  int fd_ = -1;
};

uint64_t size_or_zero(const std::string& path) {
  std::error_code ec;
  auto n = fs::file_size(path, ec);
  return ec ? 0 : n;
}

}  // namespace

void check_response(const HttpResponse& r, const std::string& repo, const std::string& revision,
                    const std::string& file, const std::string& url, const HubOptions& o) {
  if (r.status >= 200 && r.status < 400) return;
  const std::string code = r.header("x-error-code");
  const std::string what = where(repo, revision, file);
  if (r.status == 401 || r.status == 403) {
    // The Hub answers 401 RepoNotFound to an anonymous request for a repo that is private or does not exist.
    const std::string kind = code == "RepoNotFound" ? "private or does not exist" : "gated or private";
    HFX_THROW(
        "hub",
        "expected access to {}, got {} {}{} from {}: the repo is {} ({}); check the id, or set HF_TOKEN "
        "to a token that can read it ({}/settings/tokens) and accept the model's terms on its page {}/{}",
        what, r.status, r.status == 401 ? "Unauthorized" : "Forbidden", code.empty() ? "" : " " + code, url,
        kind, o.token.empty() ? "no token was sent: HF_TOKEN is unset" : "the token sent was refused",
        o.endpoint, o.endpoint, repo);
  }
  if (r.status == 404 && code == "RevisionNotFound")
    HFX_THROW(
        "hub",
        "expected revision '{}' of {} (a branch, tag or commit hash), got 404 RevisionNotFound from {}: "
        "check the revision after '@' (the repo's branches and tags are on {}/{}/tree/main)",
        revision, repo, url, o.endpoint, repo);
  if (r.status == 404 && code == "EntryNotFound")
    HFX_THROW("hub",
              "expected {} in {}@{}, got 404 EntryNotFound from {}: the repo does not hold that file at this "
              "revision",
              file, repo, revision, url);
  if (r.status == 404)
    HFX_THROW(
        "hub",
        "expected a model repo {} on {}, got 404{} from {}: check the id (ORG/NAME, as in the model's URL "
        "{}/ORG/NAME); a private repo also answers 404 without a token, so set HF_TOKEN if it is yours",
        repo, o.endpoint, code.empty() ? "" : " " + code, url, o.endpoint);
  std::string body = r.body.substr(0, 200);
  HFX_THROW("hub", "expected a successful answer for {} from {}, got HTTP {}{}", what, url, r.status,
            body.empty() ? "" : ": " + body);
}

Downloader::Downloader(ModelId id, std::string commit, std::string repo_dir, const HubOptions& options)
    : id_(std::move(id)), commit_(std::move(commit)), repo_dir_(std::move(repo_dir)), o_(options) {
  snapshot_ = snapshot_dir(repo_dir_, commit_);
}

Downloader::Plan Downloader::head(const std::string& file) const {
  Plan p{file, "", fmt::format("{}/{}/resolve/{}/{}", o_.endpoint, id_.repo, commit_, url_quote(file, true))};
  HttpResponse r;
  for (int hop = 0;; hop++) {
    HttpRequest head_req;
    head_req.method = "HEAD";
    head_req.url = p.url;
    head_req.token = o_.token;
    r = http_perform(head_req);
    if (r.transport_error)
      HFX_THROW("hub",
                "expected an answer to HEAD {} for {}, got none: {}; check the network and HF_ENDPOINT",
                p.url, where(id_.repo, commit_, file), r.transport_message);
    check_response(r, id_.repo, commit_, file, p.url, o_);
    const std::string loc = r.header("location");
    if (r.status < 300 || loc.empty()) break;
    if (loc[0] != '/') {  // an LFS file: the bytes are elsewhere, the metadata is in this answer
      p.url = loc;
      break;
    }
    if (hop == 5) HFX_THROW("hub", "expected at most 5 redirects for {}, got more (last {})", p.url, loc);
    p.url = o_.endpoint + loc;  // a renamed repo
  }
  // Files are asked for by commit hash: an answer for another commit is not this snapshot's file.
  const std::string answered = r.header("x-repo-commit");
  if (!answered.empty() && answered != commit_)
    HFX_THROW("hub", "expected {} at commit {} (X-Repo-Commit), got {} from {}: check HF_ENDPOINT", file,
              commit_, answered, p.url);
  const std::string linked = r.header("x-linked-etag");
  p.lfs = !linked.empty();
  p.etag = normalize_etag(p.lfs ? linked : r.header("etag"));
  const std::string size =
      r.header("x-linked-size").empty() ? r.header("content-length") : r.header("x-linked-size");
  if (p.etag.empty() || p.etag.find('/') != std::string::npos || size.empty())
    HFX_THROW(
        "hub",
        "expected ETag and size headers for {} from {}, got etag '{}' size '{}': the endpoint is not a Hub "
        "(check HF_ENDPOINT)",
        where(id_.repo, commit_, file), p.url, p.etag, size);
  p.size = std::stoull(size);
  return p;
}

void Downloader::add_bytes(int64_t n) {
  std::lock_guard<std::mutex> g(mu_);
  done_ += n;
  if (o_.on_bytes)
    o_.on_bytes(static_cast<uint64_t>(std::max<int64_t>(done_, 0)), static_cast<uint64_t>(total_));
}

// One GET of the rest of the file. Returns false with `failure` set when the transfer broke off (the
// bytes received so far stay in `incomplete` for the next attempt).
bool Downloader::transfer(const Plan& p, const std::string& incomplete, std::string* failure) {
  uint64_t have = size_or_zero(incomplete);
  if (have > p.size) {
    fs::remove(incomplete);
    have = 0;
  }
  if (have == p.size && have > 0) return true;
  FILE* f = std::fopen(incomplete.c_str(), "ab");
  if (!f) HFX_THROW("hub", "expected to write {}, got: {}", incomplete, std::strerror(errno));
  bool write_failed = false;
  HttpRequest req;
  req.url = p.url;
  req.range_from = have;
  req.follow_redirects = true;
  if (p.url.rfind(o_.endpoint + "/", 0) == 0) req.token = o_.token;  // never send the token to another host
  req.sink = [&](long status, const char* data, size_t n) {
    if (status == 200 && have > 0) {  // the server ignored the Range: start again from byte 0
      std::fflush(f);
      if (::ftruncate(::fileno(f), 0) != 0) return !(write_failed = true);
      std::fseek(f, 0, SEEK_SET);
      add_bytes(-static_cast<int64_t>(have));
      have = 0;
    }
    if (std::fwrite(data, 1, n, f) != n) return !(write_failed = true);
    add_bytes(static_cast<int64_t>(n));
    return true;
  };
  HttpResponse r = http_perform(req);
  std::fclose(f);
  if (write_failed)
    HFX_THROW("hub", "expected to write {} ({} bytes), got a write error: check the free space", incomplete,
              p.size);
  if (r.status == 416) {  // our partial file does not fit what the server has now: start over
    add_bytes(-static_cast<int64_t>(size_or_zero(incomplete)));
    fs::remove(incomplete);
    *failure = "416 Range Not Satisfiable";
    return false;
  }
  if (r.status >= 300 || (r.status != 0 && r.status < 200))
    check_response(r, id_.repo, commit_, p.file, p.url, o_);
  if (r.transport_error) {
    *failure = r.transport_message;
    return false;
  }
  return true;
}

void Downloader::download(const Plan& p) {
  const std::string blob = blob_path(repo_dir_, p.etag);
  const fs::path cache_root = fs::path(repo_dir_).parent_path();
  BlobLock lock(cache_root / ".locks" / fs::path(repo_dir_).filename() / (p.etag + ".lock"));
  if (size_or_zero(blob) == p.size && fs::exists(blob)) {  // same content already cached under another name
    add_bytes(static_cast<int64_t>(p.size));
    link_snapshot(repo_dir_, commit_, p.file, p.etag);
    return;
  }
  fs::create_directories(fs::path(blob).parent_path());
  const std::string incomplete = blob + ".incomplete";
  add_bytes(static_cast<int64_t>(size_or_zero(incomplete)));  // resumed from an earlier run
  std::string failure;
  for (int attempt = 1; !transfer(p, incomplete, &failure); attempt++)
    if (attempt == kAttempts)
      HFX_THROW(
          "hub",
          "expected {} bytes of {}, got {} before the transfer failed {} times (last: {}); run the command "
          "again to resume from {}",
          p.size, where(id_.repo, commit_, p.file), size_or_zero(incomplete), kAttempts, failure, incomplete);
  const uint64_t got = size_or_zero(incomplete);
  if (got != p.size) {
    fs::remove(incomplete);
    HFX_THROW(
        "hub",
        "expected {} bytes of {} (the Hub's size header), got {}: the partial file was removed; run the "
        "command again",
        p.size, where(id_.repo, commit_, p.file), got);
  }
  if (p.lfs && is_sha256(p.etag)) {
    const std::string sha = io::sha256_file(incomplete);
    if (sha != p.etag) {
      fs::remove(incomplete);
      HFX_THROW(
          "hub",
          "expected sha256 {} for {} (the Hub's X-Linked-Etag), got {}: the download is corrupt and was "
          "removed, the cache is unchanged; run the command again",
          p.etag, where(id_.repo, commit_, p.file), sha);
    }
  }
  place_blob(repo_dir_, incomplete, p.etag);
  link_snapshot(repo_dir_, commit_, p.file, p.etag);
  std::lock_guard<std::mutex> g(mu_);
  downloaded_.push_back(p.file);
}

void Downloader::fetch(const std::vector<std::string>& files) {
  std::vector<Plan> plans;
  for (const auto& f : files)
    if (!snapshot_has(repo_dir_, commit_, f)) plans.push_back(head(f));
  if (plans.empty()) return;
  {
    std::lock_guard<std::mutex> g(mu_);
    for (const auto& p : plans) total_ += static_cast<int64_t>(p.size);
  }
  // Weight shards in parallel, a few at a time; the first error wins and is rethrown after all join.
  std::atomic<size_t> next{0};
  std::exception_ptr error;
  std::mutex error_mu;
  auto worker = [&] {
    for (size_t i; (i = next++) < plans.size();) {
      try {
        download(plans[i]);
      } catch (...) {
        std::lock_guard<std::mutex> g(error_mu);
        if (!error) error = std::current_exception();
        next = plans.size();
      }
    }
  };
  const size_t n = std::min<size_t>(std::max(1, o_.threads), plans.size());
  std::vector<std::thread> pool;
  for (size_t i = 1; i < n; i++) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace hfx::hub::detail
