// Reference decompositions of the composite ops into primitive ops (see op_table.cpp).
#pragma once
#include <vector>

#include "hfx/ops/builder.h"

namespace hfx::decomp {
std::vector<Var> rms_norm(Builder& b, const std::vector<Var>& inputs, const Attrs& attrs);
std::vector<Var> rope(Builder& b, const std::vector<Var>& inputs, const Attrs& attrs);
std::vector<Var> sdpa(Builder& b, const std::vector<Var>& inputs, const Attrs& attrs);
std::vector<Var> moe(Builder& b, const std::vector<Var>& inputs, const Attrs& attrs);
std::vector<Var> linear_q(Builder& b, const std::vector<Var>& inputs, const Attrs& attrs);
}  // namespace hfx::decomp
