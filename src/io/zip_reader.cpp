// Reading zip archives through libzip (see zip.h). libzip parses the end records (ZIP64 included) and
// the central directory, and with ZIP_CHECKCONS compares every local header with its central entry and
// keeps every record before the central directory. What libzip leaves to the caller is checked here:
// names that escape the archive, duplicates, records that share bytes, and declared sizes that would
// make a reader inflate gigabytes (zip bombs).
//
// libzip does not say where a record's bytes lie in the file, which torch_load (tensors map straight
// out of the archive) and the alignment tests need. So the archive is served to libzip by a source
// callback that notes where libzip reads: opening the archive with ZIP_CHECKCONS makes libzip read every
// record's local header at the offset its central entry gives, and the data follows that header.
#include <zip.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <set>

#include "hfx/core/error.h"
#include "io/zip.h"

namespace hfx::io {

namespace {

constexpr const char* kComp = "pt2";

struct MemorySource {
  const std::string* bytes = nullptr;
  uint64_t pos = 0;
  zip_error_t error{};
  std::vector<std::pair<uint64_t, uint64_t>> reads;  ///< (offset, length) of each read, while noting
  bool noting = false;
};

zip_int64_t serve(void* user, void* data, zip_uint64_t len, zip_source_cmd_t cmd) {
  auto* m = static_cast<MemorySource*>(user);
  const uint64_t size = m->bytes->size();
  switch (cmd) {
    case ZIP_SOURCE_OPEN:
      m->pos = 0;
      return 0;
    case ZIP_SOURCE_READ: {
      const uint64_t n = std::min<uint64_t>(len, m->pos < size ? size - m->pos : 0);
      if (n) std::memcpy(data, m->bytes->data() + m->pos, n);
      if (m->noting) m->reads.emplace_back(m->pos, n);
      m->pos += n;
      return static_cast<zip_int64_t>(n);
    }
    case ZIP_SOURCE_CLOSE:
      return 0;
    case ZIP_SOURCE_STAT: {
      auto* st = ZIP_SOURCE_GET_ARGS(zip_stat_t, data, len, &m->error);
      if (!st) return -1;
      zip_stat_init(st);
      st->size = size;
      st->valid |= ZIP_STAT_SIZE;
      return sizeof(*st);
    }
    case ZIP_SOURCE_ERROR:
      return zip_error_to_data(&m->error, data, len);
    case ZIP_SOURCE_FREE:
      return 0;  // the MemorySource belongs to ZipReader::Impl
    case ZIP_SOURCE_SEEK: {
      zip_int64_t p = zip_source_seek_compute_offset(m->pos, size, data, len, &m->error);
      if (p < 0) return -1;
      m->pos = static_cast<uint64_t>(p);
      return 0;
    }
    case ZIP_SOURCE_TELL:
      return static_cast<zip_int64_t>(m->pos);
    case ZIP_SOURCE_SUPPORTS:
      return zip_source_make_command_bitmap(ZIP_SOURCE_OPEN, ZIP_SOURCE_READ, ZIP_SOURCE_CLOSE,
                                            ZIP_SOURCE_STAT, ZIP_SOURCE_ERROR, ZIP_SOURCE_FREE,
                                            ZIP_SOURCE_SEEK, ZIP_SOURCE_TELL, ZIP_SOURCE_SUPPORTS, -1);
    default:
      zip_error_set(&m->error, ZIP_ER_OPNOTSUPP, 0);
      return -1;
  }
}

uint16_t le16(const std::string& s, uint64_t o) {
  return static_cast<uint16_t>(static_cast<uint8_t>(s[o]) | (static_cast<uint8_t>(s[o + 1]) << 8));
}

// Names are paths inside the archive: one that is absolute or climbs out with `..` would escape a
// folder it is extracted to, and torch never writes one.
void check_name(const std::string& name) {
  HFX_CHECK(!name.empty(), kComp, "expected every record to have a name, got an empty one");
  const bool absolute = name[0] == '/' || name[0] == '\\' || (name.size() > 1 && name[1] == ':');
  HFX_CHECK(!absolute, kComp, "expected record names relative to the archive, got the absolute path '{}'",
            name);
  size_t b = 0;
  while (b <= name.size()) {
    size_t e = name.find_first_of("/\\", b);
    if (e == std::string::npos) e = name.size();
    HFX_CHECK(name.compare(b, e - b, "..") != 0, kComp,
              "expected record names inside the archive, got '{}' (a '..' component climbs out of it)", name);
    b = e + 1;
  }
}

std::string open_problem(const zip_error_t& err) {
  switch (err.zip_err) {
    case ZIP_ER_NOZIP:
      return "no readable end-of-central-directory record (not a zip, or the end of the file is cut off)";
    case ZIP_ER_INCONS:
      return "a central directory that disagrees with the local headers or the file size (truncated or "
             "crafted)";
    default:
      return zip_error_strerror(const_cast<zip_error_t*>(&err));
  }
}

}  // namespace

struct ZipReader::Impl {
  MemorySource src;
  zip_t* za = nullptr;
  ~Impl() {
    if (za) zip_discard(za);
  }
  std::string problem() { return zip_error_strerror(zip_get_error(za)); }

