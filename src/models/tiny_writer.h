// src/models/tiny_writer.h — a streaming safetensors writer: the header (every name, dtype, shape and
// offset) is written first, then each tensor's bytes as it is produced, so writing a multi-GB checkpoint
// holds one tensor at a time. Atomic like io::write_safetensors (temp file, fsync, rename).
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "hfx/core/tensor.h"

namespace hfx::io::detail {
class AtomicFile;
}

namespace hfx::models {

struct StreamTensorDecl {
  std::string name;
  DType dtype;
  Shape shape;
};

class SafetensorsStreamWriter {
 public:
  SafetensorsStreamWriter(const std::string& path, std::vector<StreamTensorDecl> decls,
                          const std::map<std::string, std::string>& metadata = {{"format", "pt"}});
  ~SafetensorsStreamWriter();
  /// Writes the next declared tensor (names must come in declaration order; dtype and shape must match).
  void write(const std::string& name, const Tensor& t);
  /// After every tensor is written: fsync and rename into place.
  void commit();

 private:
  std::vector<StreamTensorDecl> decls_;
  size_t next_ = 0;
  std::unique_ptr<io::detail::AtomicFile> file_;
};

}  // namespace hfx::models
