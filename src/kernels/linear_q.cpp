// hfx.linear_q: x[..., K] @ dequant(W)^T with W stored as blockwise 4- or 8-bit codes in MatMulNBits'
// layout (hfx/quant/quantize.h). Decode-sized calls (few rows of x) read the codes once and fuse the
// dequantization into the dot products (AVX-512 or AVX2+FMA when the CPU has it, a scalar loop otherwise), so
// a decode step reads bits/32 of the f32 weight bytes (the AVX-512 and AVX2 loops work on Σ q·x per block and
// applies scale and zero point once per block); larger calls (prefill) dequantize tiles of rows to f32 and
// hand them to sgemm, where compute, not weight bytes, bounds the time. With act_bits 8 the activations are
// rounded to int8 per block first (MatMulNBits accuracy_level 4's math); decode rows then go through an
// AVX-512 VNNI integer loop where the CPU has one, every other path runs its float loop on the rounded x.
#include <cblas.h>
#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <string>
#include <type_traits>
#include <vector>

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

// ---- act_bits 8: the activations rounded to int8 per block of the weight's group (symmetric, scale
// xs = amax / 127, xq = round-half-even(x · (1 / xs))), as ONNX Runtime's MatMulNBits at accuracy_level 4
// (MLAS QuantizeARow) does; y = Σ_b s_b·xs_b·Σ (q − zp)·xq. ----

// One block of n activations rounded to int8 (q) the way MLAS's QuantizeARow does; returns the scale xs
// (q · xs ≈ x). Every act_bits-8 path rounds through here, so all compute the same q.
float quantize_block(const float* x, int64_t n, int8_t* q) {
  float amax = 0;
  for (int64_t k = 0; k < n; k++) amax = std::max(amax, std::fabs(x[k]));
  const float xs = amax / 127.0f, inv = xs != 0 ? 1.0f / xs : 0.0f;
  for (int64_t k = 0; k < n; k++)
    q[k] = static_cast<int8_t>(std::clamp(std::nearbyint(x[k] * inv), -127.0f, 127.0f));
  return xs;
}

// x' = xs · q per block: the paths without VNNI run their float loops on x'.
std::vector<float> fake_quant(const float* x, int64_t M, int64_t K, int64_t group) {
  std::vector<float> out(static_cast<size_t>(M * K));
  std::vector<int8_t> q(static_cast<size_t>(group));
  for (int64_t r = 0; r < M * K; r += group) {
    const float xs = quantize_block(x + r, group, q.data());
    for (int64_t k = 0; k < group; k++) out[static_cast<size_t>(r + k)] = static_cast<float>(q[k]) * xs;
  }
  return out;
}

// The int8 activations in the VNNI loop's order: per chunk of 64 code bytes (4 bits: 128 weights, the low
// nibbles' x then the high nibbles'; 8 bits: 64 weights), zero past K; lane_scale: each 32-bit lane's block
// scale xs; block_sum: xs · Σ xq per block (the zero-point term's Σx).
struct PreparedA8 : Prepared {
  std::vector<int8_t> xq;
  std::vector<float> lane_scale;
  int64_t chunks = 0, per_chunk = 0;  ///< chunks of 64 code bytes per row; x bytes per chunk
};

