// Tensor views and copies. Strided copies walk the view with an odometer over the shape; the
// innermost dimension is a tight loop so that copies of contiguous rows stay memcpy-speed.
#include "hfx/core/tensor.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <vector>

#include "hfx/core/error.h"

namespace hfx {

std::shared_ptr<Storage> Storage::allocate(size_t nbytes) {
  auto st = std::make_shared<Storage>();
  size_t n = (nbytes + 63) / 64 * 64;
  if (n == 0) n = 64;
  void* p = std::aligned_alloc(64, n);
  if (!p) HFX_THROW("tensor", "expected to allocate {} bytes, got out of memory", nbytes);
  std::memset(p, 0, n);
  st->data = p;
  st->nbytes = nbytes;
  st->owner = std::shared_ptr<void>(p, [](void* q) { std::free(q); });
  return st;
}

std::shared_ptr<Storage> Storage::borrow(void* data, size_t nbytes, std::shared_ptr<void> owner) {
  auto st = std::make_shared<Storage>();
  st->data = data;
  st->nbytes = nbytes;
  st->owner = std::move(owner);
  return st;
}

std::string shape_to_string(const Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); i++) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}
int64_t shape_numel(const Shape& s) {
  int64_t n = 1;
  for (auto d : s) n *= d;
  return n;
}
Shape contiguous_strides(const Shape& s) {
  Shape st(s.size());
  int64_t acc = 1;
  for (int64_t i = static_cast<int64_t>(s.size()) - 1; i >= 0; i--) {
    st[i] = acc;
    acc *= s[i];
  }
  return st;
}

Tensor::Tensor(std::shared_ptr<Storage> st, DType dt, Shape shape, Shape strides, int64_t off)
    : storage_(std::move(st)),
      dtype_(dt),
      shape_(std::move(shape)),
      strides_(std::move(strides)),
      offset_(off) {
  if (shape_.size() != strides_.size())
    HFX_THROW("tensor", "expected {} strides for shape {}, got {}", shape_.size(), shape_to_string(shape_),
              strides_.size());
}

Tensor Tensor::zeros(const Shape& shape, DType dt) {
  for (auto d : shape)
    if (d < 0) HFX_THROW("tensor", "expected non-negative sizes, got shape {}", shape_to_string(shape));
  auto st = Storage::allocate(static_cast<size_t>(shape_numel(shape)) * dtype_size(dt));
  return Tensor(st, dt, shape, contiguous_strides(shape));
}

Tensor Tensor::full(const Shape& shape, double value, DType dt) {
  Tensor t = zeros(shape, dt);
  if (value != 0.0) {
    int64_t n = t.numel();
    double v = value;
    if (dt == DType::F32) {
      std::fill(t.data<float>(), t.data<float>() + n, static_cast<float>(v));
    } else {
      std::vector<float> f(static_cast<size_t>(n), static_cast<float>(v));
      if (dt == DType::I64 || dt == DType::I32) {
        std::vector<int64_t> iv(static_cast<size_t>(n), static_cast<int64_t>(v));
        convert_elements(iv.data(), DType::I64, t.raw(), dt, static_cast<size_t>(n));
      } else {
        convert_elements(f.data(), DType::F32, t.raw(), dt, static_cast<size_t>(n));
      }
    }
  }
  return t;
}

Tensor Tensor::from_floats(const Shape& shape, const std::vector<float>& v, DType dt) {
  if (static_cast<int64_t>(v.size()) != shape_numel(shape))
    HFX_THROW("tensor", "expected {} values for shape {}, got {}", shape_numel(shape), shape_to_string(shape),
              v.size());
  Tensor t = zeros(shape, dt);
  convert_elements(v.data(), DType::F32, t.raw(), dt, v.size());
  return t;
}

Tensor Tensor::from_ints(const Shape& shape, const std::vector<int64_t>& v, DType dt) {
  if (static_cast<int64_t>(v.size()) != shape_numel(shape))
    HFX_THROW("tensor", "expected {} values for shape {}, got {}", shape_numel(shape), shape_to_string(shape),
              v.size());
  Tensor t = zeros(shape, dt);
  convert_elements(v.data(), DType::I64, t.raw(), dt, v.size());
  return t;
}

int64_t Tensor::size(int64_t d) const {
  int64_t n = dim();
  if (d < 0) d += n;
  if (d < 0 || d >= n) HFX_THROW("tensor", "expected a dim in [{}, {}), got {}", -n, n, d);
  return shape_[d];
}

