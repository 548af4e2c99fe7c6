// ggml's q5_0 and k-quant (q4_K, q6_K) blocks: the reference quantizers of ggml-quants.c
// (quantize_row_q5_0_ref, quantize_row_q4_K_ref, quantize_row_q6_K_ref: what llama-quantize writes without an
// importance matrix) and their dequantizers, operation for operation in the same float order, so that the
// bytes are the same (tests/interop/test_gguf.py calls llama.cpp's released libggml-base.so on the same
// rows).
#include "export/gguf/gguf_kquants.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>

#include "hfx/core/dtype.h"

namespace hfx::gguf {

namespace {

constexpr int kQK = 256;                // QK_K
constexpr float kGroupMaxEps = 1e-15f;  // GROUP_MAX_EPS

// ggml's round to nearest (ties to even through the float adder), for |x| <= 4194303.
int nearest_int(float f) {
  const float v = f + 12582912.f;
  int i;
  std::memcpy(&i, &v, sizeof(int));
  return (i & 0x007fffff) - 0x00400000;
}

void put16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v & 0xff);
  p[1] = static_cast<uint8_t>(v >> 8);
}
uint16_t get16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }

// make_qx_quants with rmse_type 1 and no importance weights (q6_K's 16-value groups).
float make_qx_quants(int n, int nmax, const float* x, int8_t* L) {
  float max = 0, amax = 0;
  for (int i = 0; i < n; ++i) {
    const float ax = std::fabs(x[i]);
    if (ax > amax) amax = ax, max = x[i];
  }
  if (amax < kGroupMaxEps) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    return 0.f;
  }
  float iscale = -nmax / max;
  float sumlx = 0, suml2 = 0;
  for (int i = 0; i < n; ++i) {
    int l = nearest_int(iscale * x[i]);
    l = std::max(-nmax, std::min(nmax - 1, l));
    L[i] = static_cast<int8_t>(l + nmax);
    const float w = x[i] * x[i];
    sumlx += w * x[i] * static_cast<float>(l);
    suml2 += w * static_cast<float>(l) * static_cast<float>(l);
  }
  float scale = suml2 != 0 ? sumlx / suml2 : 0.0f;
  float best = scale * sumlx;
  for (int is = -9; is <= 9; ++is) {
    if (is == 0) continue;
    iscale = -(static_cast<float>(nmax) + 0.1f * static_cast<float>(is)) / max;
    sumlx = suml2 = 0;
    for (int i = 0; i < n; ++i) {
      int l = nearest_int(iscale * x[i]);
      l = std::max(-nmax, std::min(nmax - 1, l));
      const float w = x[i] * x[i];
      sumlx += w * x[i] * static_cast<float>(l);
      suml2 += w * static_cast<float>(l) * static_cast<float>(l);
    }
    if (suml2 > 0 && sumlx * sumlx > best * suml2) {
      for (int i = 0; i < n; ++i) {
        const int l = nearest_int(iscale * x[i]);
        L[i] = static_cast<int8_t>(nmax + std::max(-nmax, std::min(nmax - 1, l)));
      }
      scale = sumlx / suml2;
      best = scale * sumlx;
    }
  }
  return scale;
}

// make_qkx2_quants(n, nmax, x, weights, L, &min, Laux, rmin, rdelta 0.1, nstep, use_mad false): the scale and
// min of a 32-value group; q4_K searches with rmin -1 over 20 steps, q5_K with rmin -0.5 over 15.
float make_qkx2_quants(int n, int nmax, const float* x, const float* weights, uint8_t* L, float* the_min,
                       float rmin, int nstep) {
  const float rdelta = 0.1f;
  uint8_t Laux[32];
  float min = x[0], max = x[0];
  float sum_w = weights[0];
  float sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    if (x[i] < min) min = x[i];
    if (x[i] > max) max = x[i];
    const float w = weights[i];
    sum_w += w;
    sum_x += w * x[i];
  }
  if (min > 0) min = 0;
  if (max == min) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    *the_min = -min;
    return 0.f;
  }
  float iscale = static_cast<float>(nmax) / (max - min);
  float scale = 1 / iscale;
  float best_error = 0;
  for (int i = 0; i < n; ++i) {
    const int l = nearest_int(iscale * (x[i] - min));
    L[i] = static_cast<uint8_t>(std::max(0, std::min(nmax, l)));
    const float diff = scale * static_cast<float>(L[i]) + min - x[i];
    best_error += weights[i] * (diff * diff);
  }
  for (int is = 0; is <= nstep; ++is) {
    iscale = (rmin + rdelta * static_cast<float>(is) + static_cast<float>(nmax)) / (max - min);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < n; ++i) {
      int l = nearest_int(iscale * (x[i] - min));
      l = std::max(0, std::min(nmax, l));
      Laux[i] = static_cast<uint8_t>(l);
      const float w = weights[i], fl = static_cast<float>(l);
      sum_l += w * fl;
      sum_l2 += w * fl * fl;
      sum_xl += w * fl * x[i];
    }
    const float D = sum_w * sum_l2 - sum_l * sum_l;
    if (D > 0) {
      float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
      float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
      if (this_min > 0) {
        this_min = 0;
        this_scale = sum_xl / sum_l2;
      }
      float cur_error = 0;
      for (int i = 0; i < n; ++i) {
        const float diff = this_scale * static_cast<float>(Laux[i]) + this_min - x[i];
        cur_error += weights[i] * (diff * diff);
      }
      if (cur_error < best_error) {
        std::memcpy(L, Laux, static_cast<size_t>(n));
        best_error = cur_error;
        scale = this_scale;
        min = this_min;
      }
    }
  }
  *the_min = -min;
  return scale;
}

