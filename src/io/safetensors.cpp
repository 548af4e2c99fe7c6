// src/io/safetensors.cpp — mapped, fully validated safetensors reading; atomic writing.
//
// Format: u64 little-endian header length N, N bytes of UTF-8 JSON (an object: tensor name →
// {"dtype", "shape", "data_offsets": [begin, end]}, plus an optional "__metadata__" string→string
// map), then the data section. Offsets are relative to the data section; the spec requires the
// tensors to cover the data section exactly (no holes, no overlaps, no trailing bytes) and the
// reference (Rust) implementation refuses headers over 100,000,000 bytes. We enforce all of that.
//
// Views are zero-copy over a read-only MAP_PRIVATE mapping (writing into them faults). A tensor
// whose first byte is not aligned to its element size (possible: the spec does not align tensors
// inside the data section) is copied to aligned heap memory on get(), so kernels never see
// misaligned typed pointers.
#include "hfx/io/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <limits>
#include <set>
#include <string_view>

#include <nlohmann/json.hpp>

#include "hfx/core/error.h"
#include "io/fileutil.h"
#include "io/safetensors_internal.h"

namespace hfx::io {
using detail::did_you_mean;
using detail::DupCheckedJson;
using detail::is_utf8;
using detail::kMaxHeader;
using detail::parse_json_checked;
using detail::short_dump;

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr const char* kFix = "re-download or re-save the checkpoint";

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw Error("safetensors", fmt::format("'{}': {}", path, what));
}

[[noreturn]] void fail_tensor(const std::string& path, const std::string& name, const std::string& what) {
  fail(path, fmt::format("tensor '{}': {}; {}", name, what, kFix));
}

uint64_t load_u64_le(const void* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap64(v);
  return v;
}

/// Offset of the first byte that breaks UTF-8 (overlongs, surrogates and > U+10FFFF included), or npos.
size_t utf8_invalid_at(const unsigned char* s, size_t n) {
  size_t i = 0;
  while (i < n) {
    unsigned char c = s[i];
    if (c < 0x80) {
      i++;
      continue;
    }
    size_t len;
    uint32_t cp;
    if ((c & 0xE0) == 0xC0) {
      len = 2;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4;
      cp = c & 0x07;
    } else {
      return i;
    }
    if (i + len > n) return i;
    for (size_t k = 1; k < len; k++) {
      if ((s[i + k] & 0xC0) != 0x80) return i;
      cp = (cp << 6) | (s[i + k] & 0x3F);
    }
    if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || cp > 0x10FFFF ||
        (cp >= 0xD800 && cp <= 0xDFFF))
      return i;
    i += len;
  }
  return std::string_view::npos;
}

std::optional<DType> dtype_from_tag(std::string_view t) {
  if (t == "F32") return DType::F32;
  if (t == "F16") return DType::F16;
  if (t == "BF16") return DType::BF16;
  if (t == "I64") return DType::I64;
  if (t == "I32") return DType::I32;
  if (t == "I8") return DType::I8;
  if (t == "U8") return DType::U8;
  if (t == "BOOL") return DType::Bool;
  return std::nullopt;
}

bool is_spec_tag(std::string_view t) {
  static const char* tags[] = {"F64",     "I16",     "U16",     "U32",     "U64", "C64", "F8_E4M3",
                               "F8_E5M2", "F8_E8M0", "F6_E2M3", "F6_E3M2", "F4",  "E8M0"};
  for (auto* x : tags)
    if (t == x) return true;
  return false;
}

std::string json_type(const json& j) { return j.type_name(); }

constexpr const char* kSupported = "F32, F16, BF16, I64, I32, I8, U8, BOOL";

}  // namespace

namespace detail {

bool is_utf8(const std::string& s) {
  return utf8_invalid_at(reinterpret_cast<const unsigned char*>(s.data()), s.size()) ==
         std::string_view::npos;
}

DupCheckedJson parse_json_checked(const char* begin, const char* end) {
  DupCheckedJson out;
  std::vector<std::set<std::string>> stack;
  std::string top_key;
  auto cb = [&](int /*depth*/, json::parse_event_t ev, json& parsed) -> bool {
    switch (ev) {
      case json::parse_event_t::object_start:
        stack.emplace_back();
        break;
      case json::parse_event_t::object_end:
        if (!stack.empty()) stack.pop_back();
        break;
      case json::parse_event_t::key: {
        if (stack.empty()) break;
        const std::string& k = parsed.get_ref<const std::string&>();
        if (stack.size() == 1) top_key = k;
        if (!stack.back().insert(k).second && !out.has_dup) {
          out.has_dup = true;
          out.dup_key = k;
          out.dup_parent = stack.size() == 1 ? std::string() : top_key;
        }
        break;
      }
      default:
        break;
    }
    return true;
  };
  out.value = json::parse(begin, end, cb);
  return out;
}

std::string short_dump(const json& j) {
  std::string s = j.dump(-1, ' ', false, json::error_handler_t::replace);
  if (s.size() > 80) s = s.substr(0, 77) + "...";
  return s;
}

size_t levenshtein(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); j++) prev[j] = j;
  for (size_t i = 1; i <= a.size(); i++) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); j++)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

}  // namespace detail

