// Streaming safetensors writer (see tiny_writer.h). The layout is the spec's: u64 little-endian header
// length, JSON header padded with spaces to a multiple of 8, then the data section in declared order.
#include "tiny_writer.h"

#include <nlohmann/json.hpp>

#include "hfx/core/error.h"
#include "io/fileutil.h"

namespace hfx::models {

SafetensorsStreamWriter::SafetensorsStreamWriter(const std::string& path, std::vector<StreamTensorDecl> decls,
                                                 const std::map<std::string, std::string>& metadata)
    : decls_(std::move(decls)) {
  nlohmann::ordered_json h = nlohmann::ordered_json::object();
  if (!metadata.empty()) h["__metadata__"] = metadata;
  uint64_t off = 0;
  for (const auto& d : decls_) {
    uint64_t n = static_cast<uint64_t>(shape_numel(d.shape)) * dtype_size(d.dtype);
    h[d.name] = {
        {"dtype", dtype_safetensors_tag(d.dtype)}, {"shape", d.shape}, {"data_offsets", {off, off + n}}};
    off += n;
  }
  std::string header = h.dump();
  while (header.size() % 8) header.push_back(' ');
  file_ = std::make_unique<io::detail::AtomicFile>(path, "safetensors");
  uint64_t len = header.size();
  unsigned char le[8];
  for (int i = 0; i < 8; i++) le[i] = static_cast<unsigned char>(len >> (8 * i));
  file_->write(le, 8);
  file_->write(header.data(), header.size());
}

SafetensorsStreamWriter::~SafetensorsStreamWriter() = default;

void SafetensorsStreamWriter::write(const std::string& name, const Tensor& t) {
  if (next_ >= decls_.size() || decls_[next_].name != name)
    HFX_THROW("safetensors", "expected tensor '{}' next in the stream, got '{}'",
              next_ < decls_.size() ? decls_[next_].name : std::string("<end>"), name);
  const auto& d = decls_[next_];
  if (t.dtype() != d.dtype || t.shape() != d.shape)
    HFX_THROW("safetensors", "expected tensor '{}' as {}{}, got {}{}", name, dtype_name(d.dtype),
              shape_to_string(d.shape), dtype_name(t.dtype()), shape_to_string(t.shape()));
  Tensor c = t.is_contiguous() ? t : t.contiguous();
  file_->write(c.raw(), c.nbytes());
  next_++;
}

void SafetensorsStreamWriter::commit() {
  if (next_ != decls_.size())
    HFX_THROW("safetensors", "expected {} tensors written before commit, got {}", decls_.size(), next_);
  file_->commit();
}

TinyExtras tiny_extras(const std::string& model_type) {
  static const std::pair<const char*, TinyExtras> kTable[] = {{"whisper", whisper_tiny_extras}};
  for (const auto& [type, fn] : kTable)
    if (model_type == type) return fn;
  return nullptr;
}

}  // namespace hfx::models