PreparedA8 prepare_a8(const Codes& c, const float* x, int64_t M) {
  PreparedA8 p;
  const int64_t E = c.bits == 4 ? 128 : 64, L = E / 16;  // weights per chunk, per 32-bit lane
  p.chunks = (c.K + E - 1) / E;
  p.per_chunk = c.bits == 4 ? 128 : 64;
  p.xq.assign(static_cast<size_t>(M * p.chunks * p.per_chunk), 0);
  p.lane_scale.assign(static_cast<size_t>(M * p.chunks * 16), 0.0f);
  p.block_sum.assign(static_cast<size_t>(M * c.blocks), 0.0f);
  std::vector<int8_t> q(static_cast<size_t>(c.K));
  std::vector<float> xs(static_cast<size_t>(c.blocks));
  for (int64_t m = 0; m < M; m++) {
    const float* xr = x + m * c.K;
    for (int64_t b = 0; b < c.blocks; b++) {
      xs[b] = quantize_block(xr + b * c.group, c.group, q.data() + b * c.group);
      int32_t sum = 0;
      for (int64_t k = b * c.group; k < (b + 1) * c.group; k++) sum += q[k];
      p.block_sum[m * c.blocks + b] = xs[b] * static_cast<float>(sum);
    }
    for (int64_t ch = 0; ch < p.chunks; ch++) {
      int8_t* o = p.xq.data() + (m * p.chunks + ch) * p.per_chunk;
      for (int64_t i = 0; i < 64; i++) {
        if (c.bits == 8 && ch * 64 + i < c.K) o[i] = q[ch * 64 + i];
        if (c.bits == 4 && 2 * (ch * 64 + i) < c.K) {
          o[i] = q[2 * (ch * 64 + i)];
          o[64 + i] = q[2 * (ch * 64 + i) + 1];
        }
      }
      for (int64_t l = 0; l < 16; l++)
        if (ch * E + L * l < c.K) p.lane_scale[(m * p.chunks + ch) * 16 + l] = xs[(ch * E + L * l) / c.group];
    }
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

// GCC 12's AVX-512 headers start some conversions and reductions from _mm512_undefined_*(), which
// -Wuninitialized reports at -O3 (a false positive inside the headers, not in these loops).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#if !defined(__clang__)  // a GCC-only warning group
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#define HFX_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,fma")))

// The zero-point term Σ_b zp_b · scale_b · Σx_b of row n for each row of x, 16 blocks per step: the
// 4-bit zero points (two per byte, even block in the low nibble) are widened and interleaved back into
// block order in registers, so no block costs scalar work.
template <int Rows>
HFX_AVX512 inline void zero_terms_avx512(const Codes& c, int64_t n, const Prepared& p, int64_t m0,
                                         float* corr) {
  __m512 acc[Rows];
  for (int m = 0; m < Rows; m++) acc[m] = _mm512_setzero_ps();
  const float* s = c.scales + n * c.blocks;
  const uint8_t* zrow = c.zp ? c.zp + n * c.zbytes : nullptr;
  const __m512i interleave = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  const __m512i nibble = _mm512_set1_epi32(0x0F);
  for (int64_t b0 = 0; b0 < c.blocks; b0 += 16) {
    const int64_t cnt = std::min<int64_t>(16, c.blocks - b0);
    const __mmask16 mask = static_cast<__mmask16>((1u << cnt) - 1);
    __m512 z;
    if (zrow == nullptr) {
      z = _mm512_set1_ps(static_cast<float>(1 << (c.bits - 1)));
    } else if (c.bits == 8) {
      z = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(mask, zrow + b0)));
    } else {
      const __mmask16 bytes = static_cast<__mmask16>((1u << ((cnt + 1) / 2)) - 1);
      const __m512i v = _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(bytes, zrow + b0 / 2));
      z = _mm512_permutex2var_ps(_mm512_cvtepi32_ps(_mm512_and_si512(v, nibble)), interleave,
                                 _mm512_cvtepi32_ps(_mm512_srli_epi32(v, 4)));
    }
    const __m512 zs = _mm512_mul_ps(z, _mm512_maskz_loadu_ps(mask, s + b0));
    for (int m = 0; m < Rows; m++)
      acc[m] = _mm512_fmadd_ps(zs, _mm512_maskz_loadu_ps(mask, p.block_sum.data() + (m0 + m) * c.blocks + b0),
                               acc[m]);
  }
  for (int m = 0; m < Rows; m++) corr[m] = _mm512_reduce_add_ps(acc[m]);
}

