// src/export/onnx/lowering.h — stage 4 and 5 of the ONNX backend: the translation table, the lowering
// context every translation writes through, and the ONNX IR fixes.
//
// Lowering walks the captured Graph in order and calls, per node, the translation registered for its
// op (translations.cpp, the one place the table is declared). A translation reads its node's inputs
// and attributes and emits ONNX nodes through `LoweringContext`, which owns naming, constants, dtype
// casts, and the run-time materialization of symbolic sizes (each symbol is read from the graph input
// axis that defines it with Shape, expressions are built from Add/Mul/Div/Mod/Min/Max and cached per
// expression text). Parameters become initializers whose bytes are attached only when the model is
// written (write_onnx_model), one tensor at a time, so that external data streams. A f16/bf16 parameter
// that the graph only casts to f32 (the models' `F::to(w, F32)` at use) or gathers rows from (embedding
// tables, whose rows eager casts) keeps its checkpoint dtype: its initializer holds the checkpoint's
// bytes as they are and one Cast node in the graph widens it, exactly what eager computes; the external
// data file is then a near-copy of the checkpoint.
#pragma once
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <onnx/onnx_pb.h>  // defines ONNX_API, then includes onnx-ml.pb.h
#include <nlohmann/json.hpp>

#include "hfx/capture/capture.h"
#include "hfx/export/exporter.h"
#include "hfx/export/registry.h"
#include "hfx/ir/graph.h"

namespace hfx::io {
class WeightStore;
}

