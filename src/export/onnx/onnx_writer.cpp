// The streamed ONNX writer (stage 6): the model proto with each initializer's bytes attached one tensor at a
// time, inline or in one external data file whose tensors are aligned for memory mapping (ExternalDataFile:
// copied from the checkpoint's safetensors without a float round trip where the dtype allows).
#include "export/onnx/lowering.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "hfx/core/error.h"
#include "hfx/io/safetensors.h"

namespace hfx::onnx_export {

namespace fs = std::filesystem;

namespace {

constexpr uint64_t kAlign = 4096;
constexpr size_t kChunk = size_t{8} << 20;        // one sequential write / one conversion step
constexpr uint64_t kWindow = uint64_t{64} << 20;  // writeback granularity of the data file
constexpr uint64_t kBand = uint64_t{32} << 20;    // source bytes per band of a transposed copy
constexpr size_t kExternalMin = 1024;             // a computed initializer this large goes to external data

// Offset of the data section of a safetensors file: 8-byte little-endian header length + header.
uint64_t safetensors_data_offset(int fd, const std::string& file) {
  unsigned char b[8];
  if (::pread(fd, b, 8, 0) != 8)
    HFX_THROW("onnx", "expected to read the header length of '{}', got a short read", file);
  uint64_t n = 0;
  for (int i = 7; i >= 0; i--) n = (n << 8) | b[i];
  return 8 + n;
}

bool env_flag(const char* name, bool dflt) {
  const char* v = std::getenv(name);
  if (!v || !*v) return dflt;
  return std::string(v) != "0";
}

}  // namespace

ExternalDataFile::ExternalDataFile(const std::string& path, const io::WeightStore* store)
    : path_(path), store_(store) {
  fs::path p(path);
  if (p.has_parent_path()) fs::create_directories(p.parent_path());
  location_ = p.filename().string();
  tmp_ = (p.parent_path() / (location_ + ".tmp." + std::to_string(::getpid()))).string();
  fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0)
    HFX_THROW("onnx", "expected to create '{}', got {} (check the folder is writable)", tmp_,
              std::strerror(errno));
  hash_fd_ = ::open(tmp_.c_str(), O_RDONLY | O_CLOEXEC);
  if (hash_fd_ >= 0) hasher_ = std::thread([this] { hash_loop(); });
}

// The manifest hashes every file of an export after it is written; for the weights, most of the bytes,
// that was a fifth of a 1B export's time on one core. The hash follows the writer instead, on the other
// core, reading each tensor back from the page cache once add() has finished it (pwrite-in-place transposes
// only touch bytes before offset_, so [0, complete_) never changes again).
void ExternalDataFile::hash_loop() {
  try {
    io::Sha256 h;
    std::vector<char> buf(kChunk);
    uint64_t at = 0;
    for (;;) {
      uint64_t upto = 0;
      {
        std::unique_lock<std::mutex> lock(hash_mu_);
        hash_cv_.wait(lock, [&] { return abandon_ || closing_ || complete_ > at; });
        if (abandon_) return;
        upto = complete_;
        if (at == upto && closing_) break;
      }
      while (at < upto) {
        const size_t n = static_cast<size_t>(std::min<uint64_t>(kChunk, upto - at));
        ssize_t r = ::pread(hash_fd_, buf.data(), n, static_cast<off_t>(at));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return;  // no digest: the manifest hashes the file itself
        h.update(buf.data(), static_cast<size_t>(r));
        at += static_cast<uint64_t>(r);
      }
    }
    sha256_ = h.hex();
  } catch (const std::exception&) {
    sha256_.clear();  // no digest: the manifest hashes the file itself
  }
}

void ExternalDataFile::mark_complete() {
  {
    std::lock_guard<std::mutex> lock(hash_mu_);
    complete_ = offset_;
  }
  hash_cv_.notify_one();
}

void ExternalDataFile::stop_hasher() {
  if (hasher_.joinable()) {
    {
      std::lock_guard<std::mutex> lock(hash_mu_);
      abandon_ = true;
    }
    hash_cv_.notify_one();
    hasher_.join();
  }
  if (hash_fd_ >= 0) ::close(hash_fd_);
  hash_fd_ = -1;
}

ExternalDataFile::~ExternalDataFile() {
  stop_hasher();
  for (auto& [f, fd] : src_fds_) ::close(fd);
  if (fd_ >= 0) {
    ::close(fd_);
    ::unlink(tmp_.c_str());
  }
}