void scale_min_k4(int j, const uint8_t* q, uint8_t* d, uint8_t* m) {
  if (j < 4) {
    *d = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *d = static_cast<uint8_t>((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
    *m = static_cast<uint8_t>((q[j + 4] >> 4) | ((q[j - 0] >> 6) << 4));
  }
}

// quantize_row_q4_K_ref / quantize_row_q5_K_ref: 8 groups of 32 with a 6-bit scale and min each (the best of
// make_qkx2_quants' search), the values in 4 or 5 bits.
template <int kBits>
void k_block(const float* x, uint8_t* out) {
  constexpr int kMax = (1 << kBits) - 1;
  uint8_t L[kQK];
  float weights[32], mins[kQK / 32], scales[kQK / 32];
  float max_scale = 0, max_min = 0;
  for (int j = 0; j < kQK / 32; ++j) {
    float sum_x2 = 0;
    for (int l = 0; l < 32; ++l) sum_x2 += x[32 * j + l] * x[32 * j + l];
    const float av_x = std::sqrt(sum_x2 / 32);
    for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(x[32 * j + l]);
    scales[j] = make_qkx2_quants(32, kMax, x + 32 * j, weights, L + 32 * j, &mins[j],
                                 kBits == 4 ? -1.f : -0.5f, kBits == 4 ? 20 : 15);
    max_scale = std::max(max_scale, scales[j]);
    max_min = std::max(max_min, mins[j]);
  }
  uint8_t* sc = out + 4;
  const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
  const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
  for (int j = 0; j < kQK / 32; ++j) {
    const auto ls = std::min<uint8_t>(63, static_cast<uint8_t>(nearest_int(inv_scale * scales[j])));
    const auto lm = std::min<uint8_t>(63, static_cast<uint8_t>(nearest_int(inv_min * mins[j])));
    if (j < 4) {
      sc[j] = ls;
      sc[j + 4] = lm;
    } else {
      sc[j + 4] = static_cast<uint8_t>((ls & 0xF) | ((lm & 0xF) << 4));
      sc[j - 4] |= static_cast<uint8_t>((ls >> 4) << 6);
      sc[j - 0] |= static_cast<uint8_t>((lm >> 4) << 6);
    }
  }
  put16(out, f32_to_f16(max_scale / 63.f));
  put16(out + 2, f32_to_f16(max_min / 63.f));
  for (int j = 0; j < kQK / 32; ++j) {
    uint8_t s, m;
    scale_min_k4(j, sc, &s, &m);
    const float d = f16_to_f32(get16(out)) * static_cast<float>(s);
    if (d == 0) continue;
    const float dm = f16_to_f32(get16(out + 2)) * static_cast<float>(m);
    for (int ii = 0; ii < 32; ++ii)
      L[32 * j + ii] =
          static_cast<uint8_t>(std::max(0, std::min(kMax, nearest_int((x[32 * j + ii] + dm) / d))));
  }
  // q5_K: the fifth bits in qh[32] (bit 2k of qh[l] for value l of the k-th 64, bit 2k+1 for value l + 32).
  uint8_t* qh = out + 16;
  uint8_t* q = out + (kBits == 4 ? 16 : 48);
  if (kBits == 5) std::memset(qh, 0, 32);
  uint8_t m1 = 1, m2 = 2;
  for (int j = 0; j < kQK;
       j += 64, q += 32, m1 = static_cast<uint8_t>(m1 << 2), m2 = static_cast<uint8_t>(m2 << 2))
    for (int l = 0; l < 32; ++l) {
      int l1 = L[j + l], l2 = L[j + l + 32];
      if (kBits == 5 && l1 > 15) l1 -= 16, qh[l] |= m1;
      if (kBits == 5 && l2 > 15) l2 -= 16, qh[l] |= m2;
      q[l] = static_cast<uint8_t>(l1 | (l2 << 4));
    }
}

// dequantize_row_q4_K / _q5_K: each group's 6-bit scale and min; q5_K's fifth bits in qh (as k_block writes
// them).
template <int kBits>
void k_decode(const uint8_t* p, float* y) {
  const float d = f16_to_f32(get16(p)), min = f16_to_f32(get16(p + 2));
  const uint8_t *sc = p + 4, *qh = p + 16, *q = p + (kBits == 4 ? 16 : 48);
  uint8_t u1 = 1, u2 = 2;
  for (int j = 0, is = 0; j < kQK; j += 64, q += 32, is += 2) {
    uint8_t s, m;
    scale_min_k4(is, sc, &s, &m);
    const float d1 = d * static_cast<float>(s), m1 = min * static_cast<float>(m);
    scale_min_k4(is + 1, sc, &s, &m);
    const float d2 = d * static_cast<float>(s), m2 = min * static_cast<float>(m);
    for (int l = 0; l < 32; ++l)
      *y++ = d1 * static_cast<float>((q[l] & 0xF) + (kBits == 5 && (qh[l] & u1) ? 16 : 0)) - m1;
    for (int l = 0; l < 32; ++l)
      *y++ = d2 * static_cast<float>((q[l] >> 4) + (kBits == 5 && (qh[l] & u2) ? 16 : 0)) - m2;
    u1 = static_cast<uint8_t>(u1 << 2), u2 = static_cast<uint8_t>(u2 << 2);
  }
}

}  // namespace

// block_q5_0: f16 d, u32 qh (the fifth bits), qs[16] (low nibbles: values 0-15, high: 16-31).
void q5_0_block(const float* x, uint8_t* out) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < 32; j++)
    if (amax < std::fabs(x[j])) amax = std::fabs(x[j]), max = x[j];
  const float d = max / -16;
  const float id = d != 0 ? 1.0f / d : 0.0f;
  put16(out, f32_to_f16(d));
  uint32_t qh = 0;
  for (int j = 0; j < 16; ++j) {
    const auto xi0 =
        static_cast<uint8_t>(std::min(31, static_cast<int>(static_cast<int8_t>(x[j] * id + 16.5f))));
    const auto xi1 =
        static_cast<uint8_t>(std::min(31, static_cast<int>(static_cast<int8_t>(x[16 + j] * id + 16.5f))));
    out[6 + j] = static_cast<uint8_t>((xi0 & 0x0F) | ((xi1 & 0x0F) << 4));
    qh |= ((xi0 & 0x10u) >> 4) << (j + 0);
    qh |= ((xi1 & 0x10u) >> 4) << (j + 16);
  }
  std::memcpy(out + 2, &qh, 4);
}

