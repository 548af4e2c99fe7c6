// Matrix products through OpenBLAS sgemm/sgemv (f32 compute; f16/bf16 operands are converted first).
//
// Operands are passed with their own strides whenever one of the two matrix dims has unit stride
// (a transposed view becomes a Trans flag, a row-sliced view a larger leading dimension), so
// `linear`'s weight[N, K] is used transposed in place. Batched products fold batch dims into M when
// the right operand is shared (x[..., M, K] @ w[K, N]) and otherwise loop sgemm per batch. Large products
// are split over the kernel pool by column blocks (gemm), OpenBLAS running single-threaded in each.
#include <cblas.h>

#include "kernels/detail.h"

namespace hfx::kernels {
using namespace detail;

namespace {

/// A [rows, cols] f32 matrix view usable by BLAS: data + (trans, ld).
struct Mat {
  const float* p = nullptr;
  bool trans = false;
  int64_t ld = 1;
  Tensor keep;  // owns a converted copy when one was needed
};

/// Describes the 2-D strided f32 view (rows, cols, rs, cs) for BLAS, copying only when neither
/// dim has unit stride.
Mat blas_mat(const Tensor& t2d) {
  Mat m;
  int64_t r = t2d.shape()[0], c = t2d.shape()[1];
  int64_t rs = t2d.strides()[0], cs = t2d.strides()[1];
  if ((cs == 1 || c == 1) && (rs >= std::max<int64_t>(1, c) || r == 1)) {
    m.p = t2d.data<float>();
    m.ld = r == 1 ? std::max<int64_t>(1, c) : rs;
    return m;
  }
  if ((rs == 1 || r == 1) && (cs >= std::max<int64_t>(1, r) || c == 1)) {
    m.p = t2d.data<float>();
    m.trans = true;
    m.ld = c == 1 ? std::max<int64_t>(1, r) : cs;
    return m;
  }
  m.keep = t2d.contiguous();
  m.p = m.keep.data<float>();
  m.ld = std::max<int64_t>(1, c);
  return m;
}

/// One BLAS call: C[M, N] (row stride ldc) = A[M, K] @ B[K, N] + beta * C (OpenBLAS runs single-threaded;
/// see gemm below for the split over the kernel pool).
void gemm1(const Mat& A, const Mat& B, float* C, int64_t M, int64_t N, int64_t K, int64_t ldc, float beta) {
  if (M == 1) {
    // y[N] = B^T-ish @ a: B is [K, N]; as gemv over B with the right transposition.
    int64_t inca = A.trans ? A.ld : 1;
    if (!B.trans)
      cblas_sgemv(CblasRowMajor, CblasTrans, K, N, 1.0f, B.p, B.ld, A.p, inca, beta, C, 1);
    else  // B^T stored as [N, K] row-major
      cblas_sgemv(CblasRowMajor, CblasNoTrans, N, K, 1.0f, B.p, B.ld, A.p, inca, beta, C, 1);
    return;
  }
  if (N == 1) {
    int64_t incb = B.trans ? 1 : B.ld;
    if (!A.trans)
      cblas_sgemv(CblasRowMajor, CblasNoTrans, M, K, 1.0f, A.p, A.ld, B.p, incb, beta, C, ldc);
    else
      cblas_sgemv(CblasRowMajor, CblasTrans, K, M, 1.0f, A.p, A.ld, B.p, incb, beta, C, ldc);
    return;
  }
  cblas_sgemm(CblasRowMajor, A.trans ? CblasTrans : CblasNoTrans, B.trans ? CblasTrans : CblasNoTrans, M, N,
              K, 1.0f, A.p, A.ld, B.p, B.ld, beta, C, ldc);
}

/// C[M, N] (row stride ldc) = A[M, K] @ B[K, N] + beta * C. Products big enough to pay for it are split
/// over the kernel pool by column blocks of C (rows when N == 1), each block one single-threaded BLAS
/// call: one thread pool (no OpenBLAS threads spinning beside ours), and the blocks of a gemv
/// (decode: M = 1) stream disjoint rows of the weight.
void gemm(const Mat& A, const Mat& B, float* C, int64_t M, int64_t N, int64_t K, int64_t ldc, float beta) {
  if (M == 0 || N == 0) return;
  if (K == 0) {
    if (beta == 0.0f)
      for (int64_t i = 0; i < M; i++) std::fill(C + i * ldc, C + i * ldc + N, 0.0f);
    return;
  }
  const int nt = num_threads();
  const double flops = 2.0 * static_cast<double>(M) * N * K;
  if (nt <= 1 || flops < 2.0e5) {
    BlasSingleThread single;
    gemm1(A, B, C, M, N, K, ldc, beta);
    return;
  }
  BlasSingleThread single;
  if (N == 1) {
    // split rows of A (and C)
    const int64_t blocks = std::min<int64_t>(nt, (M + 63) / 64);
    parallel_for(blocks, 1, [&](int64_t b0, int64_t b1) {
      for (int64_t b = b0; b < b1; b++) {
        int64_t r0 = M * b / blocks, r1 = M * (b + 1) / blocks;
        if (r1 <= r0) continue;
        Mat a = A;
        a.p = A.trans ? A.p + r0 : A.p + r0 * A.ld;
        gemm1(a, B, C + r0 * ldc, r1 - r0, 1, K, ldc, beta);
      }
    });
    return;
  }
  // split columns of B and C in multiples of 16
  const int64_t unit = 16;
  const int64_t units = (N + unit - 1) / unit;
  const int64_t blocks = std::min<int64_t>(nt, units);
  parallel_for(blocks, 1, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; b++) {
      int64_t c0 = std::min(N, units * b / blocks * unit), c1 = std::min(N, units * (b + 1) / blocks * unit);
      if (c1 <= c0) continue;
      Mat bb = B;
      bb.p = B.trans ? B.p + c0 * B.ld : B.p + c0;
      gemm1(A, bb, C + c0, M, c1 - c0, K, ldc, beta);
    }
  });
}