bool Tensor::is_contiguous() const {
  int64_t acc = 1;
  for (int64_t i = dim() - 1; i >= 0; i--) {
    if (shape_[i] != 1 && strides_[i] != acc) return false;
    acc *= shape_[i];
  }
  return true;
}

static int64_t norm_dim(int64_t d, int64_t n, const char* what) {
  if (d < 0) d += n;
  if (d < 0 || d >= n) HFX_THROW("tensor", "expected {} dim in [{}, {}), got {}", what, -n, n, d);
  return d;
}

Tensor Tensor::slice(int64_t d, int64_t start, int64_t end, int64_t step) const {
  d = norm_dim(d, dim(), "slice");
  int64_t n = shape_[d];
  if (start < 0) start += n;
  if (end < 0) end += n;
  start = std::clamp<int64_t>(start, 0, n);
  end = std::clamp<int64_t>(end, start, n);
  if (step <= 0) HFX_THROW("tensor", "expected a positive slice step, got {}", step);
  Shape sh = shape_, st = strides_;
  sh[d] = (end - start + step - 1) / step;
  st[d] = strides_[d] * step;
  return Tensor(storage_, dtype_, sh, st,
                offset_ + start * strides_[d] * static_cast<int64_t>(dtype_size(dtype_)));
}

Tensor Tensor::select(int64_t d, int64_t index) const {
  d = norm_dim(d, dim(), "select");
  if (index < 0) index += shape_[d];
  if (index < 0 || index >= shape_[d])
    HFX_THROW("tensor", "expected index in [0, {}), got {}", shape_[d], index);
  Shape sh = shape_, st = strides_;
  int64_t off = offset_ + index * strides_[d] * static_cast<int64_t>(dtype_size(dtype_));
  sh.erase(sh.begin() + d);
  st.erase(st.begin() + d);
  return Tensor(storage_, dtype_, sh, st, off);
}

Tensor Tensor::permute(const std::vector<int64_t>& dims) const {
  if (static_cast<int64_t>(dims.size()) != dim())
    HFX_THROW("tensor", "expected {} permutation dims, got {}", dim(), dims.size());
  Shape sh(dims.size()), st(dims.size());
  std::vector<bool> seen(dims.size());
  for (size_t i = 0; i < dims.size(); i++) {
    int64_t d = norm_dim(dims[i], dim(), "permute");
    if (seen[d]) HFX_THROW("tensor", "expected a permutation, got dim {} twice", d);
    seen[d] = true;
    sh[i] = shape_[d];
    st[i] = strides_[d];
  }
  return Tensor(storage_, dtype_, sh, st, offset_);
}

Tensor Tensor::transpose(int64_t a, int64_t b) const {
  std::vector<int64_t> p(dim());
  std::iota(p.begin(), p.end(), 0);
  std::swap(p[norm_dim(a, dim(), "transpose")], p[norm_dim(b, dim(), "transpose")]);
  return permute(p);
}

Tensor Tensor::unsqueeze(int64_t d) const {
  if (d < 0) d += dim() + 1;
  if (d < 0 || d > dim()) HFX_THROW("tensor", "expected unsqueeze dim in [0, {}], got {}", dim(), d);
  Shape sh = shape_, st = strides_;
  int64_t s = d < dim() ? strides_[d] * shape_[d] : 1;
  sh.insert(sh.begin() + d, 1);
  st.insert(st.begin() + d, s);
  return Tensor(storage_, dtype_, sh, st, offset_);
}

Tensor Tensor::squeeze(int64_t d) const {
  d = norm_dim(d, dim(), "squeeze");
  if (shape_[d] != 1) return *this;
  Shape sh = shape_, st = strides_;
  sh.erase(sh.begin() + d);
  st.erase(st.begin() + d);
  return Tensor(storage_, dtype_, sh, st, offset_);
}

Tensor Tensor::expand(const Shape& shape) const {
  if (shape.size() < shape_.size())
    HFX_THROW("tensor", "expected expand to at least {} dims, got {}", shape_.size(), shape.size());
  size_t lead = shape.size() - shape_.size();
  Shape st(shape.size(), 0);
  Shape sh = shape;
  for (size_t i = 0; i < shape.size(); i++) {
    if (i < lead) continue;
    int64_t have = shape_[i - lead];
    if (sh[i] == -1) sh[i] = have;
    if (have == sh[i]) {
      st[i] = strides_[i - lead];
    } else if (have == 1) {
      st[i] = 0;
    } else {
      HFX_THROW("tensor", "expected size 1 or {} at dim {} to expand {} to {}, got {}", sh[i], i,
                shape_to_string(shape_), shape_to_string(shape), have);
    }
  }
  return Tensor(storage_, dtype_, sh, st, offset_);
}

