// Element types and conversions. The f16 conversion is bit-exact round-to-nearest-even, written out
// because F16C is not guaranteed on the x86-64-v2 baseline we build for.
#include "hfx/core/dtype.h"

#include <cmath>

#include "hfx/core/error.h"

namespace hfx {

size_t dtype_size(DType dt) {
  switch (dt) {
    case DType::F32:
    case DType::I32:
      return 4;
    case DType::F16:
    case DType::BF16:
      return 2;
    case DType::I64:
      return 8;
    case DType::I8:
    case DType::U8:
    case DType::Bool:
      return 1;
  }
  return 0;
}

const char* dtype_name(DType dt) {
  switch (dt) {
    case DType::F32:
      return "float32";
    case DType::F16:
      return "float16";
    case DType::BF16:
      return "bfloat16";
    case DType::I64:
      return "int64";
    case DType::I32:
      return "int32";
    case DType::I8:
      return "int8";
    case DType::U8:
      return "uint8";
    case DType::Bool:
      return "bool";
  }
  return "?";
}

const char* dtype_safetensors_tag(DType dt) {
  switch (dt) {
    case DType::F32:
      return "F32";
    case DType::F16:
      return "F16";
    case DType::BF16:
      return "BF16";
    case DType::I64:
      return "I64";
    case DType::I32:
      return "I32";
    case DType::I8:
      return "I8";
    case DType::U8:
      return "U8";
    case DType::Bool:
      return "BOOL";
  }
  return "?";
}

DType dtype_from_name(std::string_view n) {
  if (n == "float32" || n == "F32" || n == "float") return DType::F32;
  if (n == "float16" || n == "F16" || n == "half") return DType::F16;
  if (n == "bfloat16" || n == "BF16") return DType::BF16;
  if (n == "int64" || n == "I64" || n == "long") return DType::I64;
  if (n == "int32" || n == "I32" || n == "int") return DType::I32;
  if (n == "int8" || n == "I8") return DType::I8;
  if (n == "uint8" || n == "U8") return DType::U8;
  if (n == "bool" || n == "BOOL") return DType::Bool;
  HFX_THROW("dtype", "expected one of float32, float16, bfloat16, int64, int32, int8, uint8, bool, got '{}'",
            n);
}

bool dtype_is_float(DType dt) { return dt == DType::F32 || dt == DType::F16 || dt == DType::BF16; }

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  bool fa = dtype_is_float(a), fb = dtype_is_float(b);
  if (fa && fb) return DType::F32;
  if (fa) return a;
  if (fb) return b;
  if (a == DType::Bool) return b;
  if (b == DType::Bool) return a;
  if (a == DType::I64 || b == DType::I64) return DType::I64;
  if (a == DType::I32 || b == DType::I32) return DType::I32;
  return DType::I32;
}

uint16_t f32_to_f16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t absx = x & 0x7fffffffu;
  if (absx > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u | ((absx >> 13) & 0x3ffu));  // NaN
  if (absx >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to inf
  if (absx < 0x38800000u) {                                               // subnormal or zero in f16
    if (absx < 0x33000000u) return static_cast<uint16_t>(sign);  // below half of the smallest subnormal
    const uint32_t mant = (absx & 0x7fffffu) | 0x800000u;
    // value = mant * 2^(e-150); an f16 subnormal is m * 2^-24, so m = mant >> (126 - e), 14..24 bits.
    const uint32_t drop = 126u - (absx >> 23);
    uint32_t r = mant >> drop;
    const uint32_t rem = mant & ((1u << drop) - 1);
    const uint32_t half = 1u << (drop - 1);
    if (rem > half || (rem == half && (r & 1u))) r++;
    return static_cast<uint16_t>(sign | r);
  }
  // normal: rebias exponent 127 → 15, round the 13 dropped bits to nearest even
  uint32_t h = ((absx >> 13) - (112u << 10));
  const uint32_t rem = absx & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) h++;
  return static_cast<uint16_t>(sign | h);
}

