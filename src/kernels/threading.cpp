// Kernel thread pool: a fixed set of workers woken per parallel_for; the caller runs a share too.
// One parallel_for owns the pool at a time; nested calls and calls that find the pool busy run inline,
// so kernels may call parallel_for freely. OpenBLAS runs single-threaded: linalg.cpp splits products over
// this pool (one pool, no OpenBLAS threads spinning beside ours on a small machine).
//
// OpenBLAS core fix: a DYNAMIC_ARCH OpenBLAS (Debian's 0.3.21) picks its kernels by CPU model number and
// falls back to the SSE3 "Prescott" kernels on models it does not know (e.g. Emerald Rapids, model
// 207), 3-5x slower than its AVX2/AVX-512 ones. At load, when the core is that fallback, the user set no
// OPENBLAS_CORETYPE and the CPU (and OS) support AVX-512 (SkylakeX kernels) or AVX2+FMA (Haswell), the
// dynamic core is re-chosen through OpenBLAS's own exported gotoblas_dynamic_quit/init with
// OPENBLAS_CORETYPE set — looked up with dlsym, so another BLAS build just skips this.
#include <cblas.h>
#include <dlfcn.h>
#include <sched.h>
#include <strings.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "kernels/detail.h"

namespace hfx::kernels {
namespace {

class Pool {
 public:
  explicit Pool(int n) { resize(n); }
  ~Pool() { stop(); }

  int size() const { return nthreads_; }

  void resize(int n) {
    std::lock_guard<std::mutex> own(owner_);
    stop();
    nthreads_ = std::max(1, n);
    quit_ = false;
    quit_flag_.store(false);
    for (int i = 1; i < nthreads_; i++) workers_.emplace_back([this] { work(); });
  }

  void run(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
    int64_t chunks = std::min<int64_t>(nthreads_, std::max<int64_t>(1, n / std::max<int64_t>(1, grain)));
    if (chunks <= 1 || in_worker_) {
      fn(0, n);
      return;
    }
    std::unique_lock<std::mutex> own(owner_, std::try_to_lock);
    if (!own.owns_lock()) {
      fn(0, n);
      return;
    }
    {
      std::lock_guard<std::mutex> g(m_);
      fn_ = &fn;
      n_ = n;
      chunks_ = chunks;
      next_.store(0);
      done_.store(0);
      error_ = nullptr;
      gen_.fetch_add(1, std::memory_order_release);
    }
    cv_.notify_all();
    in_worker_ = true;
    take_chunks();
    in_worker_ = false;
    spin_until([&] { return done_.load(std::memory_order_acquire) == chunks_; });
    std::unique_lock<std::mutex> g(m_);
    done_cv_.wait(g, [&] { return done_.load() == chunks_; });
    fn_ = nullptr;
    if (error_) std::rethrow_exception(error_);
  }

 private:
  // Decode runs hundreds of small parallel_for calls per token: a worker that went to sleep costs a
  // futex wake and a context switch per call (measured: ~13 % of an int4 decode step in the kernel's
  // profile). So the caller and the workers first poll for a short while (HFX_SPIN_US µs, default 50;
  // 0 = sleep at once) and only then block on the condition variable.
  template <typename Ready>
  static bool spin_until(Ready&& ready) {
    static const std::chrono::microseconds budget([] {
      const char* env = std::getenv("HFX_SPIN_US");
      return env ? std::max(0, std::atoi(env)) : 50;
    }());
    if (budget.count() == 0) return ready();
    const auto until = std::chrono::steady_clock::now() + budget;
    for (int i = 0;; i++) {
      if (ready()) return true;
      __builtin_ia32_pause();
      if ((i & 63) == 63 && std::chrono::steady_clock::now() > until) return ready();
    }
  }

  void take_chunks() {
    for (;;) {
      int64_t c = next_.fetch_add(1);
      if (c >= chunks_) return;
      int64_t b = n_ * c / chunks_, e = n_ * (c + 1) / chunks_;
      try {
        (*fn_)(b, e);
      } catch (...) {
        std::lock_guard<std::mutex> g(m_);
        if (!error_) error_ = std::current_exception();
      }
      if (done_.fetch_add(1, std::memory_order_acq_rel) + 1 == chunks_) {
        std::lock_guard<std::mutex> g(m_);  // the waiter checks done_ under m_: no lost wake-up
        done_cv_.notify_all();
      }
    }
  }

  void work() {
    in_worker_ = true;
    uint64_t seen = 0;
    for (;;) {
      spin_until([&] { return gen_.load(std::memory_order_acquire) != seen || quit_flag_.load(); });
      {
        std::unique_lock<std::mutex> g(m_);
        cv_.wait(g, [&] { return quit_ || gen_.load() != seen; });
        if (quit_) return;
        seen = gen_.load();
      }
      take_chunks();
    }
  }

  void stop() {
    {
      std::lock_guard<std::mutex> g(m_);
      quit_ = true;
      quit_flag_.store(true);
    }
    cv_.notify_all();
    for (auto& t : workers_) t.join();
    workers_.clear();
  }