// The 32 weights of one chunk as scale · code, low nibbles (even k) and high nibbles (odd k) for 4 bits,
// the chunk's first and second 16 codes for 8 bits. 4-bit codes index a 16-entry table of code · scale
// (vpermps reads the low 4 bits of each lane), so a code costs no conversion.
template <int Bits>
HFX_AVX512 __attribute__((always_inline)) inline void chunk_weights(const uint8_t* q, __m512 table,
                                                                    __m512 scale, __m512& lo, __m512& hi) {
  if constexpr (Bits == 4) {
    const __m512i v = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q)));
    lo = _mm512_permutexvar_ps(v, table);
    hi = _mm512_permutexvar_ps(_mm512_srli_epi32(v, 4), table);
  } else {
    lo = _mm512_mul_ps(
        _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q)))),
        scale);
    hi = _mm512_mul_ps(
        _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q + 16)))),
        scale);
  }
}

// One chunk of 32 weights (codes at q, the block's scale) against x[m][k0 .. k0 + 32) of each row of x.
template <int Bits, int Rows>
HFX_AVX512 __attribute__((always_inline)) inline void chunk_fma(const uint8_t* q, float s,
                                                                const float* const* xb, int64_t k0,
                                                                __m512* lo_acc, __m512* hi_acc) {
  const __m512 scale = _mm512_set1_ps(s);
  const __m512 iota = _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  __m512 lo, hi;
  chunk_weights<Bits>(q, _mm512_mul_ps(iota, scale), scale, lo, hi);
  for (int m = 0; m < Rows; m++) {
    lo_acc[m] = _mm512_fmadd_ps(lo, _mm512_loadu_ps(xb[m] + k0), lo_acc[m]);
    hi_acc[m] = _mm512_fmadd_ps(hi, _mm512_loadu_ps(xb[m] + k0 + 16), hi_acc[m]);
  }
}

// y[m] = Σ_k dequant(W[n, k]) · x[m, k] for m < M, AVX-512: Σ_k scale·q·x over the row with the scale
// folded into the weights (no per-block reduction), minus the zero-point term. Two chunks of 32 weights
// per step, each half of each chunk into its own accumulator: four independent FMA chains, so the loop
// is bound by issue, not by FMA latency (measured: 2 chains ran at ~7.7 cycles per chunk).
template <int Bits, int Rows>
HFX_AVX512 void dot_rows_avx512(const Codes& c, int64_t n, const Prepared& p, int64_t m0, float* y) {
  __m512 acc[4][Rows];
  for (auto& a : acc)
    for (int m = 0; m < Rows; m++) a[m] = _mm512_setzero_ps();
  const float* xb[Rows];
  for (int m = 0; m < Rows; m++) xb[m] = p.x.data() + (m0 + m) * c.K;
  // Chunks of 32 weights are consecutive in the row's codes (a block's blob holds group / 32 of them).
  const uint8_t* q = c.q + n * c.blocks * c.blob;
  const float* scales = c.scales + n * c.blocks;
  constexpr int64_t step = Bits == 4 ? 16 : 32;  // code bytes per chunk of 32 weights
  const int64_t chunks = c.K / 32;
  // A chunk's block is ch >> shift: the group is a power of two ≥ 32. A 64-bit division here made the loop
  // twice as slow on AMD Zen 4 (a decode row through a 2048 × 8192 weight: 651 µs, 316 µs with the shift).
  const int shift = __builtin_ctzll(static_cast<uint64_t>(c.group / 32));
  int64_t ch = 0;
  for (; ch + 1 < chunks; ch += 2) {
    chunk_fma<Bits, Rows>(q + ch * step, scales[ch >> shift], xb, ch * 32, acc[0], acc[1]);
    chunk_fma<Bits, Rows>(q + (ch + 1) * step, scales[(ch + 1) >> shift], xb, (ch + 1) * 32, acc[2], acc[3]);
  }
  if (ch < chunks) chunk_fma<Bits, Rows>(q + ch * step, scales[ch >> shift], xb, ch * 32, acc[0], acc[1]);
  float corr[Rows];
  zero_terms_avx512<Rows>(c, n, p, m0, corr);
  for (int m = 0; m < Rows; m++)
    y[m] = _mm512_reduce_add_ps(
               _mm512_add_ps(_mm512_add_ps(acc[0][m], acc[1][m]), _mm512_add_ps(acc[2][m], acc[3][m]))) -
           corr[m];
}
#define HFX_VNNI __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,fma")))

