// DynamicCache: per layer, key/value [B, Hkv, T, D] grown by concatenation along dim 2. Sliding layers
// keep their whole history; hfx.sdpa's window masks what falls outside it (see model.h).
#include "hfx/core/error.h"
#include "hfx/models/model.h"
#include "hfx/ops/functional.h"

namespace hfx {

DynamicCache::DynamicCache(std::vector<CacheLayerSpec> layout)
    : layout_(std::move(layout)), keys_(layout_.size()), values_(layout_.size()) {}

void DynamicCache::set_past(int layer, const Var& k, const Var& v) {
  keys_.at(layer) = k;
  values_.at(layer) = v;
}

std::pair<Var, Var> DynamicCache::update(int layer, const Var& k, const Var& v) {
  if (layer < 0 || layer >= static_cast<int>(layout_.size()))
    HFX_THROW("cache", "expected a layer in [0, {}), got {}", layout_.size(), layer);
  Var& K = keys_[layer];
  Var& V = values_[layer];
  K = K.defined() ? F::cat({K, k}, 2) : k;
  V = V.defined() ? F::cat({V, v}, 2) : v;
  return {K, V};
}

Sym DynamicCache::past_length() const {
  if (keys_.empty() || !keys_[0].defined()) return Sym(0);
  return keys_[0].size(2);
}

void DynamicCache::reset() {
  for (auto& k : keys_) k = Var();
  for (auto& v : values_) v = Var();
}

}  // namespace hfx
