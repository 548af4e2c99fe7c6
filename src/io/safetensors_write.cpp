// src/io/safetensors_write.cpp — write_safetensors: a validated header, then each tensor's bytes (strided
// views staged through a buffer), written atomically (detail::AtomicFile): a reader never sees a half file.
#include "hfx/io/safetensors.h"

#include <filesystem>
#include <set>

#include <nlohmann/json.hpp>

#include "hfx/core/error.h"
#include "io/fileutil.h"
#include "io/safetensors_internal.h"

namespace hfx::io {
using json = nlohmann::json;
using detail::is_utf8;
using detail::kMaxHeader;

// ------------------------------------------------------------------------------------------------
// Writing

namespace {

constexpr size_t kChunk = size_t(16) << 20;  // staging buffer for non-contiguous tensors

/// Checks that every element of the view lies inside its storage.
void check_extent(const std::string& path, const std::string& name, const Tensor& t) {
  if (t.numel() == 0) return;
  const int64_t es = static_cast<int64_t>(dtype_size(t.dtype()));
  int64_t lo = 0, hi = 0;  // element offsets relative to element 0
  for (int64_t d = 0; d < t.dim(); d++) {
    const int64_t span = (t.shape()[d] - 1) * t.strides()[d];
    (span >= 0 ? hi : lo) += span;
  }
  const int64_t first = t.byte_offset() + lo * es;
  const int64_t last_end = t.byte_offset() + (hi + 1) * es;
  const auto& st = t.storage();
  if (first < 0 || static_cast<uint64_t>(last_end) > st->nbytes || st->data == nullptr)
    HFX_THROW("safetensors",
              "'{}': tensor '{}' ({} {}): expected its view to lie inside its storage of {} bytes, "
              "got bytes [{}, {}); nothing was written (the tensor is corrupt: rebuild it)",
              path, name, dtype_safetensors_tag(t.dtype()), shape_to_string(t.shape()), st->nbytes, first,
              last_end);
}

void write_view(detail::AtomicFile& out, const Tensor& t, std::vector<char>& buf) {
  if (t.numel() == 0) return;
  if (t.is_contiguous()) {
    out.write(t.raw(), t.nbytes());
    return;
  }
  if (t.nbytes() <= kChunk || t.dim() == 0) {
    buf.resize(std::max(buf.size(), t.nbytes()));
    copy_to_contiguous(t, buf.data(), t.dtype());
    out.write(buf.data(), t.nbytes());
    return;
  }
  const int64_t rows = t.shape()[0];
  const size_t row_bytes = t.nbytes() / static_cast<size_t>(rows);
  if (row_bytes > kChunk) {
    for (int64_t i = 0; i < rows; i++) write_view(out, t.select(0, i), buf);
    return;
  }
  const int64_t per = static_cast<int64_t>(kChunk / row_bytes);
  for (int64_t i = 0; i < rows; i += per) write_view(out, t.slice(0, i, std::min(rows, i + per)), buf);
}

}  // namespace

void write_safetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  // Validate everything before creating any file.
  std::set<std::string> names;
  for (const auto& [name, t] : tensors) {
    if (name == "__metadata__")
      HFX_THROW("safetensors",
                "'{}': expected tensor names other than the reserved '__metadata__', got it; rename "
                "the tensor",
                path);
    if (!is_utf8(name))
      HFX_THROW("safetensors", "'{}': expected UTF-8 tensor names, got one with invalid bytes; rename it",
                path);
    if (!names.insert(name).second)
      HFX_THROW("safetensors", "'{}': expected unique tensor names, got '{}' twice; drop or rename one", path,
                name);
    if (!t.defined())
      HFX_THROW("safetensors", "'{}': tensor '{}': expected a defined tensor, got an empty Tensor", path,
                name);
    check_extent(path, name, t);
  }
  for (const auto& [k, v] : metadata)
    if (!is_utf8(k) || !is_utf8(v))
      HFX_THROW("safetensors", "'{}': expected UTF-8 __metadata__, got invalid bytes in entry '{}'", path,
                is_utf8(k) ? k : std::string("?"));

  nlohmann::ordered_json h = nlohmann::ordered_json::object();
  if (!metadata.empty()) {
    nlohmann::ordered_json m = nlohmann::ordered_json::object();
    for (const auto& [k, v] : metadata) m[k] = v;
    h["__metadata__"] = std::move(m);
  }
  uint64_t off = 0;
  for (const auto& [name, t] : tensors) {
    nlohmann::ordered_json e = nlohmann::ordered_json::object();
    e["dtype"] = dtype_safetensors_tag(t.dtype());
    e["shape"] = t.shape();
    e["data_offsets"] = {off, off + t.nbytes()};
    off += t.nbytes();
    h[name] = std::move(e);
  }
  std::string header = h.dump();
  header.append((8 - header.size() % 8) % 8,
                ' ');  // data section starts 8-aligned, as the reference writer does
  if (header.size() > kMaxHeader)
    HFX_THROW("safetensors",
              "'{}': expected a header under {} bytes, got {} ({} tensors); split the checkpoint into "
              "shards",
              path, kMaxHeader, header.size(), tensors.size());

  detail::AtomicFile out(path, "safetensors");
  unsigned char len[8];
  uint64_t n = header.size();
  for (int i = 0; i < 8; i++) len[i] = static_cast<unsigned char>(n >> (8 * i));
  out.write(len, 8);
  out.write(header.data(), header.size());
  std::vector<char> buf;
  for (const auto& [name, t] : tensors) write_view(out, t, buf);
  out.commit();
}

}  // namespace hfx::io
