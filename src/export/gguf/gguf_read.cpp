// Reading a GGUF v3 file back: its key/value pairs as JSON, its tensor table, and each tensor decoded to f32.
// The file is mapped read-only (a tensor's pages are read when it is decoded), and every count, length and
// offset is checked against the file's size before use: a crafted or truncated file is refused, never read
// past.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <set>
#include <string_view>

#include "export/gguf/gguf_kquants.h"
#include "hfx/core/dtype.h"
#include "hfx/core/error.h"
#include "hfx/export/gguf.h"

namespace hfx {

namespace {

enum : uint32_t {
  U8 = 0,
  I8 = 1,
  U16 = 2,
  I16 = 3,
  U32 = 4,
  I32 = 5,
  F32 = 6,
  BOOL = 7,
  STRING = 8,
  ARRAY = 9,
  U64 = 10,
  I64 = 11,
  F64 = 12
};

// A bounds-checked cursor over the file's header bytes.
struct Cursor {
  std::string_view b;
  const std::string& path;
  size_t at = 0;
  void need(uint64_t n, const char* what) const {
    HFX_CHECK(n <= b.size() && at <= b.size() - n, "gguf",
              "expected {} more bytes for {} at offset {} of {} ({} bytes), got a truncated file", n, what,
              at, path, b.size());
  }
  template <typename T>
  T pod(const char* what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, b.data() + at, sizeof(T));
    at += sizeof(T);
    return v;
  }
  std::string str(const char* what) {
    const auto n = pod<uint64_t>(what);
    need(n, what);
    std::string s(b.substr(at, n));
    at += n;
    return s;
  }
};

nlohmann::json scalar(Cursor& c, uint32_t type, const std::string& key) {
  switch (type) {
    case U8:
      return c.pod<uint8_t>("a u8");
    case I8:
      return c.pod<int8_t>("an i8");
    case U16:
      return c.pod<uint16_t>("a u16");
    case I16:
      return c.pod<int16_t>("an i16");
    case U32:
      return c.pod<uint32_t>("a u32");
    case I32:
      return c.pod<int32_t>("an i32");
    case F32:
      return c.pod<float>("an f32");
    case BOOL:
      return c.pod<uint8_t>("a bool") != 0;
    case STRING:
      return c.str("a string");
    case U64:
      return c.pod<uint64_t>("a u64");
    case I64:
      return c.pod<int64_t>("an i64");
    case F64:
      return c.pod<double>("an f64");
    default:
      throw Error("gguf", fmt::format("expected a GGUF value type 0-12 for key '{}' of {}, got {}", key,
                                      c.path, type));
  }
}

nlohmann::json value(Cursor& c, uint32_t type, const std::string& key) {
  if (type != ARRAY) return scalar(c, type, key);
  const auto item = c.pod<uint32_t>("an array's type");
  const auto n = c.pod<uint64_t>("an array's length");
  HFX_CHECK(item != ARRAY, "gguf",
            "expected an array of scalars or strings for key '{}' of {}, got nested arrays", key, c.path);
  c.need(n, "an array's items");  // every item takes at least one byte
  nlohmann::json a = nlohmann::json::array();
  for (uint64_t i = 0; i < n; i++) a.push_back(scalar(c, item, key));
  return a;
}

}  // namespace

namespace {

GgufTensor read_info(Cursor& c) {
  const std::string& path_ = c.path;
  GgufTensor t;
  t.name = c.str("a tensor name");
  const auto dims = c.pod<uint32_t>("a tensor's rank");
  HFX_CHECK(dims >= 1 && dims <= 4, "gguf", "expected 1-4 dimensions for tensor '{}' of {}, got {}", t.name,
            path_, dims);
  t.shape.assign(dims, 0);
  int64_t numel = 1;
  for (uint32_t d = 0; d < dims; d++) {
    const auto n = c.pod<uint64_t>("a dimension");
    HFX_CHECK(n >= 1 && n < (uint64_t{1} << 40) && static_cast<double>(numel) * static_cast<double>(n) < 1e15,
              "gguf", "expected dimensions of tensor '{}' of {} in [1, 2^40), got {}", t.name, path_, n);
    t.shape[dims - 1 - d] = static_cast<int64_t>(n);  // GGUF lists the innermost first
    numel *= static_cast<int64_t>(n);
  }
  const auto type = c.pod<uint32_t>("a tensor type");
  HFX_CHECK(
      ggml_type_known(type), "gguf",
      "expected tensor '{}' of {} in a type hfx reads (f32, f16, bf16, q8_0, q4_0, q5_0, q5_1, q4_k, q5_k, "
      "q6_k), "
      "got ggml "
      "type {}",
      t.name, path_, type);
  t.type = static_cast<GgmlType>(type);
  const int64_t bs = ggml_block_size(t.type);
  HFX_CHECK(t.shape.back() % bs == 0, "gguf", "expected rows of whole {}-blocks for {} tensor '{}', got {}",
            bs, ggml_type_name(t.type), t.name, t.shape.back());
  t.bytes = static_cast<uint64_t>(numel / bs * ggml_block_bytes(t.type));
  t.offset = c.pod<uint64_t>("a tensor offset");
  return t;
}

}  // namespace

