// GGUF v3 writing and ggml's reference block quantizers.
#include "export/gguf/gguf_file.h"

#include "export/gguf/gguf_kquants.h"

#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <limits>
#include <mutex>
#include <thread>

#include "hfx/core/dtype.h"
#include "hfx/core/error.h"
#include "hfx/io/safetensors.h"
#include "kernels/detail.h"

namespace hfx {

namespace {

// ggml's types hfx writes: name, elements and bytes per block (ggml.c's type_traits), llama_ftype of a file
// whose matrices are of that type (llama.h's LLAMA_FTYPE_*; the k-quants as MOSTLY_Q4_K_S / MOSTLY_Q6_K).
struct TypeRow {
  GgmlType type;
  const char* name;
  int64_t block, bytes;
  uint32_t ftype;
};
const TypeRow kTypes[] = {
    {GgmlType::F32, "f32", 1, 4, 0},
    {GgmlType::F16, "f16", 1, 2, 1},
    {GgmlType::BF16, "bf16", 1, 2, 32},
    {GgmlType::Q8_0, "q8_0", 32, 34, 7},
    {GgmlType::Q4_0, "q4_0", 32, 18, 2},
    {GgmlType::Q5_0, "q5_0", 32, 22, 8},
    {GgmlType::Q4_K, "q4_k", 256, 144, 14},
    {GgmlType::Q6_K, "q6_k", 256, 210, 18},
    // Q4_K_M's other types (llama-quantize's mix): general.file_type MOSTLY_Q5_1, _Q5_K_S
    {GgmlType::Q5_1, "q5_1", 32, 24, 9},
    {GgmlType::Q5_K, "q5_k", 256, 176, 16}};

const TypeRow* row_of(GgmlType t) {
  for (const TypeRow& r : kTypes)
    if (r.type == t) return &r;
  return nullptr;
}

}  // namespace

const char* ggml_type_name(GgmlType t) { return row_of(t) ? row_of(t)->name : "?"; }
int64_t ggml_block_size(GgmlType t) { return row_of(t) ? row_of(t)->block : 1; }
int64_t ggml_block_bytes(GgmlType t) { return row_of(t) ? row_of(t)->bytes : 0; }
uint32_t ggml_file_type(GgmlType t) { return row_of(t) ? row_of(t)->ftype : 0; }
std::vector<GgmlType> ggml_types() {
  std::vector<GgmlType> v;
  for (const TypeRow& r : kTypes) v.push_back(r.type);
  return v;
}
bool ggml_type_known(uint32_t t) { return row_of(static_cast<GgmlType>(t)) != nullptr; }

namespace {

void put16(std::vector<uint8_t>& out, uint16_t v) {
  out.push_back(static_cast<uint8_t>(v & 0xff));
  out.push_back(static_cast<uint8_t>(v >> 8));
}

// ggml-quants.c quantize_row_q8_0_ref: d = max|x| / 127 (f32), codes roundf(x / d) through id = 1 / d.
void q8_0_block(const float* x, std::vector<uint8_t>& out) {
  float amax = 0.0f;
  for (int j = 0; j < 32; j++) amax = std::max(amax, std::fabs(x[j]));
  const float d = amax / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  put16(out, f32_to_f16(d));
  // roundf (halves away from zero) without the libm call, so the loop vectorizes: x - trunc(x) is exact.
  uint8_t q[32];
  for (int j = 0; j < 32; j++) {
    const float v = x[j] * id, t = std::trunc(v);
    const float half_up = static_cast<float>(std::fabs(v - t) >= 0.5f);  // 0 or 1, no branch
    q[j] = static_cast<uint8_t>(static_cast<int8_t>(t + std::copysign(half_up, v)));
  }
  out.insert(out.end(), q, q + 32);
}

// quantize_row_q4_0_ref: the value of largest magnitude (its sign kept) maps to -8; codes
// min(15, (int8)(x / d + 8.5)), the first 16 in the low nibbles, the last 16 in the high ones.
void q4_0_block(const float* x, std::vector<uint8_t>& out) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < 32; j++)
    if (amax < std::fabs(x[j])) amax = std::fabs(x[j]), max = x[j];
  const float d = max / -8.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  put16(out, f32_to_f16(d));
  for (int j = 0; j < 16; j++) {
    const auto lo =
        static_cast<uint8_t>(std::min(15, static_cast<int>(static_cast<int8_t>(x[j] * id + 8.5f))));
    const auto hi =
        static_cast<uint8_t>(std::min(15, static_cast<int>(static_cast<int8_t>(x[j + 16] * id + 8.5f))));
    out.push_back(static_cast<uint8_t>(lo | (hi << 4)));
  }
}

}  // namespace

