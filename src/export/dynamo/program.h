// An hfx Graph as a torch.export ExportedProgram (schema major 8), as torch serializes it to
// models/<name>.json: parameters lifted to placeholders with their Hugging Face FQNs, user inputs
// after them, nodes calling real ATen overloads with their schema argument names, symbolic sizes
// through aten.sym_size.int and _operator sym nodes, every symbol with its range constraint, and
// the root module_call_graph entry with the pytree treespecs of the inputs and outputs.
//
// The mapping from hfx ops to ATen overloads is one table (aten_table()), used both to write the
// program and to read it back (the interpreter that checks a written program runs).
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "hfx/ir/graph.h"
#include "hfx/passes/pass.h"

namespace hfx::dynamo {

/// The schema version stamped in every program: the field subset emitted exists since (8, 6), and
/// torch's loader checks only the major. Bump together with tests/data/dynamo/schema_v8.json.
constexpr int kSchemaMajor = 8;
constexpr int kSchemaMinor = 6;
constexpr const char* kTargetTorch = "2.11.0";
constexpr int kAtenOpset = 10;  ///< torch._C._get_max_operator_version() of torch 2.x

/// A lifted tensor (parameter or constant) and the value that holds it.
struct LiftedTensor {
  std::string fqn;          ///< state_dict / constants key (the Hugging Face name for parameters)
  std::string placeholder;  ///< graph input name ("p_model_embed_tokens_weight")
  const Value* value = nullptr;
};

struct SerializedProgram {
  nlohmann::json program;  ///< the ExportedProgram document
  std::vector<LiftedTensor> parameters, constants;
  std::vector<std::string> user_inputs;        ///< hfx input names, in placeholder order
  std::vector<std::string> user_outputs;       ///< hfx output names, in graph output order
  std::map<std::string, std::string> symbols;  ///< torch symbol ("s0") → hfx symbol ("batch_size")
};

/// What the archive says of the program in its custom metadata (graph_module.metadata.custom, under
/// hfx.metadata: "hfx.component", "hfx.model_type", "hfx.weight_dtype").
struct ProgramLabels {
  std::string component, model_type;
  std::optional<DType> weight_dtype;  ///< the dtype parameters are stored in; unset: not written
};

/// Serializes `g` (composite ops must already be lowered: see lower_composites), with `labels` (if given) in
/// its custom metadata. Throws hfx::Error("dynamo", ...) naming the node for an op without an ATen mapping.
SerializedProgram serialize_program(const Graph& g, const std::vector<Guard>& guards = {},
                                    const ProgramLabels* labels = nullptr);

/// Replaces composites that have no exact ATen op by their decompositions (hfx.rope always;
/// hfx.sdpa when it needs a sliding window, a softcap or bottom-right causal alignment with S != T).
/// Returns the number of nodes decomposed.
int lower_composites(Graph& g);
/// lower_composites as a named pass with its contract (run by the exporter through run_pass, so the
/// verifier checks the graph after it in Debug builds).
Pass lower_composites_pass();

/// The treespec strings torch.utils._pytree.treespec_dumps would write for the program's inputs
/// ((), {name: leaf, ..., "past_key_values": [(k, v), ...]}) and outputs ({"logits": leaf, ...}).
/// Whether the past_key_values.N.key/value (present.N.*) leaves among `names` form torch.export's list of
/// (key, value) tuples: only when no state leaf (past_conv.N, present_ssm.N, ...) sits beside them. A
/// hybrid's leaves all stay flat keywords: its KV layers are not contiguous in the flattened order and its
/// cache has no standard pytree.
bool groups_kv_leaves(const std::vector<std::string>& names);
/// Whether `name` is a cache leaf "<prefix>.<layer>.<kind>"; sets `layer` and `kind` when it is.
bool is_cache_leaf(const std::string& name, const char* prefix, int* layer, std::string* kind);
std::string input_treespec(const std::vector<std::string>& input_names);
std::string output_treespec(const std::vector<std::string>& output_names);

/// Python's json.dumps formatting (", " and ": " separators, ASCII escapes): torch's own style.
std::string py_json(const nlohmann::json& j);

/// Valid, unique Python identifier for an FX node name.
std::string fx_name(const std::string& raw);
/// The keyword a flat input leaf takes in a program's forward: its name as a Python identifier
/// (`past_conv.0` -> `past_conv_0`, `past_key_values.0.decoder.key` -> `past_key_values_0_decoder_key`).
/// torch.export's unlifted module (`ExportedProgram.module()`) makes each top-level keyword of the in_spec
/// a parameter of a generated Python function, so a dotted name there is a SyntaxError.
std::string kwarg_name(const std::string& leaf);

/// One row of the ATen table, for `hfx registries` and docs.
struct AtenRow {
  std::string hfx_op, target, note;
};
std::vector<AtenRow> aten_table_rows();

}  // namespace hfx::dynamo