  // Local headers by name, as libzip read them while opening the archive: with ZIP_CHECKCONS it reads each
  // record's 30-byte local header (at the offset the central directory gives) and checks its name against
  // the central entry.
  std::map<std::string, uint64_t> headers;

  void note_headers() {
    const std::string& s = *src.bytes;
    for (const auto& [pos, len] : src.reads) {
      if (len != 30 || pos + 30 > s.size() || s.compare(pos, 4, "PK\x03\x04", 4) != 0) continue;
      const uint64_t n = le16(s, pos + 26);
      if (pos + 30 + n <= s.size()) headers.emplace(s.substr(pos + 30, n), pos);
    }
    src.reads.clear();
  }

  void locate(ZipRecord& r) {
    auto it = headers.find(r.name);
    HFX_CHECK(it != headers.end(), kComp,
              "expected libzip to have read the local header of '{}', got no such read (libzip changed how "
              "it opens "
              "archives?)",
              r.name);
    const std::string& s = *src.bytes;
    r.header_offset = it->second;
    r.data_offset = it->second + 30 + le16(s, it->second + 26) + le16(s, it->second + 28);
    HFX_CHECK(r.data_offset <= s.size() && r.compressed_size <= s.size() - r.data_offset, kComp,
              "expected the data of '{}' inside the file ({} bytes), got {} bytes at {}", r.name, s.size(),
              r.compressed_size, r.data_offset);
  }
};

namespace {

void check_sizes(const ZipRecord& r, const ZipLimits& limits, uint64_t& inflated_total) {
  HFX_CHECK(r.method == ZIP_CM_STORE || r.method == ZIP_CM_DEFLATE, kComp,
            "expected record '{}' stored or deflated, got compression method {}", r.name, r.method);
  if (r.method == ZIP_CM_STORE) {
    HFX_CHECK(r.size == r.compressed_size, kComp,
              "expected stored record '{}' to declare equal sizes, got {} bytes uncompressed and {} stored",
              r.name, r.size, r.compressed_size);
    return;
  }
  HFX_CHECK(r.size <= limits.max_inflated_record && r.size / limits.max_ratio <= r.compressed_size, kComp,
            "expected compressed record '{}' to inflate to at most {} bytes at most {}:1, got {} bytes "
            "declared from {} "
            "(a zip bomb?)",
            r.name, limits.max_inflated_record, limits.max_ratio, r.size, r.compressed_size);
  inflated_total += r.size;
  HFX_CHECK(
      inflated_total <= limits.max_inflated_total, kComp,
      "expected the compressed records to inflate to at most {} bytes in all, got {} by '{}' (a zip bomb?)",
      limits.max_inflated_total, inflated_total, r.name);
}

// Records sorted by where they start must each end before the next one starts.
void check_overlaps(std::vector<ZipRecord> recs) {
  std::sort(recs.begin(), recs.end(),
            [](const auto& a, const auto& b) { return a.header_offset < b.header_offset; });
  for (size_t k = 1; k < recs.size(); k++) {
    const ZipRecord &a = recs[k - 1], &b = recs[k];
    HFX_CHECK(a.data_offset + a.compressed_size <= b.header_offset, kComp,
              "expected records that do not overlap, got '{}' (bytes {}..{}) and '{}' (from byte {})", a.name,
              a.header_offset, a.data_offset + a.compressed_size, b.name, b.header_offset);
  }
}

}  // namespace

ZipReader::ZipReader(const std::string& bytes, ZipLimits limits) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.src.bytes = &bytes;
  zip_error_init(&m.src.error);
  zip_error_t err;
  zip_error_init(&err);
  zip_source_t* source = zip_source_function_create(serve, &m.src, &err);
  HFX_CHECK(source != nullptr, kComp, "expected libzip to accept a memory source, got: {}",
            zip_error_strerror(&err));
  m.src.noting = true;
  m.za = zip_open_from_source(source, ZIP_RDONLY | ZIP_CHECKCONS, &err);
  m.src.noting = false;
  if (!m.za) {
    zip_source_free(source);
    std::string why = open_problem(err);
    zip_error_fini(&err);
    HFX_THROW(kComp, "expected a zip archive ({} bytes), got {}", bytes.size(), why);
  }
  m.note_headers();
  const zip_int64_t n = zip_get_num_entries(m.za, 0);
  HFX_CHECK(n >= 0 && static_cast<uint64_t>(n) <= limits.max_records, kComp,
            "expected at most {} records, got {}", limits.max_records, n);
  std::set<std::string> names;
  uint64_t inflated_total = 0;
  for (zip_int64_t i = 0; i < n; i++) {
    zip_stat_t st;
    HFX_CHECK(zip_stat_index(m.za, i, ZIP_FL_ENC_RAW, &st) == 0, kComp, "expected record {} to stat, got: {}",
              i, m.problem());
    ZipRecord r;
    r.name = st.name ? st.name : "";
    r.size = st.size;
    r.compressed_size = st.comp_size;
    r.method = static_cast<uint16_t>(st.comp_method);
    r.crc = st.crc;
    check_name(r.name);
    HFX_CHECK(names.insert(r.name).second, kComp, "expected unique record names, got '{}' twice", r.name);
    check_sizes(r, limits, inflated_total);
    m.locate(r);
    records_.push_back(std::move(r));
  }
  check_overlaps(records_);
}

