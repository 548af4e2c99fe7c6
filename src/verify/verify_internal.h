// src/verify/verify_internal.h — what verify.cpp (format-independent checks, report) shares with
// ort_verify.cpp (the checks that run graphs in ONNX Runtime). Not a public header.
#pragma once
#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "hfx/artifact/manifest.h"
#include "hfx/capture/capture.h"
#include "hfx/models/model.h"
#include "hfx/quant/quantize.h"
#include "hfx/verify/verify.h"

namespace hfx::verify::detail {

/// Tolerances of one precision (a row of the table in tolerances.cpp; docs/precision.md has the
/// measurements behind each number).
struct Tolerance {
  std::string key = "exact";  ///< the precision key (manifest "precision.key"): "exact", "f16", "bf16", ...
  double logits_abs = 1e-4;   ///< max abs error on logits, at least (see logits_bound)
  /// The logits bound grows with their scale: max abs error <= max(logits_abs, logits_rel * max|eager|).
  /// Both the kernels' reduction-order noise and a rounded weight's effect are proportional to the
  /// activations, and a trained model's logits (|max| 15-30) are 5-10x a random tiny model's.
  double logits_rel = 3e-5;
  double kv_abs = 1e-4;     ///< max abs error on present key/value tensors, at least (see kv_bound)
  double kv_rel = 3e-5;     ///< kv bound: max(kv_abs, kv_rel * max|eager|) over the tensor
  double layer_rel = 1e-4;  ///< per-layer diff: divergence when err > layer_abs + layer_rel * max|eager|
  double layer_abs = 1e-4;
  double top1_min = 0;  ///< min share of positions whose argmax equals eager's (0: implied by logits_abs)
  double kl_max = 0;    ///< max KL(eager || artifact) of the next-token distribution, nats (0: not checked)
  std::string basis;    ///< how the numbers were chosen
  double logits_bound(double eager_max) const { return std::max(logits_abs, logits_rel * eager_max); }
  double kv_bound(double eager_max) const { return std::max(kv_abs, kv_rel * eager_max); }
  nlohmann::json to_json() const;
};
/// The row for precision `key` (see ExportConfig::precision) with a checkpoint of `checkpoint` dtype;
/// throws "[verify] expected a precision key among [...]" for an unknown key.
Tolerance tolerance_for(const std::string& key, DType checkpoint);
/// The precision key an export records in its manifest ("exact" for a manifest written before hfx recorded
/// one).
std::string precision_key(const std::optional<artifact::Manifest>& manifest);
/// The tolerance row for a precision key and the model: "int8-dynamic-activations" becomes
/// "int8-dynamic-activations-moe" for a model with routed experts (config.json's num_local_experts or
/// num_experts), whose router may pick another expert under the activation rounding.
std::string tolerance_key(const std::string& precision, const ModelConfig& config);
/// "" when `s` is within `t`'s logits bounds (abs, top-1 agreement, KL), else what broke, for a message.
std::string logits_within(const ErrorStats& s, const Tolerance& t);

/// A contract range that the graph itself enforces (parsed from "hfx.contract: S in [a, b] (input axis n)").
struct GraphGuard {
  std::string symbol, input, node;
  int64_t min = 0, max = 0;
  int axis = 0;
};

/// One .onnx component of the folder.
struct OnnxComponent {
  std::string name;             ///< "model" (merged), "prefill", "decode"
  std::filesystem::path path;   ///< absolute
  std::string rel;              ///< relative to OUT
  ShapeContract contract;       ///< effective: metadata if present, else the manifest's
  std::string contract_source;  ///< "onnx metadata hfx.contract" | "manifest.json" | "none"
  std::vector<std::pair<std::string, ShapeContract>> claims;  ///< every contract that claims ranges
  std::vector<GraphGuard> guards;
  bool has_past = false;                           ///< takes past_key_values.* inputs
  bool signature_ok = false;                       ///< safe to feed
  nlohmann::json info = nlohmann::json::object();  ///< filled by the checks (sizes, ops, latency, numerics)
};

struct Context {
  VerifyOptions opt;
  std::filesystem::path out;
  std::string reference_dir;
  std::shared_ptr<const CausalLM> model;  ///< the reference when it is a decoder-only causal LM
  std::shared_ptr<const Model> other;     ///< the reference when it has another structure
  /// A quantized export: the quantized reference's distance to the float model (verify/precision.h),
  /// measured when the reference is loaded; null otherwise.
  nlohmann::json precision;
  Tolerance tol;
  /// The export's batch bound (manifest export_config.max_batch; 0: not recorded): replayed samples keep
  /// at most this many rows, as the export's own recording did.
  int64_t max_batch = 0;
  /// The export's sequence bound (the smaller of export_config.max_sequence and, for ExecuTorch,
  /// max_seq_len; 0: not recorded): the long replayed sample generates within it.
  int64_t max_sequence = 0;
  std::vector<CheckResult> checks;
  nlohmann::json layer_diff;  ///< per-layer errors of the component diffed (null when none)
  nlohmann::json memory = nlohmann::json::object();