namespace hfx::onnx_export {

/// What lowering needs to know besides the graph.
struct LowerOptions {
  int opset = OnnxConfig::kDefaultOpset;  ///< OnnxConfig::kMinOpset..kMaxOpset
  std::string target = "standard";        ///< "standard" or "ort"
  std::string graph_name = "hfx";
  ShapeContract contract;     ///< stored as metadata and enforced by in-graph guards
  std::vector<Guard> guards;  ///< deferred runtime asserts from capture
  bool emit_guards = true;    ///< in-graph contract checks (see LoweringContext::emit_guards)
  std::map<std::string, std::string> metadata_props;  ///< extra metadata_props of the ModelProto
  /// target ort: the stage-3 pass gqa_fusion's record (ExportContext::gqa), which the translations of
  /// hfx.sdpa and aten.cat follow; null for target standard.
  const GqaFusionRecord* gqa = nullptr;
  /// target ort: the stage-3 pass skip_rms_norm_fusion's record (ExportContext::skip_rms_norm), which the
  /// translations of hfx.rms_norm follow and whose absorbed adds emit nothing; null for target standard.
  const SkipNormRecord* skip_rms_norm = nullptr;
  /// f16/bf16 parameters read only by casts to f32 (or gathered, then cast) stay f16/bf16 initializers
  /// followed by a Cast node (half the bytes, no conversion when writing; numerics unchanged since the
  /// widening is exact). ONNX Runtime folds the Cast of an initializer when it loads the graph.
  bool keep_param_dtype = true;
  /// The export's weight dtype (--dtype resolved): every floating parameter is stored as this, f16/bf16
  /// behind one Cast to f32. Unset: keep_param_dtype's rule.
  std::optional<DType> weight_dtype;
  /// Linear weights stored transposed, [in, out], the operand MatMul reads (weight_layout.h): nothing
  /// for ONNX Runtime to fold at load. Off: MatMul(x, Transpose(W)) as PyTorch's exporter writes it.
  bool pretranspose_weights = true;
  /// With pretranspose_weights: the parameters (by name) the whole export folder stores transposed, decided
  /// over every program that shares its weights file (params_to_transpose(graphs)), so a weight one program
  /// reads as a linear and another only gathers from is stored once, in one layout. Null: decided for this
  /// graph alone.
  const std::set<std::string>* transpose_params = nullptr;
  /// MatMulNBits (target ort) with accuracy_level 4: int8 activations
  /// (quant::QuantOptions::int8_activations).
  bool int8_activations = false;
  /// Graph inputs backed by an initializer of zeros [1, …, 1] (InputDecl::zero_default): callers may omit
  /// them.
  std::vector<std::string> zero_default_inputs;
};

class LoweringContext;

/// Emits the ONNX nodes of one hfx node.
using OnnxTranslation = std::function<void(LoweringContext& cx, const Node& n)>;

struct OnnxTranslationEntry {
  OnnxTranslation fn;
  std::string emits;  ///< what it emits, for `hfx registries` ("Add (+Cast)")
};

/// The translation table (declared once, in translations.cpp).
std::map<std::string, OnnxTranslationEntry>& onnx_translation_table();
/// Replaces the translation of `op` and returns the previous one (empty if none), so a caller can
/// restore it. Passing an empty function removes the entry.
OnnxTranslation register_onnx_translation(const std::string& op, OnnxTranslation fn);

/// A lowered model: the proto (initializers for parameters have dims and type but no bytes yet) and
/// where each parameter's bytes come from.
/// ONNX Runtime's contrib operator domain (the fused operators of --target ort).
inline constexpr const char* kContribDomain = "com.microsoft";

struct LoweredModel {
  onnx::ModelProto model;
  std::map<std::string, const Value*> param_sources;  ///< initializer name → graph Param value
  std::set<std::string> transposed;  ///< initializers whose bytes are the 2-D source transposed
  std::vector<std::string> warnings;
};

/// Stage 4: lowers `g` to ONNX with the translation table. Throws hfx::Error("onnx", ...) naming the
/// node for an op without a translation.
LoweredModel lower_graph(const Graph& g, const LowerOptions& opts);

// ------------------------------------------------------------------ stage 5: IR fixes
struct OnnxIrFix {
  std::string name;
  /// Rewrites the model if the fix applies; returns true if it changed something.
  std::function<bool(onnx::ModelProto& m, std::vector<std::string>& warnings)> fix;
  std::string reason;  ///< the bug it works around and when to remove it
};
/// The IR fixes, in the order they run (declared once, in ir_fixes.cpp). Tests may append and remove.
std::vector<OnnxIrFix>& onnx_ir_fixes();
/// Runs every IR fix; returns the names of those that changed the model.
std::vector<std::string> apply_onnx_ir_fixes(onnx::ModelProto& m, std::vector<std::string>& warnings);

// ------------------------------------------------------------------ writing
struct WriteStats {
  uint64_t proto_bytes = 0;
  uint64_t data_bytes = 0;  ///< external data file size (0 without external data)
  int64_t initializers = 0;
};

/// The external data file of an export, shared by every graph written through it (prefill, decode and
/// the merged model of export_for_generation reference one `model.onnx_data`): each parameter's bytes
/// are written once, at a 4096-aligned offset, and a later graph that reads the same parameter gets the
/// same extent. Bytes stream in large sequential writes — copy_file_range from the checkpoint file when
/// they are unchanged (no user-space copy, nothing mapped), else read and converted in 8 MiB chunks —
/// so memory stays flat whatever the tensor sizes; written ranges are handed to writeback as they
/// complete, which bounds the dirty pages. Bytes go to a temp file next to `path`;
/// finish() fsyncs and renames it; destroying an unfinished file removes the temp file.
class ExternalDataFile {
 public:
  struct Extent {
    uint64_t offset = 0, length = 0;
  };
  /// `store` (optional) is where parameters come from: file-backed tensors are copied from their file
  /// and their mapped pages released after the copy.
  explicit ExternalDataFile(const std::string& path, const io::WeightStore* store = nullptr);
  ~ExternalDataFile();
  ExternalDataFile(const ExternalDataFile&) = delete;
  ExternalDataFile& operator=(const ExternalDataFile&) = delete;

  /// The file name the graphs reference (relative to the graph file, which sits in the same folder).
  const std::string& location() const { return location_; }
  const std::string& path() const { return path_; }
  /// Writes parameter `name` (data `t`) stored as `as` unless the same bytes were written before.
  Extent add(const std::string& name, const Tensor& t, DType as);
  /// Writes an initializer's raw bytes (a tensor the lowering computed) unless the same name and bytes were
  /// written before.
  Extent add_bytes(const std::string& name, const std::string& bytes);
  /// Flushes, fsyncs and renames the temp file into place. Idempotent.
  void finish();
  uint64_t size() const { return offset_; }
  /// The file's SHA-256 (hex), computed on a second thread while the tensors are written, so the manifest
  /// need not read the file again; set by finish(), "" if it could not be computed.
  const std::string& sha256() const { return sha256_; }
  /// Called after each tensor add() writes, with the file's size so far (an export's progress bar).
  std::function<void(uint64_t bytes)> on_written;
  int64_t tensors() const { return static_cast<int64_t>(extents_.size()); }
  bool finished() const { return finished_; }