// block_q5_1: f16 d, f16 m (the min), u32 qh (the fifth bits), qs[16]: (x - min) / d in 0..31.
void q5_1_block(const float* x, uint8_t* out) {
  float min = FLT_MAX, max = -FLT_MAX;
  for (int j = 0; j < 32; j++) min = std::min(min, x[j]), max = std::max(max, x[j]);
  const float d = (max - min) / 31;
  const float id = d != 0 ? 1.0f / d : 0.0f;
  put16(out, f32_to_f16(d));
  put16(out + 2, f32_to_f16(min));
  uint32_t qh = 0;
  for (int j = 0; j < 16; ++j) {
    const auto xi0 = static_cast<uint8_t>((x[j] - min) * id + 0.5f);
    const auto xi1 = static_cast<uint8_t>((x[16 + j] - min) * id + 0.5f);
    out[8 + j] = static_cast<uint8_t>((xi0 & 0x0F) | ((xi1 & 0x0F) << 4));
    qh |= ((xi0 & 0x10u) >> 4) << (j + 0);
    qh |= ((xi1 & 0x10u) >> 4) << (j + 16);
  }
  std::memcpy(out + 4, &qh, 4);
}

// block_q4_K: f16 d, f16 dmin, scales[12] (6-bit scale and min of 8 groups of 32), qs[128].
void q4_k_block(const float* x, uint8_t* out) { k_block<4>(x, out); }

// block_q5_K: f16 d, f16 dmin, scales[12], qh[32] (the fifth bits), qs[128] — q4_K's layout with a fifth bit.
void q5_k_block(const float* x, uint8_t* out) { k_block<5>(x, out); }

