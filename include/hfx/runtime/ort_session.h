// hfx/runtime/ort_session.h — a thin RAII wrapper over one ONNX Runtime inference session.
//
// The header does not include ONNX Runtime's headers: consumers only see plain C++ types. Tensors
// cross the boundary as `RtTensor` (a dtype name, a shape and the raw row-major bytes). Every error
// that ONNX Runtime raises is rethrown as hfx::Error("ort", ...) with ORT's own message kept.
//
//   hfx::rt::OrtSession s("model.onnx", {.intra_op_threads = 2});
//   auto out = s.run({{"x", hfx::rt::RtTensor::f32({2, 3}, xs)}});
//   std::vector<float> y = out.at(0).second.to_f32();
//
// Only built when ONNX Runtime was found (HFX_HAVE_ORT); see cmake/onnxruntime.cmake.
#pragma once
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hfx/runtime/shape_restriction.h"

namespace hfx::rt {

/// Bytes per element of a dtype name ("float32", "float16", "bfloat16", "float64", "int64", "int32",
/// "int16", "int8", "uint8", "uint16", "uint32", "uint64", "bool"). Throws hfx::Error("ort") otherwise.
size_t dtype_size(std::string_view dtype);

/// A dense tensor as raw bytes. `data.size()` must equal numel() * dtype_size(dtype).
struct RtTensor {
  std::string dtype = "float32";
  std::vector<int64_t> shape;  ///< empty = scalar
  std::vector<uint8_t> data;   ///< row-major, native (little-endian) byte order

  /// Product of the dims (1 for a scalar).
  int64_t numel() const;

  static RtTensor f32(std::vector<int64_t> shape, std::span<const float> values);
  static RtTensor i64(std::vector<int64_t> shape, std::span<const int64_t> values);
  static RtTensor i32(std::vector<int64_t> shape, std::span<const int32_t> values);
  /// float32 values stored as float16 (round to nearest even).
  static RtTensor f16_from_f32(std::vector<int64_t> shape, std::span<const float> values);
  /// A tensor of `dtype` filled with zero bytes.
  static RtTensor zeros(std::string dtype, std::vector<int64_t> shape);

  /// Values as float: float32 as is; float16, bfloat16 and float64 converted.
  std::vector<float> to_f32() const;
  /// Values as int64: int64 as is; int32, int16, int8, uint8 and bool widened.
  std::vector<int64_t> to_i64() const;
};

/// One dimension of a declared input or output: `value` >= 0 when fixed, -1 when symbolic or unknown
/// (then `symbol` holds the dim_param name, empty if the model names none).
struct Dim {
  int64_t value = -1;
  std::string symbol;
  bool fixed() const { return value >= 0; }
};

/// A graph input or output as the session declares it. `dtype` uses the names of dtype_size();
/// non-tensor values (sequences, maps) show as "sequence"/"map"/"optional" with no shape.
struct IoInfo {
  std::string name;
  std::string dtype;
  std::vector<Dim> shape;
  /// "[batch,sequence,64]" — for messages.
  std::string shape_str() const;
};

/// How ORT optimizes the graph at load time (ORT's GraphOptimizationLevel).
enum class GraphOpt { Disabled, Basic, Extended, All };

struct SessionOptions {
  int intra_op_threads = 1;  ///< 0 = ORT's default (one per core)
  GraphOpt graph_opt = GraphOpt::All;
  /// MLAS prepacking of constant MatMul weights at load (false: ONNX Runtime's "session.disable_prepacking").
  /// Unset: what the export advises for this graph (onnx/session_options.json, hfx/export/onnx.h), see
  /// resolve_prepacking().
  std::optional<bool> prepacking{};
  /// When non-empty, ORT profiling is on and writes "<profile_prefix>_<date>.json"; see end_profiling().
  std::string profile_prefix{};
  /// When non-empty, ORT writes the optimized model here (useful to inspect fusions).
  std::filesystem::path optimized_model_path{};
};

/// Whether a session of `model` prepacks: HFX_ORT_PREPACK=1/0 when set (an override for measurements), else
/// `requested`, else the export's advice for that graph (onnx/session_options.json), else off (a folder
/// exported before the advice existed: its float graphs load fastest without).
bool resolve_prepacking(const std::filesystem::path& model, std::optional<bool> requested = std::nullopt);

/// Named tensors, in the order given (feeds) or in the order of the requested outputs (results).
using NamedTensors = std::vector<std::pair<std::string, RtTensor>>;

/// One loaded model. Move-only; `run` may be called from several threads at once (ORT allows it).
class OrtSession {
 public:
  explicit OrtSession(const std::filesystem::path& model, const SessionOptions& options = {});
  ~OrtSession();
  OrtSession(OrtSession&&) noexcept;
  OrtSession& operator=(OrtSession&&) noexcept;
  OrtSession(const OrtSession&) = delete;
  OrtSession& operator=(const OrtSession&) = delete;