 private:
  void write_all(const void* p, size_t n);
  void pad_to(uint64_t align);
  void copy_from_file(int src_fd, uint64_t src_off, uint64_t n);
  // Writes the strided view `t` as contiguous `as`, a chunk of its leading rows at a time.
  void write_rows(const Tensor& t, DType as);
  // Where a parameter's bytes can be read from its checkpoint file instead of its mapping.
  struct Source {
    int fd = -1;              // the checkpoint file, or -1: read the tensor in memory
    uint64_t offset = 0;      // its first byte in the file
    bool transposed = false;  // the tensor is the 2-D transpose of the file's [R, C]
  };
  Source source_of(const std::string& name, const Tensor& t);
  int source_fd(const std::string& file);
  void pread_all(int fd, char* dst, uint64_t n, uint64_t off);
  void write_transposed(const Source& src, const Tensor& t, DType as);
  // The hashing thread: reads back (from the page cache) each byte range once it is final.
  void hash_loop();
  void mark_complete();
  void stop_hasher();
  std::thread hasher_;
  std::mutex hash_mu_;
  std::condition_variable hash_cv_;
  uint64_t complete_ = 0;  // bytes [0, complete_) are final
  bool closing_ = false;   // finish(): hash up to complete_, then the digest
  bool abandon_ = false;   // failed or destroyed: stop, no digest
  int hash_fd_ = -1;
  std::string sha256_;
  void after_write();
  [[noreturn]] void fail(const std::string& what);

  std::string path_, tmp_, location_;
  const io::WeightStore* store_ = nullptr;
  int fd_ = -1;
  uint64_t offset_ = 0;
  uint64_t kicked_ = 0;   // bytes handed to writeback
  uint64_t dropped_ = 0;  // bytes waited for and dropped from the page cache
  bool finished_ = false;
  std::map<std::string, Extent> extents_;
  std::map<std::string, int> src_fds_;  // checkpoint file → open descriptor
  std::vector<char> buf_, cvt_;
};

/// Writes `lm` to `path` (temp + rename). With `data`, every parameter's bytes go to that external
/// data file (written once per parameter, shared with the other graphs written through it; the caller
/// finishes it); else bytes are embedded and the proto must stay under 2 GB. Floating parameters are
/// written in their initializer's dtype: f32, or f16/bf16 kept as in the checkpoint (see LowerOptions).
WriteStats write_onnx_model(LoweredModel& lm, const std::string& path, ExternalDataFile* data);
/// Same, with a data file of its own (`<file>.onnx_data` next to `path`) when `external_data`.
WriteStats write_onnx_model(LoweredModel& lm, const std::string& path, bool external_data,
                            const io::WeightStore* store = nullptr);

// ------------------------------------------------------------------ the context
/// ONNX element type of an hfx dtype as exported (floating types all become FLOAT: the graph computes in
/// f32).
int onnx_elem_type(DType dt);
/// Export dtype: f16/bf16 → f32, others unchanged.
DType export_dtype(DType dt);
/// ONNX element type of a tensor stored as `dt` (f16 → FLOAT16, bf16 → BFLOAT16; others as onnx_elem_type).
int onnx_storage_elem_type(DType dt);
/// hfx dtype of an ONNX element type (throws for one hfx does not have).
DType dtype_of_onnx_elem(int elem);

class LoweringContext {
 public:
  LoweringContext(const Graph& g, const LowerOptions& o, onnx::GraphProto& gp,
                  std::vector<std::string>& warnings);
  /// An initializer of zeros [1, …, 1] named as the graph input `v`: its default
  /// (LowerOptions::zero_default_inputs).
  void add_zero_default(const Value* v);
  bool zero_default(const Value* v) const;

  int opset() const { return opts_.opset; }
  const std::string& target() const { return opts_.target; }
  bool int8_activations() const { return opts_.int8_activations; }
  const LowerOptions& options() const { return opts_; }
  const Graph& graph() const { return g_; }
  onnx::GraphProto& proto() { return gp_; }

  /// ONNX name of a value (graph input, initializer or earlier node output).
  std::string name(const Value* v);
  /// ONNX name of node input i ("" when the optional input is absent).
  std::string in(const Node& n, size_t i);
  /// ONNX name for node output i (what its users will read).
  std::string out(const Node& n, size_t i = 0);
  /// Makes later users of `v` read `onnx_name` (fusions that take over a value).
  void rebind(const Value* v, const std::string& onnx_name);
  /// A fresh tensor name under the node's name.
  std::string tmp(const Node* n, const std::string& hint);

