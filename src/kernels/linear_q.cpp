// hfx.linear_q: x[..., K] @ dequant(W)^T with W stored as blockwise 4- or 8-bit codes in MatMulNBits'
// layout (hfx/quant/quantize.h). Decode-sized calls (few rows of x) read the codes once and fuse the
// dequantization into the dot products (AVX2+FMA when the CPU has it, a scalar loop otherwise), so a
// decode step reads bits/32 of the f32 weight bytes; larger calls (prefill) dequantize tiles of rows to
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

__attribute__((target("avx2,fma"))) inline __m256 codes8_avx2(const uint8_t* p, int bits) {
  if (bits == 8) return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
  int32_t v;
  std::memcpy(&v, p, 4);  // 8 codes, low nibble first
  const __m128i b = _mm_cvtsi32_si128(v), mask = _mm_set1_epi8(0x0F);
  const __m128i lo = _mm_and_si128(b, mask), hi = _mm_and_si128(_mm_srli_epi16(b, 4), mask);
  return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_unpacklo_epi8(lo, hi)));
}

__attribute__((target("avx2,fma"))) float hsum_avx2(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
  return _mm_cvtss_f32(s);
}

// The same sum with AVX2: 8 codes → 8 floats, (code − zp)·scale, FMA into one accumulator per row.
__attribute__((target("avx2,fma"))) void dot_rows_avx2(const Codes& c, int64_t n, const float* x, int64_t M,
                                                       float* y) {
  __m256 acc[kMaxFusedRows];
  for (int64_t m = 0; m < M; m++) acc[m] = _mm256_setzero_ps();
  const int64_t step = 8 * c.bits / 8;  // bytes per 8 codes
  for (int64_t b = 0; b < c.blocks; b++) {
    const uint8_t* p = c.q + (n * c.blocks + b) * c.blob;
    const __m256 s = _mm256_set1_ps(c.scales[n * c.blocks + b]);
    const __m256 z = _mm256_set1_ps(static_cast<float>(c.zero(n, b)));
    for (int64_t j = 0; j < c.group; j += 8, p += step) {
      const __m256 w = _mm256_mul_ps(_mm256_sub_ps(codes8_avx2(p, c.bits), z), s);
      for (int64_t m = 0; m < M; m++)
        acc[m] = _mm256_fmadd_ps(w, _mm256_loadu_ps(x + m * c.K + b * c.group + j), acc[m]);
    }
  }
  for (int64_t m = 0; m < M; m++) y[m] = hsum_avx2(acc[m]);
}

bool have_avx2() {
  static const bool yes = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return yes;
}

void fused(const Codes& c, const float* x, int64_t M, int64_t N, float* y) {
  const bool avx2 = have_avx2();
  for (int64_t m0 = 0; m0 < M; m0 += kMaxFusedRows) {
    const int64_t mm = std::min(kMaxFusedRows, M - m0);
    parallel_for(N, 64, [&](int64_t lo, int64_t hi) {
      float r[kMaxFusedRows];
      for (int64_t n = lo; n < hi; n++) {
        if (avx2) dot_rows_avx2(c, n, x + m0 * c.K, mm, r);
        else dot_rows_scalar(c, n, x + m0 * c.K, mm, r);
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
                  static_cast<int>(c.K), 1.0f, x, static_cast<int>(c.K), buf.data(), static_cast<int>(c.K), 0.0f,
                  y + n0, static_cast<int>(N));
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
                                             in.size() > 3 && in[3].defined() ? in[3].contiguous() : Tensor(), K,
                                             "hfx.linear_q weight");
  if (q.bits != a.i("bits") || q.group_size != a.i("group_size"))
    HFX_THROW("kernels", "expected hfx.linear_q codes of {} bits in groups of {}, got {} bits in groups of {}",
              a.i("bits"), a.i("group_size"), q.bits, q.group_size);
  Codes c{q.qweight.data<uint8_t>(), q.scales.data<float>(),
          q.zero_points.defined() ? q.zero_points.data<uint8_t>() : nullptr, q.bits, K, q.group_size, q.blocks(),
          q.group_size * q.bits / 8, (q.blocks() * q.bits + 7) / 8};
  Tensor x = detail::contig_f32(x0);
  const int64_t M = x.numel() / std::max<int64_t>(1, K), N = q.N;
  Shape oshape(x0.shape().begin(), x0.shape().end() - 1);
  oshape.push_back(N);
  Tensor y = Tensor::empty(oshape, DType::F32);
  if (M == 0 || N == 0) return {y};
  if (M <= 2 * kMaxFusedRows) fused(c, x.data<float>(), M, N, y.data<float>());
  else tiled(c, x.data<float>(), M, N, y.data<float>());
  return {y};
}

}  // namespace hfx::kernels
