// hfx.linear_q: x[..., K] @ dequant(W)^T with W stored as blockwise 4- or 8-bit codes in MatMulNBits'
// layout (hfx/quant/quantize.h). Decode-sized calls (few rows of x) read the codes once and fuse the
// dequantization into the dot products (AVX2+FMA when the CPU has it, a scalar loop otherwise), so a
// decode step reads bits/32 of the f32 weight bytes (the AVX2 loop works on Σ q·x per block and applies
// scale and zero point once per block); larger calls (prefill) dequantize tiles of rows to
// f32 and hand them to sgemm, where compute, not weight bytes, bounds the time.
#include <cblas.h>
#include <immintrin.h>

#include <algorithm>

#include "hfx/quant/quantize.h"
#include "kernels/detail.h"
#include "kernels/linear_q.h"

namespace hfx::kernels {

namespace {

using detail::parallel_for;

constexpr int64_t kMaxFusedRows = 4;  // rows of x handled by the fused dot loop; more go to sgemm
constexpr int64_t kTile = 32;         // weight rows dequantized per sgemm call

struct Codes {
  const uint8_t* q;
  const float* scales;
  const uint8_t* zp;  // null: symmetric (2^(bits-1))
  int bits;
  int64_t K, group, blocks, blob, zbytes;
  int zero(int64_t n, int64_t b) const {
    if (!zp) return 1 << (bits - 1);
    const uint8_t* r = zp + n * zbytes;
    return bits == 8 ? r[b] : ((b % 2 == 0) ? (r[b / 2] & 0x0F) : (r[b / 2] >> 4));
  }
};

// Weight row n dequantized into out[K].
void dequant_row(const Codes& c, int64_t n, float* out) {
  for (int64_t b = 0; b < c.blocks; b++) {
    const uint8_t* p = c.q + (n * c.blocks + b) * c.blob;
    const float s = c.scales[n * c.blocks + b];
    const int z = c.zero(n, b);
    float* o = out + b * c.group;
    if (c.bits == 8) {
      for (int64_t j = 0; j < c.group; j++) o[j] = static_cast<float>(p[j] - z) * s;
    } else {
      for (int64_t j = 0; j < c.group / 2; j++) {
        o[2 * j] = static_cast<float>((p[j] & 0x0F) - z) * s;
        o[2 * j + 1] = static_cast<float>((p[j] >> 4) - z) * s;
      }
    }
  }
}

// y[m] = Σ_k dequant(W[n, k]) · x[m, k] for m < M (M ≤ kMaxFusedRows), scalar: one block of the row
// dequantized at a time (group ≤ 128), then a dot product with each row of x.
void dot_rows_scalar(const Codes& c, int64_t n, const float* x, int64_t M, float* y) {
  float acc[kMaxFusedRows] = {};
  float w[128];
  Codes one = c;  // a one-block view of row n
  one.blocks = 1;
  one.zp = nullptr;
  for (int64_t b = 0; b < c.blocks; b++) {
    one.q = c.q + (n * c.blocks + b) * c.blob;
    one.scales = c.scales + n * c.blocks + b;
    const int z = c.zero(n, b);
    for (int64_t j = 0; j < c.group; j++) {
      const int code = c.bits == 8 ? one.q[j] : ((j % 2 == 0) ? (one.q[j / 2] & 0x0F) : (one.q[j / 2] >> 4));
      w[j] = static_cast<float>(code - z) * one.scales[0];
    }
    for (int64_t m = 0; m < M; m++) {
      const float* xr = x + m * c.K + b * c.group;
      float s = 0;
      for (int64_t j = 0; j < c.group; j++) s += w[j] * xr[j];
      acc[m] += s;
    }
  }
  for (int64_t m = 0; m < M; m++) y[m] = acc[m];
}

// x prepared for the AVX2 loop: 4-bit codes are consumed 32 at a time as their low nibbles (elements
// 0, 2, …, 30 of the chunk) then their high nibbles (1, 3, …, 31), so x is permuted the same way once
// per call instead of interleaving nibbles per weight; and per block Σx, so that
// Σ (q − zp)·s·x = s·Σ q·x − s·zp·Σx needs no per-weight subtraction.
struct Prepared {
  std::vector<float> x, block_sum;  // [M, K], [M, blocks]
};

Prepared prepare(const Codes& c, const float* x, int64_t M) {
  Prepared p;
  p.x.resize(static_cast<size_t>(M * c.K));
  p.block_sum.assign(static_cast<size_t>(M * c.blocks), 0.0f);
  for (int64_t m = 0; m < M; m++) {
    const float* xr = x + m * c.K;
    float* o = p.x.data() + m * c.K;
    for (int64_t k0 = 0; k0 < c.K; k0 += 32)
      for (int64_t i = 0; i < 32; i++)
        o[k0 + i] = c.bits == 8 ? xr[k0 + i] : (i < 16 ? xr[k0 + 2 * i] : xr[k0 + 2 * (i - 16) + 1]);
    for (int64_t k = 0; k < c.K; k++) p.block_sum[m * c.blocks + k / c.group] += xr[k];
  }
  return p;
}

__attribute__((target("avx2,fma"))) inline float hsum_avx2(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
  return _mm_cvtss_f32(s);
}

__attribute__((target("avx2,fma"))) inline __m256 bytes8_ps(__m128i v) {
  return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(v));
}

// y[m] = Σ_k dequant(W[n, k]) · x[m, k] for m < M, AVX2: per block, Σ q·x in f32 lanes (codes widened
// 8 at a time), then scaled into the row total; the zero point enters once per block through Σx.
template <int Rows>
__attribute__((target("avx2,fma"))) void dot_rows_avx2(const Codes& c, int64_t n, const Prepared& p,
                                                       int64_t m0, float* y) {
  __m256 total[Rows];
  float corr[Rows] = {};
  for (int m = 0; m < Rows; m++) total[m] = _mm256_setzero_ps();
  const __m128i mask = _mm_set1_epi8(0x0F);
  for (int64_t b = 0; b < c.blocks; b++) {
    const uint8_t* q = c.q + (n * c.blocks + b) * c.blob;
    __m256 acc[Rows];
    for (int m = 0; m < Rows; m++) acc[m] = _mm256_setzero_ps();
    for (int64_t j = 0; j < c.group; j += 32) {
      __m256 w[4];
      if (c.bits == 4) {
        const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q + j / 2));
        const __m128i lo = _mm_and_si128(v, mask), hi = _mm_and_si128(_mm_srli_epi16(v, 4), mask);
        w[0] = bytes8_ps(lo), w[1] = bytes8_ps(_mm_srli_si128(lo, 8));
        w[2] = bytes8_ps(hi), w[3] = bytes8_ps(_mm_srli_si128(hi, 8));
      } else {
        for (int i = 0; i < 4; i++)
          w[i] = bytes8_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(q + j + 8 * i)));
      }
      for (int m = 0; m < Rows; m++) {
        const float* xr = p.x.data() + (m0 + m) * c.K + b * c.group + j;
        for (int i = 0; i < 4; i++) acc[m] = _mm256_fmadd_ps(w[i], _mm256_loadu_ps(xr + 8 * i), acc[m]);
      }
    }
    const float s = c.scales[n * c.blocks + b], zs = s * static_cast<float>(c.zero(n, b));
    for (int m = 0; m < Rows; m++) {
      total[m] = _mm256_fmadd_ps(acc[m], _mm256_set1_ps(s), total[m]);
      corr[m] += zs * p.block_sum[(m0 + m) * c.blocks + b];
    }
  }
  for (int m = 0; m < Rows; m++) y[m] = hsum_avx2(total[m]) - corr[m];
}

