// The tolerance table of `hfx verify`: one row per precision key (ExportConfig::precision's "key", kept
// in the manifest). The reference is always the eager model on the checkpoint's own weights computing in
// float32, so a row says how far an artifact whose weights were rounded to its precision may drift from
// it. Rows of lossy precisions bound three things measured on a fixed prompt set (docs/precision.md):
// max abs logit error, top-1 agreement and the KL divergence of the next-token distribution. A
// quantization scheme adds its row here under its own key ("int8", "int4-g32", ...).
#include <cmath>

#include <fmt/format.h>

#include "hfx/core/error.h"
#include "verify/verify_internal.h"

namespace hfx::verify::detail {

namespace {

std::vector<Tolerance> table() {
  std::vector<Tolerance> t;
  Tolerance exact;
  exact.key = "exact";
  exact.basis =
      "weights as the checkpoint holds them (or widened to float32): 1e-4 abs on logits and KV (measured 1.9e-6 f32, "
      "1.7e-6 bf16, 1.9e-6 f16 checkpoints on the tiny llama: reduction-order noise of the runtime's kernels)";
  t.push_back(exact);
  Tolerance f16;
  f16.key = "f16";
  f16.logits_abs = 1.0;  // MEASURE
  f16.kv_abs = 1.0;  // MEASURE
  f16.layer_abs = 1.0;  // MEASURE
  f16.layer_rel = 1e-2;
  f16.top1_min = 0.0;  // MEASURE
  f16.kl_max = 1.0;  // MEASURE
  f16.basis = "MEASURE";
  t.push_back(f16);
  Tolerance bf16;
  bf16.key = "bf16";
  bf16.logits_abs = 1.0;  // MEASURE
  bf16.kv_abs = 1.0;  // MEASURE
  bf16.layer_abs = 1.0;  // MEASURE
  bf16.layer_rel = 5e-2;
  bf16.top1_min = 0.0;  // MEASURE
  bf16.kl_max = 1.0;  // MEASURE
  bf16.basis = "MEASURE";
  t.push_back(bf16);
  return t;
}

}  // namespace

nlohmann::json Tolerance::to_json() const {
  return {{"key", key},       {"logits_abs", logits_abs}, {"kv_abs", kv_abs}, {"layer_abs", layer_abs},
          {"layer_rel", layer_rel}, {"top1_min", top1_min}, {"kl_max", kl_max}, {"basis", basis},
          {"relative_error", "max abs error / max |eager| over the tensor"}};
}

Tolerance tolerance_for(const std::string& key, DType checkpoint) {
  std::string keys;
  for (const Tolerance& t : table()) {
    if (t.key == key) return t;
    keys += (keys.empty() ? "" : ", ") + t.key;
  }
  HFX_THROW("verify", "expected a precision key among [{}] in manifest.json, got '{}' (exported by a newer hfx?)", keys, key);
}

std::string precision_key(const std::optional<Manifest>& manifest) {
  if (!manifest || manifest->precision.is_null()) return "exact";
  return manifest->precision.value("key", std::string("exact"));
}

std::string logits_within(const ErrorStats& s, const Tolerance& t) {
  if (!(s.max_abs <= t.logits_abs)) return fmt::format("max abs error {:.3g} > {:.1e}", s.max_abs, t.logits_abs);
  if (s.top1_agreement < t.top1_min)
    return fmt::format("top-1 agreement {:.1f}% < {:.1f}%", 100 * s.top1_agreement, 100 * t.top1_min);
  if (t.kl_max > 0 && !(s.kl_max <= t.kl_max)) return fmt::format("KL divergence {:.3g} > {:.1e} nats", s.kl_max, t.kl_max);
  return "";
}

}  // namespace hfx::verify::detail
