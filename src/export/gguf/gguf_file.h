// A GGUF v3 file (ggml's gguf.h layout: header, key/value pairs, tensor infos, aligned data), written with
// the tensors streamed: each is produced, converted and appended one at a time, so memory holds one tensor.
#pragma once
#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "hfx/core/tensor.h"
#include "hfx/export/gguf.h"

namespace hfx::gguf {

class File {
 public:
  void kv_str(const std::string& k, const std::string& v);
  void kv_u32(const std::string& k, uint32_t v);
  void kv_f32(const std::string& k, float v);
  void kv_bool(const std::string& k, bool v);
  void kv_strs(const std::string& k, const std::vector<std::string>& v);
  void kv_i32s(const std::string& k, const std::vector<int32_t>& v);
  void kv_f32s(const std::string& k, const std::vector<float>& v);
  /// An array of uint8 (gguf-py writes `bytes` so: tokenizer.ggml.precompiled_charsmap).
  void kv_u8s(const std::string& k, std::string_view bytes);

  /// A tensor of torch shape `shape` (GGUF stores dims innermost first) whose values `make` returns, in any
  /// float dtype, when the file is written; stored in `type` (the writer's choice for its name and shape, see
  /// type_for). Rows are widened to f32 one at a time, so a tensor `make` returns as a view of the
  /// checkpoint's mapping is never copied whole. `consumed(from, to)` is told, every few MiB and at the end,
  /// which bytes of what `make` returned are written (the weight store then releases those pages: memory
  /// stays that of a chunk, whatever the tensor's size).
  void tensor(const std::string& name, const Shape& shape, std::function<Tensor()> make, GgmlType type,
              std::function<void(uint64_t, uint64_t)> consumed = {});
  /// Writes the file to `path` (a temp file renamed into place); returns its size and SHA-256 (hex, computed
  /// while writing: the manifest need not read the file again). `on_tensor(bytes so far)` runs after each
  /// tensor.
  std::pair<uint64_t, std::string> write(const std::string& path,
                                         const std::function<void(uint64_t)>& on_tensor = {}) const;
  size_t tensor_count() const { return tensors_.size(); }
  /// Sets each tensor's type to `choose(name, shape, type)`, in the order they are written (a mix such as
  /// Q4_K_M decides from the whole table, then per tensor; before write()).
  void retype(const std::function<GgmlType(const std::string&, const Shape&, GgmlType)>& choose) {
    for (Entry& e : tensors_) e.type = choose(e.name, e.shape, e.type);
  }
  /// Writes each tensor's dims as ggml does (ggml_n_dims: trailing 1s of GGUF's order dropped, one kept), as
  /// llama.cpp's own writer (llama-quantize) does; off, the torch shape's dims, as gguf-py (the converter)
  /// does.
  void use_ggml_n_dims() { ggml_n_dims_ = true; }
  /// Reorders the tensors by `before(a, b)` on their names (stable).
  void reorder(const std::function<bool(const std::string&, const std::string&)>& before) {
    std::stable_sort(tensors_.begin(), tensors_.end(),
                     [&](const Entry& a, const Entry& b) { return before(a.name, b.name); });
  }
  /// Name, shape and type of each tensor, in the order they are written.
  std::vector<std::tuple<std::string, Shape, GgmlType>> table() const {
    std::vector<std::tuple<std::string, Shape, GgmlType>> t;
    for (const Entry& e : tensors_) t.emplace_back(e.name, e.shape, e.type);
    return t;
  }

  static constexpr uint32_t kAlignment = 32;  ///< general.alignment's default

 private:
  struct Entry {
    std::string name;
    Shape shape;
    std::function<Tensor()> make;
    GgmlType type;
    std::function<void(uint64_t, uint64_t)> consumed;
  };
  /// `sync` returns once every span emitted so far has been consumed (hashed): called before the memory they
  /// lie in is reused, released or freed.
  static void write_entry(const Entry& e, const std::function<void(const void*, size_t)>& emit,
                          const std::function<void()>& sync);
  void key(const std::string& k, uint32_t type);
  void str(const std::string& s);
  template <typename T>
  void pod(T v) {
    meta_.append(reinterpret_cast<const char*>(&v), sizeof(T));
  }
  std::string meta_;
  uint64_t kv_ = 0;
  bool ggml_n_dims_ = false;
  std::vector<Entry> tensors_;
};

/// Bytes of a tensor of `shape` in `type` (rows of whole blocks).
uint64_t tensor_bytes(const Shape& shape, GgmlType type);

}  // namespace hfx::gguf