  const std::vector<IoInfo>& inputs() const;
  const std::vector<IoInfo>& outputs() const;
  std::vector<std::string> input_names() const;
  /// Inputs backed by an initializer (ONNX defaults, e.g. gemma3's token_type_ids): ONNX Runtime does not
  /// list them among the inputs, and a run may feed them or leave them out.
  std::vector<std::string> overridable_input_names() const;
  std::vector<std::string> output_names() const;
  /// The declared input/output with this name; throws hfx::Error("ort") listing the names otherwise.
  const IoInfo& input(std::string_view name) const;
  const IoInfo& output(std::string_view name) const;

  /// Runs the model. Feeds are checked first against the declared inputs (known name, dtype, rank,
  /// fixed dims, one value per symbolic dim name, byte count, the contract's restrictions) so that a
  /// mistake names the input.
  /// `fetch` selects outputs by name; empty = all outputs in declaration order.
  NamedTensors run(const NamedTensors& feeds, const std::vector<std::string>& fetch = {}) const;

  /// Shape rules of the graph's contract (ONNX metadata hfx.contract "restrictions"); run() refuses a
  /// call that breaks one with hfx::Error("ort", "expected ... (out of the graph's contract: ...)").
  const std::vector<ShapeRestriction>& restrictions() const;

  /// Stops profiling and returns the JSON file's path; empty when profiling was not enabled.
  std::string end_profiling();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// The KV cache of a merged decoder (Optimum's layout: past_key_values.N.* in, present.N.* out) as the ONNX
/// Runtime engines carry it from call to call: empty pasts [batch, heads, 0, head_dim] first, then each
/// call's presents as the next call's pasts.
class DecoderCache {
 public:
  /// Reads `decoder`'s past_key_values.* inputs; throws hfx::Error(component, ...) unless each is [batch,
  /// heads, past, head_dim] with fixed heads and head_dim.
  DecoderCache(const OrtSession& decoder, const std::string& component);
  /// Empty pasts for a batch of `batch` rows (before the first call).
  void reset(int64_t batch);
  /// Moves the pasts into `feeds` (the cache is empty until take()).
  void feed(NamedTensors& feeds);
  /// The present.* names to fetch, in the order take() expects them.
  const std::vector<std::string>& presents() const { return presents_; }
  /// Takes the presents from `out`, where they start at index `first`, as the next pasts.
  void take(NamedTensors& out, size_t first);

 private:
  std::vector<std::string> names_, presents_;
  std::vector<std::pair<int64_t, int64_t>> dims_;
  NamedTensors past_;
};

/// Looks up a result by name; throws hfx::Error("ort") if absent.
const RtTensor& find_tensor(const NamedTensors& tensors, std::string_view name);

/// The ONNX Runtime version string of the loaded library, e.g. "1.30.0".
std::string ort_version();

}  // namespace hfx::rt
