// src/export/onnx/gqa_fusion.h — target=ort: one com.microsoft GroupQueryAttention per attention layer.
//
// The captured graph of a layer reads
//     k_all = aten.cat([past_key_values.N.key, k_new], 2)      → graph output present.N.key
//     v_all = aten.cat([past_key_values.N.value, v_new], 2)    → graph output present.N.value
//     o     = hfx.sdpa(q, k_all, v_all, mask)
// and GroupQueryAttention owns that concat: it takes the past and the new keys/values and returns the
// present. The fusion is a pass: the stage-3 program fix `gqa_fusion` (target=ort) decides, for every
// hfx.sdpa, by `plan_gqa` (a pure function of the sdpa node and its producers), and records each decision
// in the graph's metadata — fused, or the reason it is not — with the KV concats each fused attention
// owns. Stage 4's translations only read that record: the concat emits nothing exactly when its sdpa
// emits GroupQueryAttention with the concat's output names as its present outputs, and an sdpa the pass
// did not fuse is decomposed with the pass's reason as the export warning. The op table keeps no
// ONNX-Runtime-only op: eager, ExecuTorch and .pt2 never see it.
//
// Semantics kept exactly (hfx.sdpa: bottom-right causal over T = P + S, sliding window, softcap,
// additive padding mask):
//   - seqlens_k = T - 1 for every row and total_sequence_length = T, so the CPU kernel appends the new
//     keys at P (present = cat(past, new), the runtime contract) and places query i at T - S + i;
//   - the padding mask (with ALiBi's per-head bias) is passed as attention_bias ([B|1, H|1, S, T],
//     clamped at -1e30 so that a row whose keys are all masked averages them as hfx.sdpa does; ORT's kernel
//     does not for float lowest); left-padded batches (hfx's generator, Transformers.js) are therefore exact,
//     padded rows and their present KV included. seqlens_k = sum(mask) - 1 (onnxruntime-genai's right-padding
//     convention) would write a short row's new keys at sum(mask) - S instead of at P and let it attend
//     to its left padding: not used.
//   - window W → local_window_size W (ONNX Runtime 1.30's CPU kernel keeps local_window_size keys,
//     self included, as hfx.sdpa keeps W; older kernels kept local_window_size + 1); softcap (applied
//     before the bias by the kernel, as by hfx.sdpa) and scale as attributes.
// Limit (ONNX Runtime's, at run time): several new tokens on a non-empty past need batch 1 ("batch_size
// must be 1 when sequence_length > 1 and past context is given"); prefill on an empty past and one-token
// decode steps, which hfx's generator and Transformers.js use, work at any batch.
// Where GroupQueryAttention cannot express the layer, `plan_gqa` says why and the sdpa is decomposed.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "hfx/export/registry.h"
#include "hfx/ir/graph.h"

namespace hfx::onnx_export {

class LoweringContext;

struct GqaPlan {
  const Node* sdpa = nullptr;
  const Node* cat_k = nullptr;  ///< the KV concats GroupQueryAttention takes over (null without a past)
  const Node* cat_v = nullptr;
  const Value* q = nullptr;       ///< [B, Hq, S, D]
  const Value* k_new = nullptr;   ///< [B, Hkv, S, D]
  const Value* v_new = nullptr;   ///< [B, Hkv, S, D]
  const Value* past_k = nullptr;  ///< graph input [B, Hkv, P, D] (null without a past)
  const Value* past_v = nullptr;
  const Value* mask = nullptr;  ///< additive float mask broadcastable to [B, 1, S, T] (null if none)
  int64_t num_heads = 0, kv_num_heads = 0, head_size = 0;
  double scale = 0;
  int64_t local_window_size = -1;
  double softcap = 0;
};

/// The GroupQueryAttention plan for an hfx.sdpa node, or nullopt with the reason in `why`.
std::optional<GqaPlan> plan_gqa(const Graph& g, const Node& sdpa, std::string* why = nullptr);

/// The stage-3 program fix `gqa_fusion` (onnx_exporter.cpp registers it): on a graph whose target is ort,
/// records for every hfx.sdpa whether one GroupQueryAttention computes it (and which KV concats it takes
/// over). Contract after it: every fused sdpa's plan holds and each concat it owns feeds it alone; the
/// graph's nodes are unchanged. Returns whether it recorded anything.
/// It reads ExportContext::onnx_target and writes ExportContext::gqa.
bool fix_gqa_fusion(Graph& g, ExportContext& ctx, std::vector<std::string>& warnings);

/// The pass's record for `sdpa`: nullopt when the pass did not run on it (target standard, or no record
/// given), "" when fused, else why GroupQueryAttention cannot compute it.
std::optional<std::string> gqa_decision(const GqaFusionRecord* record, const Node& sdpa);

/// True when the pass gave `cat` (a KV concat) to a fused GroupQueryAttention: its translation must then
/// emit nothing (the GroupQueryAttention node produces its output under the same name).
bool gqa_owns_cat(const GqaFusionRecord* record, const Node& cat);

/// Emits the GroupQueryAttention node of `p` and the reshapes around it; binds the sdpa output and the
/// concats' outputs (present.N.key/value) to what it produces.
void emit_gqa(LoweringContext& cx, const GqaPlan& p);

}  // namespace hfx::onnx_export
