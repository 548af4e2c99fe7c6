// src/export/executorch/static_cache.h — ExecuTorch's LLM cache layout and the capture built on it.
//
// ExecuTorch's text runners call one method, forward(tokens [1, S], input_pos [S]), for the prompt and
// for every generated token. The cache is a set of mutable buffers of fixed size, k_cache/v_cache per
// layer [1, Hkv, max_seq_len, D], written in place at input_pos (index_copy along dim 2) and read
// whole by attention, which masks by position: key j is visible to query i iff j <= input_pos[i] (and
// input_pos[i] - j < window on sliding layers). The model code is unchanged: the capture runs the
// model's own forward with a StaticCache, and the ExecuTorch attention patch (stage 3, registered in
// registrations.cpp) reads the positions from the StaticAttentionScope active during the capture.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "hfx/capture/capture.h"
#include "hfx/export/registry.h"
#include "hfx/models/model.h"

namespace hfx::et {

/// Fixed-size cache: update() writes k/v at input_pos and returns the whole buffers.
class StaticCache : public KVCache {
 public:
  /// `keys`/`values`: per layer the current buffers [1, Hkv, max_seq_len, D] (graph inputs when tracing,
  /// zero tensors when eager); `input_pos`: int64 [S].
  StaticCache(std::vector<CacheLayerSpec> layout, int64_t max_seq_len, std::vector<Var> keys,
              std::vector<Var> values, Var input_pos);
  std::pair<Var, Var> update(int layer, const Var& k, const Var& v) override;
  /// Positions come from input_pos (data, not shape): the static cache has no symbolic past, so this is
  /// 0 and the capture passes position_ids explicitly.
  Sym past_length() const override { return Sym(0); }
  const std::vector<CacheLayerSpec>& layout() const override { return layout_; }
  int64_t max_seq_len() const { return max_seq_len_; }
  /// The buffers after the last update.
  const Var& key(int layer) const { return keys_.at(layer); }
  const Var& value(int layer) const { return values_.at(layer); }

  /// Buffer names ExecuTorch-style: "kv_cache.<layer>.k_cache" / ".v_cache"; the updated value of each
  /// is the graph output "<name>_out".
  static std::string buffer_name(int layer, const std::string& kind);

 private:
  std::vector<CacheLayerSpec> layout_;
  int64_t max_seq_len_;
  std::vector<Var> keys_, values_;
  Var input_pos_;
};

/// What the attention patch needs while a static-cache forward runs (set by StaticAttentionScope in the
/// export's context).
struct StaticAttentionContext {
  Var input_pos;                 ///< int64 [S]
  int64_t max_seq_len = 0;       ///< key length of the static cache
  std::map<int64_t, Var> masks;  ///< additive f32 [S, max_seq_len] per window (0 = full), built once
};
/// Sets `export_ctx.static_attention` for its lifetime (and restores the previous one).
class StaticAttentionScope {
 public:
  StaticAttentionScope(ExportContext& export_ctx, Var input_pos, int64_t max_seq_len);
  ~StaticAttentionScope();
  StaticAttentionScope(const StaticAttentionScope&) = delete;
  StaticAttentionScope& operator=(const StaticAttentionScope&) = delete;

 private:
  ExportContext& export_ctx_;
  StaticAttentionContext ctx_;
  StaticAttentionContext* prev_;
};

/// The additive position mask of the context for a layer with `window` (0 = full attention).
Var static_position_mask(Builder& b, StaticAttentionContext& ctx, int64_t window);

struct StaticCaptureOptions {
  int64_t max_seq_len = 128;
  bool dynamic = true;       ///< false: S is fixed at 1 (a decode-only forward, prompt fed token by token)
  Dim seq{"seq_len", 1, 0};  ///< range of S; max 0 = max_seq_len
  int64_t sample_seq = 8;    ///< hint (clamped into the range)
  int64_t logits_to_keep = 0;
};

/// Captures forward(tokens, input_pos) with a StaticCache. Graph inputs: tokens, input_pos and the cache
/// buffers (listed in cache_leaves with their "_out" outputs); outputs: logits [1, S, V] then the
/// updated buffers. Install the export patches (PatchScope over `ctx`) around this call.
CapturedProgram capture_static_forward(const CausalLM& model, const StaticCaptureOptions& o,
                                       ExportContext& ctx);

}  // namespace hfx::et