// What the VNNI loop needs per chunk of 64 code bytes, the same for every weight row: its first block, the
// masks of its code bytes and of its blocks' scales, and which of those blocks each 32-bit lane is in.
struct ChunkPlan {
  std::vector<int64_t> b0;
  std::vector<__mmask64> bytes;
  std::vector<__mmask16> scales;
  alignas(64) int32_t rel[2][16];  // for even / odd chunks (E·ch mod group repeats with period ≤ 2)
};

ChunkPlan plan_chunks(const Codes& c, int64_t chunks) {
  ChunkPlan pl;
  const int64_t E = c.bits == 4 ? 128 : 64, L = E / 16, row_bytes = c.K * c.bits / 8;
  const int64_t span = std::max<int64_t>(E / c.group, 1);
  for (int64_t ch = 0; ch < chunks; ch++) {
    const int64_t left = row_bytes - ch * 64, b0 = ch * E / c.group;
    pl.b0.push_back(b0);
    pl.bytes.push_back(left >= 64 ? ~__mmask64{0} : ((__mmask64{1} << left) - 1));
    pl.scales.push_back(static_cast<__mmask16>((1u << std::min(span, c.blocks - b0)) - 1));
  }
  for (int64_t odd = 0; odd < 2; odd++)
    for (int64_t l = 0; l < 16; l++)
      pl.rel[odd][l] = static_cast<int32_t>(((E * odd) % c.group + L * l) / c.group);
  return pl;
}

// act_bits 8 on AVX-512 VNNI: per chunk of 64 code bytes, vpdpbusd multiplies the unsigned codes (4 bits:
// low and high nibbles in two passes) with the int8 activations into 16 int32 lanes of one block each; a
// lane's sum is scaled by its block's weight scale × activation scale (the weight scales permuted to lanes)
// and accumulated in f32; the zero-point term once per row.
template <int Bits, int Rows>
HFX_VNNI void dot_rows_vnni(const Codes& c, int64_t n, const PreparedA8& p, const ChunkPlan& pl, int64_t m0,
                            float* y) {
  __m512 acc[Rows];
  for (int m = 0; m < Rows; m++) acc[m] = _mm512_setzero_ps();
  const uint8_t* q = c.q + n * c.blocks * c.blob;
  const float* s = c.scales + n * c.blocks;
  const __m512i idx[2] = {_mm512_load_si512(pl.rel[0]), _mm512_load_si512(pl.rel[1])};
  const __m512i low4 = _mm512_set1_epi8(0x0F);
  for (int64_t ch = 0; ch < p.chunks; ch++) {
    // A plain load where the chunk is whole: on AMD Zen 4 the masked load stalled the loop (measured: 60%
    // of its samples waited on it, the int8-activation decode ran slower than the f32 one).
    const __m512i v = pl.bytes[ch] == ~__mmask64{0} ? _mm512_loadu_si512(q + ch * 64)
                                                    : _mm512_maskz_loadu_epi8(pl.bytes[ch], q + ch * 64);
    const __m512 ws = _mm512_permutexvar_ps(idx[ch & 1], _mm512_maskz_loadu_ps(pl.scales[ch], s + pl.b0[ch]));
    const __m512i lo = Bits == 4 ? _mm512_and_si512(v, low4) : v;
    for (int m = 0; m < Rows; m++) {
      const int64_t at = (m0 + m) * p.chunks + ch;
      const int8_t* xm = p.xq.data() + at * p.per_chunk;
      __m512i d = _mm512_dpbusd_epi32(_mm512_setzero_si512(), lo, _mm512_loadu_si512(xm));
      if constexpr (Bits == 4)
        d = _mm512_dpbusd_epi32(d, _mm512_and_si512(_mm512_srli_epi16(v, 4), low4),
                                _mm512_loadu_si512(xm + 64));
      const __m512 sc = _mm512_mul_ps(ws, _mm512_loadu_ps(p.lane_scale.data() + at * 16));
      acc[m] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d), sc, acc[m]);
    }
  }
  float corr[Rows];
  zero_terms_avx512<Rows>(c, n, p, m0, corr);
  for (int m = 0; m < Rows; m++) y[m] = _mm512_reduce_add_ps(acc[m]) - corr[m];
}
#undef HFX_VNNI
#undef HFX_AVX512
#pragma GCC diagnostic pop