// ------------------------------------------------------------------------------------------------
// SafetensorsFile

SafetensorsFile::~SafetensorsFile() = default;  // the mapping goes when the last view does

namespace {

// Opens and maps `path` read-only (MAP_PRIVATE); checks it is a regular file of at least 8 bytes.
std::pair<void*, uint64_t> map_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int e = errno;
    fail(path, fmt::format("cannot open: {}; check the path", detail::errno_text(e)));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    fail(path,
         "expected a regular .safetensors file, got a folder or special file; pass the file itself "
         "(or open the folder with WeightStore::open_dir)");
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size == 0) {
    ::close(fd);
    fail(path, fmt::format("the file is empty (0 bytes); expected at least 8 bytes of header length plus a "
                           "JSON header; {}",
                           kFix));
  }
  if (size < 8) {
    ::close(fd);
    fail(path, fmt::format("expected at least 8 bytes (the u64 header length), got a {}-byte file: it is "
                           "truncated; {}",
                           size, kFix));
  }
  void* m = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  int map_errno = errno;
  ::close(fd);
  if (m == MAP_FAILED)
    fail(path, fmt::format("cannot map {} bytes: {}", size, detail::errno_text(map_errno)));
  return {m, size};
}

// The header of a mapped file: its length checked against the file and the limit, valid UTF-8, a JSON
// object without duplicate keys. Sets `data_offset` (8 + header length).
json parse_header(const std::string& path, const char* base, uint64_t size, uint64_t& data_offset) {
  const uint64_t hlen = load_u64_le(base);
  if (hlen == 0)
    fail(path,
         fmt::format("header length is 0; expected a JSON object header of at least 2 bytes ('{{}}'); {}",
                     kFix));
  if (hlen > kMaxHeader)
    fail(path, fmt::format("header length {} exceeds the {}-byte limit (the whole file is {} bytes): this is "
                           "not a safetensors file or its first 8 bytes are corrupt; {}",
                           hlen, kMaxHeader, size, kFix));
  if (hlen > size - 8)
    fail(path,
         fmt::format("header is truncated: the header length says {} bytes but only {} bytes follow the "
                     "8-byte prefix ({} bytes missing); {}",
                     hlen, size - 8, hlen - (size - 8), kFix));
  const char* hbeg = base + 8;
  const char* hend = hbeg + hlen;
  data_offset = 8 + hlen;

  size_t bad = utf8_invalid_at(reinterpret_cast<const unsigned char*>(hbeg), hlen);
  if (bad != std::string_view::npos)
    fail(path, fmt::format("header is not valid UTF-8 (byte 0x{:02x} at header offset {}); {}",
                           static_cast<unsigned char>(hbeg[bad]), bad, kFix));

  DupCheckedJson parsed;
  try {
    parsed = parse_json_checked(hbeg, hend);
  } catch (const json::exception& e) {
    fail(path, fmt::format("header is not valid JSON ({}); {}", e.what(), kFix));
  }
  const json& h = parsed.value;
  if (!h.is_object())
    fail(path, fmt::format("expected the header to be a JSON object, got a JSON {}; {}", json_type(h), kFix));
  if (parsed.has_dup) {
    if (parsed.dup_parent.empty())
      fail(path, fmt::format("duplicate tensor name '{}' in the header (each name must appear once; a JSON "
                             "reader would silently keep only the last); {}",
                             parsed.dup_key, kFix));
    fail(path, fmt::format("entry '{}': duplicate key '{}' in the header; {}", parsed.dup_parent,
                           parsed.dup_key, kFix));
  }
  return std::move(parsed.value);
}

// __metadata__: an object of strings.
void read_metadata(const std::string& path, const json& v, std::map<std::string, std::string>& out) {
  if (!v.is_object())
    fail(path, fmt::format("expected __metadata__ to be an object of strings, got a JSON {}; {}",
                           json_type(v), kFix));
  for (auto m2 = v.begin(); m2 != v.end(); ++m2) {
    if (!m2.value().is_string())
      fail(path, fmt::format("expected __metadata__ value for '{}' to be a string, got {} ({}); {}", m2.key(),
                             json_type(m2.value()), short_dump(m2.value()), kFix));
    out[m2.key()] = m2.value().get<std::string>();
  }
}

