// GPTQ and AWQ checkpoints ↔ the MatMulNBits layout (formats in hfx/quant/checkpoint_formats.h). The codes
// are moved bit field by bit field; nothing is de-quantized to float, so the exported bytes are the
// checkpoint's codes and the f32 scales are its fp16 scales exactly.
#include "hfx/quant/checkpoint_formats.h"

#include <array>
#include <cstring>

#include "hfx/core/error.h"

namespace hfx::quant {

namespace {

// AutoAWQ's packing order: output n = 8c + j of column c sits in nibble kAwqNibble[j].
constexpr std::array<int, 8> kAwqNibble = {0, 4, 1, 5, 2, 6, 3, 7};

std::string fmt_shape(DType dt, const Shape& s) {
  return std::string(dtype_name(dt)) + " " + shape_to_string(s);
}

void expect(const Tensor& t, DType dt, const Shape& s, const std::string& name, const std::string& why) {
  if (!t.defined())
    HFX_THROW("quant", "expected tensor '{}' as {} ({}), got none; the checkpoint is incomplete", name,
              fmt_shape(dt, s), why);
  if (t.dtype() != dt || t.shape() != s)
    HFX_THROW("quant",
              "expected '{}' as {} ({}), got {}; the checkpoint's tensors do not match its "
              "quantization_config",
              name, fmt_shape(dt, s), why, fmt_shape(t.dtype(), t.shape()));
}

// Bit field `i` of width `bits` in a row of int32 words.
inline int field(const int32_t* words, int64_t i, int bits) {
  const int per = 32 / bits;
  return static_cast<int>((static_cast<uint32_t>(words[i / per]) >> (bits * (i % per))) & ((1u << bits) - 1));
}

inline void set_field(int32_t* words, int64_t i, int bits, int v) {
  const int per = 32 / bits;
  uint32_t w = static_cast<uint32_t>(words[i / per]);
  w |= static_cast<uint32_t>(v) << (bits * (i % per));
  words[i / per] = static_cast<int32_t>(w);
}

// MatMulNBits' packing of code `v` at element i of a byte row (4-bit: low nibble first).
inline void put_nbits(uint8_t* row, int64_t i, int bits, int v) {
  if (bits == 8)
    row[i] = static_cast<uint8_t>(v);
  else
    row[i / 2] |= static_cast<uint8_t>(v << (4 * (i % 2)));
}

inline int get_nbits(const uint8_t* row, int64_t i, int bits) {
  return bits == 8 ? row[i] : (row[i / 2] >> (4 * (i % 2))) & 0x0F;
}

// Index into the packed words of (row r, element e) for each format: GPTQ packs codes along K (rows of
// qweight are K / per), zero points along N; AWQ packs both along N in its nibble order.
struct Layout {
  const CheckpointQuant& cq;
  int64_t N;
  int code(const Tensor& qweight, int64_t k, int64_t n) const {
    const int32_t* w = qweight.data<int32_t>();
    if (cq.method == "gptq") {  // word (k / per, n), field k mod per
      const int per = 32 / cq.bits;
      const uint32_t word = static_cast<uint32_t>(w[(k / per) * N + n]);
      return static_cast<int>((word >> (cq.bits * (k % per))) & ((1u << cq.bits) - 1));
    }
    return awq(w + k * (N / 8), n);
  }
  int zero(const Tensor& qzeros, int64_t g, int64_t n) const {
    const int64_t words = N * cq.bits / 32;
    const int32_t* w = qzeros.data<int32_t>() + g * words;
    if (cq.method == "gptq") return field(w, n, cq.bits) + (cq.v2 ? 0 : 1);
    return awq(w, n);
  }
  static int awq(const int32_t* row, int64_t n) {
    return static_cast<int>((static_cast<uint32_t>(row[n / 8]) >> (4 * kAwqNibble[n % 8])) & 0x0F);
  }
};

Tensor f16_to_f32(const Tensor& t) { return t.to(DType::F32).contiguous(); }

}  // namespace

CheckpointQuant parse_checkpoint_quant(const nlohmann::json& qc) {
  if (!qc.is_object())
    HFX_THROW("quant", "expected config.json's quantization_config to be an object, got {}", qc.dump());
  CheckpointQuant cq;
  try {
    cq.method = qc.value("quant_method", std::string());
    if (cq.method != "gptq" && cq.method != "awq")
      HFX_THROW(
          "quant",
          "expected quantization_config.quant_method gptq or awq (the pre-quantized formats hfx reads), "
          "got '{}'; de-quantize the checkpoint or use its float original",
          cq.method);
    cq.bits = qc.value("bits", 4);
    cq.group_size = qc.value("group_size", int64_t{128});
    if (cq.method == "gptq") {
      cq.symmetric = qc.value("sym", true);
      const std::string f = qc.value("checkpoint_format", std::string("gptq"));
      if (f != "gptq" && f != "gptq_v2")
        HFX_THROW("quant", "expected quantization_config.checkpoint_format gptq or gptq_v2, got '{}'", f);
      cq.v2 = f == "gptq_v2";
    } else {
      if (!qc.value("zero_point", true))
        HFX_THROW("quant", "expected an AWQ checkpoint with zero_point true (AutoAWQ's default), got false");
      cq.symmetric = false;
      const std::string v = qc.value("version", std::string("gemm"));
      if (v != "gemm" && v != "GEMM")
        HFX_THROW("quant",
                  "expected an AWQ checkpoint of version gemm (AutoAWQ's GEMM packing), got version '{}'; "
                  "re-save it with version gemm",
                  v);
    }
  } catch (const nlohmann::json::exception& e) {
    HFX_THROW("quant", "expected quantization_config fields of the right types, got {}: {}", qc.dump(),
              e.what());
  }
  if (cq.bits != 4 && (cq.bits != 8 || cq.method == "awq"))
    HFX_THROW("quant", "expected quantization_config.bits {} for a {} checkpoint, got {}",
              cq.method == "awq" ? "4" : "4 or 8", cq.method, cq.bits);
  if (cq.group_size != -1 && (cq.group_size <= 0 || cq.group_size % 32 != 0))
    HFX_THROW("quant", "expected quantization_config.group_size -1 or a positive multiple of 32, got {}",
              cq.group_size);
  return cq;
}

int64_t block_size_for(int64_t group, int64_t K) {
  const int64_t g = group > 0 ? group : K;
  for (int64_t b : {128, 64, 32})
    if (g % b == 0) return b;
  HFX_THROW("quant", "expected a group of a multiple of 32 input features, got {} (K {})", g, K);
}

QuantOptions options_of(const CheckpointQuant& cq, int64_t K) {
  QuantOptions o;
  o.bits = cq.bits;
  o.group_size = static_cast<int>(block_size_for(cq.group_size, K));
  o.symmetric = cq.method == "gptq" && cq.symmetric;
  return o;
}

QuantizedWeight from_packed(const CheckpointQuant& cq, const PackedLinear& t, const std::string& prefix) {
  if (!t.qweight.defined() || t.qweight.dim() != 2)
    HFX_THROW("quant", "expected '{}.qweight' as a 2-d int32 tensor, got {}", prefix,
              t.qweight.defined() ? fmt_shape(t.qweight.dtype(), t.qweight.shape()) : std::string("none"));
  const int per = 32 / cq.bits;
  const bool gptq = cq.method == "gptq";
  const int64_t K = gptq ? t.qweight.shape()[0] * per : t.qweight.shape()[0];
  const int64_t N = gptq ? t.qweight.shape()[1] : t.qweight.shape()[1] * 8;
  const int64_t group = cq.group_size > 0 ? cq.group_size : K;
  const std::string what =
      fmt::format("{}, {} bits, group {}, K {}, N {}", gptq ? "GPTQ" : "AWQ", cq.bits, cq.group_size, K, N);
  if (K % group != 0)
    HFX_THROW("quant",
              "expected the input features of '{}.qweight' ({}) to be a multiple of the group size {}",
              prefix, K, group);
  if (N % per != 0)
    HFX_THROW("quant", "expected the output features of '{}.qweight' ({}) to be a multiple of {} ({} bits)",
              prefix, N, per, cq.bits);
  const int64_t G = K / group;
  expect(t.qweight, DType::I32, gptq ? Shape{K / per, N} : Shape{K, N / 8}, prefix + ".qweight", what);
  expect(t.qzeros, DType::I32, {G, N * cq.bits / 32}, prefix + ".qzeros", what);
  expect(t.scales, DType::F16, {G, N}, prefix + ".scales", what);
  if (t.g_idx.defined()) {
    expect(t.g_idx, DType::I32, {K}, prefix + ".g_idx", what);
    const int32_t* gi = t.g_idx.contiguous().data<int32_t>();
    for (int64_t k = 0; k < K; k++)
      if (gi[k] != k / group)
        HFX_THROW("quant",
                  "expected '{}.g_idx'[k] = k / {} (groups in input order), got g_idx[{}] = {}; act-order "
                  "(desc_act) GPTQ checkpoints are not supported: re-quantize with desc_act false",
                  prefix, group, k, gi[k]);
  }
  const Layout lay{cq, N};
  const Tensor qw = t.qweight.contiguous(), qz = t.qzeros.contiguous(), sc = f16_to_f32(t.scales);
  QuantizedWeight q;
  q.bits = cq.bits;
  q.K = K;
  q.N = N;
  q.group_size = block_size_for(cq.group_size, K);
  const int64_t B = q.blocks(), blob = q.group_size * q.bits / 8, zb = (B * q.bits + 7) / 8;
  const bool sym = gptq && cq.symmetric;
  q.qweight = Tensor::zeros({N, B, blob}, DType::U8);
  q.scales = Tensor::zeros({N, B}, DType::F32);
  if (!sym) q.zero_points = Tensor::zeros({N, zb}, DType::U8);
  const int zmax = (1 << cq.bits) - 1, zsym = 1 << (cq.bits - 1);
  for (int64_t n = 0; n < N; n++) {
    uint8_t* codes = q.qweight.data<uint8_t>() + n * B * blob;
    for (int64_t k = 0; k < K; k++) put_nbits(codes, k, q.bits, lay.code(qw, k, n));
    for (int64_t b = 0; b < B; b++) {
      const int64_t g = b * q.group_size / group;
      q.scales.data<float>()[n * B + b] = sc.data<float>()[g * N + n];
      const int z = lay.zero(qz, g, n);
      if (sym && z != zsym)
        HFX_THROW(
            "quant",
            "expected every zero point of '{}.qzeros' to be {} (sym true), got {} at group {}, output {}; "
            "set sym false in quantization_config if the checkpoint is asymmetric",
            prefix, zsym, z, g, n);
      if (z > zmax)
        HFX_THROW("quant",
                  "expected zero points in [0, {}] in '{}.qzeros', got {} at group {}, output {} (a GPTQ v1 "
                  "zero point of 0 overflows); re-save the checkpoint as gptq_v2",
                  zmax, prefix, z, g, n);
      if (!sym) put_nbits(q.zero_points.data<uint8_t>() + n * zb, b, q.bits, z);
    }
  }
  return q;
}

PackedLinear to_packed(const CheckpointQuant& cq, const QuantizedWeight& q, const std::string& prefix) {
  const bool gptq = cq.method == "gptq";
  const int64_t N = q.N, K = q.K, G = q.blocks(), per = 32 / q.bits;
  if (q.bits != cq.bits || q.group_size != cq.group_size || K % per != 0 || (N * q.bits) % 32 != 0)
    HFX_THROW("quant",
              "expected '{}' quantized with {} bits in groups of {} and N·bits a multiple of 32 to write it "
              "as {}, got {} bits, groups of {}, N {}",
              prefix, cq.bits, cq.group_size, cq.method, q.bits, q.group_size, N);
  PackedLinear t;
  t.qweight = Tensor::zeros(gptq ? Shape{K / per, N} : Shape{K, N / 8}, DType::I32);
  t.qzeros = Tensor::zeros({G, N * q.bits / 32}, DType::I32);
  Tensor scales = Tensor::zeros({G, N}, DType::F32);
  const int64_t blob = q.group_size * q.bits / 8, zb = (G * q.bits + 7) / 8;
  int32_t* qw = t.qweight.data<int32_t>();
  int32_t* qz = t.qzeros.data<int32_t>();
  for (int64_t n = 0; n < N; n++) {
    const uint8_t* codes = q.qweight.data<uint8_t>() + n * G * blob;
    for (int64_t k = 0; k < K; k++) {
      const int v = get_nbits(codes, k, q.bits);
      if (gptq)
        qw[(k / per) * N + n] |= static_cast<int32_t>(static_cast<uint32_t>(v) << (q.bits * (k % per)));
      else
        qw[k * (N / 8) + n / 8] |= static_cast<int32_t>(static_cast<uint32_t>(v) << (4 * kAwqNibble[n % 8]));
    }
    for (int64_t g = 0; g < G; g++) {
      scales.data<float>()[g * N + n] = q.scales.data<float>()[n * G + g];
      int z = q.zero_points.defined() ? get_nbits(q.zero_points.data<uint8_t>() + n * zb, g, q.bits)
                                      : 1 << (q.bits - 1);
      if (gptq && !cq.v2) {
        if (z == 0)
          HFX_THROW("quant",
                    "expected zero points ≥ 1 to write '{}' as GPTQ v1 (it stores zero − 1), got 0 at group "
                    "{}, output {}; quantize symmetrically",
                    prefix, g, n);
        z -= 1;
      }
      if (gptq)
        set_field(qz + g * (N * q.bits / 32), n, q.bits, z);
      else
        qz[g * (N / 8) + n / 8] |= static_cast<int32_t>(static_cast<uint32_t>(z) << (4 * kAwqNibble[n % 8]));
    }
  }
  t.scales = scales.to(DType::F16);
  if (gptq) {
    t.g_idx = Tensor::zeros({K}, DType::I32);
    for (int64_t k = 0; k < K; k++) t.g_idx.data<int32_t>()[k] = static_cast<int32_t>(k / q.group_size);
  }
  return t;
}

nlohmann::json checkpoint_quant_json(const CheckpointQuant& cq) {
  if (cq.method == "gptq")
    return {{"quant_method", "gptq"},      {"bits", cq.bits},
            {"group_size", cq.group_size}, {"sym", cq.symmetric},
            {"desc_act", false},           {"true_sequential", true},
            {"damp_percent", 0.01},        {"checkpoint_format", cq.v2 ? "gptq_v2" : "gptq"}};
  return {{"quant_method", "awq"},       {"bits", cq.bits},   {"group_size", cq.group_size},
          {"zero_point", !cq.symmetric}, {"version", "gemm"}, {"modules_to_not_convert", nullptr}};
}

}  // namespace hfx::quant
