// src/models/tiny_writer.h — a streaming safetensors writer: the header (every name, dtype, shape and
// offset) is written first, then each tensor's bytes as it is produced, so writing a multi-GB checkpoint
// holds one tensor at a time. Atomic like io::write_safetensors (temp file, fsync, rename).
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

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

/// create-tiny: what a real checkpoint of a model type has beyond config.json and the tokenizer
/// (preprocessor_config.json, generation ids looked up in the tokenizer). Called after tokenizer.json is
/// written into `dir` and before config.json / generation_config.json, which it may amend.
using TinyExtras = void (*)(const std::string& dir, nlohmann::json& config,
                            nlohmann::json& generation_config);
/// The extras of `model_type`, or null. A table here rather than a field of Architecture for now: adding
/// one to hfx/models/model.h rebuilds nearly every file (to move there when that header next changes).
TinyExtras tiny_extras(const std::string& model_type);
/// Whisper's: preprocessor_config.json, decoder start, suppress lists, lang_to_id / task_to_id (whisper.cpp).
void whisper_tiny_extras(const std::string& dir, nlohmann::json& config, nlohmann::json& generation_config);

}  // namespace hfx::models
