// src/io/fileutil.cpp — atomic writes, whole-file reads, streamed sha256 (OpenSSL EVP).
#include "io/fileutil.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>
#include <vector>

#include <openssl/evp.h>

#include "hfx/core/error.h"
#include "hfx/io/safetensors.h"

namespace hfx::io {
namespace detail {

std::string errno_text(int err) { return std::strerror(err); }

AtomicFile::AtomicFile(std::string path, std::string component)
    : path_(std::move(path)), component_(std::move(component)) {
  HFX_CHECK(!path_.empty(), component_, "expected a file path to write, got an empty string");
  // Hidden temp name in the same folder: a crash leaves at most a dot-file that no reader of the folder
  // takes for content (release folders, manifests and exports all skip dot-files).
  {
    const std::string::size_type slash = path_.find_last_of('/');
    const std::string dir = slash == std::string::npos ? "" : path_.substr(0, slash + 1);
    const std::string base = slash == std::string::npos ? path_ : path_.substr(slash + 1);
    tmp_ = dir + "." + base + ".tmp." + std::to_string(::getpid());
  }
  fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    int e = errno;
    HFX_THROW(component_,
              "cannot create temp file '{}' to write '{}': {}; check that the folder exists and is writable",
              tmp_, path_, errno_text(e));
  }
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(tmp_.c_str());
}

void AtomicFile::write(const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    size_t chunk = n < (size_t(1) << 30) ? n : (size_t(1) << 30);
    ssize_t w = ::write(fd_, p, chunk);
    if (w < 0) {
      if (errno == EINTR) continue;
      int e = errno;
      HFX_THROW(component_, "writing '{}' failed after {} bytes: {}; check free disk space and permissions",
                tmp_, written_, errno_text(e));
    }
    if (w == 0)
      HFX_THROW(component_, "writing '{}' made no progress after {} bytes; check free disk space", tmp_,
                written_);
    p += w;
    n -= static_cast<size_t>(w);
    written_ += static_cast<size_t>(w);
  }
}

void AtomicFile::commit() {
  if (::fsync(fd_) != 0) {
    int e = errno;
    HFX_THROW(component_, "fsync of '{}' failed: {}; check the disk", tmp_, errno_text(e));
  }
  int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) {
    int e = errno;
    HFX_THROW(component_, "closing '{}' failed: {}; check free disk space", tmp_, errno_text(e));
  }
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) {
    int e = errno;
    HFX_THROW(component_, "renaming '{}' to '{}' failed: {}; check that '{}' is not a folder and is writable",
              tmp_, path_, errno_text(e), path_);
  }
  committed_ = true;
  // Make the rename durable; failure here is not fatal (some filesystems refuse fsync on folders).
  std::filesystem::path dir = std::filesystem::path(path_).parent_path();
  if (dir.empty()) dir = ".";
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    (void)::fsync(dfd);
    ::close(dfd);
  }
}

}  // namespace detail

void write_file_atomic(const std::string& path, const std::string& content) {
  detail::AtomicFile f(path, "io");
  f.write(content.data(), content.size());
  f.commit();
}

namespace {
int open_for_read(const std::string& path, const char* why) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int e = errno;
    HFX_THROW("io", "cannot open '{}' to {}: {}; check the path", path, why, detail::errno_text(e));
  }
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    ::close(fd);
    HFX_THROW("io", "expected a file at '{}', got a folder; pass the path of a file inside it", path);
  }
  return fd;
}

struct FdCloser {
  int fd;
  ~FdCloser() { ::close(fd); }
};
}  // namespace

std::string read_file(const std::string& path) {
  int fd = open_for_read(path, "read it");
  FdCloser closer{fd};
  std::string out;
  struct stat st {};
  if (::fstat(fd, &st) == 0 && st.st_size > 0) out.reserve(static_cast<size_t>(st.st_size));
  std::vector<char> buf(1 << 16);
  for (;;) {
    ssize_t r = ::read(fd, buf.data(), buf.size());
    if (r < 0) {
      if (errno == EINTR) continue;
      int e = errno;
      HFX_THROW("io", "reading '{}' failed after {} bytes: {}", path, out.size(), detail::errno_text(e));
    }
    if (r == 0) break;
    out.append(buf.data(), static_cast<size_t>(r));
  }
  return out;
}

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
  if (!ctx_ || EVP_DigestInit_ex(static_cast<EVP_MD_CTX*>(ctx_), EVP_sha256(), nullptr) != 1)
    HFX_THROW("io", "cannot initialise sha256 (OpenSSL EVP)");
}
Sha256::~Sha256() { EVP_MD_CTX_free(static_cast<EVP_MD_CTX*>(ctx_)); }
void Sha256::update(const void* data, size_t n) {
  if (EVP_DigestUpdate(static_cast<EVP_MD_CTX*>(ctx_), data, n) != 1) HFX_THROW("io", "sha256 update failed");
}
std::string Sha256::hex() {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_DigestFinal_ex(static_cast<EVP_MD_CTX*>(ctx_), md, &len) != 1)
    HFX_THROW("io", "sha256 final failed");
  static const char* digits = "0123456789abcdef";
  std::string out;
  out.reserve(len * 2);
  for (unsigned int i = 0; i < len; i++) {
    out.push_back(digits[md[i] >> 4]);
    out.push_back(digits[md[i] & 15]);
  }
  return out;
}

std::string sha256_file(const std::string& path) {
  int fd = open_for_read(path, "hash it");
  FdCloser closer{fd};
  Sha256 h;
  std::vector<unsigned char> buf(1 << 20);
  uint64_t total = 0;
  for (;;) {
    ssize_t r = ::read(fd, buf.data(), buf.size());
    if (r < 0) {
      if (errno == EINTR) continue;
      int e = errno;
      HFX_THROW("io", "reading '{}' failed after {} bytes while hashing: {}", path, total,
                detail::errno_text(e));
    }
    if (r == 0) break;
    h.update(buf.data(), static_cast<size_t>(r));
    total += static_cast<uint64_t>(r);
  }
  return h.hex();
}

}  // namespace hfx::io