void ExternalDataFile::fail(const std::string& what) {
  int err = errno;
  if (fd_ >= 0) {
    ::close(fd_);
    ::unlink(tmp_.c_str());
    fd_ = -1;
  }
  HFX_THROW("onnx", "expected to {} '{}', got {} (disk full?)", what, tmp_, std::strerror(err));
}

// Hands each completed window to writeback and waits for the one before, so that dirty pages of the
// output stay within two windows (128 MiB) instead of growing with the model, and the final fsync has
// little left to do. Written pages stay cached (clean, reclaimable, not in RSS) by default because the
// release manifest hashes the file right after the export; HFX_EXPORT_DROP_CACHE=1 drops them as they
// reach the disk (measured on a 2.47 GB export: +4 s, the manifest then reads the file back from disk).
void ExternalDataFile::after_write() {
#ifdef __linux__
  static const bool drop = env_flag("HFX_EXPORT_DROP_CACHE", false);
  if (offset_ - kicked_ < kWindow) return;
  (void)::sync_file_range(fd_, static_cast<off64_t>(kicked_), static_cast<off64_t>(offset_ - kicked_),
                          SYNC_FILE_RANGE_WRITE);
  if (kicked_ > dropped_) {
    (void)::sync_file_range(fd_, static_cast<off64_t>(dropped_), static_cast<off64_t>(kicked_ - dropped_),
                            SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER);
    if (drop)
      (void)::posix_fadvise(fd_, static_cast<off_t>(dropped_), static_cast<off_t>(kicked_ - dropped_),
                            POSIX_FADV_DONTNEED);
    dropped_ = kicked_;
  }
  kicked_ = offset_;
#endif
}

void ExternalDataFile::write_all(const void* p, size_t n) {
  const char* c = static_cast<const char*>(p);
  while (n > 0) {
    ssize_t w = ::write(fd_, c, std::min(n, kChunk));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) fail("write the external data file");
    c += w;
    n -= static_cast<size_t>(w);
    offset_ += static_cast<uint64_t>(w);
    after_write();
  }
}

void ExternalDataFile::pad_to(uint64_t align) {
  static const std::vector<char> zeros(kAlign, 0);
  uint64_t pad = (align - offset_ % align) % align;
  if (pad) write_all(zeros.data(), pad);
}

// Unchanged bytes: copy_file_range (in-kernel, nothing mapped or copied through user space); where the
// kernel or file system refuses it, 8 MiB reads and writes.
void ExternalDataFile::copy_from_file(int src_fd, uint64_t src_off, uint64_t n) {
  static const bool use_cfr = env_flag("HFX_EXPORT_COPY_FILE_RANGE", true);
  bool cfr = use_cfr;
  while (n > 0) {
#ifdef __linux__
    if (cfr) {
      off64_t in = static_cast<off64_t>(src_off);
      ssize_t w = ::copy_file_range(src_fd, &in, fd_, nullptr, std::min<uint64_t>(n, kWindow), 0);
      if (w < 0 && errno == EINTR) continue;
      if (w < 0 &&
          (errno == ENOSYS || errno == EXDEV || errno == EINVAL || errno == EOPNOTSUPP || errno == EBADF)) {
        cfr = false;
        continue;
      }
      if (w <= 0) fail("copy weights into the external data file");
      src_off += static_cast<uint64_t>(w);
      n -= static_cast<uint64_t>(w);
      offset_ += static_cast<uint64_t>(w);
      after_write();
      continue;
    }
#endif
    if (buf_.size() < kChunk) buf_.resize(kChunk);
    size_t want = static_cast<size_t>(std::min<uint64_t>(n, kChunk));
    ssize_t r = ::pread(src_fd, buf_.data(), want, static_cast<off_t>(src_off));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) fail("read the checkpoint for");
    write_all(buf_.data(), static_cast<size_t>(r));
    src_off += static_cast<uint64_t>(r);
    n -= static_cast<uint64_t>(r);
  }
}