/// Integer product fallback (int64 accumulate), torch allows integer mm on CPU.
Tensor int_mm(const Tensor& a, const Tensor& b, DType rt) {
  int64_t M = a.shape()[0], K = a.shape()[1], N = b.shape()[1];
  Tensor A = a.to(DType::I64), B = b.to(DType::I64), C = Tensor::zeros({M, N}, DType::I64);
  const int64_t *pa = A.data<int64_t>(), *pb = B.data<int64_t>();
  int64_t* pc = C.data<int64_t>();
  for (int64_t i = 0; i < M; i++)
    for (int64_t k = 0; k < K; k++)
      for (int64_t j = 0; j < N; j++) pc[i * N + j] += pa[i * K + k] * pb[k * N + j];
  return finish(C, rt);
}

void check_float(DType a, DType b, const char* op) {
  if (dtype_is_float(a) != dtype_is_float(b))
    HFX_THROW("kernels", "expected {} operands of the same kind, got {} and {}", op, dtype_name(a),
              dtype_name(b));
}

Tensor mm2(const Tensor& a, const Tensor& b, const char* op) {
  if (a.dim() != 2 || b.dim() != 2 || a.shape()[1] != b.shape()[0])
    HFX_THROW("kernels", "expected {} operands [M, K] and [K, N], got {} and {}", op,
              shape_to_string(a.shape()), shape_to_string(b.shape()));
  DType rt = promote_types(a.dtype(), b.dtype());
  if (!dtype_is_float(rt)) return int_mm(a, b, rt);
  check_float(a.dtype(), b.dtype(), op);
  int64_t M = a.shape()[0], K = a.shape()[1], N = b.shape()[1];
  Tensor af = as_f32(a), bf = as_f32(b);
  Tensor c = Tensor::empty({M, N}, DType::F32);
  gemm(blas_mat(af), blas_mat(bf), c.data<float>(), M, N, K, N, 0.0f);
  return finish(c, rt);
}

// The integer fallback: one int_mm per batch entry.
Tensor batched_int(const Tensor& a, const Tensor& b, const Shape& batch, int64_t M, int64_t K, int64_t N,
                   DType rt) {
  Shape oshape = batch;
  oshape.push_back(M);
  oshape.push_back(N);
  Tensor out = Tensor::empty(oshape, rt);
  int64_t nb = shape_numel(batch);
  Tensor ae = a.expand([&] {
    Shape s = batch;
    s.push_back(M);
    s.push_back(K);
    return s;
  }());
  Tensor be = b.expand([&] {
    Shape s = batch;
    s.push_back(K);
    s.push_back(N);
    return s;
  }());
  Tensor a3 = ae.reshape({nb, M, K}), b3 = be.reshape({nb, K, N});
  for (int64_t i = 0; i < nb; i++) {
    Tensor r = int_mm(a3.select(0, i), b3.select(0, i), rt);
    std::memcpy(static_cast<char*>(out.raw()) + i * r.nbytes(), r.raw(), r.nbytes());
  }
  return out;
}

