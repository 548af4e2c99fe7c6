// Round-to-nearest blockwise weight quantization (see hfx/quant/quantize.h for the math and the
// MatMulNBits layout the bytes follow). The quantized copy of a model is src/models/quantize_model.cpp.
#include "hfx/quant/quantize.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>

#include "hfx/core/error.h"
#include "hfx/io/safetensors.h"

namespace hfx::quant {

std::string QuantOptions::method() const { return bits == 0 ? "none" : "int" + std::to_string(bits); }

QuantOptions parse_options(const std::string& method, int group_size, bool symmetric,
                           const std::string& activations) {
  QuantOptions o;
  if (method == "int4")
    o.bits = 4;
  else if (method == "int8")
    o.bits = 8;
  else if (method != "none" && !method.empty())
    HFX_THROW("quant", "expected --quantize none, int8 or int4, got '{}'", method);
  if (group_size != 32 && group_size != 64 && group_size != 128)
    HFX_THROW("quant", "expected --group-size 32, 64 or 128, got {}", group_size);
  o.group_size = group_size;
  o.symmetric = symmetric;
  if (activations != "f32" && activations != "int8")
    HFX_THROW("quant", "expected --activations f32 or int8, got '{}'", activations);
  if (activations == "int8" && o.bits == 0)
    HFX_THROW(
        "quant",
        "expected --activations int8 together with --quantize int4 or int8, got it without quantization");
  o.int8_activations = activations == "int8";
  return o;
}

QuantNames quant_names(const std::string& weight) {
  return {weight + "_q", weight + "_scale", weight + "_zero_point"};
}

namespace {

// Sets code `v` of element `i` in a row of packed codes (4-bit: two per byte, low nibble first).
inline void put_code(uint8_t* row, int64_t i, int bits, int v) {
  if (bits == 8) {
    row[i] = static_cast<uint8_t>(v);
  } else {
    uint8_t& b = row[i / 2];
    b = (i % 2 == 0) ? static_cast<uint8_t>((b & 0xF0) | v) : static_cast<uint8_t>((b & 0x0F) | (v << 4));
  }
}

inline int get_code(const uint8_t* row, int64_t i, int bits) {
  if (bits == 8) return row[i];
  return (i % 2 == 0) ? (row[i / 2] & 0x0F) : (row[i / 2] >> 4);
}

// One block: scale and zero point by the rule of the header, then the codes. `row_amax` >= 0: the
// symmetric scale comes from it (QuantOptions::per_channel: the whole row's max |w|), not from the block.
void quantize_block(const float* w, int64_t g, const QuantOptions& o, uint8_t* codes, int64_t first,
                    float* scale, int* zp, float row_amax = -1.0f) {
  const int qmax = (1 << o.bits) - 1;
  float s = 0.0f;
  int z = 1 << (o.bits - 1);
  if (o.symmetric) {
    float amax = row_amax;
    if (amax < 0)
      for (int64_t j = 0; j < g; j++) amax = std::max(amax, std::fabs(w[j]));
    s = std::max(amax, 0.0f) / static_cast<float>((1 << (o.bits - 1)) - 1);
    // bf16 scales: the codes are chosen against the rounded scale, so (q − zp) · scale is the weight the
    // bf16-scale kernel computes with; a scale rounded down may put |w| / s a hair past 2^(bits−1) − 1,
    // which the clamp below keeps in the code range.
    if (o.bf16_scales) s = bf16_to_f32(f32_to_bf16(s));
  } else {
    float lo = 0.0f, hi = 0.0f;  // the range always holds 0, so 0 is exact
    for (int64_t j = 0; j < g; j++) lo = std::min(lo, w[j]), hi = std::max(hi, w[j]);
    s = (hi - lo) / static_cast<float>(qmax);
    if (o.bf16_scales) s = bf16_to_f32(f32_to_bf16(s));
    z = s > 0 ? std::clamp(static_cast<int>(std::nearbyint(-lo / s)), 0, qmax) : 0;
  }
  for (int64_t j = 0; j < g; j++) {
    int q = s > 0 ? static_cast<int>(std::nearbyint(w[j] / s)) + z : z;  // half to even
    put_code(codes, first + j, o.bits, std::clamp(q, 0, qmax));
  }
  *scale = s;
  *zp = z;
}

}  // namespace

QuantizedWeight quantize_weight(const Tensor& w, const QuantOptions& o, const std::string& name) {
  if (!o.enabled()) HFX_THROW("quant", "expected bits 4 or 8 to quantize '{}', got none", name);
  if (o.per_channel && !o.symmetric)
    HFX_THROW("quant", "expected symmetric codes with per-channel scales for '{}', got asymmetric", name);
  if (w.dim() != 2 || !dtype_is_float(w.dtype()))
    HFX_THROW("quant", "expected a 2-d float weight [N, K] for '{}', got {} {}", name, dtype_name(w.dtype()),
              shape_to_string(w.shape()));
  QuantizedWeight q;
  q.bits = o.bits;
  q.group_size = o.group_size;
  q.N = w.shape()[0];
  q.K = w.shape()[1];
  if (q.K % o.group_size != 0)
    HFX_THROW("quant",
              "expected the input features of '{}' ({}) to be a multiple of the group size {}; use "
              "--group-size {} or leave this weight in float",
              name, q.K, o.group_size, q.K % 64 == 0 ? 64 : 32);
  const int64_t B = q.blocks(), blob = o.group_size * o.bits / 8, zb = (B * o.bits + 7) / 8;
  q.qweight = Tensor::zeros({q.N, B, blob}, DType::U8);
  q.scales = Tensor::zeros({q.N, B}, DType::F32);
  if (!o.symmetric) q.zero_points = Tensor::zeros({q.N, zb}, DType::U8);
  std::vector<float> row(static_cast<size_t>(q.K));
  for (int64_t n = 0; n < q.N; n++) {
    // One row at a time: a file-backed bf16 weight is converted row by row, never as a whole.
    Tensor r = w.slice(0, n, n + 1).to(DType::F32).contiguous();
    std::copy_n(r.data<float>(), q.K, row.data());
    uint8_t* codes = q.qweight.data<uint8_t>() + n * B * blob;
    float row_amax = -1.0f;
    if (o.per_channel) {
      row_amax = 0.0f;
      for (float v : row) row_amax = std::max(row_amax, std::fabs(v));
    }
    for (int64_t b = 0; b < B; b++) {
      int zp = 0;
      quantize_block(row.data() + b * o.group_size, o.group_size, o, codes, b * o.group_size,
                     q.scales.data<float>() + n * B + b, &zp, row_amax);
      if (!o.symmetric) put_code(q.zero_points.data<uint8_t>() + n * zb, b, o.bits, zp);
    }
  }
  return q;
}

Tensor dequantize(const QuantizedWeight& q) {
  Tensor out = Tensor::zeros({q.N, q.K}, DType::F32);
  const int64_t B = q.blocks(), blob = q.group_size * q.bits / 8, zb = (B * q.bits + 7) / 8;
  for (int64_t n = 0; n < q.N; n++) {
    const uint8_t* codes = q.qweight.data<uint8_t>() + n * B * blob;
    for (int64_t k = 0; k < q.K; k++) {
      const int64_t b = k / q.group_size;
      int zp = q.zero_points.defined() ? get_code(q.zero_points.data<uint8_t>() + n * zb, b, q.bits)
                                       : 1 << (q.bits - 1);
      out.data<float>()[n * q.K + k] =
          static_cast<float>(get_code(codes, k, q.bits) - zp) * q.scales.data<float>()[n * B + b];
    }
  }
  return out;
}

QuantizedWeight describe(const Tensor& qweight, const Tensor& scales, const Tensor& zero_points, int64_t K,
                         const std::string& name) {
  const Shape &qs = qweight.shape(), &ss = scales.shape();
  if (qweight.dtype() != DType::U8 || qs.size() != 3 || ss.size() != 2 || ss[0] != qs[0] || ss[1] != qs[1] ||
      qs[1] <= 0 || K % qs[1] != 0)
    HFX_THROW("quant",
              "expected '{}' as uint8 [N, blocks, blob] with scales [N, blocks] and K = {} a multiple of "
              "blocks, got {} {} and scales {}",
              name, K, dtype_name(qweight.dtype()), shape_to_string(qs), shape_to_string(ss));
  QuantizedWeight q;
  q.N = qs[0];
  q.K = K;
  q.group_size = K / qs[1];
  const int64_t bits = qs[2] * 8 / q.group_size;
  if ((bits != 4 && bits != 8) || qs[2] * 8 != bits * q.group_size)
    HFX_THROW("quant", "expected '{}' to hold 4- or 8-bit codes (blob {} bytes per block of {}), got {} bits",
              name, qs[2], q.group_size, static_cast<double>(qs[2]) * 8 / static_cast<double>(q.group_size));
  q.bits = static_cast<int>(bits);
  if (zero_points.defined() &&
      (zero_points.dtype() != DType::U8 || zero_points.dim() != 2 || zero_points.shape()[0] != q.N ||
       zero_points.shape()[1] != (qs[1] * q.bits + 7) / 8))
    HFX_THROW("quant", "expected the zero points of '{}' as uint8 [{}, {}], got {} {}", name, q.N,
              (qs[1] * q.bits + 7) / 8, dtype_name(zero_points.dtype()),
              shape_to_string(zero_points.shape()));
  q.qweight = qweight;
  q.scales = scales;
  q.zero_points = zero_points;
  return q;
}

nlohmann::json to_json(const QuantOptions& o) {
  nlohmann::json j = {{"method", o.method()},
                      {"group_size", o.group_size},
                      {"symmetric", o.symmetric},
                      {"activations", o.int8_activations ? "int8" : "f32"}};
  if (o.embedding) j["embedding"] = true;   // absent = false: earlier exports' JSON reads back the same
  if (o.bf16_scales) j["scales"] = "bf16";  // absent = f32, likewise
  if (o.per_channel) j["per_channel"] = true;
  return j;
}

QuantOptions from_json(const nlohmann::json& j) {
  if (!j.is_object())
    HFX_THROW(
        "config",
        "expected quantize as {{\"method\": \"int4\", \"group_size\": 32, \"symmetric\": false}}, got {}",
        j.dump());
  for (const auto& [k, v] : j.items())
    if (k != "method" && k != "group_size" && k != "symmetric" && k != "activations" && k != "embedding" &&
        k != "scales" && k != "per_channel")
      HFX_THROW("config",
                "expected quantize keys among [method, group_size, symmetric, activations, embedding, "
                "scales, per_channel], got '{}'",
                k);
  try {
    QuantOptions o = parse_options(j.value("method", std::string("none")), j.value("group_size", 32),
                                   j.value("symmetric", false), j.value("activations", std::string("f32")));
    o.embedding = j.value("embedding", false);
    const std::string scales = j.value("scales", std::string("f32"));
    if (scales != "f32" && scales != "bf16")
      HFX_THROW("config", "expected quantize scales \"f32\" or \"bf16\", got '{}'", scales);
    o.bf16_scales = scales == "bf16";
    o.per_channel = j.value("per_channel", false);
    if (o.per_channel && !o.symmetric)
      HFX_THROW("config", "expected quantize per_channel together with symmetric codes, got asymmetric");
    if (o.embedding && !o.enabled())
      HFX_THROW("config", "expected quantize embedding together with a method int4 or int8, got method none");
    return o;
  } catch (const nlohmann::json::exception& e) {
    HFX_THROW("config", "expected quantize fields of the right types, got {}: {}", j.dump(), e.what());
  }
}

QuantOptions export_quantization(const std::string& export_dir) {
  const std::string path = export_dir + "/export_config.json";
  if (!std::filesystem::exists(path)) return {};
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(io::read_file(path));
  } catch (const nlohmann::json::exception& e) {
    HFX_THROW("quant", "expected JSON in {}, got a parse error: {}", path, e.what());
  }
  return j.is_object() && j.contains("quantize") ? from_json(j.at("quantize")) : QuantOptions{};
}

}  // namespace hfx::quant