  /// Appends a node. `outs` are tensor names; `domain` "" = ai.onnx.
  onnx::NodeProto& emit(const std::string& op, const std::vector<std::string>& ins,
                        const std::vector<std::string>& outs, const Node* for_node = nullptr,
                        const std::string& domain = "");
  /// Appends a one-output node with a fresh output name and returns that name.
  std::string op(const Node* n, const std::string& op_type, const std::vector<std::string>& ins,
                 const std::string& hint = "", const std::string& domain = "");

  // attributes
  static void attr(onnx::NodeProto& p, const std::string& k, int64_t v);
  static void attr(onnx::NodeProto& p, const std::string& k, double v);
  static void attr(onnx::NodeProto& p, const std::string& k, const std::vector<int64_t>& v);
  static void attr(onnx::NodeProto& p, const std::string& k, const std::string& v);
  static void attr(onnx::NodeProto& p, const std::string& k, const onnx::TensorProto& t);

  // constants (initializers, cached by content)
  std::string i64s(const std::vector<int64_t>& v);  ///< int64 [n]
  std::string i64(int64_t v);                       ///< int64 scalar []
  std::string scalar(double v, DType dt);           ///< rank-0 of dt (export dtype)
  /// A 1-element tensor proto of dt holding v (for ConstantOfShape's value).
  static onnx::TensorProto value_tensor(double v, DType dt);

  // symbolic sizes, materialized at run time
  std::string sym(const Sym& e);                 ///< int64 [1]
  std::string sym_scalar(const Sym& e);          ///< int64 []
  std::string syms(const std::vector<Sym>& es);  ///< int64 [n]
  bool sym_available(const Sym& e) const;        ///< every free symbol has a defining input axis

  /// x cast from dtype `from` to `to` (export dtypes; no node when equal).
  std::string cast(const Node* n, const std::string& x, DType from, DType to);
  /// Input i of `n` cast to `to`.
  std::string in_as(const Node& n, size_t i, DType to);
  /// Export dtype of a value.
  static DType dt(const Value* v) { return export_dtype(v->type.dtype); }

  /// Whether the parameter behind `v` (through casts) is stored transposed ([in, out]; weight_layout.h).
  bool weight_transposed(const Value* v) const;
  void set_transposed(std::set<const Value*> params) { transposed_ = std::move(params); }

  void use_domain(const std::string& domain, int version);
  const std::map<std::string, int>& domains() const { return domains_; }
  void warn(const std::string& w);

  /// A shape rule the graph's contract states beyond its ranges (hfx/runtime/shape_restriction.h);
  /// written into the hfx.contract metadata as "restrictions", once per distinct rule.
  void restrict(const nlohmann::json& restriction);
  const std::vector<nlohmann::json>& restrictions() const { return restrictions_; }

  /// Emits the contract checks (symbol ranges and deferred guards) in front of the graph.
  void emit_guards();
  /// Registers the graph inputs (called first).
  void declare_inputs();

 private:
  // emit_guards' pieces: one named check (its text and the bool [1] that holds when it passes).
  struct ContractCheck {
    std::string what, ok;
  };
  std::string contract_cmp(const std::string& op_type, const std::string& a, const std::string& b);
  std::string contract_and(const std::string& a, const std::string& b);
  void range_checks(std::vector<ContractCheck>& checks);
  void dim_checks(std::vector<ContractCheck>& checks);
  void guard_checks(std::vector<ContractCheck>& checks);
  void contract_gate(const Value* v, const std::string& ok, const std::string& what,
                     const std::string& after);
  struct Origin {
    std::string input;
    int axis;
  };
  std::string unique(const std::string& base);
  std::string sym_node(const Sym& e);

  const Graph& g_;
  LowerOptions opts_;
  onnx::GraphProto& gp_;
  std::vector<std::string>& warnings_;
  std::map<const Value*, std::string> names_;
  std::set<std::string> used_;
  std::map<std::string, std::string> const_cache_, sym_cache_, sym_scalar_cache_;
  std::map<std::string, Origin> origins_;  // symbol → defining input axis
  std::map<std::string, Sym> derived_;     // symbol → expression over other symbols
  std::map<std::string, int> domains_;
  std::set<std::string> warned_;
  std::set<const Value*> transposed_;
  std::vector<nlohmann::json> restrictions_;
  int counter_ = 0;
};

/// IR version that goes with an opset (ORT checks them together).
int ir_version_for_opset(int opset);
/// A value info: name, element type of `dt` and the shape (symbolic dims as dim_param).
void set_type(onnx::ValueInfoProto* vi, const std::string& name, DType dt, const SymShape& shape);

}  // namespace hfx::onnx_export