Tensor Tensor::reshape(const Shape& shape) const {
  Shape sh = shape;
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < sh.size(); i++) {
    if (sh[i] == -1) {
      if (infer >= 0)
        HFX_THROW("tensor", "expected at most one -1 in reshape, got {}", shape_to_string(shape));
      infer = static_cast<int64_t>(i);
    } else {
      known *= sh[i];
    }
  }
  if (infer >= 0) sh[infer] = known == 0 ? 0 : numel() / known;
  if (shape_numel(sh) != numel())
    HFX_THROW("tensor", "expected reshape to keep {} elements, got shape {}", numel(),
              shape_to_string(shape));
  Tensor src = is_contiguous() ? *this : contiguous();
  return Tensor(src.storage_, dtype_, sh, contiguous_strides(sh), src.offset_);
}

void for_each_offset(const Shape& shape, const Shape& strides,
                     const std::function<void(int64_t, int64_t)>& fn) {
  int64_t n = shape_numel(shape);
  if (n == 0) return;
  size_t nd = shape.size();
  std::vector<int64_t> idx(nd, 0);
  int64_t off = 0;
  for (int64_t i = 0; i < n; i++) {
    fn(i, off);
    for (int64_t d = static_cast<int64_t>(nd) - 1; d >= 0; d--) {
      idx[d]++;
      off += strides[d];
      if (idx[d] < shape[d]) break;
      off -= strides[d] * shape[d];
      idx[d] = 0;
    }
  }
}

namespace {

// Copies `n` consecutive elements of ES bytes (a source column of a tile) to slots `row_bytes` apart.
template <size_t ES>
void gather_column(const char* src, char* tile, int64_t n, int64_t row_bytes) {
  for (int64_t a = 0; a < n; a++) std::memcpy(tile + a * row_bytes, src + a * static_cast<int64_t>(ES), ES);
}

// A transposed tail, [..., A, B] with strides [..., 1, s] (a weight stored [out, in] read as [in, out]):
// copied in T x T tiles so that reads and writes both stay within a few cache lines, each tile converted
// row by row. Element by element over the strided dim, the copy of a 1B checkpoint's transposed weights was
// most of an export's time.
bool copy_transposed_tail(const Tensor& src, void* dst, DType dst_dt) {
  const int64_t nd = src.dim();
  if (nd < 2 || src.strides()[nd - 2] != 1 || src.strides()[nd - 1] == 1) return false;
  const size_t es = dtype_size(src.dtype()), ds = dtype_size(dst_dt);
  if (es != 1 && es != 2 && es != 4 && es != 8) return false;
  constexpr int64_t T = 64;
  const int64_t A = src.shape()[nd - 2], B = src.shape()[nd - 1], s = src.strides()[nd - 1];
  const int64_t E = static_cast<int64_t>(es), D = static_cast<int64_t>(ds);
  Shape outer(src.shape().begin(), src.shape().end() - 2),
      ostr(src.strides().begin(), src.strides().end() - 2);
  std::vector<char> tile(static_cast<size_t>(T * T * E));
  const char* base = static_cast<const char*>(src.raw());
  char* out = static_cast<char*>(dst);
  for_each_offset(outer, ostr, [&](int64_t i, int64_t off) {
    const char* in = base + off * E;
    char* o = out + i * A * B * D;
    for (int64_t a0 = 0; a0 < A; a0 += T) {
      const int64_t ta = std::min(T, A - a0);
      for (int64_t b0 = 0; b0 < B; b0 += T) {
        const int64_t tb = std::min(T, B - b0);
        // tile[a][b] = src[a0 + a, b0 + b]; column b of the tile is contiguous in the source.
        for (int64_t b = 0; b < tb; b++) {
          const char* col = in + ((b0 + b) * s + a0) * E;
          char* t = tile.data() + b * E;
          switch (es) {
            case 1:
              gather_column<1>(col, t, ta, T * E);
              break;
            case 2:
              gather_column<2>(col, t, ta, T * E);
              break;
            case 4:
              gather_column<4>(col, t, ta, T * E);
              break;
            default:
              gather_column<8>(col, t, ta, T * E);
              break;
          }
        }
        for (int64_t a = 0; a < ta; a++)
          convert_elements(tile.data() + a * T * E, src.dtype(), o + ((a0 + a) * B + b0) * D, dst_dt,
                           static_cast<size_t>(tb));
      }
    }
  });
  return true;
}

}  // namespace