  int nthreads_ = 1;
  std::vector<std::thread> workers_;
  std::mutex owner_;  // held by the thread running a parallel_for
  std::mutex m_;
  std::condition_variable cv_, done_cv_;
  const std::function<void(int64_t, int64_t)>* fn_ = nullptr;
  int64_t n_ = 0, chunks_ = 0;
  std::atomic<int64_t> next_{0}, done_{0};
  std::atomic<uint64_t> gen_{0};
  bool quit_ = false;
  std::atomic<bool> quit_flag_{false};  // quit_ for the lock-free poll
  std::exception_ptr error_;
  static thread_local bool in_worker_;
};
thread_local bool Pool::in_worker_ = false;

void fix_openblas_core() {
  if (std::getenv("OPENBLAS_CORETYPE") != nullptr) return;
  const char* core = openblas_get_corename();
  if (core == nullptr || strcasecmp(core, "prescott") != 0) return;
  __builtin_cpu_init();
  const char* want = nullptr;
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512cd"))
    want = "SkylakeX";
  else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    want = "Haswell";
  if (want == nullptr) return;
  auto quit = reinterpret_cast<void (*)()>(dlsym(RTLD_DEFAULT, "gotoblas_dynamic_quit"));
  auto init = reinterpret_cast<void (*)()>(dlsym(RTLD_DEFAULT, "gotoblas_dynamic_init"));
  if (quit == nullptr || init == nullptr) return;
  setenv("OPENBLAS_CORETYPE", want, 0);
  quit();
  init();
  unsetenv("OPENBLAS_CORETYPE");
}

struct OpenBlasCoreFix {
  OpenBlasCoreFix() { fix_openblas_core(); }
} openblas_core_fix;

// HFX_NUM_THREADS when set (`hfx sweep` sets it to a task's resources.cpus, so a task computes with the same
// thread count, hence the same summation order and numerics, on every engine and machine); else the CPUs
// this process may run on (sched_getaffinity), so a process pinned by taskset or Slurm gets one thread per
// CPU it holds (hardware_concurrency counts every online CPU).
int default_threads() {
  if (const char* env = std::getenv("HFX_NUM_THREADS")) {
    int n = std::atoi(env);
    if (n > 0) return n;
  }
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
  unsigned h = std::thread::hardware_concurrency();
  return h == 0 ? 1 : static_cast<int>(h);
}

Pool& pool() {
  static Pool p(([] {
    openblas_set_num_threads(1);  // see set_num_threads
    return default_threads();
  })());
  return p;
}

std::mutex blas_mu;
int blas_single_depth = 0;
int blas_saved_threads = 1;

}  // namespace

void set_num_threads(int n) {
  n = std::max(1, n);
  pool().resize(n);
  // BLAS calls are split over this pool (linalg.cpp), each running OpenBLAS single-threaded.
  openblas_set_num_threads(1);
}

int num_threads() { return pool().size(); }

namespace detail {

void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  pool().run(n, grain, fn);
}

BlasSingleThread::BlasSingleThread() {
  std::lock_guard<std::mutex> g(blas_mu);
  if (blas_single_depth++ == 0) {
    blas_saved_threads = openblas_get_num_threads();
    if (blas_saved_threads != 1) openblas_set_num_threads(1);
  }
}

BlasSingleThread::~BlasSingleThread() {
  std::lock_guard<std::mutex> g(blas_mu);
  if (--blas_single_depth == 0 && blas_saved_threads != 1) openblas_set_num_threads(blas_saved_threads);
}

int64_t const_sym(const Attrs& a, const std::string& name, const char* op) {
  Sym s = a.sym(name);
  auto v = s.maybe_value();
  if (!v)
    HFX_THROW("kernels", "expected a constant '{}' for {} in eager execution, got {}", name, op, s.str());
  return *v;
}

std::vector<int64_t> const_syms(const Attrs& a, const std::string& name, const char* op) {
  std::vector<int64_t> r;
  for (const Sym& s : a.syms(name)) {
    auto v = s.maybe_value();
    if (!v)
      HFX_THROW("kernels", "expected constant '{}' for {} in eager execution, got {}", name, op, s.str());
    r.push_back(*v);
  }
  return r;
}

void check_arity(const Tensors& in, size_t lo, size_t hi, const char* op) {
  if (in.size() < lo || in.size() > hi)
    HFX_THROW("kernels", "expected {} to {} inputs for {}, got {}", lo, hi, op, in.size());
  for (size_t i = 0; i < lo; i++)
    if (!in[i].defined())
      HFX_THROW("kernels", "expected input {} of {} to be present, got an absent tensor", i, op);
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  size_t n = std::max(a.size(), b.size());
  Shape r(n);
  for (size_t i = 0; i < n; i++) {
    int64_t x = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t y = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (x != y && x != 1 && y != 1)
      HFX_THROW("kernels", "expected broadcastable shapes for {}, got {} and {}", op, shape_to_string(a),
                shape_to_string(b));
    r[i] = x == 1 ? y : x;
  }
  return r;
}

Shape broadcast_strides(const Tensor& t, const Shape& shape, const char* op) {
  size_t n = shape.size(), m = static_cast<size_t>(t.dim());
  if (m > n) HFX_THROW("kernels", "expected at most {} dims to broadcast for {}, got {}", n, op, m);
  Shape st(n, 0);
  for (size_t i = 0; i < m; i++) {
    int64_t have = t.shape()[i];
    int64_t want = shape[n - m + i];
    if (have == want) {
      st[n - m + i] = have == 1 ? 0 : t.strides()[i];
    } else if (have == 1) {
      st[n - m + i] = 0;
    } else {
      HFX_THROW("kernels", "expected a shape broadcastable to {} for {}, got {}", shape_to_string(shape), op,
                shape_to_string(t.shape()));
    }
  }
  return st;
}

double exp_sub_sum(const float* x, float m, float* y, int64_t n) {
  double total = 0;
  for (int64_t b = 0; b < n; b += 1024) {
    int64_t e = std::min<int64_t>(n, b + 1024);
    float s = 0;
    for (int64_t i = b; i < e; i++) {
      float v = fast_exp(x[i] - m);
      y[i] = v;
      s += v;
    }
    total += s;
  }
  return total;
}

}  // namespace detail
}  // namespace hfx::kernels
