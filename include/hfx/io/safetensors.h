// hfx/io/safetensors.h — Hugging Face checkpoints as they sit on disk.
//
// Reading maps the file and returns zero-copy tensor views; every header field is validated (JSON,
// header length, dtype tags, shapes, offsets inside the data section, no overlaps, no gaps the
// spec forbids) and a bad file gets an hfx::Error("safetensors", ...) naming the file, the tensor and
// what to do. Sharded checkpoints (model.safetensors.index.json) are read through one WeightStore.
// Writing is atomic: data goes to a temp file in the same folder, then rename.
#pragma once
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hfx/core/tensor.h"

namespace hfx::io {

struct TensorInfo {
  std::string name;
  DType dtype = DType::F32;
  Shape shape;
  uint64_t begin = 0;  ///< byte offset inside the data section
  uint64_t end = 0;
  std::string file;  ///< file path that holds it
};

/// One mapped .safetensors file.
class SafetensorsFile {
 public:
  /// Maps and validates `path`. Throws hfx::Error("safetensors", ...) on any defect.
  static std::shared_ptr<SafetensorsFile> open(const std::string& path);
  const std::string& path() const { return path_; }
  const std::vector<TensorInfo>& tensors() const { return infos_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  bool has(const std::string& name) const;
  const TensorInfo& info(const std::string& name) const;
  /// Zero-copy view (keeps the mapping alive).
  Tensor get(const std::string& name) const;
  /// Tells the OS that the pages of this tensor are no longer needed (streaming export keeps RSS flat).
  void release(const std::string& name) const;
  /// The same for bytes [from, to) of the tensor's data only (a writer that has consumed its first rows).
  void release(const std::string& name, uint64_t from, uint64_t to) const;
  /// The whole mapped file (read-only). get() views point inside it, except a tensor whose bytes are
  /// not aligned to its element size in the file: that one is copied to aligned heap memory instead.
  const void* mapping_data() const { return map_; }
  size_t mapping_size() const { return map_size_; }
  ~SafetensorsFile();

 private:
  std::string path_;
  void* map_ = nullptr;
  size_t map_size_ = 0;
  size_t data_offset_ = 0;
  std::vector<TensorInfo> infos_;
  std::map<std::string, size_t> index_;
  std::map<std::string, std::string> metadata_;
  std::shared_ptr<void> keepalive_;
};

/// Every weight of a checkpoint folder: model.safetensors, or shards listed by model.safetensors.index.json.
class WeightStore {
 public:
  static std::shared_ptr<WeightStore> open_dir(const std::string& dir);
  /// An in-memory store (tests, create-tiny).
  static std::shared_ptr<WeightStore> from_tensors(std::map<std::string, Tensor> tensors);
  bool has(const std::string& name) const;
  const TensorInfo& info(const std::string& name) const;
  Tensor get(const std::string& name) const;
  void release(const std::string& name) const;
  /// Releases bytes [from, to) of a tensor's data (SafetensorsFile::release); nothing for in-memory ones.
  void release(const std::string& name, uint64_t from, uint64_t to) const;
  std::vector<std::string> names() const;
  /// Files that back this store (empty for in-memory).
  std::vector<std::string> files() const;
  /// Serves every weight named `from...` as `to...` instead (the file keeps its own name); returns how
  /// many were renamed. Throws hfx::Error("safetensors", ...) when a new name is already taken.
  size_t rename_prefix(const std::string& from, const std::string& to);

 private:
  /// The name in the file for a served name (rename_prefix); absent: the same name.
  std::string stored(const std::string& name) const;
  std::map<std::string, std::string> stored_;
  std::map<std::string, std::shared_ptr<SafetensorsFile>> by_name_;
  std::map<std::string, Tensor> mem_;
  std::map<std::string, TensorInfo> mem_info_;
};

/// Writes tensors (in the given order) to `path` atomically (temp file + fsync + rename).
/// `metadata` goes to "__metadata__" (e.g. {"format": "pt"}).
void write_safetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
                       const std::map<std::string, std::string>& metadata = {{"format", "pt"}});

/// Writes `content` to `path` atomically (temp file in the same folder, fsync, rename).
void write_file_atomic(const std::string& path, const std::string& content);
/// Reads a whole file; throws hfx::Error("io", ...) naming it if missing.
std::string read_file(const std::string& path);
/// sha256 hex digest of a file (streamed).
std::string sha256_file(const std::string& path);

/// An incremental SHA-256 (OpenSSL EVP): update() with consecutive bytes, then hex() once.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void update(const void* data, size_t n);
  /// The lowercase hex digest of everything updated so far; the hash cannot be updated after.
  std::string hex();

 private:
  void* ctx_ = nullptr;  // EVP_MD_CTX
};

}  // namespace hfx::io
