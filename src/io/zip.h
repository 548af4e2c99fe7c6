// Stored (uncompressed) zip archives as torch's PyTorchStreamWriter lays them out: one top-level
// folder, every record's data aligned to 64 bytes by an "FB" padding extra field, CRC-32 on each
// record, ZIP64 records once a size or offset passes 4 GiB. Records can be streamed (a weight is
// written straight from its mapping and released). Reading goes through libzip (zip_reader.cpp),
// which gives each record's data offset so tests can check alignment and tensors map back.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace hfx::io {

/// CRC-32 (IEEE, as zip and zlib use it), continuing from `crc` (0 to start).
uint32_t crc32_update(uint32_t crc, const void* data, size_t n);

/// Bytes go to a file (path) or to memory.
class ZipSink {
 public:
  virtual ~ZipSink() = default;
  virtual void write(const void* data, size_t n) = 0;
  virtual void patch(uint64_t offset, const void* data, size_t n) = 0;  ///< overwrite earlier bytes
  virtual uint64_t tell() const = 0;
};
std::unique_ptr<ZipSink> file_sink(const std::string& path);
/// Appends to `*out` (kept alive by the caller).
std::unique_ptr<ZipSink> memory_sink(std::string* out);

/// Writes `root/<name>` records. `kAlign` is torch's kFieldAlignment.
class AlignedZipWriter {
 public:
  static constexpr uint64_t kAlign = 64;
  AlignedZipWriter(std::unique_ptr<ZipSink> sink, std::string root);
  ~AlignedZipWriter();
  AlignedZipWriter(const AlignedZipWriter&) = delete;
  AlignedZipWriter& operator=(const AlignedZipWriter&) = delete;

  void add(const std::string& name, const void* data, size_t n);
  void add(const std::string& name, const std::string& s) { add(name, s.data(), s.size()); }
  /// Streaming record of exactly `size` bytes: begin, any number of append calls, end.
  void begin(const std::string& name, uint64_t size);
  void append(const void* data, size_t n);
  void end();
  /// Central directory and end records. Nothing may be added after.
  void finish();
  bool has(const std::string& name) const;
  const std::string& root() const { return root_; }

 private:
  struct Entry {
    std::string name;
    uint64_t header_offset = 0, size = 0;
    uint32_t crc = 0;
  };
  std::unique_ptr<ZipSink> sink_;
  std::string root_;
  std::vector<Entry> entries_;
  bool open_ = false, finished_ = false;
  uint64_t written_ = 0;
  uint32_t crc_ = 0;
};

/// One record of an archive as read back.
struct ZipRecord {
  std::string name;  ///< full name, with the top folder
  uint64_t header_offset = 0;
  uint64_t data_offset = 0;  ///< where the (compressed) bytes start in the file
  uint64_t size = 0, compressed_size = 0;
  uint16_t method = 0;  ///< 0 = stored, 8 = deflate
  uint32_t crc = 0;
};

/// Bounds that make a crafted archive fail fast instead of exhausting memory.
struct ZipLimits {
  uint64_t max_records = 1u << 20;            ///< entries in the central directory
  uint64_t max_inflated_record = 1ull << 30;  ///< declared uncompressed bytes of one compressed record
  uint64_t max_inflated_total = 4ull << 30;   ///< declared uncompressed bytes of all compressed records
  uint64_t max_ratio = 1032;                  ///< deflate cannot compress better than 1032:1
};

/// A zip archive held in memory, read through libzip (consistency of the central directory and every
/// local header checked by libzip). Refuses, with hfx::Error("pt2", ...): anything libzip cannot open
/// (truncated or inconsistent central directory), names that are absolute or contain a `..` component,
/// duplicate names, records whose bytes overlap, stored records whose sizes disagree, compression other
/// than stored/deflate, and declared uncompressed sizes over `limits` (zip bombs).
class ZipReader {
 public:
  /// `bytes` must outlive the reader.
  explicit ZipReader(const std::string& bytes, ZipLimits limits = {});
  ~ZipReader();
  ZipReader(const ZipReader&) = delete;
  ZipReader& operator=(const ZipReader&) = delete;

  const std::vector<ZipRecord>& records() const { return records_; }
  /// The uncompressed bytes of records()[i], inflated by libzip; refuses a record that inflates past
  /// its declared size or fails its CRC.
  std::string read(size_t i) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::vector<ZipRecord> records_;
};

/// The records of a zip held in memory (ZipReader(bytes).records()). Throws hfx::Error("pt2", ...).
std::vector<ZipRecord> read_zip_index(const std::string& bytes);

}  // namespace hfx::io
