// The .pte writer's lowering table (method_emitter.h): each hfx op as the ExecuTorch portable kernel calls
// (out-variants) that compute it.
#include "export/executorch/method_emitter.h"

namespace hfx::et::detail {

const std::map<std::string, LowerFn>& lowering_table() {
  static const std::map<std::string, LowerFn> table = [] {
    std::map<std::string, LowerFn> t;
    auto in = [](const Node& n, size_t i) { return n.inputs.at(i); };
    // binary with alpha
    for (const char* op : {"add", "sub"})
      t[std::string("aten.") + op + ".Tensor"] = [op, in](MethodEmitter& m, const Node& n) {
        m.out_call(n, std::string("aten::") + op, "out", {m.T(in(n, 0)), m.T(in(n, 1)), m.I(1)});
      };
    // binary without alpha: hfx op → (kernel, overload)
    const std::vector<std::tuple<const char*, const char*, const char*>> binary = {
        {"aten.mul.Tensor", "aten::mul", "out"},
        {"aten.div.Tensor", "aten::div", "out"},
        {"aten.maximum", "aten::maximum", "out"},
        {"aten.minimum", "aten::minimum", "out"},
        {"aten.eq.Tensor", "aten::eq", "Tensor_out"},
        {"aten.lt.Tensor", "aten::lt", "Tensor_out"},
        {"aten.le.Tensor", "aten::le", "Tensor_out"},
        {"aten.gt.Tensor", "aten::gt", "Tensor_out"},
        {"aten.ge.Tensor", "aten::ge", "Tensor_out"},
        {"aten.logical_and", "aten::logical_and", "out"},
        {"aten.logical_or", "aten::logical_or", "out"},
        {"aten.mm", "aten::mm", "out"},
        {"aten.bmm", "aten::bmm", "out"},
    };
    for (const auto& [op, k, ov] : binary)
      t[op] = [k = std::string(k), ov = std::string(ov), in](MethodEmitter& m, const Node& n) {
        m.out_call(n, k, ov, {m.T(in(n, 0)), m.T(in(n, 1))});
      };
    for (const char* op : {"neg", "abs", "relu", "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "sin",
                           "cos", "reciprocal", "erf", "logical_not"})
      t[std::string("aten.") + op] = [op, in](MethodEmitter& m, const Node& n) {
        m.out_call(n, std::string("aten::") + op, "out", {m.T(in(n, 0))});
      };
    t["aten.add.Scalar"] = [in](MethodEmitter& m, const Node& n) {
      m.out_call(n, "aten::add", "Scalar_out",
                 {m.T(in(n, 0)), m.scalar(n.attrs.f("other"), in(n, 0)->type.dtype), m.I(1)});
    };
    t["aten.mul.Scalar"] = [in](MethodEmitter& m, const Node& n) {
      m.out_call(n, "aten::mul", "Scalar_out",
                 {m.T(in(n, 0)), m.scalar(n.attrs.f("other"), in(n, 0)->type.dtype)});
    };
    t["aten.pow.Tensor_Scalar"] = [in](MethodEmitter& m, const Node& n) {
      m.out_call(n, "aten::pow", "Tensor_Scalar_out", {m.T(in(n, 0)), m.D(n.attrs.f("exponent"))});
    };
    t["aten.where.self"] = [in](MethodEmitter& m, const Node& n) {
      m.out_call(n, "aten::where", "self_out", {m.T(in(n, 0)), m.T(in(n, 1)), m.T(in(n, 2))});
    };
    t["aten.gelu"] = [in](MethodEmitter& m, const Node& n) {
      m.out_call(n, "aten::gelu", "out", {m.T(in(n, 0)), m.Str(n.attrs.s("approximate"))});
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
    t["aten.amax"] = [in](MethodEmitter& m, const Node& n) {
      m.out_call(n, "aten::amax", "out",
                 {m.T(in(n, 0)), m.IL(n.attrs.ints("dim")), m.B(n.attrs.b("keepdim"))});
    };
    t["aten.argmax"] = [in](MethodEmitter& m, const Node& n) {
      m.out_call(n, "aten::argmax", "out", {m.T(in(n, 0)), m.I(n.attrs.i("dim")), m.B(n.attrs.b("keepdim"))});
    };
    t["aten.cumsum"] = [in](MethodEmitter& m, const Node& n) {
      m.out_call(n, "aten::cumsum", "out", {m.T(in(n, 0)), m.I(n.attrs.i("dim")), m.N()});
    };
    for (const char* op : {"_softmax", "_log_softmax"})
      t[std::string("aten.") + op] = [op, in](MethodEmitter& m, const Node& n) {
        m.out_call(n, std::string("aten::") + op, "out", {m.T(in(n, 0)), m.I(n.attrs.i("dim")), m.B(false)});
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
    t["aten.embedding"] = [in](MethodEmitter& m, const Node& n) {
      m.out_call(n, "aten::embedding", "out",
                 {m.T(in(n, 0)), m.T(in(n, 1)), m.I(-1), m.B(false), m.B(false)});
    };
    t["aten.index_select"] = [in](MethodEmitter& m, const Node& n) {
      m.out_call(n, "aten::index_select", "out", {m.T(in(n, 0)), m.I(n.attrs.i("dim")), m.T(in(n, 1))});
    };
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
                 {m.T(in(n, 0)), m.I(n.attrs.i("dim")), m.sym(n.attrs.sym("start")),
                  open ? m.N() : m.sym(end), m.I(n.attrs.i("step"))});
    };
    t["aten.view"] = [in](MethodEmitter& m, const Node& n) {
      m.out_call(n, "aten::view_copy", "out", {m.T(in(n, 0)), m.IL(n.attrs.syms("size"))});
    };
    t["aten.permute"] = [in](MethodEmitter& m, const Node& n) {
      m.out_call(n, "aten::permute_copy", "out", {m.T(in(n, 0)), m.IL(n.attrs.ints("dims"))});
    };
    t["aten.expand"] = [in](MethodEmitter& m, const Node& n) {
      m.out_call(n, "aten::expand_copy", "out", {m.T(in(n, 0)), m.IL(n.attrs.syms("size")), m.B(false)});
    };
    t["aten.unsqueeze"] = [in](MethodEmitter& m, const Node& n) {
      m.out_call(n, "aten::unsqueeze_copy", "out", {m.T(in(n, 0)), m.I(n.attrs.i("dim"))});
    };
    t["aten.squeeze.dim"] = [in](MethodEmitter& m, const Node& n) {
      m.out_call(n, "aten::squeeze_copy", "dim_out", {m.T(in(n, 0)), m.I(n.attrs.i("dim"))});
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
