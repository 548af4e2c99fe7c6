// The call-fixture format of call_fixture.h: written by `hfx verify --save-calls`, read back by tests and by
// src/verify/runtime_judge.py (its own reader), which ExecuTorch's released Python runtime replays them with.
#include "verify/call_fixture.h"

#include <cstring>
#include <fstream>

#include "hfx/core/error.h"
#include "hfx/io/safetensors.h"
#include "io/fileutil.h"

namespace hfx::verify {
namespace {

constexpr char kMagic[8] = {'H', 'F', 'X', 'C', 'A', 'L', 'L', '1'};

uint8_t code_of(DType d) {
  switch (d) {
    case DType::F32:
      return 1;
    case DType::I64:
      return 2;
    case DType::I32:
      return 3;
    case DType::Bool:
      return 4;
    case DType::U8:
      return 5;
    default:
      HFX_THROW("verify", "expected a float32, int64, int32, bool or uint8 tensor in a call fixture, got {}",
                dtype_name(d));
  }
}

DType dtype_of(uint8_t c, const std::string& path) {
  switch (c) {
    case 1:
      return DType::F32;
    case 2:
      return DType::I64;
    case 3:
      return DType::I32;
    case 4:
      return DType::Bool;
    case 5:
      return DType::U8;
    default:
      HFX_THROW("verify", "expected a dtype code 1..5 in the call fixture {}, got {}", path, int{c});
  }
}

template <class T>
void put(std::string& s, T v) {
  s.append(reinterpret_cast<const char*>(&v), sizeof v);
}
void put_str(std::string& s, const std::string& v) {
  put<uint32_t>(s, static_cast<uint32_t>(v.size()));
  s += v;
}
void put_tensor(std::string& s, const std::string& name, const Tensor& t) {
  put_str(s, name);
  put<uint8_t>(s, code_of(t.dtype()));
  put<uint32_t>(s, static_cast<uint32_t>(t.dim()));
  for (int64_t d : t.shape()) put<int64_t>(s, d);
  Tensor c = t.contiguous();
  put<uint64_t>(s, static_cast<uint64_t>(c.nbytes()));
  s.append(static_cast<const char*>(c.raw()), static_cast<size_t>(c.nbytes()));
}

// A bounds-checked cursor over the file's bytes.
struct Cursor {
  const std::string& b;
  const std::string& path;
  size_t at = 0;
  const char* take(size_t n) {
    if (n > b.size() - at)
      HFX_THROW("verify", "expected {} more bytes at offset {} of the call fixture {}, got {}", n, at, path,
                b.size() - at);
    at += n;
    return b.data() + at - n;
  }
  template <class T>
  T get() {
    T v;
    std::memcpy(&v, take(sizeof v), sizeof v);
    return v;
  }
  std::string str() {
    const auto n = get<uint32_t>();
    return std::string(take(n), n);
  }
  std::pair<std::string, Tensor> tensor() {
    std::string name = str();
    const DType dt = dtype_of(get<uint8_t>(), path);
    const auto rank = get<uint32_t>();
    if (rank > 8) HFX_THROW("verify", "expected a rank <= 8 for '{}' in {}, got {}", name, path, rank);
    Shape shape;
    uint64_t numel = 1;
    for (uint32_t i = 0; i < rank; i++) {
      const auto d = get<int64_t>();
      if (d < 0 || __builtin_mul_overflow(numel, static_cast<uint64_t>(d), &numel))
        HFX_THROW("verify", "expected sizes >= 0 whose product fits 64 bits for '{}' in {}", name, path);
      shape.push_back(d);
    }
    const auto nbytes = get<uint64_t>();
    if (nbytes != numel * dtype_size(dt))
      HFX_THROW("verify", "expected {} bytes for '{}' {} in {}, got {}", numel * dtype_size(dt), name,
                shape_to_string(shape), path, nbytes);
    const char* p = take(static_cast<size_t>(nbytes));
    Tensor t = Tensor::zeros(shape, dt);
    if (nbytes) std::memcpy(t.raw(), p, static_cast<size_t>(nbytes));
    return {std::move(name), std::move(t)};
  }
};

}  // namespace

void write_call_fixture(const std::string& path, const CallFixture& f) {
  std::string s(kMagic, sizeof kMagic);
  put_str(s, f.method);
  put<uint8_t>(s, f.expect_error ? 1 : 0);
  put<uint32_t>(s, static_cast<uint32_t>(f.inputs.size()));
  put<uint32_t>(s, static_cast<uint32_t>(f.outputs.size()));
  for (const auto& [n, t] : f.inputs) put_tensor(s, n, t);
  for (const auto& [n, t] : f.outputs) put_tensor(s, n, t);
  io::detail::AtomicFile out(path, "verify");
  out.write(s.data(), s.size());
  out.commit();
}

CallFixture read_call_fixture(const std::string& path) {
  const std::string b = io::read_file(path);
  Cursor c{b, path};
  if (std::memcmp(c.take(sizeof kMagic), kMagic, sizeof kMagic) != 0)
    HFX_THROW("verify", "expected a call fixture (magic HFXCALL1) in {}, got other bytes", path);
  CallFixture f;
  f.method = c.str();
  f.expect_error = c.get<uint8_t>() != 0;
  const auto ni = c.get<uint32_t>(), no = c.get<uint32_t>();
  for (uint32_t i = 0; i < ni; i++) f.inputs.push_back(c.tensor());
  for (uint32_t i = 0; i < no; i++) f.outputs.push_back(c.tensor());
  if (c.at != b.size())
    HFX_THROW("verify", "expected the call fixture {} to end after its {} tensors, got {} more bytes", path,
              ni + no, b.size() - c.at);
  return f;
}

}  // namespace hfx::verify