// Shape → sizes in `ti`; the element count, with `overflow` set when it or a size does not fit.
uint64_t read_shape(const std::string& path, const std::string& name, const json& js, TensorInfo& ti,
                    bool& overflow) {
  uint64_t numel = 1;
  for (size_t i = 0; i < js.size(); i++) {
    const json& d = js[i];
    if (d.is_number_unsigned()) {
      uint64_t u = d.get<uint64_t>();
      if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) overflow = true;
      ti.shape.push_back(static_cast<int64_t>(std::min<uint64_t>(u, std::numeric_limits<int64_t>::max())));
      if (__builtin_mul_overflow(numel, u, &numel)) overflow = true;
    } else if (d.is_number_integer()) {
      fail_tensor(path, name,
                  fmt::format("dimension {} of shape {} is negative ({}); expected non-negative sizes", i,
                              short_dump(js), d.get<int64_t>()));
    } else {
      fail_tensor(
          path, name,
          fmt::format("dimension {} of shape {} is not an integer (got {} {}); expected non-negative integer "
                      "sizes",
                      i, short_dump(js), json_type(d), short_dump(d)));
    }
  }
  return numel;
}

// One tensor entry of the header, validated against the data section of `data_len` bytes.
TensorInfo read_entry(const std::string& path, const std::string& name, const json& v, uint64_t data_len) {
  if (!v.is_object())
    fail_tensor(path, name,
                fmt::format("expected an object with dtype, shape and data_offsets, got a JSON {} ({})",
                            json_type(v), short_dump(v)));
  for (const char* field : {"dtype", "shape", "data_offsets"})
    if (!v.contains(field))
      fail_tensor(
          path, name,
          fmt::format("missing '{}' (expected {{\"dtype\": ..., \"shape\": [...], \"data_offsets\": [begin, "
                      "end]}}, got {})",
                      field, short_dump(v)));

  TensorInfo ti;
  ti.name = name;
  ti.file = path;

  const json& jd = v["dtype"];
  if (!jd.is_string())
    fail_tensor(path, name,
                fmt::format("expected 'dtype' to be a string like \"F32\", got {}", short_dump(jd)));
  const std::string tag = jd.get<std::string>();
  auto dt = dtype_from_tag(tag);
  if (!dt) {
    if (is_spec_tag(tag))
      fail_tensor(
          path, name,
          fmt::format(
              "dtype '{}' is not supported (expected one of {}); convert the checkpoint, e.g. load it "
              "in torch, cast with model.to(torch.float32 or torch.bfloat16) and save_pretrained",
              tag, kSupported));
    fail_tensor(path, name, fmt::format("unknown dtype tag '{}' (expected one of {})", tag, kSupported));
  }
  ti.dtype = *dt;

  const json& js = v["shape"];
  if (!js.is_array())
    fail_tensor(
        path, name,
        fmt::format("expected 'shape' to be a list of non-negative integers, got {}", short_dump(js)));
  bool overflow = false;
  const uint64_t numel = read_shape(path, name, js, ti, overflow);
  const uint64_t es = dtype_size(ti.dtype);
  uint64_t nbytes = 0;
  if (overflow || numel > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ||
      __builtin_mul_overflow(numel, es, &nbytes))
    fail_tensor(path, name,
                fmt::format("shape {} overflows: its element count or byte size does not fit in 64 bits",
                            short_dump(js)));

  const json& jo = v["data_offsets"];
  if (!jo.is_array() || jo.size() != 2 || !jo[0].is_number_unsigned() || !jo[1].is_number_unsigned())
    fail_tensor(
        path, name,
        fmt::format("expected 'data_offsets' to be [begin, end] with two non-negative integers, got {}",
                    short_dump(jo)));
  ti.begin = jo[0].get<uint64_t>();
  ti.end = jo[1].get<uint64_t>();
  if (ti.begin > ti.end)
    fail_tensor(path, name,
                fmt::format("data_offsets [{}, {}] are reversed; expected begin <= end", ti.begin, ti.end));
  if (ti.end > data_len)
    fail_tensor(
        path, name,
        fmt::format("data_offsets [{}, {}] end beyond the data section, which holds only {} bytes ({} bytes "
                    "missing): the file is truncated or the header is wrong",
                    ti.begin, ti.end, data_len, ti.end - data_len));
  if (ti.end - ti.begin != nbytes)
    fail_tensor(
        path, name,
        fmt::format("expected {} bytes for {} {} ({} elements x {} bytes), got {} bytes from data_offsets "
                    "[{}, {}]",
                    nbytes, tag, short_dump(js), numel, es, ti.end - ti.begin, ti.begin, ti.end));
  return ti;
}

