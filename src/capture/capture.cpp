// Capture: the model's own forward runs on a TraceBuilder with symbolic inputs. Nothing about the
// model is changed: the model object is const, the cache is a fresh DynamicCache, and all state of the
// trace lives in the Graph, so eager output is identical before and after an export (tested).
#include "hfx/capture/capture.h"

#include <fmt/format.h>

#include "hfx/core/error.h"

namespace hfx {

const char* call_kind_name(CallKind k) {
  switch (k) {
    case CallKind::Forward: return "forward";
    case CallKind::Prefill: return "prefill";
    case CallKind::Decode: return "decode";
    case CallKind::Merged: return "model";
  }
  return "?";
}

namespace {

struct DimMaker {
  const CaptureOptions& o;
  ShapeEnv& env;
  ShapeContract& contract;

  // A dim for (input, axis): an explicit Dim wins; otherwise the default; static if !dynamic.
  Sym make(const std::string& input, int axis, const Dim& def, int64_t sample) {
    Dim d = def;
    bool explicit_dim = false;
    if (auto it = o.dynamic_shapes.find(input); it != o.dynamic_shapes.end()) {
      if (auto jt = it->second.find(axis); jt != it->second.end()) {
        d = jt->second;
        explicit_dim = true;
      }
    }
    if (!o.dynamic && !explicit_dim) {
      record(input, axis, AxisContract{"", sample, sample});
      return Sym(sample);
    }
    if (sample < d.min || sample > d.max)
      HFX_THROW("capture", "expected the sample size of {} axis {} inside Dim('{}', min={}, max={}), got {}", input, axis, d.name,
                d.min, d.max, sample);
    Sym s = env.create_symbol(d.name, d.min, d.max, sample);
    record(input, axis, AxisContract{d.name, d.min, d.max});
    return s;
  }
  void record(const std::string& input, int axis, AxisContract c) {
    auto& v = contract[input];
    if (static_cast<int>(v.size()) <= axis) v.resize(axis + 1);
    v[axis] = c;
  }
  void fixed(const std::string& input, int axis, int64_t size) { record(input, axis, AxisContract{"", size, size}); }
};

std::string describe_inputs(const Graph& g) {
  std::string s;
  for (Value* v : g.inputs()) s += (s.empty() ? "" : ", ") + v->name + ": " + v->type.str();
  return s;
}

}  // namespace

CapturedProgram capture_causal_lm(const CausalLM& model, const CaptureOptions& o) {
  CapturedProgram prog;
  prog.component = call_kind_name(o.kind);
  prog.graph = std::make_shared<Graph>();
  Graph& g = *prog.graph;
  ShapeEnv& env = g.env();
  TraceBuilder tb(g);
  DimMaker dims{o, env, prog.contract};
  const ModelConfig& cfg = model.config();

  const bool has_past = o.kind == CallKind::Decode || o.kind == CallKind::Merged;
  Sym B = dims.make("input_ids", 0, o.batch, o.sample_batch);
  Sym S = o.kind == CallKind::Decode ? Sym(1) : dims.make("input_ids", 1, o.sequence, o.sample_sequence);
  if (o.kind == CallKind::Decode) dims.fixed("input_ids", 1, 1);
  Sym P(0);
  if (has_past) {
    Dim pd = o.past;
    if (o.kind == CallKind::Decode) pd.min = std::max<int64_t>(pd.min, 1);  // a decode step always has a past
    int64_t sample = std::max<int64_t>(o.sample_past, pd.min);
    P = dims.make("past_key_values.0.key", 2, pd, sample);
  }

  try {
    ForwardArgs args;
    args.input_ids = tb.input("input_ids", TensorType{DType::I64, {B, S}});
    args.attention_mask = tb.input("attention_mask", TensorType{DType::I64, {B, P + S}});
    args.position_ids = tb.input("position_ids", TensorType{DType::I64, {B, S}});
    for (const char* n : {"attention_mask", "position_ids"}) {
      auto& ic = prog.contract["input_ids"];
      prog.contract[n] = ic;
    }
    if (has_past) {
      auto& am = prog.contract["attention_mask"];
      am[1] = AxisContract{(P + S).str(), 0, 0};
      SymRange r = env.bounds(P + S);
      am[1].min = r.min;
      am[1].max = r.max;
    }
    args.logits_to_keep = o.logits_to_keep;

    std::vector<CacheLayerSpec> layout = model.cache_layout();
    DynamicCache cache(layout);
    if (o.kind != CallKind::Forward) args.cache = &cache;
    if (has_past) {
      for (size_t i = 0; i < layout.size(); i++) {
        for (const char* kind : {"key", "value"}) {
          std::string name = fmt::format("past_key_values.{}.{}", i, kind);
          Var v = tb.input(name, TensorType{DType::F32, {B, Sym(layout[i].num_kv_heads), P, Sym(layout[i].head_dim)}});
          auto& c = prog.contract[name];
          c = {prog.contract["input_ids"][0], AxisContract{"", layout[i].num_kv_heads, layout[i].num_kv_heads},
               prog.contract["past_key_values.0.key"].size() > 2 ? prog.contract["past_key_values.0.key"][2] : AxisContract{},
               AxisContract{"", layout[i].head_dim, layout[i].head_dim}};
          if (std::string(kind) == "key") {
            cache.set_past(static_cast<int>(i), v, Var());
          } else {
            Var k = tb.wrap(g.find_input(fmt::format("past_key_values.{}.key", i)));
            cache.set_past(static_cast<int>(i), k, v);
          }
        }
      }
    }

    ForwardOut out = model.forward(tb, args);
    g.add_output("logits", out.logits.value());
    if (o.kind != CallKind::Forward) {
      for (size_t i = 0; i < layout.size(); i++) {
        const Var& k = cache.key(static_cast<int>(i));
        const Var& v = cache.value(static_cast<int>(i));
        if (!k.defined() || !v.defined())
          HFX_THROW("capture", "expected the forward to update cache layer {}, got no key/value", i);
        std::string kn = fmt::format("present.{}.key", i), vn = fmt::format("present.{}.value", i);
        g.add_output(kn, k.value());
        g.add_output(vn, v.value());
        for (const char* kind : {"key", "value"}) {
          CacheLeaf leaf;
          leaf.layer = static_cast<int>(i);
          leaf.kind = kind;
          leaf.layer_type = layout[i].layer_type;
          leaf.window = layout[i].window;
          leaf.input_name = has_past ? fmt::format("past_key_values.{}.{}", i, kind) : "";
          leaf.output_name = fmt::format("present.{}.{}", i, kind);
          g.cache_leaves().push_back(leaf);
        }
      }
    }
  } catch (const Error& e) {
    HFX_THROW("capture", "capturing '{}' of architecture '{}' with inputs ({}) failed: {}", prog.component, cfg.model_type,
              describe_inputs(g), e.what());
  }

  g.metadata()["hfx.component"] = prog.component;
  g.metadata()["hfx.model_type"] = cfg.model_type;

  // Guards: a dim that the code fixed to one value is a specialization — report where it happened.
  for (const Guard& gd : env.guards()) {
    bool specialized = gd.lower == gd.upper && gd.expr.kind() == Sym::Kind::Symbol;
    if (specialized)
      HFX_THROW("capture", "expected dim '{}' to stay dynamic in '{}' of '{}', got it specialized to {} by the model code at {} ({}); "
                "declare it static or fix the code",
                gd.expr.name(), prog.component, cfg.model_type, gd.lower, gd.where, gd.what);
    if (!o.prefer_deferred_runtime_asserts_over_guards)
      HFX_THROW("capture", "expected no guards with prefer_deferred_runtime_asserts_over_guards=false, got '{}' at {}", gd.what,
                gd.where);
    prog.guards.push_back(gd);
  }
  g.eliminate_dead_code();
  return prog;
}

}  // namespace hfx
