// Capture: a model's own component runs on a TraceBuilder with symbolic inputs. Nothing about the model
// is changed: the model object is const and all state of the trace lives in the Graph, so eager output is
// identical before and after an export (tested). The inputs, their dims and the cache leaves come from
// the component's declaration (hfx/models/component.h) and the ProgramSpec; nothing here knows what
// kind of model it captures.
#include "hfx/capture/capture.h"

#include <algorithm>

#include <fmt/format.h>

#include "capture/generation_loops.h"
#include "hfx/core/error.h"

namespace hfx {

using capture::past_dims;
using capture::PastDims;

const char* call_kind_name(CallKind k) {
  switch (k) {
    case CallKind::Forward:
      return "forward";
    case CallKind::Prefill:
      return "prefill";
    case CallKind::Decode:
      return "decode";
    case CallKind::Merged:
      return "model";
  }
  return "?";
}

namespace {

std::string describe_inputs(const Graph& g) {
  std::string s;
  for (Value* v : g.inputs()) s += (s.empty() ? "" : ", ") + v->name + ": " + v->type.str();
  return s;
}

const InputDecl& input_decl(const ComponentDecl& c, const std::string& name) {
  for (const auto& i : c.inputs)
    if (i.name == name) return i;
  std::string known;
  for (const auto& i : c.inputs) known += (known.empty() ? "" : ", ") + i.name;
  HFX_THROW("capture", "expected an input of component '{}' among [{}], got '{}'", c.name, known, name);
}

// The symbols of one program, created on first use in input order (so a causal LM's symbols come in
// the order batch, sequence, past, as its signature names them).
struct Symbols {
  const ProgramSpec& spec;
  ShapeEnv& env;
  std::map<std::string, Sym> made;