// File order; the data section must be covered exactly (spec: no holes, no overlaps).
void check_coverage(const std::string& path, std::vector<TensorInfo>& infos, uint64_t data_len) {
  std::stable_sort(infos.begin(), infos.end(), [](const TensorInfo& a, const TensorInfo& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t prev_end = 0;
  const TensorInfo* prev = nullptr;
  for (const auto& ti : infos) {
    if (ti.begin < prev_end)
      fail(path,
           fmt::format("tensor '{}' (data bytes [{}, {})) overlaps tensor '{}' (data bytes [{}, {})); {}",
                       ti.name, ti.begin, ti.end, prev->name, prev->begin, prev->end, kFix));
    if (ti.begin > prev_end)
      fail(path, fmt::format(
                     "hole of {} data bytes before tensor '{}' (data bytes [{}, {})) that no tensor covers; "
                     "the format forbids holes; {}",
                     ti.begin - prev_end, ti.name, ti.begin, ti.end, kFix));
    prev_end = ti.end;
    prev = &ti;
  }
  if (prev_end != data_len)
    fail(path,
         fmt::format("{} trailing bytes after the last tensor are not covered by any tensor (data section is "
                     "{} bytes, tensors end at {}); {}",
                     data_len - prev_end, data_len, prev_end, kFix));
}

}  // namespace

std::shared_ptr<SafetensorsFile> SafetensorsFile::open(const std::string& path) {
  auto f = std::make_shared<SafetensorsFile>();
  f->path_ = path;
  auto [m, size] = map_file(path);
  f->map_ = m;
  f->map_size_ = size;
  f->keepalive_ = std::shared_ptr<void>(m, [size](void* p) { ::munmap(p, size); });
  const json h = parse_header(path, static_cast<const char*>(m), size, f->data_offset_);
  const uint64_t data_len = size - f->data_offset_;
  for (auto it = h.begin(); it != h.end(); ++it) {
    if (it.key() == "__metadata__")
      read_metadata(path, it.value(), f->metadata_);
    else
      f->infos_.push_back(read_entry(path, it.key(), it.value(), data_len));
  }
  check_coverage(path, f->infos_, data_len);
  for (size_t i = 0; i < f->infos_.size(); i++) f->index_[f->infos_[i].name] = i;
  return f;
}

bool SafetensorsFile::has(const std::string& name) const { return index_.count(name) != 0; }

const TensorInfo& SafetensorsFile::info(const std::string& name) const {
  auto it = index_.find(name);
  if (it == index_.end())
    HFX_THROW("safetensors", "'{}': expected a tensor named '{}', got none among its {} tensors{}", path_,
              name, infos_.size(), did_you_mean(name, index_.begin(), index_.end()));
  return infos_[it->second];
}

Tensor SafetensorsFile::get(const std::string& name) const {
  const TensorInfo& ti = info(name);
  char* p = static_cast<char*>(map_) + data_offset_ + ti.begin;
  const size_t n = static_cast<size_t>(ti.end - ti.begin);
  Shape strides = contiguous_strides(ti.shape);
  if (reinterpret_cast<uintptr_t>(p) % dtype_size(ti.dtype) != 0) {
    // Misaligned for its element type inside the file: copy once to aligned memory.
    auto st = Storage::allocate(n);
    std::memcpy(st->data, p, n);
    return Tensor(st, ti.dtype, ti.shape, std::move(strides), 0);
  }
  return Tensor(Storage::borrow(p, n, keepalive_), ti.dtype, ti.shape, std::move(strides), 0);
}

void SafetensorsFile::release(const std::string& name) const {
  const TensorInfo& ti = info(name);
  release(name, 0, ti.end - ti.begin);
}

void SafetensorsFile::release(const std::string& name, uint64_t from, uint64_t to) const {
  const TensorInfo& ti = info(name);
  to = std::min<uint64_t>(to, ti.end - ti.begin);
  if (from >= to) return;
  static const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  uintptr_t b = reinterpret_cast<uintptr_t>(map_) + data_offset_ + ti.begin + from;
  uintptr_t e = reinterpret_cast<uintptr_t>(map_) + data_offset_ + ti.begin + to;
  b = (b + page - 1) / page * page;  // inward: never drop a page a neighbour shares
  e = e / page * page;
  if (e > b) (void)::madvise(reinterpret_cast<void*>(b), e - b, MADV_DONTNEED);
}

}  // namespace hfx::io
