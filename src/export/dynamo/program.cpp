// hfx Graph → torch.export ExportedProgram JSON (see program.h): the composite ops without an exact ATen
// counterpart decomposed, then every node through the ATen table (aten_table.cpp) into the program's graph,
// signature and range constraints.
#include "export/dynamo/program.h"
#include "export/dynamo/aten_table.h"

#include <fmt/format.h>

#include <cmath>
#include <functional>
#include <set>

#include "hfx/core/error.h"
#include "hfx/ops/builder.h"
#include "hfx/ops/op_schema.h"
#include "hfx/passes/pass.h"

namespace hfx::dynamo {

using json = nlohmann::json;

using namespace detail;

int lower_composites(Graph& g) {
  int count = 0;
  bool rope = false, sdpa = false, moe = false, linear_q = false;
  for (const auto& n : g.nodes()) {
    if (n->op == "hfx.rope") rope = true, count++;
    if (n->op == "hfx.moe") moe = true, count++;
    if (n->op == "hfx.linear_q") linear_q = true, count++;
    if (n->op == "hfx.sdpa" && !sdpa_is_exact(*n)) sdpa = true, count++;
  }
  if (rope) run_pass(g, decompose_pass({"hfx.rope"}));
  if (moe) run_pass(g, decompose_pass({"hfx.moe"}));
  if (linear_q) run_pass(g, decompose_pass({"hfx.linear_q"}));
  if (sdpa) {
    // Only the inexact ones (decompose_pass takes every node of an op), node by node.
    std::vector<Node*> todo;
    for (const auto& n : g.nodes())
      if (n->op == "hfx.sdpa" && !sdpa_is_exact(*n)) todo.push_back(n.get());
    for (Node* n : todo) decompose_node(g, n);
  }
  return count;
}

Pass lower_composites_pass() {
  return Pass{"lower_composites",
              "requires: a captured program; ensures: no hfx.rope, hfx.moe or hfx.linear_q, and only the "
              "hfx.sdpa that "
              "aten.scaled_dot_product_attention computes exactly, remain",
              [](Graph& g) { return lower_composites(g) > 0; }};
}

namespace {

// The program's placeholders (its "inputs" and "input_specs"), the call signature's inputs.
struct Placeholders {
  json inputs = json::array(), input_specs = json::array(), call_inputs = json::array();
};

// Placeholders: parameters, then constants, then user inputs (torch's lifted order); each user input's
// dims become the sources of their symbols.
Placeholders place_inputs(Emitter& e, const Graph& g, SerializedProgram& sp) {
  Placeholders ph;
  for (const Value* p : g.params()) {
    std::string name = e.fresh("p_" + p->name);
    e.bind(p, name);
    ph.inputs.push_back(json{{"as_tensor", {{"name", name}}}});
    e.tensor_values[name] = e.tensor_meta(p->type);
    ph.input_specs.push_back(json{{"parameter", {{"arg", {{"name", name}}}, {"parameter_name", p->name}}}});
    sp.parameters.push_back({p->name, name, p});
  }
  for (const Value* c : g.consts()) {
    std::string name = e.fresh("c_" + c->name);
    e.bind(c, name);
    ph.inputs.push_back(json{{"as_tensor", {{"name", name}}}});
    e.tensor_values[name] = e.tensor_meta(c->type);
    std::string fqn = fx_name(c->name);
    ph.input_specs.push_back(
        json{{"tensor_constant", {{"arg", {{"name", name}}}, {"tensor_constant_name", fqn}}}});
    sp.constants.push_back({fqn, name, c});
  }
  for (const Value* u : g.inputs()) {
    std::string name = e.fresh(u->name);
    e.bind(u, name);
    json a{{"as_tensor", {{"name", name}}}};
    ph.inputs.push_back(a);
    ph.call_inputs.push_back(a);
    e.tensor_values[name] = e.tensor_meta(u->type);
    ph.input_specs.push_back(json{{"user_input", {{"arg", a}}}});
    sp.user_inputs.push_back(u->name);
    for (size_t d = 0; d < u->type.shape.size(); d++)
      if (u->type.shape[d].kind() == Sym::Kind::Symbol && !e.sources.count(u->type.shape[d].name()))
        e.sources[u->type.shape[d].name()] = {name, static_cast<int>(d)};
  }
  return ph;
}

// Deferred runtime asserts, as torch.export places them: right after the inputs.
void emit_guards(Emitter& e, const std::vector<Guard>& guards) {
  for (const Guard& gd : guards) {
    if (gd.expr.is_const()) continue;
    std::string msg = fmt::format("Runtime assertion failed for expression {} in [{}, {}] ({} at {})",
                                  gd.expr.str(), gd.lower, gd.upper, gd.what, gd.where);
    auto check = [&](const char* target, const char* rel, int64_t v) {
      std::string b = e.sym_bool(target, rel, gd.expr, v);
      e.emit_void("torch.ops.aten._assert_scalar.default",
                  json::array({named("self", json{{"as_sym_bool", {{"as_name", b}}}}),
                               named("assert_msg", json{{"as_string", msg}})}));
    };
    if (gd.lower == gd.upper) {
      check("_operator.eq", "Eq", gd.lower);
    } else {
      if (gd.lower > INT64_MIN / 4) check("_operator.ge", "GreaterThan", gd.lower);
      if (gd.upper < SymRange::kInf) check("_operator.le", "LessThan", gd.upper);
    }
  }
}

// torch.export's own input check (range_constraints) skips a minimum of 0, 1 or 2 (torch specializes sizes
// 0 and 1), so an empty batch or prompt, or an empty past where the contract says at least 1, would run and
// return output. Each input-dim symbol with a positive minimum also gets a runtime assert of it.
std::vector<Guard> with_minimums(const Graph& g, const Emitter& e, std::vector<Guard> guards) {
  for (const auto& [name, src] : e.sources) {
    if (!g.env().has_symbol(name)) continue;
    const SymRange r = g.env().range_of(name);
    if (r.min > 0)
      guards.push_back({Sym::symbol(name), r.min, SymRange::kInf, "src/export/dynamo/program.cpp",
                        fmt::format("{} >= {} (input '{}' dim {})", name, r.min, src.tensor, src.dim)});
  }
  return guards;
}

// Every node through its ATen entry.
void emit_nodes(Emitter& e, const Graph& g) {
  for (const auto& np : g.nodes()) {
    const Node& n = *np;
    const AtenEntry* entry = find_entry(n.op);
    if (!entry)
      HFX_THROW("dynamo", "expected an ATen mapping for op {} (node '{}'), got none; lower composites first",
                n.op, n.name);
    if (n.op == "hfx.sdpa" && !sdpa_is_exact(n))
      HFX_THROW("dynamo",
                "expected node '{}' (hfx.sdpa) to be decomposed: it has no exact "
                "aten.scaled_dot_product_attention form",
                n.name);
    if (n.outputs.size() != 1)
      HFX_THROW("dynamo", "expected one output of node '{}', got {}", n.name, n.outputs.size());
    std::string out = e.fresh(n.outputs[0]->name);
    e.bind(n.outputs[0], out);
    e.set_contiguous(n.outputs[0], true);
    entry->lower(e, n, out);
  }
}

// forward_arg_names: the user inputs, with the cache leaves grouped as one past_key_values argument.
std::vector<std::string> forward_arg_names(const std::vector<std::string>& user_inputs) {
  std::vector<std::string> seen;
  const bool group = groups_kv_leaves(user_inputs);
  for (const auto& n : user_inputs) {
    int layer;
    std::string kind;
    std::string k =
        group && is_cache_leaf(n, "past_key_values", &layer, &kind) ? "past_key_values" : kwarg_name(n);
    if (std::find(seen.begin(), seen.end(), k) == seen.end()) seen.push_back(k);
  }
  return seen;
}

}  // namespace

SerializedProgram serialize_program(const Graph& g, const std::vector<Guard>& guards,
                                    const ProgramLabels* labels) {
  SerializedProgram sp;
  Emitter e(g);
  // Symbols get torch names in the order they first appear in the user inputs.
  for (const Value* v : g.inputs())
    for (const auto& d : v->type.shape)
      for (const auto& s : d.free_symbols()) e.torch_symbol(s);
  const Placeholders ph = place_inputs(e, g, sp);
  emit_guards(e, with_minimums(g, e, guards));
  emit_nodes(e, g);

  json outputs = json::array(), output_specs = json::array(), call_outputs = json::array();
  for (const Value* o : g.outputs()) {
    json a{{"as_tensor", {{"name", e.name_of(o)}}}};
    outputs.push_back(a);
    call_outputs.push_back(a);
    output_specs.push_back(json{{"user_output", {{"arg", a}}}});
    sp.user_outputs.push_back(o->name);
  }
  // Range constraints for every symbol that has a torch name.
  json ranges = json::object();
  for (const auto& [hfx, torch] : e.sym_names) {
    sp.symbols[torch] = hfx;
    SymRange r = g.env().has_symbol(hfx) ? g.env().range_of(hfx) : SymRange{};
    ranges[torch] = json{{"min_val", r.min}, {"max_val", r.bounded() ? json(r.max) : json(nullptr)}};
  }
  json custom{{"hfx", {{"symbols", sp.symbols}}}};
  if (labels) {
    json& m = custom["hfx"]["metadata"];
    m["hfx.component"] = labels->component;
    m["hfx.model_type"] = labels->model_type;
    if (labels->weight_dtype) m["hfx.weight_dtype"] = dtype_name(*labels->weight_dtype);
  }

  json graph{{"inputs", ph.inputs},
             {"outputs", outputs},
             {"nodes", e.nodes},
             {"tensor_values", e.tensor_values},
             {"sym_int_values", e.sym_int_values},
             {"sym_bool_values", e.sym_bool_values},
             {"is_single_tensor_return", false},
             {"custom_obj_values", json::object()},
             {"sym_float_values", json::object()}};
  json signature{{"inputs", ph.call_inputs},
                 {"outputs", call_outputs},
                 {"in_spec", input_treespec(sp.user_inputs)},
                 {"out_spec", output_treespec(sp.user_outputs)},
                 {"forward_arg_names", forward_arg_names(sp.user_inputs)}};
  sp.program = json{{"graph_module",
                     {{"graph", graph},
                      {"signature", {{"input_specs", ph.input_specs}, {"output_specs", output_specs}}},
                      {"module_call_graph", json::array({json{{"fqn", ""}, {"signature", signature}}})},
                      {"metadata", {{"custom", py_json(custom)}}}}},
                    {"opset_version", {{"aten", kAtenOpset}}},
                    {"range_constraints", ranges},
                    {"schema_version", {{"major", kSchemaMajor}, {"minor", kSchemaMinor}}},
                    {"verifiers", json::array({"ATEN"})},
                    {"torch_version", kTargetTorch}};
  return sp;
}

}  // namespace hfx::dynamo