LinearQIsa cpu_isa() {
  static const LinearQIsa isa = [] {
    LinearQIsa best = LinearQIsa::scalar;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) best = LinearQIsa::avx2;
    if (best == LinearQIsa::avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl"))
      best = LinearQIsa::avx512;
    if (best == LinearQIsa::avx512 && __builtin_cpu_supports("avx512vnni")) best = LinearQIsa::avx512_vnni;
    const char* env = std::getenv("HFX_LINEAR_Q_ISA");
    const std::string cap = env ? env : "";
    if (cap == "scalar") return LinearQIsa::scalar;
    if (cap == "avx2") return std::min(best, LinearQIsa::avx2);
    if (cap == "avx512") return std::min(best, LinearQIsa::avx512);
    return best;
  }();
  return isa;
}

std::atomic<int> isa_cap{static_cast<int>(LinearQIsa::avx512_vnni)};

// One weight row against `mm` rows of x with the chosen ISA's loop.
template <typename Fn>
void dispatch_rows(int64_t mm, Fn&& fn) {
  switch (mm) {
    case 1:
      fn(std::integral_constant<int, 1>{});
      break;
    case 2:
      fn(std::integral_constant<int, 2>{});
      break;
    case 3:
      fn(std::integral_constant<int, 3>{});
      break;
    default:
      fn(std::integral_constant<int, 4>{});
      break;
  }
}

// Whether the group is a power of two ≥ 32 (every --group-size; a checkpoint's larger groups are cut to 128):
// what the AVX-512 loops assume (a chunk's block by a shift; the VNNI plan's period of at most 2 chunks).
bool pow2_group(const Codes& c) { return c.group >= 32 && (c.group & (c.group - 1)) == 0; }

void fused(const Codes& c, const float* x, int64_t M, int64_t N, float* y) {
  // The vector loops step 32 weights at a time; the AVX-512 one finds a chunk's block by a shift.
  LinearQIsa isa = linear_q_isa();
  if (isa >= LinearQIsa::avx512 && !pow2_group(c)) isa = LinearQIsa::avx2;
  if (isa == LinearQIsa::avx2 && c.group % 32 != 0) isa = LinearQIsa::scalar;
  const Prepared p = isa != LinearQIsa::scalar ? prepare(c, x, M) : Prepared{};
  for (int64_t m0 = 0; m0 < M; m0 += kMaxFusedRows) {
    const int64_t mm = std::min(kMaxFusedRows, M - m0);
    parallel_for(N, 64, [&](int64_t lo, int64_t hi) {
      float r[kMaxFusedRows];
      for (int64_t n = lo; n < hi; n++) {
        if (isa == LinearQIsa::scalar)
          dot_rows_scalar(c, n, x + m0 * c.K, mm, r);
        else
          dispatch_rows(mm, [&](auto rows) {
            if (isa >= LinearQIsa::avx512 && c.bits == 4)
              dot_rows_avx512<4, decltype(rows)::value>(c, n, p, m0, r);
            else if (isa >= LinearQIsa::avx512)
              dot_rows_avx512<8, decltype(rows)::value>(c, n, p, m0, r);
            else
              dot_rows_avx2<decltype(rows)::value>(c, n, p, m0, r);
          });
        for (int64_t m = 0; m < mm; m++) y[(m0 + m) * N + n] = r[m];
      }
    });
  }
}