ZipReader::~ZipReader() = default;

std::string ZipReader::read(size_t i) const {
  HFX_CHECK(i < records_.size(), kComp, "expected a record index below {}, got {}", records_.size(), i);
  const ZipRecord& r = records_[i];
  zip_file_t* f = zip_fopen_index(impl_->za, i, 0);
  HFX_CHECK(f != nullptr, kComp, "expected record '{}' to open, got: {}", r.name, impl_->problem());
  // Memory grows with what the stream really yields, and reading stops one byte past the declared size:
  // a stream that goes on is refused before it can grow further.
  std::string out;
  char buf[1 << 16];
  zip_int64_t k = 0;
  while (out.size() <= r.size) {
    const uint64_t want = std::min<uint64_t>(sizeof buf, r.size + 1 - out.size());
    if ((k = zip_fread(f, buf, want)) <= 0) break;
    out.append(buf, static_cast<size_t>(k));
  }
  std::string why = k < 0 ? zip_error_strerror(zip_file_get_error(f)) : "";
  zip_fclose(f);
  HFX_CHECK(k >= 0, kComp, "expected record '{}' to read back, got: {}", r.name, why);
  HFX_CHECK(out.size() <= r.size, kComp,
            "expected record '{}' to inflate to its declared {} bytes, got more (a zip bomb?)", r.name,
            r.size);
  HFX_CHECK(out.size() == r.size, kComp, "expected record '{}' to inflate to its declared {} bytes, got {}",
            r.name, r.size, out.size());
  return out;
}

std::vector<ZipRecord> read_zip_index(const std::string& bytes) { return ZipReader(bytes).records(); }

}  // namespace hfx::io
