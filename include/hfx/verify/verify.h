// hfx/verify/verify.h — `hfx verify`: does an export folder reproduce its model on the shapes it serves?
//
// An export that succeeded proves nothing; `verify` checks the artifact contract of an export folder:
//   1. checksums: OUT/manifest.json (when present) re-hashed first (Manifest::verify_checksums);
//   2. signature: per component, the inputs/outputs the graph declares (names, dtypes, dims) against
//      the contract stored in the artifact (ONNX metadata "hfx.contract", else the manifest's) and
//      against the names generation needs (input_ids, attention_mask, position_ids,
//      past_key_values.N.key/value → logits, present.N.key/value);
//   3. numerics against eager (EagerBuilder + DynamicCache on the reference checkpoint): prefill
//      logits, every present KV tensor, one decode step, greedy end-to-end for N tokens at batch 1 and
//      3 — max abs error, max relative error (max abs error / max |reference|), top-5 agreement;
//   4. shape matrix from the contract (min, typical, max batch and sequence — capped so it runs in
//      seconds — first decode, a long cache), every contract range checked against what the graph
//      itself enforces, and out-of-contract shapes proven rejected (and by whom);
//   5. op inventory (node counts by op type; nodes per execution provider from ORT profiling),
//      cold start, warm latency per shape, peak memory, artifact size.
// When numerics fail, the per-layer diff (layer_diff) names the first Hugging Face module where eager
// and artifact diverge. ExecuTorch .pte programs are run through src/verify/pte_reader; dynamo .pt2
// archives are checked structurally.
//
// Output: a terminal table, OUT/verify.json, a self-contained OUT/verify.html (inline SVG) and the
// manifest's verify section (written atomically). The ONNX Runtime parts live in ort_*.cpp; without
// ONNX Runtime the ONNX numerics are reported as skipped (and the verify does not pass).
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "hfx/core/tensor.h"

namespace hfx {
class Model;
}

