// src/models/relative_bucket.h — T5's relative position buckets, shared by the architectures that copy them
// (T5 and mT5's attention bias, MPNet's encoder bias).
#pragma once
#include "hfx/ops/functional.h"

namespace hfx::models {

/// T5Attention._relative_position_bucket op for op, over int64 relative positions `rel` (memory − query):
/// bidirectional splits the `num_buckets` between the two signs; exact buckets below half of them, then
/// log-spaced up to `max_distance` (the float part in f32, as torch computes it). Returns int64 buckets.
Var relative_bucket(Builder& b, Var rel, bool bidirectional, int64_t num_buckets, int64_t max_distance);

}  // namespace hfx::models