void ggml_encode_row(GgmlType t, std::span<const float> x, std::vector<uint8_t>& out) {
  const int64_t bs = ggml_block_size(t);
  HFX_CHECK(static_cast<int64_t>(x.size()) % bs == 0, "gguf",
            "expected a row of whole {}-blocks for {}, got {}", bs, ggml_type_name(t), x.size());
  switch (t) {
    case GgmlType::F32: {
      const auto* p = reinterpret_cast<const uint8_t*>(x.data());
      out.insert(out.end(), p, p + x.size() * 4);
      return;
    }
    case GgmlType::F16:
      for (float v : x) put16(out, f32_to_f16(v));
      return;
    case GgmlType::BF16:
      for (float v : x) put16(out, f32_to_bf16(v));
      return;
    case GgmlType::Q8_0:
      for (size_t i = 0; i < x.size(); i += 32) q8_0_block(x.data() + i, out);
      return;
    case GgmlType::Q4_0:
      for (size_t i = 0; i < x.size(); i += 32) q4_0_block(x.data() + i, out);
      return;
    case GgmlType::Q5_0:
    case GgmlType::Q5_1:
    case GgmlType::Q4_K:
    case GgmlType::Q5_K:
    case GgmlType::Q6_K: {
      const auto bs = static_cast<size_t>(ggml_block_size(t)), bb = static_cast<size_t>(ggml_block_bytes(t));
      for (size_t i = 0; i < x.size(); i += bs) {
        out.resize(out.size() + bb);
        uint8_t* o = out.data() + out.size() - bb;
        if (t == GgmlType::Q5_0)
          gguf::q5_0_block(x.data() + i, o);
        else if (t == GgmlType::Q5_1)
          gguf::q5_1_block(x.data() + i, o);
        else if (t == GgmlType::Q4_K)
          gguf::q4_k_block(x.data() + i, o);
        else if (t == GgmlType::Q5_K)
          gguf::q5_k_block(x.data() + i, o);
        else
          gguf::q6_k_block(x.data() + i, o);
      }
      return;
    }
  }
}

namespace gguf {

namespace {

// SHA-256 of the file on its own thread, behind the writes (the hash and the copy into the page cache each
// take about as long on a bf16 copy): push hands it each emitted span in order; sync waits until it has
// hashed them all, which the writer calls before the memory of a span is reused, released or freed.
class HashBehind {
 public:
  HashBehind() : worker_([this] { run(); }) {}
  HashBehind(const HashBehind&) = delete;
  HashBehind& operator=(const HashBehind&) = delete;
  ~HashBehind() {
    {
      std::lock_guard<std::mutex> l(m_);
      stop_ = true;
    }
    more_.notify_all();
    worker_.join();
  }
  void push(const void* p, size_t n) {
    if (n == 0) return;
    {
      std::lock_guard<std::mutex> l(m_);
      q_.emplace_back(p, n);
    }
    more_.notify_one();
  }
  void sync() {
    std::unique_lock<std::mutex> l(m_);
    idle_.wait(l, [&] { return q_.empty() && !busy_; });
  }
  std::string hex() {
    sync();
    return sha_.hex();
  }

 private:
  void run() {
    std::unique_lock<std::mutex> l(m_);
    for (;;) {
      more_.wait(l, [&] { return stop_ || !q_.empty(); });
      if (stop_) return;  // after sync (a normal end) the queue is empty; on an error nothing left is read
      const auto [p, n] = q_.front();
      q_.pop_front();
      busy_ = true;
      l.unlock();
      sha_.update(p, n);
      l.lock();
      busy_ = false;
      if (q_.empty()) idle_.notify_all();
    }
  }
  io::Sha256 sha_;
  std::mutex m_;
  std::condition_variable more_, idle_;
  std::deque<std::pair<const void*, size_t>> q_;
  bool busy_ = false, stop_ = false;
  std::thread worker_;  // last: started once the rest is built
};

}  // namespace

namespace {
enum : uint32_t { U8 = 0, STRING = 8, ARRAY = 9, U32 = 4, I32 = 5, F32 = 6, BOOL = 7 };
uint64_t padded(uint64_t n) { return (n + File::kAlignment - 1) / File::kAlignment * File::kAlignment; }
}  // namespace

uint64_t tensor_bytes(const Shape& shape, GgmlType type) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return static_cast<uint64_t>(n / ggml_block_size(type) * ggml_block_bytes(type));
}