// b shared across the batch (stride 0 everywhere) and a's batch dims folding into M: one gemm of
// [batch·M, K] × [K, N] into c. False when the layout does not allow it.
bool folded_gemm(const Tensor& ae, const Tensor& be, const Shape& batch, int64_t M, int64_t K, int64_t N,
                 Tensor& c) {
  const int64_t nb = shape_numel(batch), nd = static_cast<int64_t>(batch.size());
  bool b_shared = true;
  for (int64_t d = 0; d < nd; d++)
    if (be.strides()[d] != 0 && batch[d] != 1) b_shared = false;
  if (!b_shared || nb <= 1) return false;
  bool a_folds = true;  // a's rows [batch..., M] evenly strided by its row stride, unit col stride
  int64_t rs = ae.strides()[nd];
  int64_t expect = rs * M;
  for (int64_t d = nd - 1; d >= 0; d--) {
    if (batch[d] != 1 && ae.strides()[d] != expect) a_folds = false;
    expect *= batch[d];
  }
  if (!(a_folds && (ae.strides()[nd + 1] == 1 || K == 1) && (rs >= K || M * nb == 1))) return false;
  Tensor a2(ae.storage(), DType::F32, {nb * M, K}, {rs, 1}, ae.byte_offset());
  Tensor b2 = be;
  for (int64_t d = 0; d < nd; d++) b2 = b2.select(0, 0);
  gemm(blas_mat(a2), blas_mat(b2), c.data<float>(), nb * M, N, K, N, 0.0f);
  return true;
}

/// Batched product over a common (already broadcast) batch shape: a[batch..., M, K], b[batch..., K, N].
Tensor batched(const Tensor& a, const Tensor& b, const Shape& batch, const char* op) {
  DType rt = promote_types(a.dtype(), b.dtype());
  int64_t M = a.size(-2), K = a.size(-1), N = b.size(-1);
  Shape oshape = batch;
  oshape.push_back(M);
  oshape.push_back(N);
  if (!dtype_is_float(rt)) return batched_int(a, b, batch, M, K, N, rt);  // rare
  check_float(a.dtype(), b.dtype(), op);
  Tensor af = as_f32(a), bf = as_f32(b);
  Shape ash = batch, bsh = batch;
  ash.push_back(M), ash.push_back(K);
  bsh.push_back(K), bsh.push_back(N);
  Tensor ae = af.expand(ash), be = bf.expand(bsh);
  Tensor c = Tensor::empty(oshape, DType::F32);
  int64_t nb = shape_numel(batch);
  if (nb == 0 || M == 0 || N == 0) return finish(c, rt);
  const int64_t nd = static_cast<int64_t>(batch.size());
  if (folded_gemm(ae, be, batch, M, K, N, c)) return finish(c, rt);
  // per-batch sgemm; parallel over batches (BLAS single-threaded inside) when matrices are small
  auto one = [&](int64_t i) {
    int64_t rem = i, aoff = 0, boff = 0;
    for (int64_t d = nd - 1; d >= 0; d--) {
      int64_t ix = rem % batch[d];
      rem /= batch[d];
      aoff += ix * ae.strides()[d];
      boff += ix * be.strides()[d];
    }
    Tensor a2(ae.storage(), DType::F32, {M, K}, {ae.strides()[nd], ae.strides()[nd + 1]},
              ae.byte_offset() + aoff * 4);
    Tensor b2(be.storage(), DType::F32, {K, N}, {be.strides()[nd], be.strides()[nd + 1]},
              be.byte_offset() + boff * 4);
    gemm(blas_mat(a2), blas_mat(b2), c.data<float>() + i * M * N, M, N, K, N, 0.0f);
  };
  double flops = 2.0 * static_cast<double>(M) * N * K;
  if (nb > 1 && flops < 4.0e6 && num_threads() > 1) {
    BlasSingleThread single;
    parallel_for(nb, 1, [&](int64_t b0, int64_t e0) {
      for (int64_t i = b0; i < e0; i++) one(i);
    });
  } else {
    for (int64_t i = 0; i < nb; i++) one(i);
  }
  return finish(c, rt);
}

}  // namespace

Tensors mm(const Tensors& in, const Attrs&) {
  check_arity(in, 2, 2, "mm");
  return {mm2(in[0], in[1], "mm")};
}

Tensors bmm(const Tensors& in, const Attrs&) {
  check_arity(in, 2, 2, "bmm");
  const Tensor &a = in[0], &b = in[1];
  if (a.dim() != 3 || b.dim() != 3 || a.shape()[0] != b.shape()[0] || a.shape()[2] != b.shape()[1])
    HFX_THROW("kernels", "expected bmm operands [B, M, K] and [B, K, N], got {} and {}",
              shape_to_string(a.shape()), shape_to_string(b.shape()));
  return {batched(a, b, {a.shape()[0]}, "bmm")};
}