namespace hfx::verify {

/// One shape of the matrix: batch × sequence over a past of `past` tokens.
struct ShapeCase {
  int64_t batch = 1, sequence = 1, past = 0;
  std::string label;  ///< "min", "typical", "max", "first decode", "long cache", or the spec text
};

/// "1x1,2x16,4x64+32": batch x sequence [+ past], comma-separated. Throws hfx::Error("verify") on bad text.
std::vector<ShapeCase> parse_shape_spec(const std::string& spec);

struct VerifyOptions {
  std::string out_dir;
  std::string reference;  ///< checkpoint folder; empty: the checkpoint files copied into OUT
  /// A reference model in memory instead of a folder (the Python package's live transformers model, its
  /// weights viewed in place); `reference` then only names it in the report.
  std::shared_ptr<const Model> reference_model;
  std::string shapes;                ///< parse_shape_spec text; empty: derived from the contract
  std::string json_path;             ///< empty: OUT/verify.json
  std::string html_path;             ///< empty: OUT/verify.html
  int64_t tokens = 32;               ///< greedy end-to-end length
  int64_t max_check_sequence = 256;  ///< cap of the "max" sequence/past shapes run against eager
  int64_t max_check_batch = 8;       ///< cap of the "max" batch shape run against eager
  int64_t max_probe_past = 8192;     ///< largest past the "claimed max" probe runs (artifact only)
  int warm_runs = 5;                 ///< warm latency = median of this many runs
  int threads = 2;                   ///< ORT intra-op threads and kernel threads
  bool write_manifest = true;        ///< record the result in OUT/manifest.json when it exists
  /// Non-empty: every replayed .pte method call (and out-of-contract probe) is also written here as a call
  /// fixture (src/verify/call_fixture.h) for another runtime to replay (tools/et_check's et_run --replay).
  std::string save_calls;
  bool quiet = false;  ///< no terminal table
  /// Called after each check with the number of checks so far and the last one's "component check".
  std::function<void(size_t checks_done, const std::string& last)> on_check;
  /// Called as a long check moves on, before each case of the shape matrix ("prefill shapes 2/5: typical
  /// 2x16+0"), with the number of checks done so far.
  std::function<void(size_t checks_done, const std::string& what)> on_step;
};

/// One line of the report.
struct CheckResult {
  std::string component;  ///< "manifest", "model", "prefill", "decode", "model.pte", ...
  std::string check;  ///< "checksums", "signature", "numerics", "shapes", "rejects", "ops", "latency", ...
  /// "passed" | "failed" | "skipped" | "not_judged" (a runtime that could not run: neither a pass nor a
  /// failure) | "info"
  std::string status;
  std::string message;  ///< one line; for a failure, what was expected and what was got
  nlohmann::json data;  ///< metrics (errors, shapes, timings)
};

struct VerifyReport {
  /// "verified" (no failure, every artifact's numerics judged by a runtime), "failed", or "not_judged" (no
  /// failure, but an artifact with no numerics except a runtime's that could not run: a .pt2 without
  /// PyTorch). Only "verified" passes.
  std::string verdict = "failed";
  bool passed = false;        ///< verdict == "verified"
  std::string first_failure;  ///< "[verify] ..." line of the first failed check, empty when passed
  std::string not_judged;     ///< with verdict "not_judged": the first artifact not judged and why
  std::vector<CheckResult> checks;
  nlohmann::json json;  ///< the whole report (what verify.json holds)
  std::string json_path, html_path;
};

/// Runs every check. Throws hfx::Error only when nothing can be checked at all (no such folder, no
/// artifact in it, no reference); every other problem is a failed check in the report.
VerifyReport run_verify(const VerifyOptions& options);

/// The terminal table of a report.
std::string render_table(const VerifyReport& report);
/// The self-contained HTML page (inline CSS and SVG, no script, no external resource) of a report's JSON.
std::string render_html(const nlohmann::json& report);

// ---- per-layer diff ----

/// One named intermediate compared.
struct LayerError {
  std::string name;  ///< Hugging Face module name ("model.layers.1.self_attn")
  double max_abs = 0, max_rel = 0;
  bool diverged = false;
};

struct LayerDiff {
  std::vector<LayerError> layers;  ///< in the graph's topological order
  std::optional<LayerError> first_divergence;
  nlohmann::json to_json() const;
};

/// Value names of an .onnx graph that are Hugging Face module names ("model.embed_tokens",
/// "model.layers.N[.sub]", "model.norm", "logits"...), in topological order.
std::vector<std::string> onnx_module_values(const std::string& onnx_path);
/// Writes a copy of `onnx_path` to `debug_path` whose graph outputs also include `names`.
void write_debug_onnx(const std::string& onnx_path, const std::vector<std::string>& names,
                      const std::string& debug_path);
/// Compares artifact intermediates with eager ones (EagerBuilder::intermediates) name by name in
/// `order`; a layer diverges when its max abs error exceeds `abs_tol` + `rel_tol` × max |eager|.
LayerDiff compare_layers(const std::vector<std::string>& order, const std::map<std::string, Tensor>& eager,
                         const std::map<std::string, Tensor>& artifact, double abs_tol, double rel_tol);

/// Max abs error, max relative error (max abs / max |ref|) and top-k agreement (share of last-axis rows
/// whose top-k indices agree in order) of `got` against `ref` (same numel).
struct ErrorStats {
  double max_abs = 0, max_rel = 0, ref_max = 0;
  double topk_agreement = 1.0;
  double top1_agreement = 1.0;  ///< share of rows whose argmax matches
  double kl_max = 0;            ///< max over rows of KL(softmax(ref) || softmax(got)), nats
  int64_t rows = 0;
  bool finite = true;
  nlohmann::json to_json() const;
};
ErrorStats error_stats(const std::vector<float>& got, const std::vector<float>& ref, int64_t last_dim,
                       int k = 5);

}  // namespace hfx::verify