void copy_to_contiguous(const Tensor& src, void* dst, DType dst_dt) {
  size_t es = dtype_size(src.dtype());
  size_t ds = dtype_size(dst_dt);
  if (src.is_contiguous()) {
    convert_elements(src.raw(), src.dtype(), dst, dst_dt, static_cast<size_t>(src.numel()));
    return;
  }
  int64_t nd = src.dim();
  if (nd == 0) {
    convert_elements(src.raw(), src.dtype(), dst, dst_dt, 1);
    return;
  }
  if (copy_transposed_tail(src, dst, dst_dt)) return;
  // Row-wise: walk outer dims, convert the innermost row element by element (it may be strided).
  int64_t inner = src.shape()[nd - 1];
  int64_t istride = src.strides()[nd - 1];
  Shape outer(src.shape().begin(), src.shape().end() - 1);
  Shape ostr(src.strides().begin(), src.strides().end() - 1);
  const char* base = static_cast<const char*>(src.raw());
  char* out = static_cast<char*>(dst);
  for_each_offset(outer, ostr, [&](int64_t i, int64_t off) {
    const char* row = base + off * static_cast<int64_t>(es);
    char* orow = out + i * inner * static_cast<int64_t>(ds);
    if (istride == 1) {
      convert_elements(row, src.dtype(), orow, dst_dt, static_cast<size_t>(inner));
    } else {
      for (int64_t j = 0; j < inner; j++)
        convert_elements(row + j * istride * static_cast<int64_t>(es), src.dtype(),
                         orow + j * static_cast<int64_t>(ds), dst_dt, 1);
    }
  });
}

Tensor Tensor::contiguous() const {
  if (is_contiguous()) return *this;
  Tensor out = zeros(shape_, dtype_);
  copy_to_contiguous(*this, out.raw(), dtype_);
  return out;
}

Tensor Tensor::clone() const {
  Tensor out = zeros(shape_, dtype_);
  copy_to_contiguous(*this, out.raw(), dtype_);
  return out;
}

Tensor Tensor::to(DType dt) const {
  if (dt == dtype_) return contiguous();
  Tensor out = zeros(shape_, dt);
  copy_to_contiguous(*this, out.raw(), dt);
  return out;
}

double Tensor::item(const std::vector<int64_t>& idx) const {
  if (static_cast<int64_t>(idx.size()) != dim())
    HFX_THROW("tensor", "expected {} indices, got {}", dim(), idx.size());
  int64_t off = 0;
  for (size_t i = 0; i < idx.size(); i++) {
    if (idx[i] < 0 || idx[i] >= shape_[i])
      HFX_THROW("tensor", "expected index in [0, {}), got {}", shape_[i], idx[i]);
    off += idx[i] * strides_[i];
  }
  double v = 0;
  float f;
  int64_t iv;
  const char* p = static_cast<const char*>(raw()) + off * static_cast<int64_t>(dtype_size(dtype_));
  if (dtype_is_float(dtype_)) {
    convert_elements(p, dtype_, &f, DType::F32, 1);
    v = f;
  } else {
    convert_elements(p, dtype_, &iv, DType::I64, 1);
    v = static_cast<double>(iv);
  }
  return v;
}

std::vector<float> Tensor::to_floats() const {
  std::vector<float> v(static_cast<size_t>(numel()));
  copy_to_contiguous(*this, v.data(), DType::F32);
  return v;
}
std::vector<int64_t> Tensor::to_ints() const {
  std::vector<int64_t> v(static_cast<size_t>(numel()));
  copy_to_contiguous(*this, v.data(), DType::I64);
  return v;
}

std::string Tensor::str(int max_elems) const {
  std::string s = std::string("Tensor(") + dtype_name(dtype_) + ", " + shape_to_string(shape_) + ", [";
  auto v = to_floats();
  for (size_t i = 0; i < v.size() && static_cast<int>(i) < max_elems; i++)
    s += (i ? ", " : "") + std::to_string(v[i]);
  if (static_cast<int>(v.size()) > max_elems) s += ", ...";
  return s + "])";
}

}  // namespace hfx