void ExternalDataFile::write_rows(const Tensor& t, DType as) {
  const uint64_t rows = static_cast<uint64_t>(t.size(0)), row = static_cast<uint64_t>(t.numel()) / rows;
  const uint64_t row_bytes = row * std::max(dtype_size(t.dtype()), dtype_size(as));
  const uint64_t per = std::max<uint64_t>(1, kChunk / std::max<uint64_t>(row_bytes, 1));
  if (cvt_.size() < std::max<uint64_t>(kChunk, per * row_bytes))
    cvt_.resize(std::max<uint64_t>(kChunk, per * row_bytes));
  for (uint64_t r = 0; r < rows; r += per) {
    const uint64_t n = std::min(per, rows - r);
    const Tensor block = t.slice(0, static_cast<int64_t>(r), static_cast<int64_t>(r + n));
    copy_to_contiguous(block, cvt_.data(), as);
    write_all(cvt_.data(), static_cast<size_t>(n * row * dtype_size(as)));
  }
}

int ExternalDataFile::source_fd(const std::string& file) {
  auto it = src_fds_.find(file);
  if (it == src_fds_.end()) {
    int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
      HFX_THROW("onnx", "expected to open the checkpoint file '{}', got {}", file, std::strerror(errno));
#ifdef __linux__
    (void)::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
#endif
    it = src_fds_.emplace(file, fd).first;
  }
  return it->second;
}

// Is `t` the checkpoint tensor `name` as mapped from its file (or its 2-D transpose)? Then the file is read,
// not the map: nothing of the checkpoint becomes resident.
ExternalDataFile::Source ExternalDataFile::source_of(const std::string& name, const Tensor& t) {
  Source src;
  if (!store_ || !store_->has(name)) return src;
  const io::TensorInfo& ti = store_->info(name);
  if (ti.file.empty() || ti.dtype != t.dtype() || ti.end - ti.begin != t.nbytes() ||
      store_->get(name).raw() != t.raw())
    return src;
  const bool transposed = t.dim() == 2 && t.strides()[0] == 1 && t.strides()[1] == t.size(0) && t.size(0) > 1;
  if (!t.is_contiguous() && !transposed) return src;
  src.fd = source_fd(ti.file);
  src.offset = safetensors_data_offset(src.fd, ti.file) + ti.begin;
  src.transposed = !t.is_contiguous();
  return src;
}

void ExternalDataFile::pread_all(int fd, char* dst, uint64_t n, uint64_t off) {
  for (uint64_t got = 0; got < n;) {
    ssize_t r = ::pread(fd, dst + got, n - got, static_cast<off_t>(off + got));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) fail("read the checkpoint for");
    got += static_cast<uint64_t>(r);
  }
}

// [R, C] in the checkpoint, [C, R] out: bands of source rows read with pread, transposed in memory (the
// tensor's tiled copy) and each output row's segment written in place with pwrite, so memory holds two
// bands whatever the tensor's size; the file continues after the tensor.
void ExternalDataFile::write_transposed(const Source& src, const Tensor& t, DType as) {
  const int64_t C = t.size(0), R = t.size(1);
  const uint64_t es = dtype_size(t.dtype()), os = dtype_size(as), base = offset_;
  // HFX_EXPORT_BAND_BYTES: a smaller band, so tests cross band boundaries on tiny weights.
  const char* env = std::getenv("HFX_EXPORT_BAND_BYTES");
  const uint64_t band = env && std::atoll(env) > 0 ? static_cast<uint64_t>(std::atoll(env)) : kBand;
  const int64_t J =
      std::max<int64_t>(1, static_cast<int64_t>(band / (static_cast<uint64_t>(C) * std::max(es, os))));
  buf_.resize(std::max<size_t>(buf_.size(), static_cast<size_t>(J * C) * es));
  cvt_.resize(std::max<size_t>(cvt_.size(), static_cast<size_t>(J * C) * os));
  for (int64_t r0 = 0; r0 < R; r0 += J) {
    const int64_t n = std::min(J, R - r0);
    pread_all(src.fd, buf_.data(), static_cast<uint64_t>(n * C) * es,
              src.offset + static_cast<uint64_t>(r0 * C) * es);
    const Tensor band(Storage::borrow(buf_.data(), static_cast<size_t>(n * C) * es, nullptr), t.dtype(),
                      {n, C}, {C, 1});
    copy_to_contiguous(band.transpose(0, 1), cvt_.data(), as);  // [C, n]
    for (int64_t c = 0; c < C; c++) {
      const char* p = cvt_.data() + static_cast<uint64_t>(c * n) * os;
      const uint64_t at = base + static_cast<uint64_t>(c * R + r0) * os;
      for (uint64_t done = 0, len = static_cast<uint64_t>(n) * os; done < len;) {
        ssize_t w = ::pwrite(fd_, p + done, len - done, static_cast<off_t>(at + done));
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) fail("write the external data file");
        done += static_cast<uint64_t>(w);
      }
    }
  }
  offset_ = base + static_cast<uint64_t>(R * C) * os;
  if (::lseek(fd_, static_cast<off_t>(offset_), SEEK_SET) < 0) fail("seek in the external data file");
  after_write();
}

