// src/io/fileutil.h — private helpers shared by the io sources (not part of the public API).
#pragma once
#include <cstddef>
#include <string>

namespace hfx::io::detail {

/// A file written atomically: bytes go to `<path>.tmp.<pid>` in the same folder; commit() fsyncs,
/// closes and renames it over `path` (then fsyncs the folder). If commit() is never reached (an
/// exception), the destructor closes and removes the temp file, leaving any old `path` untouched.
class AtomicFile {
 public:
  /// `component` is the error tag used for failures ("io", "safetensors").
  AtomicFile(std::string path, std::string component);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  /// Writes all `n` bytes (retries short writes and EINTR); throws hfx::Error on failure.
  void write(const void* data, size_t n);
  void commit();
  const std::string& temp_path() const { return tmp_; }

 private:
  std::string path_, tmp_, component_;
  int fd_ = -1;
  bool committed_ = false;
  size_t written_ = 0;
};

/// Human-readable errno text ("No such file or directory").
std::string errno_text(int err);

}  // namespace hfx::io::detail
