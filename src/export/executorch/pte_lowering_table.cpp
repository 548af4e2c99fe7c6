// The .pte writer's lowering table (method_emitter.h): each hfx op as the ExecuTorch portable kernel calls
// (out-variants) that compute it.
#include "export/executorch/method_emitter.h"

#include "hfx/ops/op_schema.h"

namespace hfx::et::detail {

namespace {

// A value of the op table's declaration as the EValue ExecuTorch's schema wants for it.
int declared_value(MethodEmitter& m, const AttrValue& v, const std::string& what) {
  if (auto* x = std::get_if<int64_t>(&v)) return m.I(*x);
  if (auto* x = std::get_if<double>(&v)) return m.D(*x);
  if (auto* x = std::get_if<bool>(&v)) return m.B(*x);
  if (auto* x = std::get_if<std::string>(&v)) return m.Str(*x);
  if (auto* x = std::get_if<std::vector<int64_t>>(&v)) return m.IL(*x);
  if (auto* x = std::get_if<std::vector<Sym>>(&v)) return m.IL(*x);
  if (auto* x = std::get_if<Sym>(&v)) return m.sym(*x);
  HFX_THROW("executorch", "expected an int, float, bool, string or int list for {}, got {}", what,
            attr_to_string(v));
}

// The op's declared portable-kernel call (hfx/ops/op_lowering.h), its arguments in schema order, then out.
LowerFn declared(const std::string& op, const CallDecl& c) {
  size_t dot = c.target.rfind('.');
  std::string kernel = c.target.substr(0, dot), overload = c.target.substr(dot + 1);
  return [op, c, kernel, overload](MethodEmitter& m, const Node& n) {
    std::vector<int> args;
    for (const CallArg& a : c.args) {
      switch (a.kind) {
        case CallArg::Kind::Input:
          args.push_back(m.T(n.inputs.at(static_cast<size_t>(a.input))));
          break;
        case CallArg::Kind::None:
          args.push_back(m.N());
          break;
        case CallArg::Kind::Const:
          args.push_back(declared_value(m, a.value, c.target));
          break;
        case CallArg::Kind::Attr:
          args.push_back(declared_value(m, n.attrs.at(a.attr), op + "." + a.attr));
          break;
      }
    }
    m.out_call(n, kernel, overload, std::move(args));
  };
}

// The ops whose portable-kernel call needs code: a scalar typed by its tensor, a tensor list, a dim list
// that may be empty, the KV-cache update in place, extra outputs, symbolic bounds.
std::map<std::string, LowerFn> hand_written() {
  std::map<std::string, LowerFn> t;
  auto in = [](const Node& n, size_t i) { return n.inputs.at(i); };
  t["aten.add.Scalar"] = [in](MethodEmitter& m, const Node& n) {
    m.out_call(n, "aten::add", "Scalar_out",
               {m.T(in(n, 0)), m.scalar(n.attrs.f("other"), in(n, 0)->type.dtype), m.I(1)});
  };
  t["aten.mul.Scalar"] = [in](MethodEmitter& m, const Node& n) {
    m.out_call(n, "aten::mul", "Scalar_out",
               {m.T(in(n, 0)), m.scalar(n.attrs.f("other"), in(n, 0)->type.dtype)});
  };
  // reductions
  t["aten.sum.dim_IntList"] = [in](MethodEmitter& m, const Node& n) {
    const auto& d = n.attrs.ints("dim");
    m.out_call(n, "aten::sum", "IntList_out",
               {m.T(in(n, 0)), d.empty() ? m.N() : m.IL(d), m.B(n.attrs.b("keepdim")), m.N()});
  };
  t["aten.mean.dim"] = [in](MethodEmitter& m, const Node& n) {
    const auto& d = n.attrs.ints("dim");
    m.out_call(n, "aten::mean", "out",
               {m.T(in(n, 0)), d.empty() ? m.N() : m.IL(d), m.B(n.attrs.b("keepdim")), m.N()});
  };
  t["aten.layer_norm"] = [in](MethodEmitter& m, const Node& n) {
    const Value* x = in(n, 0);
    TensorType stat{DType::F32, x->type.shape};
    stat.shape.back() = Sym(1);
    int o0 = m.T(m.out(n)), o1 = m.temp(stat, n.name + ".mean"), o2 = m.temp(stat, n.name + ".rstd");
    Value* w = n.inputs.size() > 1 ? n.inputs[1] : nullptr;
    Value* b = n.inputs.size() > 2 ? n.inputs[2] : nullptr;
    EV ret;
    ret.kind = fb::KernelTypes::TensorList;
    ret.refs = {o0, o1, o2};
    int r = m.add(ret);
    m.call("aten::native_layer_norm", "out",
           {m.T(x), m.IL(std::vector<Sym>{x->type.shape.back()}), w ? m.T(w) : m.N(), b ? m.T(b) : m.N(),
            m.D(n.attrs.f("eps")), o0, o1, o2},
           r);
  };
  // indexing
  t["aten.index_copy"] = [in](MethodEmitter& m, const Node& n) {
    const Value* self = in(n, 0);
    int64_t rank = static_cast<int64_t>(self->type.shape.size());
    int64_t dim = n.attrs.i("dim");
    if (dim < 0) dim += rank;
    std::vector<Value*> idx(static_cast<size_t>(dim), nullptr);
    idx.push_back(n.inputs.at(1));
    if (m.is_mutable_buffer(self)) {
      // The KV-cache update: in place on the buffer (ExecuTorch's special-cased index_put_).
      int buf = m.T(self);
      m.call("aten::index_put_", "", {buf, m.OTL(idx), m.T(in(n, 2)), m.B(false)}, buf);
      m.bind(m.out(n), buf);
    } else {
      m.out_call(n, "aten::index_put", "out", {m.T(self), m.OTL(idx), m.T(in(n, 2)), m.B(false)});
    }
  };
  t["aten.cat"] = [](MethodEmitter& m, const Node& n) {
    m.out_call(n, "aten::cat", "out", {m.TL(n.inputs), m.I(n.attrs.i("dim"))});
  };
  t["aten.slice.Tensor"] = [in](MethodEmitter& m, const Node& n) {
    Sym end = n.attrs.sym("end");
    bool open = end.is_const() && end.value() >= SymRange::kInf;
    m.out_call(n, "aten::slice_copy", "Tensor_out",
               {m.T(in(n, 0)), m.I(n.attrs.i("dim")), m.sym(n.attrs.sym("start")), open ? m.N() : m.sym(end),
                m.I(n.attrs.i("step"))});
  };
  t["aten._to_copy"] = [in](MethodEmitter& m, const Node& n) {
    m.out_call(n, "aten::_to_copy", "out", {m.T(in(n, 0)), m.B(false), m.N()});
  };
  // factories
  t["aten.arange.start"] = [](MethodEmitter& m, const Node& n) {
    m.out_call(n, "aten::arange", "start_out",
               {m.sym(n.attrs.sym("start")), m.sym(n.attrs.sym("end")), m.I(1)});
  };
  t["aten.full"] = [](MethodEmitter& m, const Node& n) {
    m.out_call(n, "aten::full", "out",
               {m.IL(n.attrs.syms("size")), m.scalar(n.attrs.f("value"), n.attrs.dtype("dtype"))});
  };
  return t;
}

}  // namespace

const std::map<std::string, LowerFn>& lowering_table() {
  static const std::map<std::string, LowerFn> table = [] {
    std::map<std::string, LowerFn> t = hand_written();
    for (const OpSchema* s : all_op_schemas()) {
      if (!s->lower.executorch.declared()) continue;
      if (t.count(s->name))
        HFX_THROW("executorch", "expected {} lowered once, got a declared call and a hand-written one",
                  s->name);
      t[s->name] = declared(s->name, s->lower.executorch);
    }
    return t;
  }();
  return table;
}

void MethodEmitter::lower(const Node& n) {
  const auto& t = lowering_table();
  auto it = t.find(n.op);
  if (it == t.end())
    HFX_THROW("executorch",
              "expected only ops with a portable-kernel lowering in method '{}' (after the stage-5 node "
              "fixes), got {} at '{}'",
              spec_.name, n.op, n.name);
  it->second(*this, n);
}

}  // namespace hfx::et::detail
