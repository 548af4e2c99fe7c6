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

namespace hfx::io {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr uint64_t kMaxHeader = 100'000'000;  // same limit as the reference implementation
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

bool is_utf8(const std::string& s) {
  return utf8_invalid_at(reinterpret_cast<const unsigned char*>(s.data()), s.size()) == std::string_view::npos;
}

/// JSON parse that also reports duplicate object keys (nlohmann silently keeps the last one).
/// On a duplicate, `dup_key` is set and `dup_parent` names the enclosing top-level key ("" at top level).
struct DupCheckedJson {
  json value;
  bool has_dup = false;
  std::string dup_key, dup_parent;
};

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

std::string json_type(const json& j) { return j.type_name(); }

std::string short_dump(const json& j) {
  std::string s = j.dump(-1, ' ', false, json::error_handler_t::replace);
  if (s.size() > 80) s = s.substr(0, 77) + "...";
  return s;
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
  static const char* tags[] = {"F64", "I16", "U16", "U32", "U64", "C64", "F8_E4M3", "F8_E5M2", "F8_E8M0",
                               "F6_E2M3", "F6_E3M2", "F4", "E8M0"};
  for (auto* x : tags)
    if (t == x) return true;
  return false;
}

constexpr const char* kSupported = "F32, F16, BF16, I64, I32, I8, U8, BOOL";

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

template <typename It>
std::string did_you_mean(const std::string& name, It first, It last) {
  std::string best;
  size_t best_d = std::numeric_limits<size_t>::max();
  for (auto it = first; it != last; ++it) {
    size_t d = levenshtein(name, it->first);
    if (d < best_d) {
      best_d = d;
      best = it->first;
    }
  }
  if (best.empty() || best_d > std::max<size_t>(3, name.size() / 3)) return "";
  return fmt::format("; did you mean '{}'?", best);
}

}  // namespace

// ------------------------------------------------------------------------------------------------
// SafetensorsFile

SafetensorsFile::~SafetensorsFile() = default;  // the mapping goes when the last view does