bool have_avx2() {
  static const bool yes = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return yes;
}

void fused(const Codes& c, const float* x, int64_t M, int64_t N, float* y) {
  const bool avx2 = have_avx2();
  const Prepared p = avx2 ? prepare(c, x, M) : Prepared{};
  for (int64_t m0 = 0; m0 < M; m0 += kMaxFusedRows) {
    const int64_t mm = std::min(kMaxFusedRows, M - m0);
    parallel_for(N, 64, [&](int64_t lo, int64_t hi) {
      float r[kMaxFusedRows];
      for (int64_t n = lo; n < hi; n++) {
        if (!avx2)
          dot_rows_scalar(c, n, x + m0 * c.K, mm, r);
        else if (mm == 1)
          dot_rows_avx2<1>(c, n, p, m0, r);
        else if (mm == 2)
          dot_rows_avx2<2>(c, n, p, m0, r);
        else if (mm == 3)
          dot_rows_avx2<3>(c, n, p, m0, r);
        else
          dot_rows_avx2<4>(c, n, p, m0, r);
        for (int64_t m = 0; m < mm; m++) y[(m0 + m) * N + n] = r[m];
      }
    });
  }
}

void tiled(const Codes& c, const float* x, int64_t M, int64_t N, float* y) {
  const int64_t tiles = (N + kTile - 1) / kTile;
  parallel_for(tiles, 1, [&](int64_t lo, int64_t hi) {
    detail::BlasSingleThread single;
    std::vector<float> buf(static_cast<size_t>(kTile * c.K));
    for (int64_t t = lo; t < hi; t++) {
      const int64_t n0 = t * kTile, rows = std::min(kTile, N - n0);
      for (int64_t r = 0; r < rows; r++) dequant_row(c, n0 + r, buf.data() + r * c.K);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(M), static_cast<int>(rows),
                  static_cast<int>(c.K), 1.0f, x, static_cast<int>(c.K), buf.data(), static_cast<int>(c.K),
                  0.0f, y + n0, static_cast<int>(N));
    }
  });
}

}  // namespace

