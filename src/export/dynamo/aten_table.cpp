// The ATen table of the Dynamo exporter (aten_table.h): one entry per hfx op, its torch.ops.aten target and
// the lowering that maps the op's inputs and attributes onto the overload's schema arguments.
#include "export/dynamo/aten_table.h"
#include "export/dynamo/program.h"

#include <fmt/format.h>

#include <cmath>

#include "hfx/core/error.h"
#include "hfx/ops/op_schema.h"

namespace hfx::dynamo {
namespace detail {
namespace {

const Value* in(const Node& n, size_t i) { return i < n.inputs.size() ? n.inputs[i] : nullptr; }
const TensorType& out_t(const Node& n) { return n.outputs.at(0)->type; }

// All inputs contiguous and none broadcast: the output keeps a contiguous layout.
bool elementwise_contiguous(Emitter& e, const Node& n) {
  for (const Value* v : n.inputs) {
    if (!v) continue;
    if (!e.contiguous(v)) return false;
    if (v->type.shape.size() != out_t(n).shape.size()) return false;
    for (size_t i = 0; i < v->type.shape.size(); i++)
      if (!v->type.shape[i].same(out_t(n).shape[i])) return false;
  }
  return true;
}

std::vector<int64_t> reduce_dims(const Node& n) {
  std::vector<int64_t> d = n.attrs.ints("dim");
  if (d.empty())
    for (size_t i = 0; i < in(n, 0)->type.shape.size(); i++) d.push_back(static_cast<int64_t>(i));
  return d;
}

// x OP scalar: aten.<op>.Tensor with a Python number, as torch.export records `x + 1.0`.
AtenEntry scalar_op(const std::string& op, const std::string& target, const char* attr) {
  return {
      op, target,
      [target, attr](Emitter& e, const Node& n, const std::string& out) {
        double v = n.attrs.f(attr);
        const Value* x = in(n, 0);
        bool int_tensor = !dtype_is_float(x->type.dtype);
        json s = (int_tensor && std::floor(v) == v && std::fabs(v) < 9e15)
                     ? json{{"as_int", static_cast<int64_t>(v)}}
                     : float_arg(v);
        if (int_tensor && s.contains("as_float")) {
          // torch promotes int ⊕ float to float; hfx keeps the int type: cast back.
          TensorType ft{DType::F32, out_t(n).shape};
          std::string tmp = e.fresh(out + "_f");
          e.emit(target, json::array({named("self", e.tensor_arg(x)), named("other", s)}), ft, tmp, n.name);
          e.emit("torch.ops.aten._to_copy.default",
                 json::array({named("self", json{{"as_tensor", {{"name", tmp}}}}),
                              named("dtype", json{{"as_scalar_type", scalar_type(out_t(n).dtype)}}, true)}),
                 out_t(n), out, n.name);
        } else {
          e.emit(target, json::array({named("self", e.tensor_arg(x)), named("other", s)}), out_t(n), out,
                 n.name);
        }
        e.set_contiguous(n.outputs[0], e.contiguous(x));
      },
      "scalar operand as a Python number"};
}

json dtype_kw_if_int(const Node& n) {
  const Value* x = in(n, 0);
  if (dtype_is_float(x->type.dtype)) return nullptr;
  return named("dtype", json{{"as_scalar_type", scalar_type(out_t(n).dtype)}}, true);
}

// A value of the op table's declaration as the ExportedProgram's argument union writes it.
json declared_value(Emitter& e, const AttrValue& v) {
  if (auto* x = std::get_if<int64_t>(&v)) return json{{"as_int", *x}};
  if (auto* x = std::get_if<double>(&v)) return float_arg(*x);
  if (auto* x = std::get_if<bool>(&v)) return json{{"as_bool", *x}};
  if (auto* x = std::get_if<std::string>(&v)) return json{{"as_string", *x}};
  if (auto* x = std::get_if<std::vector<int64_t>>(&v)) return json{{"as_ints", *x}};
  if (auto* x = std::get_if<std::vector<Sym>>(&v)) return e.syms_arg(*x);
  if (auto* x = std::get_if<Sym>(&v)) return e.sym_arg(*x);
  if (auto* x = std::get_if<DType>(&v)) return json{{"as_scalar_type", scalar_type(*x)}};
  HFX_THROW("dynamo", "expected an argument value ATen takes, got {}", attr_to_string(v));
}

// The op's declared ATen call (hfx/ops/op_lowering.h): named arguments in schema order, then its layout.
AtenEntry declared(const OpSchema& s) {
  const CallDecl& c = s.lower.aten;
  const AtenLayout layout = s.lower.aten_layout;
  return {s.name, c.target,
          [&c, layout](Emitter& e, const Node& n, const std::string& out) {
            json args = json::array();
            for (const CallArg& a : c.args) {
              json v = a.kind == CallArg::Kind::Input   ? e.tensor_arg(in(n, static_cast<size_t>(a.input)))
                       : a.kind == CallArg::Kind::None  ? json{{"as_none", true}}
                       : a.kind == CallArg::Kind::Const ? declared_value(e, a.value)
                                                        : declared_value(e, n.attrs.at(a.attr));
              args.push_back(named(a.name, std::move(v), a.keyword));
            }
            e.emit(c.target, args, out_t(n), out, n.name);
            if (layout == AtenLayout::Elementwise)
              e.set_contiguous(n.outputs[0], elementwise_contiguous(e, n));
            if (layout == AtenLayout::LikeInput0) e.set_contiguous(n.outputs[0], e.contiguous(in(n, 0)));
          },
          ""};
}

const std::vector<AtenEntry>& aten_table() {
  static const std::vector<AtenEntry> t = [] {
    std::vector<AtenEntry> v;
    // ---- elementwise
    v.push_back(scalar_op("aten.add.Scalar", "torch.ops.aten.add.Tensor", "other"));
    v.push_back(scalar_op("aten.mul.Scalar", "torch.ops.aten.mul.Tensor", "other"));
    v.push_back({"aten.gelu", "torch.ops.aten.gelu.default",
                 [](Emitter& e, const Node& n, const std::string& out) {
                   json a = json::array({named("self", e.tensor_arg(in(n, 0)))});
                   if (n.attrs.s("approximate") != "none")
                     a.push_back(named("approximate", json{{"as_string", n.attrs.s("approximate")}}, true));
                   e.emit("torch.ops.aten.gelu.default", a, out_t(n), out, n.name);
                   e.set_contiguous(n.outputs[0], e.contiguous(in(n, 0)));
                 },
                 ""});
    // ---- linear algebra (contiguous results)
    v.push_back({"aten.linear", "torch.ops.aten.linear.default",
                 [](Emitter& e, const Node& n, const std::string& out) {
                   json a = json::array(
                       {named("input", e.tensor_arg(in(n, 0))), named("weight", e.tensor_arg(in(n, 1)))});
                   if (in(n, 2)) a.push_back(named("bias", e.tensor_arg(in(n, 2))));
                   e.emit("torch.ops.aten.linear.default", a, out_t(n), out, n.name);
                 },
                 ""});
    // ---- reductions
    for (auto [op, tg] : {std::pair{"aten.sum.dim_IntList", "torch.ops.aten.sum.dim_IntList"},
                          std::pair{"aten.mean.dim", "torch.ops.aten.mean.dim"},
                          std::pair{"aten.amax", "torch.ops.aten.amax.default"}}) {
      std::string target = tg;
      bool has_dtype = std::string(op) != "aten.amax";
      v.push_back({op, target,
                   [target, has_dtype](Emitter& e, const Node& n, const std::string& out) {
                     json a = json::array({named("self", e.tensor_arg(in(n, 0))),
                                           named("dim", json{{"as_ints", reduce_dims(n)}}),
                                           named("keepdim", json{{"as_bool", n.attrs.b("keepdim")}})});
                     if (has_dtype)
                       if (json k = dtype_kw_if_int(n); !k.is_null()) a.push_back(k);
                     e.emit(target, a, out_t(n), out, n.name);
                   },
                   "an empty dim list is written as every dim"});
    }
    v.push_back({"aten.cumsum", "torch.ops.aten.cumsum.default",
                 [](Emitter& e, const Node& n, const std::string& out) {
                   json a = json::array({named("self", e.tensor_arg(in(n, 0))),
                                         named("dim", json{{"as_int", n.attrs.i("dim")}})});
                   if (json k = dtype_kw_if_int(n); !k.is_null()) a.push_back(k);
                   e.emit("torch.ops.aten.cumsum.default", a, out_t(n), out, n.name);
                   e.set_contiguous(n.outputs[0], e.contiguous(in(n, 0)));
                 },
                 ""});
    v.push_back({"aten.layer_norm", "torch.ops.aten.layer_norm.default",
                 [](Emitter& e, const Node& n, const std::string& out) {
                   const Value* x = in(n, 0);
                   json a = json::array(
                       {named("input", e.tensor_arg(x)),
                        named("normalized_shape", e.syms_arg({x->type.shape.back()})),
                        named("weight", in(n, 1) ? e.tensor_arg(in(n, 1)) : json{{"as_none", true}}),
                        named("bias", in(n, 2) ? e.tensor_arg(in(n, 2)) : json{{"as_none", true}}),
                        named("eps", float_arg(n.attrs.f("eps")))});
                   e.emit("torch.ops.aten.layer_norm.default", a, out_t(n), out, n.name);
                 },
                 ""});
    // ---- indexing and shape
    v.push_back({"aten.cat", "torch.ops.aten.cat.default",
                 [](Emitter& e, const Node& n, const std::string& out) {
                   json ts = json::array();
                   for (const Value* x : n.inputs) ts.push_back(json{{"name", e.name_of(x)}});
                   e.emit("torch.ops.aten.cat.default",
                          json::array({named("tensors", json{{"as_tensors", ts}}),
                                       named("dim", json{{"as_int", n.attrs.i("dim")}})}),
                          out_t(n), out, n.name);
                 },
                 ""});
    v.push_back({"aten.slice.Tensor", "torch.ops.aten.slice.Tensor",
                 [](Emitter& e, const Node& n, const std::string& out) {
                   const Value* x = in(n, 0);
                   Sym end = n.attrs.sym("end");
                   json end_arg = (end.is_const() && end.value() >= SymRange::kInf)
                                      ? json{{"as_int", INT64_MAX}}
                                      : e.sym_arg(end);
                   int64_t d = n.attrs.i("dim");
                   e.emit("torch.ops.aten.slice.Tensor",
                          json::array({named("self", e.tensor_arg(x)), named("dim", json{{"as_int", d}}),
                                       named("start", e.sym_arg(n.attrs.sym("start"))), named("end", end_arg),
                                       named("step", json{{"as_int", n.attrs.i("step")}})}),
                          out_t(n), out, n.name);
                   int64_t r = static_cast<int64_t>(x->type.shape.size());
                   if (d < 0) d += r;
                   bool lead_ones = true;
                   for (int64_t i = 0; i < d; i++)
                     lead_ones = lead_ones && x->type.shape[i].is_const() && x->type.shape[i].value() == 1;
                   e.set_contiguous(n.outputs[0], e.contiguous(x) && lead_ones && n.attrs.i("step") == 1);
                 },
                 "end past the size is written as sys.maxsize"});
    v.push_back({"aten.view", "torch.ops.aten.view.default",
                 [](Emitter& e, const Node& n, const std::string& out) {
                   const Value* x = in(n, 0);
                   // aten.view needs compatible strides; a maybe-strided input gets aten.reshape (a copy when
                   // needed).
                   bool c = e.contiguous(x);
                   e.emit(c ? "torch.ops.aten.view.default" : "torch.ops.aten.reshape.default",
                          json::array({named("self", e.tensor_arg(x)),
                                       named(c ? "size" : "shape", e.syms_arg(out_t(n).shape))}),
                          out_t(n), out, n.name);
                 },
                 "aten.reshape.default when the input may not be contiguous"});
    v.push_back({"aten.permute", "torch.ops.aten.permute.default",
                 [](Emitter& e, const Node& n, const std::string& out) {
                   const auto& dims = n.attrs.ints("dims");
                   e.emit("torch.ops.aten.permute.default",
                          json::array({named("self", e.tensor_arg(in(n, 0))),
                                       named("dims", json{{"as_ints", dims}})}),
                          out_t(n), out, n.name);
                   bool identity = true;
                   for (size_t i = 0; i < dims.size(); i++)
                     identity = identity && dims[i] == static_cast<int64_t>(i);
                   e.set_contiguous(n.outputs[0], identity && e.contiguous(in(n, 0)));
                 },
                 ""});
    v.push_back(
        {"aten.expand", "torch.ops.aten.expand.default",
         [](Emitter& e, const Node& n, const std::string& out) {
           const Value* x = in(n, 0);
           e.emit("torch.ops.aten.expand.default",
                  json::array({named("self", e.tensor_arg(x)), named("size", e.syms_arg(out_t(n).shape))}),
                  out_t(n), out, n.name);
           bool same = x->type.shape.size() == out_t(n).shape.size();
           for (size_t i = 0; same && i < x->type.shape.size(); i++)
             same = x->type.shape[i].same(out_t(n).shape[i]);
           e.set_contiguous(n.outputs[0], same && e.contiguous(x));
         },
         ""});
    v.push_back(
        {"aten._to_copy", "torch.ops.aten._to_copy.default",
         [](Emitter& e, const Node& n, const std::string& out) {
           e.emit("torch.ops.aten._to_copy.default",
                  json::array(
                      {named("self", e.tensor_arg(in(n, 0))),
                       named("dtype", json{{"as_scalar_type", scalar_type(n.attrs.dtype("dtype"))}}, true)}),
                  out_t(n), out, n.name);
           e.set_contiguous(n.outputs[0], e.contiguous(in(n, 0)));
         },
         ""});
    // ---- factories
    v.push_back(
        {"aten.arange.start", "torch.ops.aten.arange.start",
         [](Emitter& e, const Node& n, const std::string& out) {
           e.emit("torch.ops.aten.arange.start",
                  json::array(
                      {named("start", e.sym_arg(n.attrs.sym("start"))),
                       named("end", e.sym_arg(n.attrs.sym("end"))),
                       named("dtype", json{{"as_scalar_type", scalar_type(n.attrs.dtype("dtype"))}}, true)}),
                  out_t(n), out, n.name);
         },
         ""});
    v.push_back(
        {"aten.full", "torch.ops.aten.full.default",
         [](Emitter& e, const Node& n, const std::string& out) {
           double val = n.attrs.f("value");
           DType dt = n.attrs.dtype("dtype");
           json fill = dt == DType::Bool ? json{{"as_bool", val != 0}}
                       : (!dtype_is_float(dt) && std::floor(val) == val)
                           ? json{{"as_int", static_cast<int64_t>(val)}}
                           : float_arg(val);
           e.emit("torch.ops.aten.full.default",
                  json::array({named("size", e.syms_arg(n.attrs.syms("size"))), named("fill_value", fill),
                               named("dtype", json{{"as_scalar_type", scalar_type(dt)}}, true)}),
                  out_t(n), out, n.name);
         },
         ""});
    // ---- composites with an exact ATen op
    v.push_back({"hfx.rms_norm", "torch.ops.aten.rms_norm.default",
                 [](Emitter& e, const Node& n, const std::string& out) {
                   const Value* x = in(n, 0);
                   json w = e.tensor_arg(in(n, 1));
                   double off = n.attrs.f("weight_offset");
                   if (off != 0) {
                     std::string wn = e.fresh(out + "_weight");
                     e.emit("torch.ops.aten.add.Tensor",
                            json::array({named("self", w), named("other", float_arg(off))}), in(n, 1)->type,
                            wn, n.name);
                     w = json{{"as_tensor", {{"name", wn}}}};
                   }
                   e.emit("torch.ops.aten.rms_norm.default",
                          json::array({named("input", e.tensor_arg(x)),
                                       named("normalized_shape", e.syms_arg({x->type.shape.back()})),
                                       named("weight", w), named("eps", float_arg(n.attrs.f("eps")))}),
                          out_t(n), out, n.name);
                 },
                 "weight_offset as an aten.add of the weight"});
    v.push_back({"hfx.sdpa", "torch.ops.aten.scaled_dot_product_attention.default",
                 [](Emitter& e, const Node& n, const std::string& out) {
                   const Value *q = in(n, 0), *k = in(n, 1), *val = in(n, 2), *mask = in(n, 3);
                   json a =
                       json::array({named("query", e.tensor_arg(q)), named("key", e.tensor_arg(k)),
                                    named("value", e.tensor_arg(val)),
                                    named("attn_mask", mask ? e.tensor_arg(mask) : json{{"as_none", true}}),
                                    named("dropout_p", json{{"as_float", 0.0}}),
                                    named("is_causal", json{{"as_bool", n.attrs.b("causal")}}),
                                    named("scale", float_arg(n.attrs.f("scale")), true)});
                   if (!q->type.shape[1].same(k->type.shape[1]))
                     a.push_back(named("enable_gqa", json{{"as_bool", true}}, true));
                   e.emit("torch.ops.aten.scaled_dot_product_attention.default", a, out_t(n), out, n.name);
                   e.set_contiguous(n.outputs[0], false);  // CPU flash attention returns a transposed layout
                 },
                 "only when exact: no window, no softcap, causal only without a mask and with S == T (else "
                 "decomposed)"});
    for (const OpSchema* s : all_op_schemas()) {
      if (!s->lower.aten.declared()) continue;
      for (const AtenEntry& h : v)
        if (h.hfx_op == s->name)
          HFX_THROW("dynamo", "expected {} lowered once, got a declared call and a hand-written one",
                    s->name);
      v.push_back(declared(*s));
    }
    return v;
  }();
  return t;
}

}  // namespace

const AtenEntry* find_entry(const std::string& op) {
  for (const auto& e : aten_table())
    if (e.hfx_op == op) return &e;
  return nullptr;
}

bool sdpa_is_exact(const Node& n) {
  if (n.attrs.i("window") != 0 || n.attrs.f("softcap") != 0.0) return false;
  if (!n.attrs.b("causal")) return true;
  const Value *q = in(n, 0), *k = in(n, 1);
  return !in(n, 3) && q->type.shape[2].same(k->type.shape[2]);
}

}  // namespace detail

std::vector<AtenRow> aten_table_rows() {
  std::vector<AtenRow> rows;
  for (const auto& e : detail::aten_table()) rows.push_back({e.hfx_op, e.target, e.note});
  rows.push_back({"hfx.rope", "(decomposed)", "no ATen op for rotary embedding"});
  rows.push_back({"hfx.moe", "(decomposed)", "no ATen op for mixture-of-experts: dense experts"});
  return rows;
}

}  // namespace hfx::dynamo
