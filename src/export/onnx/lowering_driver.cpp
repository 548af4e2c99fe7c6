// The ONNX lowering driver (stage 4): lower_graph declares the inputs, weights and constants, translates
// every node through its registered translation, names the outputs as the signature says, and writes the
// opset imports and the metadata (shape contract, deferred guards, target). The context it drives is
// src/export/onnx/lowering.cpp.
#include <set>

#include <nlohmann/json.hpp>

#include "export/onnx/lowering.h"
#include "export/onnx/weight_layout.h"
#include "hfx/core/error.h"

#ifndef HFX_VERSION
#define HFX_VERSION "0"
#endif

namespace hfx::onnx_export {

namespace {

// Constants the graph reads, as initializers in their export dtype.
void declare_consts(LoweringContext& cx, const Graph& g, const std::set<const Value*>& read) {
  for (const Value* v : g.consts()) {
    if (!read.count(v)) continue;
    std::string nm = cx.tmp(nullptr, v->name);
    cx.rebind(v, nm);
    onnx::TensorProto* t = cx.proto().add_initializer();
    t->set_name(nm);
    DType dt = export_dtype(v->data.dtype());
    t->set_data_type(onnx_elem_type(dt));
    for (auto d : v->data.shape()) t->add_dims(d);
    Tensor c = v->data.to(dt).contiguous();
    t->set_raw_data(std::string(static_cast<const char*>(c.raw()), c.nbytes()));
  }
}

// Every node through its registered translation; an error names the node and its types.
void translate_nodes(LoweringContext& cx, const Graph& g) {
  const auto& table = onnx_translation_table();
  const SkipNormRecord* skip = cx.options().skip_rms_norm;
  for (const auto& n : g.nodes()) {
    // A residual add the stage-3 pass gave to a fused SkipSimplifiedLayerNormalization: that node computes
    // it.
    if (skip && skip->absorbed.count(n->name)) continue;
    auto it = table.find(n->op);
    if (it == table.end() || !it->second.fn)
      HFX_THROW("onnx",
                "expected a translation for op {} (node '{}'), got none; add one in "
                "src/export/onnx/translations.cpp",
                n->op, n->name);
    try {
      it->second.fn(cx, *n);
    } catch (const Error& e) {
      HFX_THROW("onnx", "lowering {} (node '{}', {} → {}) failed: {}", n->op, n->name,
                n->inputs.empty() || !n->inputs[0] ? "-" : n->inputs[0]->type.str(),
                n->outputs[0]->type.str(), e.what());
    }
  }
}

// Outputs: names as the signature says; an Identity where the value is an input, initializer or a value
// already named otherwise.
void declare_outputs(LoweringContext& cx, const Graph& g) {
  std::set<std::string> out_names;
  for (const Value* v : g.outputs()) {
    std::string src = cx.name(v);
    std::string want = v->name;
    if (src != want || v->kind != ValueKind::NodeOutput || out_names.count(want)) {
      if (out_names.count(want))
        HFX_THROW("onnx", "expected unique graph output names, got '{}' twice", want);
      cx.emit("Identity", {src}, {want});
    }
    out_names.insert(want);
    set_type(cx.proto().add_output(), want, v->type.dtype, v->type.shape);
  }
}

// The shape contract of the metadata: the capture's when given, else derived from the graph inputs and
// the shape env.
nlohmann::json contract_json(const Graph& g, const LowerOptions& opts) {
  nlohmann::json contract = nlohmann::json::object();
  for (const auto& [input, axes] : opts.contract) {
    nlohmann::json ja = nlohmann::json::array();
    for (const auto& a : axes) {
      nlohmann::json x = {{"min", a.min}, {"max", a.max}};
      if (!a.symbol.empty()) x["symbol"] = a.symbol;
      ja.push_back(x);
    }
    contract[input] = ja;
  }
  if (!opts.contract.empty()) return contract;
  for (const Value* v : g.inputs()) {
    nlohmann::json ja = nlohmann::json::array();
    for (const Sym& d : v->type.shape) {
      if (d.is_const()) {
        ja.push_back({{"min", d.value()}, {"max", d.value()}});
      } else if (d.kind() == Sym::Kind::Symbol && g.env().has_symbol(d.name())) {
        SymRange r = g.env().range_of(d.name());
        ja.push_back({{"symbol", d.name()}, {"min", r.min}, {"max", r.bounded() ? r.max : -1}});
      } else {
        SymRange r = g.env().bounds(d);
        ja.push_back({{"expr", d.str()}, {"min", r.min}, {"max", r.bounded() ? r.max : -1}});
      }
    }
    contract[v->name] = ja;
  }
  return contract;
}

// Opset imports and metadata: schema version, the shape contract and deferred guards, the target.
void write_model_info(onnx::ModelProto& m, LoweringContext& cx, const Graph& g, const LowerOptions& opts) {
  auto* op = m.add_opset_import();
  op->set_domain("");
  op->set_version(opts.opset);
  for (const auto& [d, ver] : cx.domains()) {
    auto* o = m.add_opset_import();
    o->set_domain(d);
    o->set_version(ver);
  }
  auto meta = [&](const std::string& k, const std::string& v) {
    auto* p = m.add_metadata_props();
    p->set_key(k);
    p->set_value(v);
  };
  nlohmann::json guards = nlohmann::json::array();
  for (const auto& gd : opts.guards)
    guards.push_back({{"expr", gd.expr.str()},
                      {"lower", gd.lower},
                      {"upper", gd.upper},
                      {"where", gd.where},
                      {"what", gd.what}});
  meta("hfx.schema_version", "1");
  nlohmann::json cj = {{"inputs", contract_json(g, opts)}, {"guards", guards}};
  if (!cx.restrictions().empty()) cj["restrictions"] = cx.restrictions();
  meta("hfx.contract", cj.dump());
  meta("hfx.target", opts.target);
  for (const auto& [k, v] : opts.metadata_props) meta(k, v);
}

}  // namespace

LoweredModel lower_graph(const Graph& g, const LowerOptions& opts) {
  ir_version_for_opset(opts.opset);  // validates the opset
  if (opts.target != "standard" && opts.target != "ort")
    HFX_THROW("onnx", "expected target 'standard' or 'ort', got '{}'", opts.target);
  LoweredModel lm;
  onnx::ModelProto& m = lm.model;
  m.set_ir_version(ir_version_for_opset(opts.opset));
  m.set_producer_name("hfx");
  m.set_producer_version(HFX_VERSION);
  m.set_model_version(1);
  onnx::GraphProto& gp = *m.mutable_graph();
  gp.set_name(opts.graph_name);
  LoweringContext cx(g, opts, gp, lm.warnings);
  cx.declare_inputs();
  // Values that some node or output reads (unused parameters are not exported).
  std::set<const Value*> read;
  for (const auto& n : g.nodes())
    for (const Value* v : n->inputs)
      if (v) read.insert(v);
  for (const Value* v : g.outputs()) read.insert(v);
  std::set<const Value*> transposed;
  if (opts.pretranspose_weights && opts.transpose_params) {
    for (const Value* p : g.params())
      if (opts.transpose_params->count(p->name)) transposed.insert(p);
  } else if (opts.pretranspose_weights) {
    transposed = params_to_transpose(g);
  }
  cx.set_transposed(std::move(transposed));
  declare_params(cx, g, read, lm);
  declare_consts(cx, g, read);
  if (opts.emit_guards) cx.emit_guards();
  translate_nodes(cx, g);
  declare_outputs(cx, g);
  write_model_info(m, cx, g, opts);
  return lm;
}

}  // namespace hfx::onnx_export