// act_bits 8 on AVX-512 VNNI: the decode rows' activations quantized once, then the integer dot loop.
void fused_a8(const Codes& c, const float* x, int64_t M, int64_t N, float* y) {
  const PreparedA8 p = prepare_a8(c, x, M);
  const ChunkPlan pl = plan_chunks(c, p.chunks);
  for (int64_t m0 = 0; m0 < M; m0 += kMaxFusedRows) {
    const int64_t mm = std::min(kMaxFusedRows, M - m0);
    parallel_for(N, 64, [&](int64_t lo, int64_t hi) {
      float r[kMaxFusedRows];
      for (int64_t n = lo; n < hi; n++) {
        dispatch_rows(mm, [&](auto rows) {
          if (c.bits == 4)
            dot_rows_vnni<4, decltype(rows)::value>(c, n, p, pl, m0, r);
          else
            dot_rows_vnni<8, decltype(rows)::value>(c, n, p, pl, m0, r);
        });
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

// The kernels' view of a weight's codes (hfx/quant/quantize.h's layout).
Codes codes_of(const quant::QuantizedWeight& q) {
  return {q.qweight.data<uint8_t>(),
          q.scales.data<float>(),
          q.zero_points.defined() ? q.zero_points.data<uint8_t>() : nullptr,
          q.bits,
          q.K,
          q.group_size,
          q.blocks(),
          q.group_size * q.bits / 8,
          (q.blocks() * q.bits + 7) / 8};
}

}  // namespace

LinearQIsa linear_q_isa() { return std::min(cpu_isa(), static_cast<LinearQIsa>(isa_cap.load())); }
void linear_q_cap_isa(LinearQIsa cap) { isa_cap.store(static_cast<int>(cap)); }

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
  const Codes c = codes_of(q);
  Tensor x = detail::contig_f32(x0);
  const int64_t M = x.numel() / std::max<int64_t>(1, K), N = q.N;
  Shape oshape(x0.shape().begin(), x0.shape().end() - 1);
  oshape.push_back(N);
  Tensor y = Tensor::empty(oshape, DType::F32);
  if (M == 0 || N == 0) return {y};
  const int64_t act = a.has("act_bits") ? a.i("act_bits") : 0;
  if (act != 0 && act != 8) HFX_THROW("kernels", "expected hfx.linear_q act_bits 0 (f32) or 8, got {}", act);
  if (act == 8 && M <= 2 * kMaxFusedRows && linear_q_isa() == LinearQIsa::avx512_vnni && pow2_group(c)) {
    fused_a8(c, x.data<float>(), M, N, y.data<float>());
    return {y};
  }
  // act_bits 8 elsewhere: the same math in the float loops, on the activations rounded to int8 and back.
  const std::vector<float> xq = act == 8 ? fake_quant(x.data<float>(), M, K, c.group) : std::vector<float>();
  const float* xp = act == 8 ? xq.data() : x.data<float>();
  if (M <= 2 * kMaxFusedRows)
    fused(c, xp, M, N, y.data<float>());
  else
    tiled(c, xp, M, N, y.data<float>());
  return {y};
}

Tensors embedding_q(const Tensors& in, const Attrs& a) {
  detail::check_arity(in, 3, 4, "hfx.embedding_q");
  const Tensor codes = in[0].contiguous();
  if (codes.dim() != 3)
    HFX_THROW("kernels", "expected hfx.embedding_q codes [V, blocks, blob], got {}",
              shape_to_string(codes.shape()));
  const int64_t D = codes.shape()[1] * a.i("group_size");
  quant::QuantizedWeight q = quant::describe(codes, detail::contig_f32(in[1]),
                                             in.size() > 3 && in[3].defined() ? in[3].contiguous() : Tensor(),
                                             D, "hfx.embedding_q table");
  if (q.bits != a.i("bits"))
    HFX_THROW("kernels", "expected hfx.embedding_q codes of {} bits, got {}", a.i("bits"), q.bits);
  const Codes c = codes_of(q);
  const Tensor idx = in[2].to(DType::I64).contiguous();
  Shape os = idx.shape();
  os.push_back(D);
  Tensor out = Tensor::empty(os, DType::F32);
  const int64_t* ids = idx.data<int64_t>();
  for (int64_t i = 0; i < idx.numel(); i++) {
    if (ids[i] < 0 || ids[i] >= q.N)
      HFX_THROW("kernels", "expected hfx.embedding_q indices in [0, {}), got {}", q.N, ids[i]);
    dequant_row(c, ids[i], out.data<float>() + i * D);
  }
  return {out};
}

}  // namespace hfx::kernels
