// hfx/capture/capture.h — runs a model's own components on symbolic inputs and records programs.
//
// Generic capture works on any Model (hfx/models/component.h): a `ProgramSpec` names the component,
// the inputs it takes and, for each named dim of their declarations, a symbol with a range and a hint
// or a fixed size. Inputs and outputs are flat named tensors (input_ids, attention_mask,
// past_key_values.N.key, present.N.key, ... — the names Optimum, Transformers.js and ONNX Runtime GenAI
// use); cache leaves keep their layer type. Questions the ranges cannot answer become guards; a dim the
// code specializes is reported with the place in the model code that did it.
//
// `export_for_generation` does not write signatures by hand: `record_generation` runs the model's own
// generation loop (the one its Structure declares) eagerly on small samples and records every component
// call; `plan_generation` groups the calls into the programs the loop declares (prefill, decode, the
// merged decoder; encoder; ...) and makes dynamic exactly the dims whose sizes vary between the calls of
// a program.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "hfx/ir/contract.h"
#include "hfx/ir/graph.h"
#include "hfx/models/model.h"
#include "hfx/ops/patch_point.h"

namespace hfx {

/// A named dynamic dimension with an inclusive range (torch.export's Dim(name, min, max)).
struct Dim {
  std::string name;
  int64_t min = 1;
  int64_t max = 4096;
};

/// Which real call of generation to capture.
enum class CallKind {
  Forward,  ///< no cache at all: logits for a full sequence
  Prefill,  ///< first call: no past inputs, returns present leaves
  Decode,   ///< one new token (sequence 1) over a past of >= 1 token
  Merged,   ///< past inputs that may be empty (past 0 = prefill): Optimum / Transformers.js layout
};
const char* call_kind_name(CallKind k);

struct CaptureOptions {
  CallKind kind = CallKind::Merged;
  bool dynamic = true;  ///< false: every dim fixed at its sample value
  Dim batch{"batch_size", 1, 64};
  Dim sequence{"sequence_length", 1, 4096};
  Dim past{"past_sequence_length", 0, 4096};
  /// Sample sizes (hints): must lie inside the ranges.
  int64_t sample_batch = 2, sample_sequence = 8, sample_past = 8;
  /// Per input name and axis, an explicit Dim that wins over the defaults above (checked against the sample).
  std::map<std::string, std::map<int, Dim>> dynamic_shapes;
  /// Guards become runtime asserts in the graph's contract (true) or fail the capture (false).
  bool prefer_deferred_runtime_asserts_over_guards = true;
  /// Logits only for the last N positions (0: all).
  int64_t logits_to_keep = 0;
  /// Samples whose generation export_for_generation records (empty: default_generation_samples).
  std::vector<std::vector<std::vector<int64_t>>> sample_prompts;
};

struct CapturedProgram {
  std::string component;  ///< "model", "prefill", "decode", ...
  std::shared_ptr<Graph> graph;
  ShapeContract contract;
  std::vector<Guard> guards;  ///< deferred runtime asserts
  /// Inputs the artifact keeps as its own state rather than taking them per call (ExecuTorch's static
  /// KV cache: mutable buffers), in graph order.
  std::vector<std::string> state;
};

/// The value of one named dim in a program: a symbol with a range and a hint (the sample), or fixed.
struct DimSpec {
  std::string symbol;  ///< the graph's symbol name (an explicit Dim renames it)
  bool dynamic = true;
  int64_t min = 1, max = 4096;
  int64_t hint = 1;  ///< sample size; the fixed size when !dynamic
};

/// One program to capture: a component called with some of its inputs.
/// A bound on an input axis that is a sum of dims (a merged decoder's attention_mask axis 1: past + new
/// tokens), from a user's Dim: capture records it as a guard, so the contract states the total and every
/// backend's runtime assert enforces it (not only each term's range).
struct TotalBound {
  std::string input;
  int axis = 0;
  std::string dim;  ///< the Dim's name
  int64_t min = 0, max = 0;
};

struct ProgramSpec {
  std::string name;       ///< artifact component name: "prefill", "decode", "model", "encoder_model", ...
  std::string component;  ///< the model component it calls
  std::vector<std::string> inputs;      ///< declared inputs it takes, in declaration order
  std::map<std::string, DimSpec> dims;  ///< every named dim of those inputs
  std::vector<std::string> kinds;       ///< the recorded call kinds it covers (empty: from options)
  CallOptions call;
  std::vector<TotalBound> totals;  ///< user bounds on sum axes (apply_explicit_dims)
};

/// Captures one program. Throws hfx::Error("capture", ...) naming the architecture, the component and
/// the inputs if the model's code fails on symbolic inputs. Ops with a handler in `patches` (the
/// export's table, see hfx/ops/patch_point.h) go to that handler.
CapturedProgram capture_program(const Model& model, const ProgramSpec& spec,
                                bool prefer_deferred_runtime_asserts = true, PatchTable* patches = nullptr);

/// Applies explicit Dims (input name → axis → Dim) to a program: each names an axis that is one named
/// dim, whose symbol and range it sets. Entries for inputs the program does not take are skipped; an
/// input or axis the model does not have at all is an error listing the valid names.
void apply_explicit_dims(const Model& model, ProgramSpec& spec,
                         const std::map<std::string, std::map<int, Dim>>& dynamic_shapes);

// ---- recorded generation ----
/// One input of a recorded call.
struct RecordedInput {
  std::string name;
  DType dtype = DType::I64;
  Shape shape;
  Tensor value;        ///< the values, in eager recordings only (undefined otherwise)
  bool cache = false;  ///< a cache leaf (a past_* input the component declares in ComponentDecl::cache)
};
/// One real component call made by a generation loop.
struct RecordedCall {
  std::string component;
  std::string kind;  ///< "prefill", "decode", "model", "encoder", "decoder", "decoder_with_past"
  std::vector<RecordedInput> inputs;
};
/// A sample to generate from: prompts as token ids (rows may differ in length; loops pad them).
struct GenerationSample {
  std::vector<std::vector<int64_t>> prompts;
  int64_t max_new_tokens = 3;
};
/// Two deterministic samples (batch 1 × 5 tokens; batch 2 × 7 and 4 tokens) with ids < vocab_size, so
/// that batch, prompt and past sizes all vary between the recorded calls.
std::vector<GenerationSample> default_generation_samples(int64_t vocab_size);
/// The samples of an export: opts.sample_prompts, else default_generation_samples.
std::vector<GenerationSample> generation_samples(const Model& model, const CaptureOptions& opts);
/// Runs the model's generation loop on each sample and records every component call. By default the
/// loop runs on shapes only (a throwaway static trace: the calls' names, dtypes, shapes and caches are
/// exactly those of the real run, no weight is read, which keeps a multi-GB export streaming); `eager`
/// runs the real kernels and greedy tokens (tests use it to prove the two record the same calls).
std::vector<RecordedCall> record_generation(const Model& model, const std::vector<GenerationSample>& samples,
                                            bool eager = false);
/// The programs the model's generation loop declares, with their dims derived from `calls`: a dim is
/// dynamic when its size varies between the calls a program covers (and `opts.dynamic`); ranges come
/// from opts.batch (batch_size), opts.past (dims named past_*) and opts.sequence (every other dim);
/// an optional cache input absent from some calls of a merged program has size 0 there, so its past
/// range starts at 0. Explicit opts.dynamic_shapes are applied last.
std::vector<ProgramSpec> plan_generation(const Model& model, const std::vector<RecordedCall>& calls,
                                         const CaptureOptions& opts);
/// record_generation over default_generation_samples + plan_generation.
std::vector<ProgramSpec> generation_programs(const Model& model, const CaptureOptions& opts);

/// One real call replayed against an exported program: the program's inputs in its order (an optional
/// cache input the call did not have is an empty tensor, size 0 along its past axis, as a merged
/// program takes it) and the eager outputs of the same call under the program's CallOptions.
struct ReplayCall {
  std::string kind;
  std::vector<std::pair<std::string, Tensor>> inputs;
  std::vector<std::pair<std::string, Tensor>> expected;
};
/// The calls of an eager recording (record_generation(..., eager = true)) that `program` covers.
std::vector<ReplayCall> replay_calls(const Model& model, const ProgramSpec& program,
                                     const std::vector<RecordedCall>& eager_calls);

/// The legacy single-call path for causal LMs: one program of kind `opts.kind` with the dims and hints
/// of `opts` (batch/sequence/past Dims, sample sizes), explicit Dims applied.
ProgramSpec causal_lm_program(const CausalLM& model, const CaptureOptions& opts);
/// capture_program(causal_lm_program(...)).
CapturedProgram capture_causal_lm(const CausalLM& model, const CaptureOptions& opts);

}  // namespace hfx