ExternalDataFile::Extent ExternalDataFile::add_bytes(const std::string& name, const std::string& bytes) {
  if (finished_ || fd_ < 0)
    HFX_THROW("onnx", "expected an open external data file '{}' to add '{}', got a finished or failed one",
              path_, name);
  // Keyed by content: the same initializer lowered in several programs is written once.
  const std::string key =
      fmt::format("bytes\x1f{}\x1f{}\x1f{}", name, bytes.size(), std::hash<std::string>{}(bytes));
  if (auto it = extents_.find(key); it != extents_.end()) return it->second;
  pad_to(kAlign);
  Extent e{offset_, bytes.size()};
  write_all(bytes.data(), bytes.size());
  extents_[key] = e;
  mark_complete();
  if (on_written) on_written(offset_);
  return e;
}

ExternalDataFile::Extent ExternalDataFile::add(const std::string& name, const Tensor& t, DType as) {
  if (finished_)
    HFX_THROW("onnx", "expected to add '{}' before the external data file '{}' was finished", name, path_);
  if (fd_ < 0) HFX_THROW("onnx", "expected an open external data file for '{}', got a failed one", name);
  const size_t in_size = dtype_size(t.dtype()), out_size = dtype_size(as);
  const uint64_t numel = static_cast<uint64_t>(t.numel());
  std::string key =
      fmt::format("{}\x1f{}\x1f{}\x1f{}\x1f{}\x1f{}", name, dtype_name(as), dtype_name(t.dtype()),
                  reinterpret_cast<uintptr_t>(t.raw()), t.nbytes(), fmt::join(t.strides(), ","));
  if (auto it = extents_.find(key); it != extents_.end()) return it->second;
  pad_to(kAlign);
  Extent e{offset_, numel * out_size};

  const Source src = source_of(name, t);
  if (src.transposed) {
    write_transposed(src, t, as);
  } else if (as == t.dtype() && src.fd >= 0) {
    copy_from_file(src.fd, src.offset, e.length);
  } else if (as == t.dtype() && t.is_contiguous()) {
    write_all(t.raw(), e.length);
  } else if (!t.is_contiguous() && t.dim() > 0 && t.size(0) > 1) {
    // A view (a transposed or sliced weight): laid out and converted a block of leading rows at a time,
    // never a whole contiguous copy in memory.
    write_rows(t, as);
  } else {
    // Converted in chunks: never a whole converted tensor in memory.
    Tensor c;
    if (src.fd < 0) c = t.is_contiguous() ? t : t.contiguous();
    const uint64_t per = kChunk / std::max(in_size, out_size);
    if (cvt_.size() < kChunk) cvt_.resize(kChunk);
    if (src.fd >= 0 && buf_.size() < kChunk) buf_.resize(kChunk);
    for (uint64_t i = 0; i < numel; i += per) {
      const uint64_t m = std::min(per, numel - i);
      const void* from = nullptr;
      if (src.fd >= 0) {
        pread_all(src.fd, buf_.data(), m * in_size, src.offset + i * in_size);
        from = buf_.data();
      } else {
        from = static_cast<const char*>(c.raw()) + i * in_size;
      }
      convert_elements(from, t.dtype(), cvt_.data(), as, static_cast<size_t>(m));
      write_all(cvt_.data(), static_cast<size_t>(m * out_size));
    }
  }
  if (store_ && store_->has(name)) store_->release(name);
  extents_[key] = e;
  mark_complete();
  if (on_written) on_written(offset_);
  return e;
}

