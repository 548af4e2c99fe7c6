// Fused composite kernels: rms_norm, rope, sdpa (all compute in f32; the result takes x's / q's dtype).
//
// sdpa works per block of query rows: one sgemm for the scores of the block against the keys it may
// see (causal and window bounds trim the key range), masking + softmax per row, one sgemm with V.
// Prefill blocks are up to 128 query rows of one head (so at most a [128, T] score block per task);
// decode (S small) blocks are the G query heads that share a kv head, stacked as rows so K and V are
// read once per group. Blocks run in parallel on the kernel pool with OpenBLAS single-threaded; when
// there are fewer blocks than threads, blocks run in turn (OpenBLAS itself runs single-threaded: see
// threading.cpp).
#if defined(__GNUC__) && !defined(__clang__)  // GCC only: clang has no per-file optimize pragma
#pragma GCC optimize("O3")
#endif
#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/detail.h"

namespace hfx::kernels {
using namespace detail;

namespace {

/// Row offsets (elements) of every row over the last dim of `t`.
std::vector<int64_t> row_offsets(const Tensor& t) {
  Shape sh(t.shape().begin(), t.shape().end() - 1), st(t.strides().begin(), t.strides().end() - 1);
  std::vector<int64_t> offs;
  offs.reserve(shape_numel(sh));
  for_each_offset(sh, st, [&](int64_t, int64_t off) { offs.push_back(off); });
  return offs;
}

/// 4-d f32 view with unit stride in the last dim (copies only when needed).
Tensor unit_inner_f32(const Tensor& t) {
  Tensor f = as_f32(t);
  if (f.size(-1) > 1 && f.strides().back() != 1) f = f.contiguous();
  return f;
}

}  // namespace

Tensors rms_norm(const Tensors& in, const Attrs& a) {
  check_arity(in, 2, 2, "rms_norm");
  const Tensor& x = in[0];
  if (x.dim() == 0) HFX_THROW("kernels", "expected rms_norm input of at least 1 dim, got a 0-d tensor");
  int64_t D = x.size(-1);
  if (in[1].numel() != D)
    HFX_THROW("kernels", "expected rms_norm weight of {} elements, got {}", D,
              shape_to_string(in[1].shape()));
  float eps = static_cast<float>(a.f("eps"));
  float off = static_cast<float>(a.f("weight_offset"));
  Tensor w = in[1].to(DType::F32).clone();  // fresh: the offset is added in place
  float* pw = w.data<float>();
  for (int64_t i = 0; i < D; i++) pw[i] += off;
  Tensor xf = as_f32(x);
  Tensor out = Tensor::empty(x.shape(), DType::F32);
  auto offs = row_offsets(xf);
  const float* px = xf.data<float>();
  float* po = out.data<float>();
  int64_t rows = static_cast<int64_t>(offs.size());
  int64_t xs = xf.strides().back();
  if (D > 0)
    parallel_for(rows, std::max<int64_t>(1, 16384 / D), [&](int64_t b, int64_t e) {
      std::vector<float> buf;
      for (int64_t r = b; r < e; r++) {
        const float* p = px + offs[r];
        if (xs != 1) {
          buf.resize(D);
          for (int64_t i = 0; i < D; i++) buf[i] = p[i * xs];
          p = buf.data();
        }
        double ss = 0;
        for (int64_t i0 = 0; i0 < D; i0 += 1024) {
          float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
          int64_t i = i0, i1 = std::min<int64_t>(D, i0 + 1024);
          for (; i + 8 <= i1; i += 8)
            for (int k = 0; k < 8; k++) acc[k] += p[i + k] * p[i + k];
          float t = 0;
          for (; i < i1; i++) t += p[i] * p[i];
          ss += static_cast<double>(((acc[0] + acc[1]) + (acc[2] + acc[3])) +
                                    ((acc[4] + acc[5]) + (acc[6] + acc[7]))) +
                t;
        }
        float inv = 1.0f / std::sqrt(static_cast<float>(ss / static_cast<double>(D)) + eps);
        float* o = po + r * D;
        for (int64_t i = 0; i < D; i++) o[i] = p[i] * inv * pw[i];
      }
    });
  return {finish(out, float_out(x.dtype()))};
}

Tensors rope(const Tensors& in, const Attrs& a) {
  check_arity(in, 3, 3, "rope");
  const Tensor& x = in[0];
  bool inter = a.b("interleaved");
  if (x.dim() != 4) HFX_THROW("kernels", "expected rope x[B, H, S, D], got {}", shape_to_string(x.shape()));
  int64_t B = x.shape()[0], H = x.shape()[1], S = x.shape()[2], D = x.shape()[3];
  auto norm_cs = [&](const Tensor& t, const char* what) {
    Tensor c = t;
    if (c.dim() == 4 && c.shape()[1] == 1) c = c.squeeze(1);
    if (c.dim() == 2) c = c.unsqueeze(0);
    if (c.dim() != 3 || (c.shape()[0] != B && c.shape()[0] != 1) || c.shape()[1] != S || c.shape()[2] > D)
      HFX_THROW("kernels", "expected rope {} [B, S, R] with B in {{1, {}}}, S = {}, R <= {}, got {}", what, B,
                S, D, shape_to_string(t.shape()));
    return contig_f32(c);
  };
  Tensor c = norm_cs(in[1], "cos"), s = norm_cs(in[2], "sin");
  if (c.shape() != s.shape())
    HFX_THROW("kernels", "expected rope cos and sin of one shape, got {} and {}", shape_to_string(c.shape()),
              shape_to_string(s.shape()));
  int64_t R = c.shape()[2], Bc = c.shape()[0];
  if (R % 2) HFX_THROW("kernels", "expected an even number of rotary dims, got {}", R);
  Tensor xf = as_f32(x);
  Tensor out = Tensor::empty(x.shape(), DType::F32);
  auto offs = row_offsets(xf);
  int64_t xs = xf.strides().back();
  const float *px = xf.data<float>(), *pc = c.data<float>(), *ps = s.data<float>();
  float* po = out.data<float>();
  int64_t rows = B * H * S;
  if (D > 0)
    parallel_for(rows, std::max<int64_t>(1, 8192 / D), [&](int64_t b0, int64_t e0) {
      std::vector<float> buf(D);
      for (int64_t r = b0; r < e0; r++) {
        int64_t bi = r / (H * S), si = r % S;
        const float* p = px + offs[r];
        if (xs != 1) {
          for (int64_t i = 0; i < D; i++) buf[i] = p[i * xs];
          p = buf.data();
        }
        const float* cr = pc + ((Bc == 1 ? 0 : bi) * S + si) * R;
        const float* sr = ps + ((Bc == 1 ? 0 : bi) * S + si) * R;
        float* o = po + r * D;
        if (!inter) {
          int64_t h = R / 2;
          for (int64_t i = 0; i < h; i++) o[i] = p[i] * cr[i] - p[i + h] * sr[i];
          for (int64_t i = h; i < R; i++) o[i] = p[i] * cr[i] + p[i - h] * sr[i];
        } else {
          for (int64_t j = 0; j < R; j += 2) {
            o[j] = p[j] * cr[j] - p[j + 1] * sr[j];
            o[j + 1] = p[j + 1] * cr[j + 1] + p[j] * sr[j + 1];
          }
        }
        for (int64_t i = R; i < D; i++) o[i] = p[i];
      }
    });
  return {finish(out, float_out(x.dtype()))};
}

namespace {

// What every block of one sdpa call reads: the f32 views, strides, sizes and the attention rules.
struct SdpaCx {
  int64_t B, Hq, S, D, Hkv, T, Dv, G;
  float scale, softcap;
  bool causal;
  int64_t window;
  const float *pq, *pk, *pv;
  float* po;
  Shape qst, kst, vst, mst;
  int64_t ldk, ldv;
  Tensor mask;  // f32 additive or bool keep-mask, broadcast to [B, Hq, S, T] through mst; undefined: none
  bool mask_bool = false;
  bool grouped;
  int64_t q_ld_grouped, chunk, nchunks;
};

// Scores → probabilities for one query row (query position p) over block keys [kbeg, kbeg + tr): softcap,
// the causal / window range, the mask, then a softmax over the allowed keys (zero elsewhere; an all-masked
// row stays zero).
void sdpa_row_softmax(const SdpaCx& c, float* row, int64_t tr, int64_t kbeg, int64_t b, int64_t h,
                      int64_t s) {
  const float ninf = -std::numeric_limits<float>::infinity();
  const int64_t p = c.T - c.S + s;
  if (c.softcap > 0.0f) {
    const float inv = 1.0f / c.softcap;
    for (int64_t j = 0; j < tr; j++) row[j] = c.softcap * std::tanh(row[j] * inv);
  }
  // allowed keys of this row: [lo, hi) in block coordinates
  int64_t hi = c.causal ? std::min<int64_t>(tr, p + 1 - kbeg) : tr;
  int64_t lo = c.window > 0 ? std::max<int64_t>(0, p - c.window + 1 - kbeg) : 0;
  if (hi < 0) hi = 0;
  if (lo > hi) lo = hi;
  for (int64_t j = 0; j < lo; j++) row[j] = ninf;
  for (int64_t j = hi; j < tr; j++) row[j] = ninf;
  if (c.mask.defined()) {
    int64_t moff = b * c.mst[0] + h * c.mst[1] + s * c.mst[2];
    int64_t ms = c.mst[3];
    if (c.mask_bool) {
      const uint8_t* m = c.mask.data<uint8_t>() + moff + kbeg * ms;
      for (int64_t j = lo; j < hi; j++)
        if (!m[j * ms]) row[j] = ninf;
    } else {
      const float* m = c.mask.data<float>() + moff + kbeg * ms;
      if (ms == 1)
        for (int64_t j = lo; j < hi; j++) row[j] += m[j];
      else
        for (int64_t j = lo; j < hi; j++) row[j] += m[j * ms];
    }
  }
  float mx = ninf;
  for (int64_t j = lo; j < hi; j++) mx = row[j] > mx ? row[j] : mx;
  if (!(mx > ninf)) {  // nothing allowed (or NaN): a zero row
    std::fill(row, row + tr, 0.0f);
    return;
  }
  for (int64_t j = 0; j < lo; j++) row[j] = 0.0f;
  for (int64_t j = hi; j < tr; j++) row[j] = 0.0f;
  double sum = exp_sub_sum(row + lo, mx, row + lo, hi - lo);
  const float inv = static_cast<float>(1.0 / sum);
  for (int64_t j = lo; j < hi; j++) row[j] *= inv;
}

// Block t: grouped (the G query heads × S queries of one kv head) or one head's chunk of query rows;
// scores by sgemm/sgemv over the keys the block can see, softmax per row, then the value product.
void sdpa_block(const SdpaCx& c, int64_t t, std::vector<float>& sc) {
  int64_t b, h0, s0, rows, q_ld;  // h0: first query head; rows of the block
  if (c.grouped) {
    b = t / c.Hkv;
    h0 = (t % c.Hkv) * c.G;
    s0 = 0;
    rows = c.G * c.S;
    q_ld = c.q_ld_grouped;
  } else {
    b = t / (c.Hq * c.nchunks);
    h0 = (t / c.nchunks) % c.Hq;
    s0 = (t % c.nchunks) * c.chunk;
    rows = std::min(c.chunk, c.S - s0);
    q_ld = c.qst[2];
  }
  const int64_t hk = h0 / c.G;
  const int64_t s_first = s0, s_last = c.grouped ? c.S - 1 : s0 + rows - 1;
  const int64_t p_first = c.T - c.S + s_first, p_last = c.T - c.S + s_last;
  int64_t kend = c.causal ? std::min(c.T, p_last + 1) : c.T;
  int64_t kbeg = c.window > 0 ? std::max<int64_t>(0, p_first - c.window + 1) : 0;
  if (kend <= kbeg) return;  // every key disallowed: rows stay zero
  const int64_t tr = kend - kbeg;
  sc.resize(static_cast<size_t>(rows * tr));
  const float* qp = c.pq + b * c.qst[0] + h0 * c.qst[1] + s0 * c.qst[2];
  const float* kp = c.pk + b * c.kst[0] + hk * c.kst[1] + kbeg * c.kst[2];
  const float* vp = c.pv + b * c.vst[0] + hk * c.vst[1] + kbeg * c.vst[2];
  int64_t q_ld_eff = rows == 1 ? std::max<int64_t>(1, c.D) : q_ld;
  if (c.D == 0) {
    std::fill(sc.begin(), sc.end(), 0.0f);
  } else if (rows == 1) {
    cblas_sgemv(CblasRowMajor, CblasNoTrans, tr, c.D, c.scale, kp, c.ldk, qp, 1, 0.0f, sc.data(), 1);
  } else {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, tr, c.D, c.scale, qp, q_ld_eff, kp, c.ldk,
                0.0f, sc.data(), tr);
  }
  for (int64_t r = 0; r < rows; r++)
    sdpa_row_softmax(c, sc.data() + r * tr, tr, kbeg, b, c.grouped ? h0 + r / c.S : h0,
                     c.grouped ? r % c.S : s0 + r);
  // out rows: contiguous [B, Hq, S, Dv] → row r of the block at stride Dv (grouped or per head)
  float* op = c.po + ((b * c.Hq + h0) * c.S + s0) * c.Dv;
  if (c.Dv == 0) return;
  if (rows == 1)
    cblas_sgemv(CblasRowMajor, CblasTrans, tr, c.Dv, 1.0f, vp, c.ldv, sc.data(), 1, 0.0f, op, 1);
  else
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, c.Dv, tr, 1.0f, sc.data(), tr, vp, c.ldv,
                0.0f, op, c.Dv);
}

}  // namespace