void File::key(const std::string& k, uint32_t type) {
  str(k);
  pod(type);
  kv_++;
}
void File::str(const std::string& s) {
  pod(static_cast<uint64_t>(s.size()));
  meta_ += s;
}
void File::kv_str(const std::string& k, const std::string& v) {
  key(k, STRING);
  str(v);
}
void File::kv_u32(const std::string& k, uint32_t v) {
  key(k, U32);
  pod(v);
}
void File::kv_f32(const std::string& k, float v) {
  key(k, F32);
  pod(v);
}
void File::kv_bool(const std::string& k, bool v) {
  key(k, BOOL);
  pod(static_cast<uint8_t>(v));
}
void File::kv_strs(const std::string& k, const std::vector<std::string>& v) {
  key(k, ARRAY);
  pod(uint32_t{STRING});
  pod(static_cast<uint64_t>(v.size()));
  for (const auto& s : v) str(s);
}
void File::kv_i32s(const std::string& k, const std::vector<int32_t>& v) {
  key(k, ARRAY);
  pod(uint32_t{I32});
  pod(static_cast<uint64_t>(v.size()));
  for (auto x : v) pod(x);
}
void File::kv_u8s(const std::string& k, std::string_view bytes) {
  key(k, ARRAY);
  pod(uint32_t{U8});
  pod(static_cast<uint64_t>(bytes.size()));
  for (char x : bytes) pod(static_cast<uint8_t>(x));
}
void File::kv_f32s(const std::string& k, const std::vector<float>& v) {
  key(k, ARRAY);
  pod(uint32_t{F32});
  pod(static_cast<uint64_t>(v.size()));
  for (auto x : v) pod(x);
}

void File::tensor(const std::string& name, const Shape& shape, std::function<Tensor()> make, GgmlType type,
                  std::function<void(uint64_t, uint64_t)> consumed) {
  for (const Entry& e : tensors_)
    HFX_CHECK(e.name != name, "gguf", "expected each tensor name once, got '{}' twice", name);
  tensors_.push_back({name, shape, std::move(make), type, std::move(consumed)});
}

