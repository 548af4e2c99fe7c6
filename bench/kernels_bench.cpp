// Kernel throughput: kernels::mm and kernels::linear beside raw cblas_sgemm on the same LLM shapes in
// the same run, and kernels::sdpa beside a plain per-head baseline (sgemm scores, mask, softmax, sgemm).
// Every benchmark reports a "gflops" counter (rate over real time); compare kernel/raw pairs by shape.
//
//   ./build/bench/kernels_bench --benchmark_counters_tabular=true
//   ./build/bench/kernels_bench --benchmark_filter='mm|linear|sgemm'
//
// FLOPs: matmul 2·M·N·K. sdpa counts the dense product 4·B·Hq·S·T·D for kernel and baseline alike
// (the causal kernel skips the masked half of the prefill work, so its figure is "dense-equivalent").
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "hfx/core/tensor.h"
#include "hfx/ir/attrs.h"
#include "hfx/quant/quantize.h"
#include "kernels/kernels.h"
#include "kernels/linear_q.h"

namespace {
using namespace hfx;

Tensor randn(const Shape& s, uint32_t seed) {
  std::mt19937 g(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(shape_numel(s)));
  for (auto& x : v) x = d(g);
  return Tensor::from_floats(s, v);
}

/// The raw OpenBLAS baselines run with OpenBLAS's own threads (as many as the kernels use); the kernels
/// run OpenBLAS single-threaded and split products over their own pool (src/kernels/threading.cpp).
struct BlasThreads {
  BlasThreads() { openblas_set_num_threads(kernels::num_threads()); }
  ~BlasThreads() { openblas_set_num_threads(1); }
};

void set_gflops(benchmark::State& st, double flops_per_iter) {
  st.counters["gflops"] = benchmark::Counter(flops_per_iter * static_cast<double>(st.iterations()) / 1e9,
                                             benchmark::Counter::kIsRate);
}

// ---- matmul: args M, K, N ----

void BM_kernel_mm(benchmark::State& st) {
  int64_t M = st.range(0), K = st.range(1), N = st.range(2);
  Tensor a = randn({M, K}, 1), b = randn({K, N}, 2);
  for (auto _ : st) benchmark::DoNotOptimize(kernels::mm({a, b}, {}));
  set_gflops(st, 2.0 * M * N * K);
}

void BM_raw_sgemm_nn(benchmark::State& st) {
  int64_t M = st.range(0), K = st.range(1), N = st.range(2);
  Tensor a = randn({M, K}, 1), b = randn({K, N}, 2), c = Tensor::zeros({M, N});
  BlasThreads bt;
  for (auto _ : st) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.0f, a.data<float>(), K, b.data<float>(),
                N, 0.0f, c.data<float>(), N);
    benchmark::ClobberMemory();
  }
  set_gflops(st, 2.0 * M * N * K);
}

void BM_kernel_linear(benchmark::State& st) {
  int64_t M = st.range(0), K = st.range(1), N = st.range(2);
  Tensor x = randn({M, K}, 1), w = randn({N, K}, 2);
  for (auto _ : st) benchmark::DoNotOptimize(kernels::linear({x, w}, {}));
  set_gflops(st, 2.0 * M * N * K);
}

void BM_raw_sgemm_nt(benchmark::State& st) {
  int64_t M = st.range(0), K = st.range(1), N = st.range(2);
  Tensor x = randn({M, K}, 1), w = randn({N, K}, 2), c = Tensor::zeros({M, N});
  BlasThreads bt;
  for (auto _ : st) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1.0f, x.data<float>(), K, w.data<float>(),
                K, 0.0f, c.data<float>(), N);
    benchmark::ClobberMemory();
  }
  set_gflops(st, 2.0 * M * N * K);
}

void BM_kernel_linear_bf16(benchmark::State& st) {
  int64_t M = st.range(0), K = st.range(1), N = st.range(2);
  Tensor x = randn({M, K}, 1).to(DType::BF16), w = randn({N, K}, 2).to(DType::BF16);
  for (auto _ : st) benchmark::DoNotOptimize(kernels::linear({x, w}, {}));
  set_gflops(st, 2.0 * M * N * K);
}

void mm_shapes(benchmark::internal::Benchmark* b) {
  b->Args({1, 2048, 2048})
      ->Args({128, 2048, 2048})
      ->Args({512, 2048, 8192})
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond);
}
BENCHMARK(BM_kernel_mm)->Apply(mm_shapes);
BENCHMARK(BM_raw_sgemm_nn)->Apply(mm_shapes);
BENCHMARK(BM_kernel_linear)->Apply(mm_shapes);
BENCHMARK(BM_raw_sgemm_nt)->Apply(mm_shapes);
BENCHMARK(BM_kernel_linear_bf16)->Apply(mm_shapes);

