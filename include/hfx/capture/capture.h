// hfx/capture/capture.h — runs a model's own forward on symbolic inputs and records the program.
//
// The forward signature is flattened to named inputs (input_ids, attention_mask, position_ids,
// past_key_values.N.key/value) and outputs (logits, present.N.key/value), the names Optimum,
// Transformers.js and ONNX Runtime GenAI use. Each dim gets a symbol with a range; the sample values
// are the hints. Questions the ranges cannot answer become guards; a dim the code specializes is
// reported with the place in the model code that did it.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "hfx/ir/graph.h"
#include "hfx/models/model.h"

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
};

/// The dynamic-shape contract of a captured graph: per input, per axis, a symbol and its range or a fixed size.
struct AxisContract {
  std::string symbol;  ///< empty if static
  int64_t min = 0, max = 0;  ///< for static: both equal the size
};
using ShapeContract = std::map<std::string, std::vector<AxisContract>>;

struct CapturedProgram {
  std::string component;  ///< "model", "prefill", "decode", ...
  std::shared_ptr<Graph> graph;
  ShapeContract contract;
  std::vector<Guard> guards;  ///< deferred runtime asserts
};

/// Captures one call of `model`. Throws hfx::Error("capture", ...) naming the architecture, the
/// component and the inputs if the model's code fails on symbolic inputs.
CapturedProgram capture_causal_lm(const CausalLM& model, const CaptureOptions& opts);

}  // namespace hfx
