// T5's bucket function, written once for T5 and MPNet (whose relative_position_bucket is the same code).
#include "relative_bucket.h"

#include <cmath>

namespace hfx::models {
namespace {

Var i64(Builder& b, int64_t v) { return b.constant(Tensor::scalar(static_cast<double>(v), DType::I64)); }
Var f32(Builder& b, double v) { return b.constant(Tensor::scalar(v, DType::F32)); }

}  // namespace

Var relative_bucket(Builder& b, Var rel, bool bidirectional, int64_t nb, int64_t max_distance) {
  Var buckets;
  if (bidirectional) {
    nb /= 2;
    buckets = F::where(F::gt(rel, i64(b, 0)), i64(b, nb), i64(b, 0));
    rel = F::abs(rel);
  } else {
    rel = F::neg(F::minimum(rel, i64(b, 0)));
  }
  const int64_t max_exact = nb / 2;
  Var small = F::lt(rel, i64(b, max_exact));
  // log(0) never reaches the result (where picks `rel` there); clamping keeps the cast finite.
  Var r = F::to(F::maximum(rel, i64(b, max_exact)), DType::F32);
  Var large = F::log(F::div(r, f32(b, static_cast<double>(max_exact))));
  large = F::div(large, f32(b, std::log(static_cast<double>(max_distance) / static_cast<double>(max_exact))));
  large = F::mul(large, f32(b, static_cast<double>(nb - max_exact)));
  large = F::add(F::to(large, DType::I64), i64(b, max_exact));
  large = F::minimum(large, i64(b, nb - 1));
  Var r2 = F::where(small, rel, large);
  return buckets ? F::add(buckets, r2) : r2;
}

}  // namespace hfx::models