float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t out;
  if (exp == 0) {
    if (mant == 0) {
      out = sign;
    } else {  // subnormal: normalize
      exp = 127 - 15 + 1;
      while ((mant & 0x400u) == 0) {
        mant <<= 1;
        exp--;
      }
      mant &= 0x3ffu;
      out = sign | (exp << 23) | (mant << 13);
    }
  } else if (exp == 31) {
    out = sign | 0x7f800000u | (mant << 13);
  } else {
    out = sign | ((exp + 112) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &out, 4);
  return f;
}

namespace {
template <typename T>
double load_as_double(const void* p, size_t i) {
  return static_cast<double>(static_cast<const T*>(p)[i]);
}
double load(const void* src, DType dt, size_t i) {
  switch (dt) {
    case DType::F32:
      return load_as_double<float>(src, i);
    case DType::F16:
      return f16_to_f32(static_cast<const uint16_t*>(src)[i]);
    case DType::BF16:
      return bf16_to_f32(static_cast<const uint16_t*>(src)[i]);
    case DType::I64:
      return load_as_double<int64_t>(src, i);
    case DType::I32:
      return load_as_double<int32_t>(src, i);
    case DType::I8:
      return load_as_double<int8_t>(src, i);
    case DType::U8:
      return load_as_double<uint8_t>(src, i);
    case DType::Bool:
      return static_cast<const uint8_t*>(src)[i] != 0 ? 1.0 : 0.0;
  }
  return 0;
}
template <typename T>
T to_int(double v) {
  if (std::isnan(v)) return 0;
  return static_cast<T>(std::trunc(v));
}
void store(void* dst, DType dt, size_t i, double v) {
  switch (dt) {
    case DType::F32:
      static_cast<float*>(dst)[i] = static_cast<float>(v);
      break;
    case DType::F16:
      static_cast<uint16_t*>(dst)[i] = f32_to_f16(static_cast<float>(v));
      break;
    case DType::BF16:
      static_cast<uint16_t*>(dst)[i] = f32_to_bf16(static_cast<float>(v));
      break;
    case DType::I64:
      static_cast<int64_t*>(dst)[i] = to_int<int64_t>(v);
      break;
    case DType::I32:
      static_cast<int32_t*>(dst)[i] = to_int<int32_t>(v);
      break;
    case DType::I8:
      static_cast<int8_t*>(dst)[i] = to_int<int8_t>(v);
      break;
    case DType::U8:
      static_cast<uint8_t*>(dst)[i] = to_int<uint8_t>(v);
      break;
    case DType::Bool:
      static_cast<uint8_t*>(dst)[i] = v != 0.0;
      break;
  }
}
}  // namespace

void convert_elements(const void* src, DType from, void* dst, DType to, size_t n) {
  if (n == 0) return;  // empty tensors may have null data
  if (from == to) {
    std::memcpy(dst, src, n * dtype_size(from));
    return;
  }
  // Fast paths for the conversions on the hot path (weights to f32 compute).
  if (to == DType::F32 && from == DType::BF16) {
    auto* s = static_cast<const uint16_t*>(src);
    auto* d = static_cast<float*>(dst);
    for (size_t i = 0; i < n; i++) d[i] = bf16_to_f32(s[i]);
    return;
  }
  if (to == DType::F32 && from == DType::F16) {
    auto* s = static_cast<const uint16_t*>(src);
    auto* d = static_cast<float*>(dst);
    for (size_t i = 0; i < n; i++) d[i] = f16_to_f32(s[i]);
    return;
  }
  if (from == DType::F32 && to == DType::BF16) {
    auto* s = static_cast<const float*>(src);
    auto* d = static_cast<uint16_t*>(dst);
    for (size_t i = 0; i < n; i++) d[i] = f32_to_bf16(s[i]);
    return;
  }
  if (from == DType::F32 && to == DType::F16) {
    auto* s = static_cast<const float*>(src);
    auto* d = static_cast<uint16_t*>(dst);
    for (size_t i = 0; i < n; i++) d[i] = f32_to_f16(s[i]);
    return;
  }
  for (size_t i = 0; i < n; i++) store(dst, to, i, load(src, from, i));
}

}  // namespace hfx