GgufReader::GgufReader(const std::string& path) : path_(path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  HFX_CHECK(fd >= 0, "gguf", "expected a readable GGUF file at {}, got none (open: {})", path,
            std::strerror(errno));
  struct stat st {};
  const bool sized = ::fstat(fd, &st) == 0 && st.st_size > 0;
  void* m =
      sized ? ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0) : MAP_FAILED;
  ::close(fd);
  HFX_CHECK(m != MAP_FAILED, "gguf", "expected a non-empty GGUF file at {}, got {}", path,
            sized ? std::strerror(errno) : "an empty file");
  const auto size = static_cast<size_t>(st.st_size);
  map_ = std::shared_ptr<const char>(static_cast<const char*>(m),
                                     [size](const char* p) { ::munmap(const_cast<char*>(p), size); });
  size_ = size;
  const std::string_view bytes(map_.get(), size_);
  Cursor c{bytes, path_};
  const auto magic = c.pod<uint32_t>("the magic");
  HFX_CHECK(magic == 0x46554747u, "gguf", "expected the magic 'GGUF' at the start of {}, got 0x{:08x}", path,
            magic);
  const auto version = c.pod<uint32_t>("the version");
  HFX_CHECK(version == 3, "gguf", "expected GGUF version 3 in {}, got {}", path, version);
  const auto n_tensors = c.pod<uint64_t>("the tensor count");
  const auto n_kv = c.pod<uint64_t>("the key/value count");
  c.need(n_kv, "the key/value pairs");
  for (uint64_t i = 0; i < n_kv; i++) {
    const std::string k = c.str("a key");
    const auto type = c.pod<uint32_t>("a value type");
    HFX_CHECK(!meta_.contains(k), "gguf", "expected each key once in {}, got '{}' twice", path, k);
    meta_[k] = value(c, type, k);
  }
  c.need(n_tensors, "the tensor infos");
  for (uint64_t i = 0; i < n_tensors; i++) tensors_.push_back(read_info(c));
  std::set<std::string> names;
  for (const GgufTensor& t : tensors_)
    HFX_CHECK(names.insert(t.name).second, "gguf", "expected each tensor name once in {}, got '{}' twice",
              path, t.name);
  const uint64_t align = meta_.value("general.alignment", uint64_t{32});
  HFX_CHECK(align > 0 && (align & (align - 1)) == 0, "gguf",
            "expected a power-of-two alignment in {}, got {}", path, align);
  const uint64_t data = (c.at + align - 1) / align * align;
  for (GgufTensor& t : tensors_) {
    HFX_CHECK(t.offset % align == 0 && t.offset <= bytes.size() && data <= bytes.size() - t.offset &&
                  t.bytes <= bytes.size() - data - t.offset,
              "gguf",
              "expected tensor '{}' ({} bytes at data offset {}) inside {} ({} bytes), got it past the end",
              t.name, t.bytes, t.offset, path, bytes.size());
    t.offset += data;
  }
}

const GgufTensor* GgufReader::find(const std::string& name) const {
  for (const GgufTensor& t : tensors_)
    if (t.name == name) return &t;
  return nullptr;
}

Tensor GgufReader::decode(const GgufTensor& t) const {
  Tensor out = Tensor::zeros(t.shape);
  ggml_decode(t.type, reinterpret_cast<const uint8_t*>(map_.get()) + t.offset, out.numel(),
              out.data<float>());
  return out;
}

void ggml_decode(GgmlType type, const uint8_t* p, int64_t n, float* out) {
  auto u16 = [](const uint8_t* q) { return static_cast<uint16_t>(q[0] | (q[1] << 8)); };
  switch (type) {
    case GgmlType::F32:
      std::memcpy(out, p, static_cast<size_t>(n) * 4);
      return;
    case GgmlType::F16:
      for (int64_t i = 0; i < n; i++) out[i] = f16_to_f32(u16(p + 2 * i));
      return;
    case GgmlType::BF16:
      for (int64_t i = 0; i < n; i++) out[i] = bf16_to_f32(u16(p + 2 * i));
      return;
    case GgmlType::Q8_0:  // dequantize_row_q8_0: x = d * q
      for (int64_t b = 0; b < n / 32; b++, p += 34) {
        const float d = f16_to_f32(u16(p));
        for (int j = 0; j < 32; j++) out[b * 32 + j] = d * static_cast<float>(static_cast<int8_t>(p[2 + j]));
      }
      return;
    case GgmlType::Q4_0:  // dequantize_row_q4_0: x = d * (nibble - 8), low nibbles first
      for (int64_t b = 0; b < n / 32; b++, p += 18) {
        const float d = f16_to_f32(u16(p));
        for (int j = 0; j < 16; j++) {
          out[b * 32 + j] = d * static_cast<float>((p[2 + j] & 0x0f) - 8);
          out[b * 32 + j + 16] = d * static_cast<float>((p[2 + j] >> 4) - 8);
        }
      }
      return;
    case GgmlType::Q5_0:
      for (int64_t b = 0; b < n / 32; b++) gguf::q5_0_decode(p + b * 22, out + b * 32);
      return;
    case GgmlType::Q5_1:
      for (int64_t b = 0; b < n / 32; b++) gguf::q5_1_decode(p + b * 24, out + b * 32);
      return;
    case GgmlType::Q4_K:
      for (int64_t b = 0; b < n / 256; b++) gguf::q4_k_decode(p + b * 144, out + b * 256);
      return;
    case GgmlType::Q5_K:
      for (int64_t b = 0; b < n / 256; b++) gguf::q5_k_decode(p + b * 176, out + b * 256);
      return;
    case GgmlType::Q6_K:
      for (int64_t b = 0; b < n / 256; b++) gguf::q6_k_decode(p + b * 210, out + b * 256);
      return;
  }
}

}  // namespace hfx