// ---- hfx.linear_q (decode rows): args M, K, N, bits, act_bits; group 32, asymmetric; beside
// BM_kernel_linear ----

void BM_kernel_linear_q(benchmark::State& st) {
  int64_t M = st.range(0), K = st.range(1), N = st.range(2), bits = st.range(3), act = st.range(4);
  Tensor x = randn({M, K}, 1);
  quant::QuantizedWeight q =
      quant::quantize_weight(randn({N, K}, 2), quant::parse_options(bits == 4 ? "int4" : "int8", 32, false));
  Attrs a;
  a.set("bits", bits);
  a.set("group_size", int64_t{32});
  a.set("act_bits", act);  // 8: activations rounded to int8 (VNNI integer loop where the CPU has it)
  for (auto _ : st) benchmark::DoNotOptimize(kernels::linear_q({x, q.qweight, q.scales, q.zero_points}, a));
  set_gflops(st, 2.0 * M * N * K);
}
void q_shapes(benchmark::internal::Benchmark* b) {
  for (int64_t act : {0, 8})
    for (int64_t bits : {4, 8})
      b->Args({1, 768, 2048, bits, act})->Args({1, 2048, 8192, bits, act})->Args({4, 2048, 8192, bits, act});
  b->UseRealTime()->Unit(benchmark::kMicrosecond);
}
void f32_decode_shapes(benchmark::internal::Benchmark* b) {
  b->Args({1, 768, 2048})
      ->Args({1, 2048, 8192})
      ->Args({4, 2048, 8192})
      ->UseRealTime()
      ->Unit(benchmark::kMicrosecond);
}
BENCHMARK(BM_kernel_linear_q)->Apply(q_shapes);
BENCHMARK(BM_kernel_linear)->Apply(f32_decode_shapes);

// ---- sdpa: args S, T; B = 1, Hq = 32, Hkv = 8, D = 64, causal ----

constexpr int64_t kHq = 32, kHkv = 8, kD = 64;

void BM_kernel_sdpa(benchmark::State& st) {
  int64_t S = st.range(0), T = st.range(1);
  Tensor q = randn({1, kHq, S, kD}, 1), k = randn({1, kHkv, T, kD}, 2), v = randn({1, kHkv, T, kD}, 3);
  Attrs a{{"scale", 0.125}, {"causal", true}, {"window", int64_t{0}}, {"softcap", 0.0}};
  for (auto _ : st) benchmark::DoNotOptimize(kernels::sdpa({q, k, v}, a));
  set_gflops(st, 4.0 * kHq * S * T * kD);
}

/// Baseline: for each query head, sgemm scores [S, T], causal mask, softmax (std::exp), sgemm with V.
void BM_baseline_sdpa(benchmark::State& st) {
  int64_t S = st.range(0), T = st.range(1);
  Tensor q = randn({1, kHq, S, kD}, 1), k = randn({1, kHkv, T, kD}, 2), v = randn({1, kHkv, T, kD}, 3);
  Tensor o = Tensor::zeros({1, kHq, S, kD});
  std::vector<float> sc(static_cast<size_t>(S * T));
  const int64_t G = kHq / kHkv;
  BlasThreads bt;
  for (auto _ : st) {
    for (int64_t h = 0; h < kHq; h++) {
      const float* qp = q.data<float>() + h * S * kD;
      const float* kp = k.data<float>() + (h / G) * T * kD;
      const float* vp = v.data<float>() + (h / G) * T * kD;
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, S, T, kD, 0.125f, qp, kD, kp, kD, 0.0f, sc.data(),
                  T);
      for (int64_t i = 0; i < S; i++) {
        float* row = sc.data() + i * T;
        int64_t p = T - S + i;
        float mx = -std::numeric_limits<float>::infinity();
        for (int64_t j = 0; j < T; j++) {
          if (j > p) row[j] = -std::numeric_limits<float>::infinity();
          mx = std::max(mx, row[j]);
        }
        float sum = 0;
        for (int64_t j = 0; j < T; j++) sum += (row[j] = std::exp(row[j] - mx));
        for (int64_t j = 0; j < T; j++) row[j] /= sum;
      }
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, S, kD, T, 1.0f, sc.data(), T, vp, kD, 0.0f,
                  o.data<float>() + h * S * kD, kD);
    }
    benchmark::ClobberMemory();
  }
  set_gflops(st, 4.0 * kHq * S * T * kD);
}

void sdpa_shapes(benchmark::internal::Benchmark* b) {
  b->Args({512, 512})->Args({1, 2048})->Args({1, 8192})->UseRealTime()->Unit(benchmark::kMicrosecond);
}
BENCHMARK(BM_kernel_sdpa)->Apply(sdpa_shapes);
BENCHMARK(BM_baseline_sdpa)->Apply(sdpa_shapes);

}  // namespace

BENCHMARK_MAIN();
