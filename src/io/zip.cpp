// Aligned stored zip writer (see zip.h); archives are read through libzip in zip_reader.cpp.
#include "io/zip.h"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

#include "hfx/core/error.h"

namespace hfx::io {

namespace {

// Slicing-by-4 tables for the reflected IEEE polynomial.
const std::array<std::array<uint32_t, 256>, 4>& crc_tables() {
  static const auto t = [] {
    std::array<std::array<uint32_t, 256>, 4> t{};
    for (uint32_t i = 0; i < 256; i++) {
      uint32_t c = i;
      for (int k = 0; k < 8; k++) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
      for (int s = 1; s < 4; s++) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xff];
    return t;
  }();
  return t;
}

void put16(std::string& s, uint16_t v) {
  s.push_back(static_cast<char>(v & 0xff));
  s.push_back(static_cast<char>(v >> 8));
}
void put32(std::string& s, uint32_t v) {
  for (int i = 0; i < 4; i++) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void put64(std::string& s, uint64_t v) {
  for (int i = 0; i < 8; i++) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

constexpr uint32_t kMax32 = 0xFFFFFFFFu;
constexpr uint16_t kDosDate = (0 << 9) | (1 << 5) | 1;  // 1980-01-01: deterministic archives

class FileSink : public ZipSink {
 public:
  explicit FileSink(const std::string& path) : path_(path) {
    fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0) HFX_THROW("pt2", "expected to create {}, got {}", path, std::strerror(errno));
  }
  ~FileSink() override {
    if (fd_ >= 0) ::close(fd_);
  }
  void write(const void* data, size_t n) override {
    const char* p = static_cast<const char*>(data);
    while (n > 0) {
      ssize_t w = ::write(fd_, p, n);
      if (w < 0) {
        if (errno == EINTR) continue;
        HFX_THROW("pt2", "expected to write {} bytes to {}, got {}", n, path_, std::strerror(errno));
      }
      p += w;
      n -= static_cast<size_t>(w);
      pos_ += static_cast<uint64_t>(w);
    }
  }
  void patch(uint64_t offset, const void* data, size_t n) override {
    if (::pwrite(fd_, data, n, static_cast<off_t>(offset)) != static_cast<ssize_t>(n))
      HFX_THROW("pt2", "expected to patch {} bytes at {} of {}, got {}", n, offset, path_,
                std::strerror(errno));
  }
  uint64_t tell() const override { return pos_; }

 private:
  std::string path_;
  int fd_ = -1;
  uint64_t pos_ = 0;
};

class MemorySink : public ZipSink {
 public:
  explicit MemorySink(std::string* out) : out_(out) {}
  void write(const void* data, size_t n) override { out_->append(static_cast<const char*>(data), n); }
  void patch(uint64_t offset, const void* data, size_t n) override {
    std::memcpy(out_->data() + offset, data, n);
  }
  uint64_t tell() const override { return out_->size(); }

 private:
  std::string* out_;
};

}  // namespace

uint32_t crc32_update(uint32_t crc, const void* data, size_t n) {
  const auto& t = crc_tables();
  const uint8_t* p = static_cast<const uint8_t*>(data);
  uint32_t c = ~crc;
  while (n >= 4) {
    c ^= static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
         (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
    c = t[3][c & 0xff] ^ t[2][(c >> 8) & 0xff] ^ t[1][(c >> 16) & 0xff] ^ t[0][c >> 24];
    p += 4;
    n -= 4;
  }
  while (n--) c = t[0][(c ^ *p++) & 0xff] ^ (c >> 8);
  return ~c;
}

std::unique_ptr<ZipSink> file_sink(const std::string& path) { return std::make_unique<FileSink>(path); }
std::unique_ptr<ZipSink> memory_sink(std::string* out) { return std::make_unique<MemorySink>(out); }

AlignedZipWriter::AlignedZipWriter(std::unique_ptr<ZipSink> sink, std::string root)
    : sink_(std::move(sink)), root_(std::move(root)) {
  if (root_.empty() || root_.find('/') != std::string::npos)
    HFX_THROW("pt2", "expected one top-level folder name for the archive, got '{}'", root_);
}

AlignedZipWriter::~AlignedZipWriter() = default;

bool AlignedZipWriter::has(const std::string& name) const {
  for (const auto& e : entries_)
    if (e.name == root_ + "/" + name) return true;
  return false;
}

void AlignedZipWriter::begin(const std::string& name, uint64_t size) {
  if (open_ || finished_)
    HFX_THROW("pt2", "expected a closed record before '{}', got one still open or a finished archive", name);
  if (has(name)) HFX_THROW("pt2", "expected record names to be unique, got '{}' twice", name);
  Entry e;
  e.name = root_ + "/" + name;
  e.size = size;
  e.header_offset = sink_->tell();
  const bool z64 = size >= kMax32;
  std::string h;
  put32(h, 0x04034b50);
  put16(h, z64 ? 45 : 20);  // version needed
  put16(h, 0);              // flags
  put16(h, 0);              // stored
  put16(h, 0);              // time
  put16(h, kDosDate);
  put32(h, 0);  // crc, patched by end()
  put32(h, z64 ? kMax32 : static_cast<uint32_t>(size));
  put32(h, z64 ? kMax32 : static_cast<uint32_t>(size));
  put16(h, static_cast<uint16_t>(e.name.size()));
  std::string extra;
  if (z64) {
    put16(extra, 0x0001);
    put16(extra, 16);
    put64(extra, size);
    put64(extra, size);
  }
  // Padding extra ("FB" + length + filler) so the data starts on a kAlign boundary, as torch does.
  uint64_t start = e.header_offset + 30 + e.name.size() + extra.size() + 4;
  uint64_t pad = (kAlign - start % kAlign) % kAlign;
  extra += "FB";
  put16(extra, static_cast<uint16_t>(pad));
  extra.append(pad, 'Z');
  put16(h, static_cast<uint16_t>(extra.size()));
  h += e.name;
  h += extra;
  sink_->write(h.data(), h.size());
  entries_.push_back(e);
  open_ = true;
  written_ = 0;
  crc_ = 0;
}

void AlignedZipWriter::append(const void* data, size_t n) {
  if (!open_) HFX_THROW("pt2", "expected an open record to append to, got none");
  if (written_ + n > entries_.back().size)
    HFX_THROW("pt2", "expected at most {} bytes for record '{}', got {}", entries_.back().size,
              entries_.back().name, written_ + n);
  crc_ = crc32_update(crc_, data, n);
  sink_->write(data, n);
  written_ += n;
}

void AlignedZipWriter::end() {
  if (!open_) HFX_THROW("pt2", "expected an open record to end, got none");
  Entry& e = entries_.back();
  if (written_ != e.size)
    HFX_THROW("pt2", "expected {} bytes for record '{}', got {}", e.size, e.name, written_);
  e.crc = crc_;
  std::string c;
  put32(c, crc_);
  sink_->patch(e.header_offset + 14, c.data(), 4);
  open_ = false;
}

void AlignedZipWriter::add(const std::string& name, const void* data, size_t n) {
  begin(name, n);
  if (n) append(data, n);
  end();
}

void AlignedZipWriter::finish() {
  if (open_)
    HFX_THROW("pt2", "expected every record closed before finishing, got '{}' open", entries_.back().name);
  if (finished_) return;
  uint64_t cd_start = sink_->tell();
  std::string cd;
  for (const Entry& e : entries_) {
    const bool big_size = e.size >= kMax32, big_off = e.header_offset >= kMax32;
    std::string extra;
    if (big_size || big_off) {
      put16(extra, 0x0001);
      put16(extra, static_cast<uint16_t>((big_size ? 16 : 0) + (big_off ? 8 : 0)));
      if (big_size) {
        put64(extra, e.size);
        put64(extra, e.size);
      }
      if (big_off) put64(extra, e.header_offset);
    }
    const uint16_t ver = (big_size || big_off) ? 45 : 20;
    put32(cd, 0x02014b50);
    put16(cd, ver);  // made by
    put16(cd, ver);  // needed
    put16(cd, 0);
    put16(cd, 0);
    put16(cd, 0);
    put16(cd, kDosDate);
    put32(cd, e.crc);
    put32(cd, big_size ? kMax32 : static_cast<uint32_t>(e.size));
    put32(cd, big_size ? kMax32 : static_cast<uint32_t>(e.size));
    put16(cd, static_cast<uint16_t>(e.name.size()));
    put16(cd, static_cast<uint16_t>(extra.size()));
    put16(cd, 0);  // comment
    put16(cd, 0);  // disk
    put16(cd, 0);  // internal attrs
    put32(cd, 0);  // external attrs
    put32(cd, big_off ? kMax32 : static_cast<uint32_t>(e.header_offset));
    cd += e.name;
    cd += extra;
  }
  sink_->write(cd.data(), cd.size());
  uint64_t cd_size = cd.size(), n = entries_.size();
  std::string tail;
  const bool z64 = n >= 0xFFFF || cd_start >= kMax32 || cd_size >= kMax32;
  if (z64) {
    uint64_t z64_eocd = cd_start + cd_size;
    put32(tail, 0x06064b50);
    put64(tail, 44);
    put16(tail, 45);
    put16(tail, 45);
    put32(tail, 0);
    put32(tail, 0);
    put64(tail, n);
    put64(tail, n);
    put64(tail, cd_size);
    put64(tail, cd_start);
    put32(tail, 0x07064b50);
    put32(tail, 0);
    put64(tail, z64_eocd);
    put32(tail, 1);
  }
  put32(tail, 0x06054b50);
  put16(tail, 0);
  put16(tail, 0);
  put16(tail, z64 ? 0xFFFF : static_cast<uint16_t>(n));
  put16(tail, z64 ? 0xFFFF : static_cast<uint16_t>(n));
  put32(tail, z64 ? kMax32 : static_cast<uint32_t>(cd_size));
  put32(tail, z64 ? kMax32 : static_cast<uint32_t>(cd_start));
  put16(tail, 0);
  sink_->write(tail.data(), tail.size());
  finished_ = true;
}

}  // namespace hfx::io