Tensors sdpa(const Tensors& in, const Attrs& a) {
  check_arity(in, 3, 4, "sdpa");
  const Tensor &q0 = in[0], &k0 = in[1], &v0 = in[2];
  Tensor mask0 = in.size() > 3 ? in[3] : Tensor();
  if (q0.dim() != 4 || k0.dim() != 4 || v0.dim() != 4)
    HFX_THROW("kernels", "expected sdpa q, k, v of 4 dims [B, H, S, D], got {}, {}, {}",
              shape_to_string(q0.shape()), shape_to_string(k0.shape()), shape_to_string(v0.shape()));
  SdpaCx c;
  c.B = q0.shape()[0], c.Hq = q0.shape()[1], c.S = q0.shape()[2], c.D = q0.shape()[3];
  c.Hkv = k0.shape()[1], c.T = k0.shape()[2], c.Dv = v0.shape()[3];
  if (k0.shape()[0] != c.B || v0.shape()[0] != c.B || k0.shape()[3] != c.D || v0.shape()[1] != c.Hkv ||
      v0.shape()[2] != c.T || c.Hkv == 0 || c.Hq % c.Hkv != 0)
    HFX_THROW("kernels",
              "expected sdpa k[B, Hkv, T, D], v[B, Hkv, T, Dv] with Hq % Hkv == 0 for q {}, got k {}, v {}",
              shape_to_string(q0.shape()), shape_to_string(k0.shape()), shape_to_string(v0.shape()));
  c.G = c.Hq / c.Hkv;
  double scale_d = a.f("scale");
  if (scale_d == 0.0) scale_d = 1.0 / std::sqrt(static_cast<double>(std::max<int64_t>(1, c.D)));
  c.scale = static_cast<float>(scale_d);
  c.causal = a.b("causal");
  c.window = a.i("window");
  c.softcap = static_cast<float>(a.f("softcap"));
  const DType rt = float_out(q0.dtype());

  Tensor out = Tensor::zeros({c.B, c.Hq, c.S, c.Dv}, DType::F32);
  if (out.numel() == 0) return {finish(out, rt)};

  Tensor q = unit_inner_f32(q0), k = unit_inner_f32(k0), v = unit_inner_f32(v0);
  if (mask0.defined()) {
    c.mask_bool = mask0.dtype() == DType::Bool;
    c.mask = c.mask_bool ? mask0 : as_f32(mask0);
    c.mst = broadcast_strides(c.mask, {c.B, c.Hq, c.S, c.T}, "sdpa mask");
  }
  c.pq = q.data<float>(), c.pk = k.data<float>(), c.pv = v.data<float>(), c.po = out.data<float>();
  c.qst = q.strides(), c.kst = k.strides(), c.vst = v.strides();
  c.ldk = c.T == 1 ? std::max<int64_t>(1, c.D) : c.kst[2];
  c.ldv = c.T == 1 ? std::max<int64_t>(1, c.Dv) : c.vst[2];
  if (c.ldk < c.D || c.ldv < c.Dv) HFX_THROW("kernels", "expected sdpa key/value rows not to overlap");

  // Blocks: grouped (rows = the G heads × S queries of one kv head, uniform row stride) for small S,
  // else per head in chunks of up to 128 query rows.
  c.grouped = c.G * c.S <= 64 && (c.S == 1 || c.qst[1] == c.S * c.qst[2]) && c.G > 1;
  c.q_ld_grouped = c.S == 1 ? c.qst[1] : c.qst[2];
  c.chunk = 128;
  const int nt = num_threads();
  if (!c.grouped)
    while (c.chunk > 16 && c.B * c.Hq * ((c.S + c.chunk - 1) / c.chunk) < 2 * nt) c.chunk /= 2;
  c.nchunks = c.grouped ? 1 : (c.S + c.chunk - 1) / c.chunk;
  const int64_t ntasks = c.grouped ? c.B * c.Hkv : c.B * c.Hq * c.nchunks;
  if (ntasks >= nt && nt > 1) {
    BlasSingleThread single;
    parallel_for(ntasks, 1, [&](int64_t b0, int64_t e0) {
      std::vector<float> sc;
      for (int64_t t = b0; t < e0; t++) sdpa_block(c, t, sc);
    });
  } else {
    std::vector<float> sc;
    for (int64_t t = 0; t < ntasks; t++) sdpa_block(c, t, sc);
  }
  return {finish(out, rt)};
}

}  // namespace hfx::kernels