// One tensor's rows, widened to f32 one at a time (no whole f32 copy), encoded and emitted; the source told
// every kChunk bytes which of its bytes are written.
void File::write_entry(const Entry& e, const std::function<void(const void*, size_t)>& emit,
                       const std::function<void()>& sync) {
  Tensor t = e.make();
  HFX_CHECK(t.shape() == e.shape && dtype_is_float(t.dtype()), "gguf",
            "expected tensor {} of shape {} in a float dtype, got {} {}", e.name, shape_to_string(e.shape),
            dtype_name(t.dtype()), shape_to_string(t.shape()));
  if (!t.is_contiguous()) t = t.contiguous();
  const int64_t row = e.shape.empty() ? 1 : e.shape.back();
  const int64_t rows = t.numel() / std::max<int64_t>(row, 1);
  const size_t row_bytes = static_cast<size_t>(row) * dtype_size(t.dtype());
  constexpr uint64_t kChunk = 8u << 20;  // source bytes between two releases
  uint64_t released = 0;
  // Stored as it is held (bf16 → bf16, f16 → f16, f32 → f32): the bytes pass through, as widening and
  // rounding back would give them again.
  const bool same = (t.dtype() == DType::BF16 && e.type == GgmlType::BF16) ||
                    (t.dtype() == DType::F16 && e.type == GgmlType::F16) ||
                    (t.dtype() == DType::F32 && e.type == GgmlType::F32);
  // Rows are converted a block at a time, the block's rows on every kernel thread (each row is independent
  // and encodes to a fixed size), then written in order: the bytes do not depend on the thread count.
  const auto out_row = static_cast<size_t>(tensor_bytes({row}, e.type));
  const int64_t block =
      std::max<int64_t>(1, static_cast<int64_t>((1u << 20) / std::max<size_t>(row_bytes, 1)));
  std::vector<uint8_t> buf;
  for (int64_t r0 = 0; r0 < rows; r0 += block) {
    const int64_t n = std::min(block, rows - r0);
    const char* src = static_cast<const char*>(t.raw()) + static_cast<size_t>(r0) * row_bytes;
    if (same) {
      emit(src, static_cast<size_t>(n) * row_bytes);
    } else {
      sync();  // the previous block's bytes hashed before they are overwritten
      buf.resize(static_cast<size_t>(n) * out_row);
      kernels::detail::parallel_for(n, 1, [&](int64_t b, int64_t end) {
        std::vector<float> f32(static_cast<size_t>(row));
        std::vector<uint8_t> one;
        for (int64_t i = b; i < end; i++) {
          convert_elements(src + static_cast<size_t>(i) * row_bytes, t.dtype(), f32.data(), DType::F32,
                           f32.size());
          one.clear();
          ggml_encode_row(e.type, f32, one);
          std::memcpy(buf.data() + static_cast<size_t>(i) * out_row, one.data(), out_row);
        }
      });
      emit(buf.data(), buf.size());
    }
    const uint64_t done = static_cast<uint64_t>(r0 + n) * row_bytes;
    if (e.consumed && done - released >= kChunk) sync(), e.consumed(released, done), released = done;
  }
  static const std::vector<uint8_t> zeros(File::kAlignment, 0);
  const uint64_t n = tensor_bytes(e.shape, e.type);
  emit(zeros.data(), padded(n) - n);
  sync();  // every byte of `t` and `buf` hashed before they go
  t = Tensor();
  if (e.consumed) e.consumed(released, std::numeric_limits<uint64_t>::max());
}

std::pair<uint64_t, std::string> File::write(const std::string& path,
                                             const std::function<void(uint64_t)>& on_tensor) const {
  std::string head;
  auto put = [&](const void* p, size_t n) { head.append(static_cast<const char*>(p), n); };
  const uint32_t version = 3;
  const uint64_t nt = tensors_.size(), nk = kv_;
  put("GGUF", 4);
  put(&version, 4);
  put(&nt, 8);
  put(&nk, 8);
  head += meta_;
  uint64_t off = 0;
  for (const Entry& e : tensors_) {
    const uint64_t len = e.name.size();
    put(&len, 8);
    head += e.name;
    size_t lead =
        0;  // ggml_n_dims: GGUF's trailing 1s (the torch shape's leading ones) dropped, one dim kept
    while (ggml_n_dims_ && lead + 1 < e.shape.size() && e.shape[lead] == 1) ++lead;
    const auto nd = static_cast<uint32_t>(e.shape.size() - lead);
    put(&nd, 4);
    for (auto it = e.shape.rbegin(); it != e.shape.rend() - static_cast<ptrdiff_t>(lead); ++it) {
      const auto n = static_cast<uint64_t>(*it);
      put(&n, 8);
    }
    const auto type = static_cast<uint32_t>(e.type);
    put(&type, 4);
    put(&off, 8);
    off += padded(tensor_bytes(e.shape, e.type));
  }
  head.resize(padded(head.size()), '\0');
  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  HFX_CHECK(f != nullptr, "gguf", "expected to write {}, got an error opening it", tmp);
  uint64_t written = 0;
  HashBehind sha;
  auto emit = [&](const void* p, size_t n) {
    sha.push(p, n);
    if (n && std::fwrite(p, 1, n, f) != n) {
      sha.sync();
      std::fclose(f);
      std::filesystem::remove(tmp);
      HFX_THROW("gguf", "expected to write {} bytes to {}, got a short write (disk full?)", n, tmp);
    }
    written += n;
  };
  const std::function<void()> sync = [&] { sha.sync(); };
  emit(head.data(), head.size());
  for (const Entry& e : tensors_) {
    write_entry(e, emit, sync);
    if (on_tensor) on_tensor(written);
  }
  const bool ok = std::fclose(f) == 0;
  if (!ok) std::filesystem::remove(tmp);
  HFX_CHECK(ok, "gguf", "expected to close {}, got an error (disk full?)", tmp);
  std::filesystem::rename(tmp, path);
  return {written, sha.hex()};
}

}  // namespace gguf
}  // namespace hfx
