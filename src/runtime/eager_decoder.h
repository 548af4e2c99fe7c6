// One eager decoder step of an encoder-decoder model (text2text.cpp, transcribe.cpp): call the model's
// "decoder" component with the step's inputs and the cache of the previous step, keep its presents as the
// next step's pasts, and copy the last position's logits out. Private to src/runtime.
#pragma once

#include <cstdint>
#include <vector>

#include "hfx/core/tensor.h"
#include "hfx/models/model.h"
#include "hfx/ops/builder.h"

namespace hfx::runtime_detail {

/// Runs `decoder` on `in` plus `past` (appended), replaces `past` with the presents `decl` declares, and
/// writes the logits of the last position, [B, V] as f32, into `logits`.
inline void eager_decoder_step(const Model& m, const ComponentDecl& decl, EagerBuilder& b, NamedVars in,
                               NamedVars& past, int64_t B, std::vector<float>& logits) {
  in.insert(in.end(), past.begin(), past.end());
  NamedVars out = m.call("decoder", b, in, CallOptions{1, true});
  past.clear();
  for (const CacheLeafDecl& c : decl.cache) past.emplace_back(c.past_input, get(out, c.present_output));
  const Var lv = get(out, "logits");
  const Tensor& t = lv.tensor();  // [B, S, V]
  Tensor last = t.select(1, t.size(1) - 1);
  logits.resize(static_cast<size_t>(B * t.size(2)));
  copy_to_contiguous(last, logits.data(), DType::F32);
}

}  // namespace hfx::runtime_detail
