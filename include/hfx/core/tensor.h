// hfx/core/tensor.h — concrete tensors over owned or memory-mapped storage.
//
// A Tensor is a strided view (shape, strides in elements, byte offset) over a shared Storage. Storage
// is either owned (aligned heap) or borrowed from a mapping (safetensors files are mapped and viewed
// zero-copy); the mapping stays alive while any view of it does. Views (slice, permute, transpose,
// reshape of contiguous data, expand) share storage; `contiguous()` and `to()` copy.
#pragma once
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "hfx/core/dtype.h"

namespace hfx {

using Shape = std::vector<int64_t>;

/// Bytes shared by tensors. `owner` keeps whatever backs `data` alive (heap block or file mapping).
struct Storage {
  void* data = nullptr;
  size_t nbytes = 0;
  std::shared_ptr<void> owner;
  /// Aligned (64-byte), zero-filled heap storage.
  static std::shared_ptr<Storage> allocate(size_t nbytes);
  /// Borrowed storage; `owner` keeps the memory alive.
  static std::shared_ptr<Storage> borrow(void* data, size_t nbytes, std::shared_ptr<void> owner);
};

std::string shape_to_string(const Shape& s);
int64_t shape_numel(const Shape& s);
Shape contiguous_strides(const Shape& s);

class Tensor {
 public:
  Tensor() = default;
  Tensor(std::shared_ptr<Storage> st, DType dt, Shape shape, Shape strides, int64_t byte_offset = 0);

  /// New zero-filled contiguous tensor.
  static Tensor zeros(const Shape& shape, DType dt = DType::F32);
  static Tensor empty(const Shape& shape, DType dt = DType::F32) { return zeros(shape, dt); }
  static Tensor full(const Shape& shape, double value, DType dt = DType::F32);
  /// From host values (converted to `dt`).
  static Tensor from_floats(const Shape& shape, const std::vector<float>& v, DType dt = DType::F32);
  static Tensor from_ints(const Shape& shape, const std::vector<int64_t>& v, DType dt = DType::I64);
  static Tensor scalar(double v, DType dt = DType::F32) { return full({}, v, dt); }

  bool defined() const { return storage_ != nullptr; }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  const Shape& strides() const { return strides_; }
  int64_t dim() const { return static_cast<int64_t>(shape_.size()); }
  /// Size of dim `d` (negative counts from the end).
  int64_t size(int64_t d) const;
  int64_t numel() const { return shape_numel(shape_); }
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype_); }
  int64_t byte_offset() const { return offset_; }
  const std::shared_ptr<Storage>& storage() const { return storage_; }
  bool is_contiguous() const;

  /// Pointer to element 0 of this view.
  void* raw() const { return static_cast<char*>(storage_->data) + offset_; }
  template <typename T>
  T* data() const {
    return static_cast<T*>(raw());
  }

  // ---- views (no copy) ----
  Tensor slice(int64_t dim, int64_t start, int64_t end, int64_t step = 1) const;
  Tensor select(int64_t dim, int64_t index) const;
  Tensor permute(const std::vector<int64_t>& dims) const;
  Tensor transpose(int64_t a, int64_t b) const;
  Tensor unsqueeze(int64_t dim) const;
  Tensor squeeze(int64_t dim) const;
  /// Broadcast view to `shape` (stride 0 on expanded dims).
  Tensor expand(const Shape& shape) const;
  /// View if contiguous, else copies. One dim may be -1.
  Tensor reshape(const Shape& shape) const;

  // ---- copies ----
  Tensor contiguous() const;
  Tensor clone() const;
  /// Converts element type (copy; returns *this contiguous if already `dt`).
  Tensor to(DType dt) const;

  /// Element at a multi-index as double (for tests and small reads).
  double item(const std::vector<int64_t>& idx = {}) const;
  /// All elements, row-major, converted to float / int64.
  std::vector<float> to_floats() const;
  std::vector<int64_t> to_ints() const;

  std::string str(int max_elems = 8) const;

 private:
  std::shared_ptr<Storage> storage_;
  DType dtype_ = DType::F32;
  Shape shape_;
  Shape strides_;
  int64_t offset_ = 0;  // bytes
};

/// Calls fn(linear_index, element_offset) over every element of a strided view in row-major order.
void for_each_offset(const Shape& shape, const Shape& strides,
                     const std::function<void(int64_t, int64_t)>& fn);

/// Copies `src` (any strides) into contiguous `dst` memory of dtype `dst_dt`.
void copy_to_contiguous(const Tensor& src, void* dst, DType dst_dt);

}  // namespace hfx