  Sym dim(const std::string& name, const std::string& input) {
    if (auto it = made.find(name); it != made.end()) return it->second;
    auto it = spec.dims.find(name);
    if (it == spec.dims.end())
      HFX_THROW("capture", "expected a size for dim '{}' of input '{}' in program '{}', got none", name,
                input, spec.name);
    const DimSpec& d = it->second;
    Sym s = d.dynamic ? env.create_symbol(d.symbol, d.min, d.max, d.hint) : Sym(d.hint);
    made.emplace(name, s);
    return s;
  }
  // An axis entry: "name", "a+b" or a fixed size.
  Sym axis(const std::string& entry, const std::string& input) {
    Sym total(0);
    size_t start = 0;
    while (start <= entry.size()) {
      size_t plus = entry.find('+', start);
      std::string part = entry.substr(start, plus == std::string::npos ? std::string::npos : plus - start);
      bool number = !part.empty() && part.find_first_not_of("0123456789") == std::string::npos;
      total = total + (number ? Sym(static_cast<int64_t>(std::stoll(part))) : dim(part, input));
      if (plus == std::string::npos) break;
      start = plus + 1;
    }
    return total;
  }
};

AxisContract axis_contract(const Sym& s, const ShapeEnv& env) {
  if (auto v = s.maybe_value()) return AxisContract{"", *v, *v};
  SymRange r = env.bounds(s);
  return AxisContract{s.kind() == Sym::Kind::Symbol ? s.name() : s.str(), r.min, r.max};
}

void add_outputs(Graph& g, const ComponentDecl& decl, const NamedVars& outs,
                 const std::vector<std::string>& inputs) {
  for (const auto& [name, v] : outs) {
    if (!v.defined())
      HFX_THROW("capture", "expected output '{}' of component '{}' to be computed, got none", name,
                decl.name);
    g.add_output(name, v.value());
  }
  for (const CacheLeafDecl& c : decl.cache) {
    if (!g.find_output(c.present_output)) continue;
    bool has_past = std::find(inputs.begin(), inputs.end(), c.past_input) != inputs.end();
    g.cache_leaves().push_back(
        CacheLeaf{c.layer, c.kind, c.layer_type, c.window, has_past ? c.past_input : "", c.present_output});
  }
}

void take_guards(CapturedProgram& prog, const std::string& model_type, bool prefer_deferred) {
  for (const Guard& gd : prog.graph->env().guards()) {
    bool specialized = gd.lower == gd.upper && gd.expr.kind() == Sym::Kind::Symbol;
    if (specialized)
      HFX_THROW("capture",
                "expected dim '{}' to stay dynamic in '{}' of '{}', got it specialized to {} by the model "
                "code at {} ({}); "
                "declare it static or fix the code",
                gd.expr.name(), prog.component, model_type, gd.lower, gd.where, gd.what);
    if (!prefer_deferred)
      HFX_THROW("capture",
                "expected no guards with prefer_deferred_runtime_asserts_over_guards=false, got '{}' at {}",
                gd.what, gd.where);
    prog.guards.push_back(gd);
  }
}

// A deferred guard that bounds one input axis's expression (gpt2's learned positions: 256 - (past +
// sequence) >= 0 bounds attention_mask axis 1) narrows that axis in the contract, so the contract claims
// only what the program can serve; the guard itself stays a runtime assert for the backends.
void narrow_contract_by_guards(CapturedProgram& prog) {
  for (const Value* v : prog.graph->inputs()) {
    auto it = prog.contract.find(v->name);
    if (it == prog.contract.end()) continue;
    for (size_t a = 0; a < v->type.shape.size() && a < it->second.size(); a++) {
      const Sym& x = v->type.shape[a];
      AxisContract& ax = it->second[a];
      if (x.is_const() || ax.symbol.empty()) continue;
      for (const Guard& gd : prog.guards) {
        // expr = x + c  →  lower - c <= x <= upper - c;  expr = c - x  →  c - upper <= x <= c - lower.
        int64_t lo = ax.min, hi = ax.max;
        if (auto c = (gd.expr - x).maybe_value()) {
          if (gd.lower > -SymRange::kInf) lo = gd.lower - *c;
          if (gd.upper < SymRange::kInf) hi = gd.upper - *c;
        } else if (auto c2 = (gd.expr + x).maybe_value()) {
          if (gd.upper < SymRange::kInf) lo = *c2 - gd.upper;
          if (gd.lower > -SymRange::kInf) hi = *c2 - gd.lower;
        } else {
          continue;
        }
        ax.min = std::max(ax.min, lo);
        ax.max = std::min(ax.max, hi);
      }
    }
  }
}

// A cross-attention memory is the encoder's output for this call's encoder states: as long as them (or empty,
// in a merged decoder's first call), and empty exactly when the self-attention past is (one call fills both).
// The axis ranges cannot say so: the contract admitted a 2-position memory beside 2048 encoder states, a call
// with no meaning (tests/interop/test_conformance.py). Asked here, each relation becomes a guard that every
// backend checks. Asked only where the recorded calls agree (the hints satisfy it).
void relate_memory(const ComponentDecl& decl, const Symbols& syms, ShapeEnv& env) {
  auto made = [&](const std::string& dim) -> const Sym* {
    auto it = syms.made.find(dim);
    return it == syms.made.end() || it->second.is_const() ? nullptr : &it->second;
  };
  // The encoder's length: axis 1 of the encoder states this program takes (a symbol, or fixed: whisper's
  // 1500).
  Sym enc;
  bool found = false;
  for (const InputDecl& d : decl.inputs)
    if (d.name == "encoder_hidden_states" && d.axes.size() > 1) {
      const std::string& ax = d.axes[1];
      if (!ax.empty() && std::all_of(ax.begin(), ax.end(), ::isdigit)) {
        enc = Sym(static_cast<int64_t>(std::stoll(ax)));
        found = true;
      } else if (auto it = syms.made.find(ax); it != syms.made.end()) {
        enc = it->second;
        found = true;
      }
    }
  if (!found) return;
  const PastDims dims = past_dims(decl);
  for (const std::string& m : dims.memory) {
    const Sym* M = made(m);
    if (!M) continue;
    const Sym rel = env.bounds(*M).min >= 1 ? *M - enc : *M * (enc - *M);
    if (env.hint(rel) == 0) env.eq(rel, Sym(0));
    for (const std::string& s : dims.self)
      if (const Sym* D = made(s)) {
        const Sym both = env.min(*D, Sym(1)) - env.min(*M, Sym(1));
        if (!both.is_const() && env.hint(both) == 0) env.eq(both, Sym(0));
      }
  }
}

}  // namespace

CapturedProgram capture_program(const Model& model, const ProgramSpec& spec, bool prefer_deferred,
                                PatchTable* patches) {
  CapturedProgram prog;
  prog.component = spec.name;
  prog.graph = std::make_shared<Graph>();
  Graph& g = *prog.graph;
  TraceBuilder tb(g, patches);
  const ComponentDecl decl = model.component(spec.component);
  const std::string& model_type = model.config().model_type;
  Symbols syms{spec, g.env(), {}};
  try {
    NamedVars ins;
    for (const std::string& name : spec.inputs) {
      const InputDecl& d = input_decl(decl, name);
      SymShape shape;
      auto& contract = prog.contract[name];
      for (const std::string& a : d.axes) {
        shape.push_back(syms.axis(a, name));
        contract.push_back(axis_contract(shape.back(), g.env()));
      }
      ins.emplace_back(name, tb.input(name, TensorType{d.dtype, shape}));
    }
    // A user's bound on a sum axis is a relation between its terms: asked here, it becomes a guard (a
    // runtime assert in every backend) unless the terms' ranges already decide it.
    for (const TotalBound& t : spec.totals)
      if (const Value* in = g.find_input(t.input); in && t.axis < static_cast<int>(in->type.shape.size())) {
        const Sym& x = in->type.shape[static_cast<size_t>(t.axis)];
        g.env().ge(x, Sym(t.min));
        g.env().le(x, Sym(t.max));
      }
    relate_memory(decl, syms, g.env());
    NamedVars outs = model.call(spec.component, tb, ins, spec.call);
    add_outputs(g, decl, outs, spec.inputs);
  } catch (const Error& e) {
    HFX_THROW("capture", "capturing '{}' (component '{}') of architecture '{}' with inputs ({}) failed: {}",
              prog.component, spec.component, model_type, describe_inputs(g), e.what());
  }
  take_guards(prog, model_type, prefer_deferred);
  narrow_contract_by_guards(prog);
  g.eliminate_dead_code();
  return prog;
}

namespace {

// The terms of an axis declaration ("past_sequence_length+sequence_length") that are live in `spec`: a
// term the program does not have (the past of a prefill: fixed at 0) drops out.
std::vector<std::string> live_terms(const ProgramSpec& spec, const std::string& axis) {
  std::vector<std::string> live;
  for (size_t start = 0, plus;; start = plus + 1) {
    plus = axis.find('+', start);
    std::string part = axis.substr(start, plus == std::string::npos ? std::string::npos : plus - start);
    auto it = spec.dims.find(part);
    if (it != spec.dims.end() && !(it->second.hint == 0 && !it->second.dynamic)) live.push_back(part);
    if (plus == std::string::npos) break;
  }
  return live;
}

// A Dim on an axis that is a sum of live dims (the attention mask over past + new tokens) bounds the
// total, as torch.export's derived-dim constraint would: the past terms' maxima shrink so that the sum
// stays inside the Dim, and the sample's total must lie in it.
void bound_sum(ProgramSpec& spec, const std::string& input, int axis, const Dim& dim,
               const std::vector<std::string>& terms) {
  int64_t hint = 0, min_total = 0;
  for (const auto& t : terms) {
    hint += spec.dims[t].hint;
    min_total += spec.dims[t].dynamic ? spec.dims[t].min : spec.dims[t].hint;
  }
  if (hint < dim.min || hint > dim.max)
    HFX_THROW("capture", "expected the sample size of {} axis {} inside Dim('{}', min={}, max={}), got {}",
              input, axis, dim.name, dim.min, dim.max, hint);
  for (const auto& t : terms) {
    DimSpec& s = spec.dims[t];
    if (!s.dynamic) continue;
    int64_t others = min_total - s.min;
    s.max = std::min(s.max, dim.max - others);
    if (s.max < s.min)
      HFX_THROW("dynamic_shapes",
                "expected Dim('{}', max={}) on {} axis {} to leave room for '{}' (min {}), got max {} for it",
                dim.name, dim.max, input, axis, t, s.min, s.max);
  }
}

// A dynamic_shapes key: "input" (that input of every component that declares it, each with its own axes,
// as each of HfExporters' programs reads its config) or "component.input" (that component's only). Input
// names may hold dots (past_key_values.0.key): a prefix is a component only when one has that name.
struct InputKey {
  std::string component;  ///< empty: every component declaring `input`
  std::string input;
};
InputKey parse_key(const std::vector<ComponentDecl>& comps, const std::string& key) {
  const auto dot = key.find('.');
  if (dot != std::string::npos)
    for (const auto& c : comps)
      if (c.name == key.substr(0, dot)) return {c.name, key.substr(dot + 1)};
  return {"", key};
}

// The declaration of `k` in component `comp`, or nullptr when `k` does not address it; throws for a name
// no component declares, listing the valid ones.
const InputDecl* declared_input(const Model& model, const std::vector<ComponentDecl>& comps,
                                const InputKey& k, const std::string& key, const std::string& comp) {
  std::vector<std::string> known;
  auto note = [&](const std::string& n) {
    if (std::find(known.begin(), known.end(), n) == known.end()) known.push_back(n);
  };
  bool found = false;
  const InputDecl* mine = nullptr;
  for (const auto& c : comps)
    for (const auto& i : c.inputs) {
      note(i.name);
      if (comps.size() > 1) note(c.name + "." + i.name);
      if (i.name != k.input || (!k.component.empty() && k.component != c.name)) continue;
      found = true;
      if (c.name == comp) mine = &i;
    }
  if (!found)
    HFX_THROW("dynamic_shapes", "expected an input name of {} among [{}], got '{}'",
              model.config().model_type, fmt::join(known, ", "), key);
  return mine;
}

}  // namespace

void apply_explicit_dims(const Model& model, ProgramSpec& spec,
                         const std::map<std::string, std::map<int, Dim>>& ds) {
  if (ds.empty()) return;
  std::vector<ComponentDecl> comps = model.components();
  std::map<std::string, std::string> named;  // named dim → the Dim name given to it in this program
  struct Sum {
    std::string input;
    int axis;
    Dim dim;
    std::vector<std::string> terms;
  };
  std::vector<Sum> sums;  // bounded after every single dim has its range
  for (const auto& [key, axes] : ds) {
    const InputKey k = parse_key(comps, key);
    const InputDecl* d = declared_input(model, comps, k, key, spec.component);
    if (!d) continue;  // another component's input
    const std::string& input = k.input;
    for (const auto& [axis, dim] : axes)
      if (axis < 0 || axis >= static_cast<int>(d->axes.size()))
        HFX_THROW("dynamic_shapes", "expected an axis of '{}' in [0, {}), got {}", key, d->axes.size(), axis);
    if (std::find(spec.inputs.begin(), spec.inputs.end(), input) == spec.inputs.end()) continue;
    for (const auto& [axis, dim] : axes) {
      std::vector<std::string> terms = live_terms(spec, d->axes[axis]);
      if (terms.size() > 1) {
        sums.push_back({input, axis, dim, terms});
        continue;
      }
      if (terms.empty())
        HFX_THROW("dynamic_shapes",
                  "expected '{}' axis {} to be a dim of program '{}', got the fixed size '{}'", input, axis,
                  spec.name, d->axes[axis]);
      auto [it, fresh] = named.emplace(terms[0], dim.name);
      if (!fresh && it->second != dim.name)
        HFX_THROW("dynamic_shapes",
                  "expected one Dim for '{}' (the same axis of several inputs), got '{}' and '{}'", terms[0],
                  it->second, dim.name);
      DimSpec& s = spec.dims[terms[0]];
      if (s.hint < dim.min || s.hint > dim.max)
        HFX_THROW("capture",
                  "expected the sample size of {} axis {} inside Dim('{}', min={}, max={}), got {}", input,
                  axis, dim.name, dim.min, dim.max, s.hint);
      s = DimSpec{dim.name, true, dim.min, dim.max, s.hint};
    }
  }
  for (const Sum& x : sums) {
    bound_sum(spec, x.input, x.axis, x.dim, x.terms);
    spec.totals.push_back({x.input, x.axis, x.dim.name, x.dim.min, x.dim.max});
  }
}

ProgramSpec causal_lm_program(const CausalLM& model, const CaptureOptions& o) {
  ProgramSpec p;
  p.name = call_kind_name(o.kind);
  p.component = "model";
  p.call.logits_to_keep = o.logits_to_keep;
  const bool has_past = o.kind == CallKind::Decode || o.kind == CallKind::Merged;
  auto dim = [&](const Dim& d, int64_t sample) { return DimSpec{d.name, o.dynamic, d.min, d.max, sample}; };
  p.dims["batch_size"] = dim(o.batch, o.sample_batch);
  p.dims["sequence_length"] =
      o.kind == CallKind::Decode ? DimSpec{"", false, 1, 1, 1} : dim(o.sequence, o.sample_sequence);
  if (has_past) {
    Dim pd = o.past;
    if (o.kind == CallKind::Decode) pd.min = std::max<int64_t>(pd.min, 1);  // a decode step always has a past
    p.dims["past_sequence_length"] = dim(pd, std::max<int64_t>(o.sample_past, pd.min));
  } else {
    p.dims["past_sequence_length"] = DimSpec{"", false, 0, 0, 0};
  }
  for (const InputDecl& d : model.component("model").inputs)
    if (!d.optional || has_past) p.inputs.push_back(d.name);
  if (o.kind == CallKind::Forward) p.call.use_cache = false;
  apply_explicit_dims(model, p, o.dynamic_shapes);
  // An explicit Dim must hold the sample even when the defaults are static.
  return p;
}

CapturedProgram capture_causal_lm(const CausalLM& model, const CaptureOptions& o) {
  return capture_program(model, causal_lm_program(model, o), o.prefer_deferred_runtime_asserts_over_guards);
}

}  // namespace hfx