// block_q6_K: ql[128] (low 4 bits), qh[64] (high 2 bits), int8 scales[16] (of groups of 16), f16 d.
void q6_k_block(const float* x, uint8_t* out) {
  int8_t L[kQK];
  float scales[kQK / 16];
  float max_scale = 0, max_abs_scale = 0;
  for (int ib = 0; ib < kQK / 16; ++ib) {
    const float scale = make_qx_quants(16, 32, x + 16 * ib, L + 16 * ib);
    scales[ib] = scale;
    if (std::fabs(scale) > max_abs_scale) max_abs_scale = std::fabs(scale), max_scale = scale;
  }
  uint8_t *ql = out, *qh = out + 128;
  auto* sc = reinterpret_cast<int8_t*>(out + 192);
  if (max_abs_scale < kGroupMaxEps) {
    std::memset(out, 0, 210);
    return;
  }
  const float iscale = -128.f / max_scale;
  put16(out + 208, f32_to_f16(1 / iscale));
  for (int ib = 0; ib < kQK / 16; ++ib)
    sc[ib] = static_cast<int8_t>(std::min(127, nearest_int(iscale * scales[ib])));
  for (int j = 0; j < kQK / 16; ++j) {
    const float d = f16_to_f32(get16(out + 208)) * static_cast<float>(sc[j]);
    if (d == 0) continue;
    for (int ii = 0; ii < 16; ++ii) {
      const int l = std::max(-32, std::min(31, nearest_int(x[16 * j + ii] / d)));
      L[16 * j + ii] = static_cast<int8_t>(l + 32);
    }
  }
  for (int j = 0; j < kQK; j += 128, ql += 64, qh += 32)
    for (int l = 0; l < 32; ++l) {
      const int q1 = L[j + l] & 0xF, q2 = L[j + l + 32] & 0xF, q3 = L[j + l + 64] & 0xF,
                q4 = L[j + l + 96] & 0xF;
      ql[l] = static_cast<uint8_t>(q1 | (q3 << 4));
      ql[l + 32] = static_cast<uint8_t>(q2 | (q4 << 4));
      qh[l] = static_cast<uint8_t>((L[j + l] >> 4) | ((L[j + l + 32] >> 4) << 2) |
                                   ((L[j + l + 64] >> 4) << 4) | ((L[j + l + 96] >> 4) << 6));
    }
}

void q5_0_decode(const uint8_t* p, float* y) {
  const float d = f16_to_f32(get16(p));
  uint32_t qh;
  std::memcpy(&qh, p + 2, 4);
  for (int j = 0; j < 16; ++j) {
    const auto xh0 = static_cast<uint8_t>(((qh >> (j + 0)) << 4) & 0x10);
    const auto xh1 = static_cast<uint8_t>(((qh >> (j + 12))) & 0x10);
    y[j] = static_cast<float>(((p[6 + j] & 0x0F) | xh0) - 16) * d;
    y[j + 16] = static_cast<float>(((p[6 + j] >> 4) | xh1) - 16) * d;
  }
}

void q5_1_decode(const uint8_t* p, float* y) {
  const float d = f16_to_f32(get16(p)), m = f16_to_f32(get16(p + 2));
  uint32_t qh;
  std::memcpy(&qh, p + 4, 4);
  for (int j = 0; j < 16; ++j) {
    const auto xh0 = static_cast<uint8_t>(((qh >> (j + 0)) << 4) & 0x10);
    const auto xh1 = static_cast<uint8_t>(((qh >> (j + 12))) & 0x10);
    y[j] = static_cast<float>((p[8 + j] & 0x0F) | xh0) * d + m;
    y[j + 16] = static_cast<float>((p[8 + j] >> 4) | xh1) * d + m;
  }
}

void q4_k_decode(const uint8_t* p, float* y) { k_decode<4>(p, y); }

void q5_k_decode(const uint8_t* p, float* y) { k_decode<5>(p, y); }

void q6_k_decode(const uint8_t* p, float* y) {
  const float d = f16_to_f32(get16(p + 208));
  const uint8_t *ql = p, *qh = p + 128;
  const auto* sc = reinterpret_cast<const int8_t*>(p + 192);
  for (int n = 0; n < kQK; n += 128, y += 128, ql += 64, qh += 32, sc += 8)
    for (int l = 0; l < 32; ++l) {
      const int is = l / 16;
      const int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
      const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
      const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
      const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
      y[l + 0] = d * static_cast<float>(sc[is + 0]) * static_cast<float>(q1);
      y[l + 32] = d * static_cast<float>(sc[is + 2]) * static_cast<float>(q2);
      y[l + 64] = d * static_cast<float>(sc[is + 4]) * static_cast<float>(q3);
      y[l + 96] = d * static_cast<float>(sc[is + 6]) * static_cast<float>(q4);
    }
}

}  // namespace hfx::gguf