void ExternalDataFile::finish() {
  if (finished_) return;
  if (fd_ < 0) HFX_THROW("onnx", "expected an open external data file '{}', got a failed one", path_);
  if (hasher_.joinable()) {
    {
      std::lock_guard<std::mutex> lock(hash_mu_);
      complete_ = offset_;
      closing_ = true;
    }
    hash_cv_.notify_one();
    hasher_.join();
  }
  if (hash_fd_ >= 0) ::close(hash_fd_);
  hash_fd_ = -1;
  if (::fsync(fd_) != 0) fail("flush");
#ifdef __linux__
  if (env_flag("HFX_EXPORT_DROP_CACHE", false)) (void)::posix_fadvise(fd_, 0, 0, POSIX_FADV_DONTNEED);
#endif
  ::close(fd_);
  fd_ = -1;
  std::error_code ec;
  fs::rename(tmp_, path_, ec);
  if (ec) {
    ::unlink(tmp_.c_str());
    HFX_THROW("onnx", "expected to rename '{}' to '{}', got {}", tmp_, path_, ec.message());
  }
  for (auto& [f, fd] : src_fds_) ::close(fd);
  src_fds_.clear();
  finished_ = true;
}

WriteStats write_onnx_model(LoweredModel& lm, const std::string& path, ExternalDataFile* data) {
  constexpr uint64_t kProtoLimit = (uint64_t{2} << 30) - (uint64_t{64} << 20);  // 2 GiB minus headroom
  WriteStats st;
  fs::path p(path);
  if (p.has_parent_path()) fs::create_directories(p.parent_path());
  if (data && fs::absolute(fs::path(data->path())).lexically_normal().parent_path() !=
                  fs::absolute(p).lexically_normal().parent_path())
    HFX_THROW(
        "onnx",
        "expected the external data file '{}' in the folder of '{}' (locations are relative), got another",
        data->path(), path);
  uint64_t embedded = 0;
  auto* g = lm.model.mutable_graph();
  auto to_external = [&](onnx::TensorProto* t, const ExternalDataFile::Extent& e) {
    t->clear_raw_data();
    t->clear_external_data();
    t->set_data_location(onnx::TensorProto::EXTERNAL);
    auto kv = [&](const std::string& k, const std::string& val) {
      auto* x = t->add_external_data();
      x->set_key(k);
      x->set_value(val);
    };
    kv("location", data->location());
    kv("offset", std::to_string(e.offset));
    kv("length", std::to_string(e.length));
  };
  for (int i = 0; i < g->initializer_size(); i++) {
    onnx::TensorProto* t = g->mutable_initializer(i);
    auto it = lm.param_sources.find(t->name());
    if (it == lm.param_sources.end()) {
      // Tensors the lowering computed (quantized codes and scales, tables): in the shared file too, so the
      // programs of a folder hold one copy; shape-sized constants stay in the graph.
      if (data && t->raw_data().size() >= kExternalMin)
        to_external(t, data->add_bytes(t->name(), t->raw_data()));
      continue;
    }
    const Value* v = it->second;
    const DType as = dtype_of_onnx_elem(t->data_type());
    // Stored transposed (weight_layout.h): a strided view; the writer makes it contiguous one tensor at a
    // time.
    const Tensor src = lm.transposed.count(t->name()) ? v->data.transpose(0, 1) : v->data;
    st.initializers++;
    if (data) {
      to_external(t, data->add(v->name, src, as));
    } else {
      const uint64_t n = static_cast<uint64_t>(v->data.numel()) * dtype_size(as);
      embedded += n;
      if (embedded > kProtoLimit)
        HFX_THROW("onnx",
                  "expected the weights to fit in one ONNX protobuf (< 2 GB), got more than {} bytes at "
                  "'{}'; export with "
                  "external_data (--external-data) to write them to {}_data",
                  embedded, v->name, p.filename().string());
      Tensor c = src.dtype() == as ? src : src.to(as);
      if (!c.is_contiguous()) c = c.contiguous();
      t->set_raw_data(std::string(static_cast<const char*>(c.raw()), n));
    }
  }
  if (data) st.data_bytes = data->size();
  std::string bytes;
  if (!lm.model.SerializeToString(&bytes))
    HFX_THROW("onnx", "expected the model to serialize, got a protobuf error (over 2 GB? use external_data)");
  st.proto_bytes = bytes.size();
  io::write_file_atomic(path, bytes);
  return st;
}

WriteStats write_onnx_model(LoweredModel& lm, const std::string& path, bool external_data,
                            const io::WeightStore* store) {
  if (!external_data) return write_onnx_model(lm, path, static_cast<ExternalDataFile*>(nullptr));
  ExternalDataFile data(path + "_data", store);
  WriteStats st = write_onnx_model(lm, path, &data);
  data.finish();
  return st;
}

}  // namespace hfx::onnx_export