std::shared_ptr<SafetensorsFile> SafetensorsFile::open(const std::string& path) {
  auto f = std::make_shared<SafetensorsFile>();
  f->path_ = path;

  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int e = errno;
    fail(path, fmt::format("cannot open: {}; check the path", detail::errno_text(e)));
  }
  struct stat st{};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    fail(path, "expected a regular .safetensors file, got a folder or special file; pass the file itself "
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
  f->map_ = m;
  f->map_size_ = size;
  f->keepalive_ = std::shared_ptr<void>(m, [size](void* p) { ::munmap(p, size); });

  const char* base = static_cast<const char*>(m);
  const uint64_t hlen = load_u64_le(base);
  if (hlen == 0)
    fail(path, fmt::format("header length is 0; expected a JSON object header of at least 2 bytes ('{{}}'); {}",
                           kFix));
  if (hlen > kMaxHeader)
    fail(path, fmt::format("header length {} exceeds the {}-byte limit (the whole file is {} bytes): this is "
                           "not a safetensors file or its first 8 bytes are corrupt; {}",
                           hlen, kMaxHeader, size, kFix));
  if (hlen > size - 8)
    fail(path, fmt::format("header is truncated: the header length says {} bytes but only {} bytes follow the "
                           "8-byte prefix ({} bytes missing); {}",
                           hlen, size - 8, hlen - (size - 8), kFix));
  const char* hbeg = base + 8;
  const char* hend = hbeg + hlen;
  f->data_offset_ = 8 + hlen;
  const uint64_t data_len = size - 8 - hlen;

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
    fail(path, fmt::format("entry '{}': duplicate key '{}' in the header; {}", parsed.dup_parent, parsed.dup_key,
                           kFix));
  }

  for (auto it = h.begin(); it != h.end(); ++it) {
    const std::string& name = it.key();
    const json& v = it.value();
    if (name == "__metadata__") {
      if (!v.is_object())
        fail(path, fmt::format("expected __metadata__ to be an object of strings, got a JSON {}; {}", json_type(v),
                               kFix));
      for (auto m2 = v.begin(); m2 != v.end(); ++m2) {
        if (!m2.value().is_string())
          fail(path, fmt::format("expected __metadata__ value for '{}' to be a string, got {} ({}); {}", m2.key(),
                                 json_type(m2.value()), short_dump(m2.value()), kFix));
        f->metadata_[m2.key()] = m2.value().get<std::string>();
      }
      continue;
    }
    if (!v.is_object())
      fail_tensor(path, name, fmt::format("expected an object with dtype, shape and data_offsets, got a JSON {} ({})", json_type(v),
                        short_dump(v)));
    for (const char* field : {"dtype", "shape", "data_offsets"})
      if (!v.contains(field))
        fail_tensor(path, name, fmt::format("missing '{}' (expected {{\"dtype\": ..., \"shape\": [...], \"data_offsets\": [begin, "
                          "end]}}, got {})",
                          field, short_dump(v)));

    TensorInfo ti;
    ti.name = name;
    ti.file = path;

    const json& jd = v["dtype"];
    if (!jd.is_string()) fail_tensor(path, name, fmt::format("expected 'dtype' to be a string like \"F32\", got {}", short_dump(jd)));
    const std::string tag = jd.get<std::string>();
    auto dt = dtype_from_tag(tag);
    if (!dt) {
      if (is_spec_tag(tag))
        fail_tensor(path, name, fmt::format("dtype '{}' is not supported (expected one of {}); convert the checkpoint, e.g. load it "
                          "in torch, cast with model.to(torch.float32 or torch.bfloat16) and save_pretrained",
                          tag, kSupported));
      fail_tensor(path, name, fmt::format("unknown dtype tag '{}' (expected one of {})", tag, kSupported));
    }
    ti.dtype = *dt;

    const json& js = v["shape"];
    if (!js.is_array()) fail_tensor(path, name, fmt::format("expected 'shape' to be a list of non-negative integers, got {}", short_dump(js)));
    uint64_t numel = 1;
    bool overflow = false;
    for (size_t i = 0; i < js.size(); i++) {
      const json& d = js[i];
      if (d.is_number_unsigned()) {
        uint64_t u = d.get<uint64_t>();
        if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) overflow = true;
        ti.shape.push_back(static_cast<int64_t>(std::min<uint64_t>(u, std::numeric_limits<int64_t>::max())));
        if (__builtin_mul_overflow(numel, u, &numel)) overflow = true;
      } else if (d.is_number_integer()) {
        fail_tensor(path, name, fmt::format("dimension {} of shape {} is negative ({}); expected non-negative sizes", i,
                          short_dump(js), d.get<int64_t>()));
      } else {
        fail_tensor(path, name, fmt::format("dimension {} of shape {} is not an integer (got {} {}); expected non-negative integer "
                          "sizes",
                          i, short_dump(js), json_type(d), short_dump(d)));
      }
    }
    const uint64_t es = dtype_size(ti.dtype);
    uint64_t nbytes = 0;
    if (overflow || numel > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ||
        __builtin_mul_overflow(numel, es, &nbytes))
      fail_tensor(path, name, fmt::format("shape {} overflows: its element count or byte size does not fit in 64 bits", short_dump(js)));

    const json& jo = v["data_offsets"];
    if (!jo.is_array() || jo.size() != 2 || !jo[0].is_number_unsigned() || !jo[1].is_number_unsigned())
      fail_tensor(path, name, fmt::format("expected 'data_offsets' to be [begin, end] with two non-negative integers, got {}",
                        short_dump(jo)));
    ti.begin = jo[0].get<uint64_t>();
    ti.end = jo[1].get<uint64_t>();
    if (ti.begin > ti.end)
      fail_tensor(path, name, fmt::format("data_offsets [{}, {}] are reversed; expected begin <= end", ti.begin, ti.end));
    if (ti.end > data_len)
      fail_tensor(path, name, fmt::format("data_offsets [{}, {}] end beyond the data section, which holds only {} bytes ({} bytes "
                        "missing): the file is truncated or the header is wrong",
                        ti.begin, ti.end, data_len, ti.end - data_len));
    if (ti.end - ti.begin != nbytes)
      fail_tensor(path, name, fmt::format("expected {} bytes for {} {} ({} elements x {} bytes), got {} bytes from data_offsets "
                        "[{}, {}]",
                        nbytes, tag, short_dump(js), numel, es, ti.end - ti.begin, ti.begin, ti.end));
    f->infos_.push_back(std::move(ti));
  }

  // File order; the data section must be covered exactly (spec: no holes, no overlaps).
  std::stable_sort(f->infos_.begin(), f->infos_.end(), [](const TensorInfo& a, const TensorInfo& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t prev_end = 0;
  const TensorInfo* prev = nullptr;
  for (const auto& ti : f->infos_) {
    if (ti.begin < prev_end)
      fail(path, fmt::format("tensor '{}' (data bytes [{}, {})) overlaps tensor '{}' (data bytes [{}, {})); {}",
                             ti.name, ti.begin, ti.end, prev->name, prev->begin, prev->end, kFix));
    if (ti.begin > prev_end)
      fail(path, fmt::format("hole of {} data bytes before tensor '{}' (data bytes [{}, {})) that no tensor covers; "
                             "the format forbids holes; {}",
                             ti.begin - prev_end, ti.name, ti.begin, ti.end, kFix));
    prev_end = ti.end;
    prev = &ti;
  }
  if (prev_end != data_len)
    fail(path, fmt::format("{} trailing bytes after the last tensor are not covered by any tensor (data section is "
                           "{} bytes, tensors end at {}); {}",
                           data_len - prev_end, data_len, prev_end, kFix));
  for (size_t i = 0; i < f->infos_.size(); i++) f->index_[f->infos_[i].name] = i;
  return f;
}

bool SafetensorsFile::has(const std::string& name) const { return index_.count(name) != 0; }

const TensorInfo& SafetensorsFile::info(const std::string& name) const {
  auto it = index_.find(name);
  if (it == index_.end())
    HFX_THROW("safetensors", "'{}': expected a tensor named '{}', got none among its {} tensors{}", path_, name,
              infos_.size(), did_you_mean(name, index_.begin(), index_.end()));
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
  static const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  uintptr_t b = reinterpret_cast<uintptr_t>(map_) + data_offset_ + ti.begin;
  uintptr_t e = reinterpret_cast<uintptr_t>(map_) + data_offset_ + ti.end;
  b = (b + page - 1) / page * page;  // inward: never drop a page a neighbour shares
  e = e / page * page;
  if (e > b) (void)::madvise(reinterpret_cast<void*>(b), e - b, MADV_DONTNEED);
}

// ------------------------------------------------------------------------------------------------
// WeightStore

// open_dir also accepts the path of a single .safetensors file (convenience for tools and tests).
std::shared_ptr<WeightStore> WeightStore::open_dir(const std::string& dir) {
  auto ws = std::make_shared<WeightStore>();
  std::error_code ec;
  if (fs::is_regular_file(dir, ec) && fs::path(dir).extension() == ".safetensors") {
    auto f = SafetensorsFile::open(dir);
    for (const auto& ti : f->tensors()) ws->by_name_[ti.name] = f;
    return ws;
  }
  if (!fs::is_directory(dir, ec))
    HFX_THROW("safetensors", "'{}': expected a checkpoint folder, got {}; check the path", dir,
              fs::exists(dir, ec) ? "a file that is not .safetensors" : "nothing at that path");
  const fs::path single = fs::path(dir) / "model.safetensors";
  const fs::path index = fs::path(dir) / "model.safetensors.index.json";
  if (fs::exists(single, ec)) {
    auto f = SafetensorsFile::open(single.string());
    for (const auto& ti : f->tensors()) ws->by_name_[ti.name] = f;
    return ws;
  }
  if (!fs::exists(index, ec)) {
    std::string hint;
    if (fs::exists(fs::path(dir) / "pytorch_model.bin", ec) || fs::exists(fs::path(dir) / "pytorch_model.bin.index.json", ec))
      hint = "; it only has pytorch_model.bin (pickle): convert it with transformers, "
             "model.save_pretrained(out, safe_serialization=True)";
    HFX_THROW("safetensors", "'{}': expected model.safetensors or model.safetensors.index.json in the folder, found "
              "neither{}",
              dir, hint.empty() ? "; download the safetensors weights of the checkpoint" : hint);
  }

  const std::string ipath = index.string();
  const std::string text = read_file(ipath);
  DupCheckedJson parsed;
  try {
    parsed = parse_json_checked(text.data(), text.data() + text.size());
  } catch (const json::exception& e) {
    HFX_THROW("safetensors", "'{}': index is not valid JSON ({}); re-download the checkpoint", ipath, e.what());
  }
  const json& j = parsed.value;
  if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
    HFX_THROW("safetensors", "'{}': expected an object with a 'weight_map' object (tensor name -> shard file), got "
              "{}; re-download the checkpoint",
              ipath, short_dump(j));
  if (parsed.has_dup && parsed.dup_parent == "weight_map")
    HFX_THROW("safetensors", "'{}': tensor '{}' is listed twice in weight_map; re-download the checkpoint", ipath,
              parsed.dup_key);
  const json& wm = j["weight_map"];
  if (wm.empty())
    HFX_THROW("safetensors", "'{}': expected a non-empty weight_map, got {{}}; re-download the checkpoint", ipath);

  std::vector<std::string> shard_names;  // in first-listed order
  std::set<std::string> seen;
  for (auto it = wm.begin(); it != wm.end(); ++it) {
    if (!it.value().is_string())
      HFX_THROW("safetensors", "'{}': weight_map entry '{}' must be a shard file name, got {}; re-download the "
                "checkpoint",
                ipath, it.key(), short_dump(it.value()));
    const std::string s = it.value().get<std::string>();
    fs::path sp(s);
    bool escapes = s.empty() || sp.is_absolute();
    for (const auto& part : sp)
      if (part == "..") escapes = true;
    if (escapes)
      HFX_THROW("safetensors", "'{}': shard '{}' for tensor '{}' is not a file name inside the folder; expected a "
                "relative name like model-00001-of-00002.safetensors",
                ipath, s, it.key());
    if (seen.insert(s).second) shard_names.push_back(s);
  }

  std::map<std::string, std::shared_ptr<SafetensorsFile>> shards;
  for (const auto& s : shard_names) {
    const fs::path sp = fs::path(dir) / s;
    if (!fs::exists(sp, ec))
      HFX_THROW("safetensors", "'{}': shard '{}' listed in the index does not exist in '{}'; download all the shards "
                "of the checkpoint",
                ipath, s, dir);
    auto f = SafetensorsFile::open(sp.string());
    for (const auto& ti : f->tensors()) {
      auto prev = ws->by_name_.find(ti.name);
      if (prev != ws->by_name_.end())
        HFX_THROW("safetensors", "'{}': tensor '{}' is present in two shards, '{}' and '{}'; re-download the "
                  "checkpoint",
                  dir, ti.name, prev->second->path(), f->path());
      ws->by_name_[ti.name] = f;
    }
    shards[s] = std::move(f);
  }
  for (auto it = wm.begin(); it != wm.end(); ++it) {
    const auto& f = shards.at(it.value().get<std::string>());
    if (!f->has(it.key())) {
      auto other = ws->by_name_.find(it.key());
      HFX_THROW("safetensors", "'{}': tensor '{}' is listed in the index under shard '{}' but that shard does not "
                "contain it{}; re-download the checkpoint",
                ipath, it.key(), f->path(),
                other == ws->by_name_.end() ? std::string(" (no shard does)")
                                            : fmt::format(" (it is in '{}')", other->second->path()));
    }
  }
  return ws;
}

std::shared_ptr<WeightStore> WeightStore::from_tensors(std::map<std::string, Tensor> tensors) {
  auto ws = std::make_shared<WeightStore>();
  for (auto& [name, t] : tensors) {
    HFX_CHECK(t.defined(), "safetensors", "in-memory weights: expected tensor '{}' to be defined, got an empty Tensor",
              name);
    TensorInfo ti;
    ti.name = name;
    ti.dtype = t.dtype();
    ti.shape = t.shape();
    ti.begin = 0;
    ti.end = t.nbytes();
    ws->mem_info_[name] = std::move(ti);
  }
  ws->mem_ = std::move(tensors);
  return ws;
}

bool WeightStore::has(const std::string& name) const { return mem_.count(name) || by_name_.count(name); }

const TensorInfo& WeightStore::info(const std::string& name) const {
  if (auto it = mem_info_.find(name); it != mem_info_.end()) return it->second;
  if (auto it = by_name_.find(name); it != by_name_.end()) return it->second->info(name);
  const bool mem = !mem_info_.empty();
  HFX_THROW("safetensors", "expected a weight named '{}', got none among the {} weights of this checkpoint{}", name,
            mem ? mem_info_.size() : by_name_.size(),
            mem ? did_you_mean(name, mem_info_.begin(), mem_info_.end())
                : did_you_mean(name, by_name_.begin(), by_name_.end()));
}

Tensor WeightStore::get(const std::string& name) const {
  if (auto it = mem_.find(name); it != mem_.end()) return it->second;
  if (auto it = by_name_.find(name); it != by_name_.end()) return it->second->get(name);
  info(name);  // throws the descriptive error
  return {};
}

void WeightStore::release(const std::string& name) const {
  if (auto it = by_name_.find(name); it != by_name_.end()) it->second->release(name);
}

std::vector<std::string> WeightStore::names() const {
  std::vector<std::string> out;
  out.reserve(mem_.size() + by_name_.size());
  for (const auto& kv : mem_) out.push_back(kv.first);
  for (const auto& kv : by_name_) out.push_back(kv.first);
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> WeightStore::files() const {
  std::set<std::string> s;
  for (const auto& kv : by_name_) s.insert(kv.second->path());
  return {s.begin(), s.end()};
}

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
    HFX_THROW("safetensors", "'{}': tensor '{}' ({} {}): expected its view to lie inside its storage of {} bytes, "
              "got bytes [{}, {}); nothing was written (the tensor is corrupt: rebuild it)",
              path, name, dtype_safetensors_tag(t.dtype()), shape_to_string(t.shape()), st->nbytes, first, last_end);
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
      HFX_THROW("safetensors", "'{}': expected tensor names other than the reserved '__metadata__', got it; rename "
                "the tensor",
                path);
    if (!is_utf8(name))
      HFX_THROW("safetensors", "'{}': expected UTF-8 tensor names, got one with invalid bytes; rename it", path);
    if (!names.insert(name).second)
      HFX_THROW("safetensors", "'{}': expected unique tensor names, got '{}' twice; drop or rename one", path, name);
    if (!t.defined())
      HFX_THROW("safetensors", "'{}': tensor '{}': expected a defined tensor, got an empty Tensor", path, name);
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
  header.append((8 - header.size() % 8) % 8, ' ');  // data section starts 8-aligned, as the reference writer does
  if (header.size() > kMaxHeader)
    HFX_THROW("safetensors", "'{}': expected a header under {} bytes, got {} ({} tensors); split the checkpoint into "
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