  void add(std::string component, std::string check, std::string status, std::string message,
           nlohmann::json data = nullptr) {
    checks.push_back(
        {std::move(component), std::move(check), std::move(status), std::move(message), std::move(data)});
    if (opt.on_check) opt.on_check(checks.size(), checks.back().component + " " + checks.back().check);
  }
  /// A long check moving on (VerifyOptions::on_step).
  void step(const std::string& what) const {
    if (opt.on_step) opt.on_step(checks.size(), what);
  }
};

/// What a quantized export's weights cost: the quantized reference against the float model it came from (an
/// "info" check of `cx`, cx.precision set); decoder-only KV-cache models only.
void measure_precision(Context& cx, const Model& f32, const Model& quantized, const quant::QuantOptions& q);
/// Peak resident set size so far (VmHWM of /proc/self/status), in bytes.
int64_t peak_rss_bytes();
/// Deterministic token ids in [3, vocab) for `n` positions of row `row` (seeded by `salt`).
std::vector<int64_t> test_tokens(int64_t vocab, int64_t row, int64_t n, int64_t salt);
/// Range of a contract axis: input_ids axis 0/1, past_key_values.0.key axis 2. {0, -1} if absent.
std::pair<int64_t, int64_t> contract_range(const ShapeContract& c, const std::string& input, int axis);

/// What `hfx verify` learns of a .pt2 archive without PyTorch.
struct Pt2Structure {
  std::vector<std::string> names;  ///< every record
  int programs = 0;                ///< models/*.json records, each checked to be JSON
  bool has_weights = false, has_version = false;
};
/// Reads a .pt2 held in memory through dynamo::ZipReader (which refuses crafted archives).
/// Throws hfx::Error("pt2", ...).
Pt2Structure read_pt2_structure(const std::string& bytes);

/// Static checks of one ONNX component (protobuf parse, metadata contracts, graph guards, external data
/// files, signature); failures become checks of `cx`. `c.path` must exist.
void check_onnx_static(Context& cx, OnnxComponent& c, const std::optional<artifact::Manifest>& manifest);

/// The tolerance of a .pte program's logits against eager, by checkpoint dtype and ExecuTorch backend.
struct PteTolerance {
  double logits_abs = 1e-5;
  double logits_rel = 5e-6;  ///< the bound is max(logits_abs, logits_rel * max|eager|), as Tolerance's
  double logits_bound(double eager_max) const { return std::max(logits_abs, logits_rel * eager_max); }
  std::string basis;  ///< how the number was chosen (measured errors)
};
PteTolerance pte_tolerance(DType dtype, const std::string& backend);
/// A decoder's static-cache .pte (forward(tokens, input_pos)): numerics vs eager, latency per phase,
/// memory, size, and out-of-contract calls that must fail (pte_verify.cpp).
void check_pte(Context& cx, const std::filesystem::path& path);

/// The tolerance check_pte holds a decoder's .pte to: pte_tolerance by the checkpoint's dtype and the
/// backend the export folder names, or the precision row of cx.tol when the weights were stored lower.
PteTolerance pte_tolerance_of(const Context& cx, DType dtype, const std::string& backend);
/// The backend an export folder's .pte was written for (export_config.json), "portable" by default.
std::string pte_backend(const std::filesystem::path& out);

/// The output furthest outside its bound (max abs error / the bound at its own scale) over a replay.
struct Worst {
  double max_abs = 0, bound = 0;
  std::string where;
  int calls = 0;
};
/// Adds one output's comparison to `w`: the bound is tol.logits_bound(max|want|).
void compare(Worst& w, const Tolerance& tol, const std::string& name, const std::string& kind,
             const std::vector<float>& got, const Tensor& want);
/// The check `check` ("numerics", "runtime numerics") of `comp` from `w`: passed when every output was
/// within its bound, naming the runtime that computed the outputs and the bound's rule (`bound_of`, the
/// tolerance `w` was compared with; cx.tol when null).
void report(Context& cx, const std::string& comp, const Worst& w, const std::string& runtime,
            const std::string& check = "numerics", const Tolerance* bound_of = nullptr);
/// --save-calls: writes one call (inputs, eager's outputs, or a probe) to `<DIR>/<file
/// stem>.<method>.<tag>.call` (call_fixture.h); does nothing when cx.opt.save_calls is empty.
void save_call(const Context& cx, const std::string& file, const std::string& method, const std::string& tag,
               const std::vector<std::pair<std::string, Tensor>>& inputs,
               const std::vector<std::pair<std::string, Tensor>>& outputs, bool expect_error);

/// --save-calls for programs other runtimes replay by name (.pt2): every real call of the generation loop
/// that program `<stem of the file>` covers, as `<stem>.forward.<NNN>.call` with eager's outputs.
void save_program_calls(const Context& cx, const Model& m, const std::vector<std::filesystem::path>& files);

/// The project's Python interpreter with the released runtimes (torch, executorch): HFX_PYTHON, else a
/// .venv beside the hfx binary or one or two folders above it (build/hfx -> .venv). "" when none, with
/// what was looked at in `why`.
std::string runtime_python(std::string& why);
/// The released runtimes judge the folder's .pte and .pt2 files (runtime_judge.cpp): ExecuTorch's Python
/// runtime replays every call saved in `calls` (check_pte and component_checks write them), PyTorch every
/// .pt2's (save_program_calls) and one call past each bounded range of it; each file gets a
/// "runtime numerics" check (and "runtime rejects" for the probes) naming the runtime and its version, or
/// "skipped" (not judged) with the reason when `python` is empty or could not run.
void runtime_judge(Context& cx, const std::string& python, const std::string& why,
                   const std::vector<std::filesystem::path>& ptes,
                   const std::vector<std::filesystem::path>& pt2s, const std::filesystem::path& calls);

/// `s` in single quotes for a shell command line.
std::string shell_quote(const std::string& s);
/// node and the node_modules folder with node-llama-cpp and @huggingface/jinja (HFX_NODE, HFX_NODE_MODULES,
/// else `node` and deps/npm/node_modules beside the hfx binary or one or two folders above it): the folder,
/// with `node` set; "" when either is missing, with why in `why` (HFX_LLAMA_CPP_JUDGE=0 turns the judge off).
std::string llama_cpp_judge(std::string& node, std::string& why);
/// A GGUF file (gguf_verify.cpp): read back into the eager engine against `reference`, then run by llama.cpp
/// (prefill and decode logits, greedy tokens, the tokenizer, the chat template), each a check of `cx`.
void check_gguf(Context& cx, const std::filesystem::path& path, const Model& reference);

/// Models of other structures: every exported program (onnx/<program>.onnx, each method of the .pte
/// files) replays the real calls of the model's generation loop against eager (component_verify.cpp).
void component_checks(Context& cx, const Model& m, const std::vector<std::filesystem::path>& ptes);

/// Numerics, shape matrix, rejection probes, op placement, latency and the per-layer diff of every
/// ONNX component through ONNX Runtime (ort_verify.cpp; absent without ONNX Runtime).
void ort_checks(Context& cx, std::vector<OnnxComponent>& comps);

}  // namespace hfx::verify::detail