Tensors linear_q(const Tensors& in, const Attrs& a) {
  detail::check_arity(in, 3, 4, "hfx.linear_q");
  const Tensor& x0 = in[0];
  if (x0.dim() < 1) HFX_THROW("kernels", "expected hfx.linear_q input x[..., K], got a scalar");
  const int64_t K = x0.size(-1);
  quant::QuantizedWeight q = quant::describe(in[1].contiguous(), detail::contig_f32(in[2]),
                                             in.size() > 3 && in[3].defined() ? in[3].contiguous() : Tensor(),
                                             K, "hfx.linear_q weight");
  if (q.bits != a.i("bits") || q.group_size != a.i("group_size"))
    HFX_THROW("kernels",
              "expected hfx.linear_q codes of {} bits in groups of {}, got {} bits in groups of {}",
              a.i("bits"), a.i("group_size"), q.bits, q.group_size);
  Codes c{q.qweight.data<uint8_t>(),
          q.scales.data<float>(),
          q.zero_points.defined() ? q.zero_points.data<uint8_t>() : nullptr,
          q.bits,
          K,
          q.group_size,
          q.blocks(),
          q.group_size * q.bits / 8,
          (q.blocks() * q.bits + 7) / 8};
  Tensor x = detail::contig_f32(x0);
  const int64_t M = x.numel() / std::max<int64_t>(1, K), N = q.N;
  Shape oshape(x0.shape().begin(), x0.shape().end() - 1);
  oshape.push_back(N);
  Tensor y = Tensor::empty(oshape, DType::F32);
  if (M == 0 || N == 0) return {y};
  if (M <= 2 * kMaxFusedRows)
    fused(c, x.data<float>(), M, N, y.data<float>());
  else
    tiled(c, x.data<float>(), M, N, y.data<float>());
  return {y};
}

}  // namespace hfx::kernels