Tensors matmul(const Tensors& in, const Attrs&) {
  check_arity(in, 2, 2, "matmul");
  Tensor a = in[0], b = in[1];
  if (a.dim() == 0 || b.dim() == 0)
    HFX_THROW("kernels", "expected matmul operands of at least 1 dim, got a 0-d tensor");
  bool a1 = a.dim() == 1, b1 = b.dim() == 1;
  if (a1) a = a.unsqueeze(0);
  if (b1) b = b.unsqueeze(1);
  if (a.size(-1) != b.size(-2))
    HFX_THROW("kernels", "expected matmul inner dims to match, got {} and {}", shape_to_string(in[0].shape()),
              shape_to_string(in[1].shape()));
  Tensor out;
  if (a.dim() == 2 && b.dim() == 2) {
    out = mm2(a, b, "matmul");
  } else {
    Shape ab(a.shape().begin(), a.shape().end() - 2), bb(b.shape().begin(), b.shape().end() - 2);
    Shape batch = broadcast_shapes(ab, bb, "matmul");
    out = batched(a, b, batch, "matmul");
  }
  if (a1) out = out.squeeze(-2);
  if (b1) out = out.squeeze(-1);
  // the squeezes are views of a fresh contiguous buffer, hence contiguous
  return {out};
}

Tensors linear(const Tensors& in, const Attrs&) {
  check_arity(in, 2, 3, "linear");
  const Tensor &x = in[0], &w = in[1];
  Tensor bias = in.size() > 2 ? in[2] : Tensor();
  if (x.dim() < 1 || w.dim() != 2 || x.size(-1) != w.shape()[1])
    HFX_THROW("kernels", "expected linear x[..., K] and weight[N, K], got {} and {}",
              shape_to_string(x.shape()), shape_to_string(w.shape()));
  int64_t K = w.shape()[1], N = w.shape()[0];
  DType rt = promote_types(x.dtype(), w.dtype());
  if (bias.defined()) rt = promote_types(rt, bias.dtype());
  Shape oshape(x.shape().begin(), x.shape().end() - 1);
  oshape.push_back(N);
  int64_t M = x.numel() / std::max<int64_t>(1, K);
  if (K == 0) M = shape_numel(oshape) / std::max<int64_t>(1, N);
  if (!dtype_is_float(rt)) {
    Tensor r = int_mm(x.reshape({M, K}), w.transpose(0, 1), rt);
    if (bias.defined()) r = add({r, bias}, {})[0];
    return {r.reshape(oshape)};
  }
  check_float(x.dtype(), w.dtype(), "linear");
  Tensor c = Tensor::empty(oshape, DType::F32);
  if (M == 0 || N == 0) return {finish(c, rt)};
  float beta = 0.0f;
  if (bias.defined()) {
    if (bias.numel() != N)
      HFX_THROW("kernels", "expected linear bias of {} elements, got {}", N, shape_to_string(bias.shape()));
    Tensor bf = contig_f32(bias);
    float* pc = c.data<float>();
    for (int64_t i = 0; i < M; i++) std::memcpy(pc + i * N, bf.data<float>(), N * 4);
    beta = 1.0f;
  }
  // x as [M, K]: a view when its leading dims fold, else a contiguous copy.
  Tensor xf = as_f32(x);
  Tensor x2;
  if (xf.dim() == 1) {
    x2 = xf.unsqueeze(0);
  } else {
    // rows fold if every leading dim is evenly strided by the next
    bool folds = true;
    int64_t rs = xf.strides()[xf.dim() - 2];
    int64_t expect = rs * xf.shape()[xf.dim() - 2];
    for (int64_t d = xf.dim() - 3; d >= 0; d--) {
      if (xf.shape()[d] != 1 && xf.strides()[d] != expect) folds = false;
      expect *= xf.shape()[d];
    }
    if (folds && (xf.strides().back() == 1 || K == 1))
      x2 = Tensor(xf.storage(), DType::F32, {M, K}, {M == 1 ? K : rs, 1}, xf.byte_offset());
    else
      x2 = xf.contiguous().reshape({M, K});
  }
  Tensor wf = as_f32(w);
  gemm(blas_mat(x2), blas_mat(wf.transpose(0, 1)), c.data<float>(), M, N, K, N, beta);
  return {finish(c, rt)};
}

}  // namespace hfx::kernels
