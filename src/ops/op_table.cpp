// The op table: every op hfx knows, declared once. Each entry names the op, its arity, its attribute
// specs with defaults, its shape/dtype inference over symbolic dims, its CPU kernel and, for composite
// ops, its reference decomposition. Emitters look ops up here; nothing else lists ops.
#include <numeric>

#include "hfx/core/error.h"
#include "hfx/ops/op_schema.h"
#include "kernels/kernels.h"
#include "kernels/linear_q.h"
#include "ops/decompositions.h"
#include "ops/op_shapes.h"

namespace hfx {
namespace {

using op_shapes::In;
using op_shapes::need;
using op_shapes::norm_dim;
using op_shapes::Out;

// Broadcast two symbolic shapes (numpy rules). Unequal symbolic dims are decided through the env, which
// records a guard if the ranges cannot tell.
SymShape broadcast(const SymShape& a, const SymShape& b, ShapeEnv& env, const char* op) {
  size_t n = std::max(a.size(), b.size());
  SymShape out(n);
  for (size_t i = 0; i < n; i++) {
    bool ha = i + a.size() >= n, hb = i + b.size() >= n;
    Sym x = ha ? a[i + a.size() - n] : Sym(1);
    Sym y = hb ? b[i + b.size() - n] : Sym(1);
    if (!ha) {
      out[i] = y;
      continue;
    }
    if (!hb) {
      out[i] = x;
      continue;
    }
    if (x.same(y)) {
      out[i] = x;
      continue;
    }
    if (x.is_const() && x.value() == 1) {
      out[i] = y;
      continue;
    }
    if (y.is_const() && y.value() == 1) {
      out[i] = x;
      continue;
    }
    if (x.is_const() && y.is_const())
      HFX_THROW("ops", "expected broadcastable shapes for {}, got {} and {}", op, shape_str(a), shape_str(b));
    if (env.eq(x, y)) {
      out[i] = x;
      continue;
    }
    if (env.eq(x, Sym(1))) {
      out[i] = y;
      continue;
    }
    if (env.eq(y, Sym(1))) {
      out[i] = x;
      continue;
    }
    HFX_THROW("ops", "expected broadcastable shapes for {}, got {} and {}", op, shape_str(a), shape_str(b));
  }
  return out;
}

Out binary(const In& in, const Attrs&, ShapeEnv& env, const char* op) {
  const auto& a = need(in, 0, op);
  const auto& b = need(in, 1, op);
  return {TensorType{promote_types(a.dtype, b.dtype), broadcast(a.shape, b.shape, env, op)}};
}
// True division: integer operands give float32, as torch does.
Out true_div(const In& in, const Attrs& a, ShapeEnv& env) {
  Out o = binary(in, a, env, "aten.div.Tensor");
  if (!dtype_is_float(o[0].dtype)) o[0].dtype = DType::F32;
  return o;
}
Out compare(const In& in, const Attrs&, ShapeEnv& env, const char* op) {
  return {TensorType{DType::Bool, broadcast(need(in, 0, op).shape, need(in, 1, op).shape, env, op)}};
}
Out same_as_first(const In& in, const Attrs&, ShapeEnv&) { return {*in.at(0)}; }
Out float_unary(const In& in, const Attrs&, ShapeEnv&) {
  TensorType t = *in.at(0);
  if (!dtype_is_float(t.dtype)) t.dtype = DType::F32;
  return {t};
}

Out reduce(const In& in, const Attrs& a, ShapeEnv&, const char* op) {
  const auto& x = need(in, 0, op);
  int64_t r = static_cast<int64_t>(x.shape.size());
  std::vector<int64_t> dims = a.ints("dim");
  if (dims.empty()) {
    dims.resize(r);
    std::iota(dims.begin(), dims.end(), 0);
  }
  std::vector<bool> red(r, false);
  for (auto d : dims) red[norm_dim(d, r, op)] = true;
  SymShape s;
  for (int64_t i = 0; i < r; i++) {
    if (!red[i])
      s.push_back(x.shape[i]);
    else if (a.b("keepdim"))
      s.push_back(Sym(1));
  }
  // torch sums integers and bools in int64; mean/amax keep the input dtype.
  DType dt = (std::string(op) == "aten.sum.dim_IntList" && !dtype_is_float(x.dtype)) ? DType::I64 : x.dtype;
  return {TensorType{dt, s}};
}

Out infer_matmul(const In& in, const Attrs&, ShapeEnv& env, const char* op) {
  const auto& a = need(in, 0, op);
  const auto& b = need(in, 1, op);
  if (a.shape.size() < 1 || b.shape.size() < 1) HFX_THROW("ops", "expected at least 1-d operands for {}", op);
  SymShape as = a.shape, bs = b.shape;
  bool a1 = as.size() == 1, b1 = bs.size() == 1;
  if (a1) as.insert(as.begin(), Sym(1));
  if (b1) bs.push_back(Sym(1));
  Sym k1 = as.back(), k2 = bs[bs.size() - 2];
  if (!k1.same(k2) && !env.eq(k1, k2))
    HFX_THROW("ops", "expected matching inner dims for {}, got {} and {}", op, shape_str(a.shape),
              shape_str(b.shape));
  SymShape ab(as.begin(), as.end() - 2), bb(bs.begin(), bs.end() - 2);
  SymShape out = broadcast(ab, bb, env, op);
  if (!a1) out.push_back(as[as.size() - 2]);
  if (!b1) out.push_back(bs.back());
  return {TensorType{promote_types(a.dtype, b.dtype), out}};
}

Out infer_mm(const In& in, const Attrs& at, ShapeEnv& env) {
  if (need(in, 0, "aten.mm").shape.size() != 2 || need(in, 1, "aten.mm").shape.size() != 2)
    HFX_THROW("ops", "expected 2-d operands for aten.mm, got {} and {}", in[0]->str(), in[1]->str());
  return infer_matmul(in, at, env, "aten.mm");
}
Out infer_bmm(const In& in, const Attrs& at, ShapeEnv& env) {
  if (need(in, 0, "aten.bmm").shape.size() != 3 || need(in, 1, "aten.bmm").shape.size() != 3)
    HFX_THROW("ops", "expected 3-d operands for aten.bmm, got {} and {}", in[0]->str(), in[1]->str());
  return infer_matmul(in, at, env, "aten.bmm");
}

Out infer_linear(const In& in, const Attrs&, ShapeEnv& env) {
  const auto& x = need(in, 0, "aten.linear");
  const auto& w = need(in, 1, "aten.linear");
  if (w.shape.size() != 2) HFX_THROW("ops", "expected a 2-d weight for aten.linear, got {}", w.str());
  if (x.shape.empty()) HFX_THROW("ops", "expected at least 1-d input for aten.linear, got a scalar");
  if (!x.shape.back().same(w.shape[1]) && !env.eq(x.shape.back(), w.shape[1]))
    HFX_THROW("ops", "expected input features {} to match weight {}, got {}", w.shape[1].str(), w.str(),
              x.str());
  if (in.size() > 2 && in[2] && (in[2]->shape.size() != 1 || !in[2]->shape[0].same(w.shape[0])))
    HFX_THROW("ops", "expected bias of shape [{}] for aten.linear, got {}", w.shape[0].str(), in[2]->str());
  SymShape s = x.shape;
  s.back() = w.shape[0];
  return {TensorType{promote_types(x.dtype, w.dtype), s}};
}

Out infer_where(const In& in, const Attrs&, ShapeEnv& env) {
  const char* op = "aten.where.self";
  SymShape s = broadcast(need(in, 0, op).shape,
                         broadcast(need(in, 1, op).shape, need(in, 2, op).shape, env, op), env, op);
  return {TensorType{promote_types(in[1]->dtype, in[2]->dtype), s}};
}

Out infer_argmax(const In& in, const Attrs& a, ShapeEnv&) {
  const auto& x = need(in, 0, "aten.argmax");
  int64_t d = norm_dim(a.i("dim"), static_cast<int64_t>(x.shape.size()), "aten.argmax");
  SymShape s = x.shape;
  if (a.b("keepdim"))
    s[d] = Sym(1);
  else
    s.erase(s.begin() + d);
  return {TensorType{DType::I64, s}};
}

Out infer_dim_check_same(const In& in, const Attrs& a, ShapeEnv&, const char* op) {
  const auto& x = need(in, 0, op);
  norm_dim(a.i("dim"), static_cast<int64_t>(x.shape.size()), op);
  return {x};
}

Out infer_layer_norm(const In& in, const Attrs&, ShapeEnv&) { return {need(in, 0, "aten.layer_norm")}; }

Out infer_cat(const In& in, const Attrs& a, ShapeEnv& env) {
  if (in.empty()) HFX_THROW("ops", "expected at least one input for aten.cat, got none");
  const auto& x = need(in, 0, "aten.cat");
  int64_t r = static_cast<int64_t>(x.shape.size());
  int64_t d = norm_dim(a.i("dim"), r, "aten.cat");
  SymShape s = x.shape;
  DType dt = x.dtype;
  for (size_t i = 1; i < in.size(); i++) {
    const auto& y = need(in, i, "aten.cat");
    if (static_cast<int64_t>(y.shape.size()) != r)
      HFX_THROW("ops", "expected rank {} for every aten.cat input, got {} at input {}", r, y.str(), i);
    for (int64_t j = 0; j < r; j++) {
      if (j == d) continue;
      if (!y.shape[j].same(s[j]) && !env.eq(y.shape[j], s[j]))
        HFX_THROW("ops", "expected aten.cat inputs to agree off dim {}, got {} and {}", d, x.str(), y.str());
    }
    s[d] = s[d] + y.shape[d];
    dt = promote_types(dt, y.dtype);
  }
  return {TensorType{dt, s}};
}

Out infer_slice(const In& in, const Attrs& a, ShapeEnv& env) {
  const auto& x = need(in, 0, "aten.slice.Tensor");
  int64_t d = norm_dim(a.i("dim"), static_cast<int64_t>(x.shape.size()), "aten.slice.Tensor");
  Sym n = x.shape[d];
  Sym start = a.sym("start"), end = a.sym("end");
  int64_t step = a.i("step");
  if (step <= 0) HFX_THROW("ops", "expected a positive slice step, got {}", step);
  // Negative constants count from the end, as in Python.
  if (start.is_const() && start.value() < 0) start = n + start;
  if (end.is_const() && end.value() < 0) end = n + end;
  start = env.max(env.min(start, n), Sym(0));
  end = env.max(env.min(end, n), start);
  Sym len = floordiv(end - start + Sym(step - 1), Sym(step));
  SymShape s = x.shape;
  s[d] = len;
  return {TensorType{x.dtype, s}};
}

Out infer_view(const In& in, const Attrs& a, ShapeEnv& env) {
  const auto& x = need(in, 0, "aten.view");
  SymShape s = a.syms("size");
  Sym total(1);
  for (const auto& d : x.shape) total = total * d;
  int infer = -1;
  Sym known(1);
  for (size_t i = 0; i < s.size(); i++) {
    if (s[i].is_const() && s[i].value() == -1) {
      if (infer >= 0) HFX_THROW("ops", "expected at most one -1 in aten.view size, got {}", shape_str(s));
      infer = static_cast<int>(i);
    } else {
      known = known * s[i];
    }
  }
  if (infer >= 0) s[infer] = floordiv(total, known);
  Sym got(1);
  for (const auto& d : s) got = got * d;
  if (!got.same(total) && !env.eq(got, total))
    HFX_THROW("ops", "expected aten.view to keep {} elements of {}, got size {}", total.str(), x.str(),
              shape_str(s));
  return {TensorType{x.dtype, s}};
}

Out infer_permute(const In& in, const Attrs& a, ShapeEnv&) {
  const auto& x = need(in, 0, "aten.permute");
  const auto& dims = a.ints("dims");
  int64_t r = static_cast<int64_t>(x.shape.size());
  if (static_cast<int64_t>(dims.size()) != r)
    HFX_THROW("ops", "expected {} dims for aten.permute of {}, got {}", r, x.str(), dims.size());
  SymShape s(r);
  std::vector<bool> seen(r, false);
  for (int64_t i = 0; i < r; i++) {
    int64_t d = norm_dim(dims[i], r, "aten.permute");
    if (seen[d]) HFX_THROW("ops", "expected a permutation for aten.permute, got dim {} twice", d);
    seen[d] = true;
    s[i] = x.shape[d];
  }
  return {TensorType{x.dtype, s}};
}

Out infer_expand(const In& in, const Attrs& a, ShapeEnv& env) {
  const auto& x = need(in, 0, "aten.expand");
  SymShape s = a.syms("size");
  if (s.size() < x.shape.size())
    HFX_THROW("ops", "expected aten.expand to at least rank {}, got {}", x.shape.size(), shape_str(s));
  size_t lead = s.size() - x.shape.size();
  for (size_t i = lead; i < s.size(); i++) {
    const Sym& have = x.shape[i - lead];
    if (s[i].is_const() && s[i].value() == -1) {
      s[i] = have;
      continue;
    }
    if (have.same(s[i]) || (have.is_const() && have.value() == 1)) continue;
    if (!env.eq(have, s[i]))
      HFX_THROW("ops", "expected size 1 or {} at dim {} for aten.expand of {}, got {}", s[i].str(), i,
                x.str(), have.str());
  }
  return {TensorType{x.dtype, s}};
}

Out infer_unsqueeze(const In& in, const Attrs& a, ShapeEnv&) {
  const auto& x = need(in, 0, "aten.unsqueeze");
  int64_t r = static_cast<int64_t>(x.shape.size()) + 1;
  int64_t d = a.i("dim");
  if (d < 0) d += r;
  if (d < 0 || d >= r)
    HFX_THROW("ops", "expected dim in [{}, {}) for aten.unsqueeze, got {}", -r, r, a.i("dim"));
  SymShape s = x.shape;
  s.insert(s.begin() + d, Sym(1));
  return {TensorType{x.dtype, s}};
}

Out infer_squeeze(const In& in, const Attrs& a, ShapeEnv& env) {
  const auto& x = need(in, 0, "aten.squeeze.dim");
  int64_t d = norm_dim(a.i("dim"), static_cast<int64_t>(x.shape.size()), "aten.squeeze.dim");
  SymShape s = x.shape;
  if (env.eq(s[d], Sym(1))) s.erase(s.begin() + d);
  return {TensorType{x.dtype, s}};
}

Out infer_to_copy(const In& in, const Attrs& a, ShapeEnv&) {
  return {TensorType{a.dtype("dtype"), need(in, 0, "aten._to_copy").shape}};
}

Out infer_arange(const In&, const Attrs& a, ShapeEnv& env) {
  Sym len = env.max(a.sym("end") - a.sym("start"), Sym(0));
  return {TensorType{a.dtype("dtype"), {len}}};
}
Out infer_full(const In&, const Attrs& a, ShapeEnv&) {
  return {TensorType{a.dtype("dtype"), a.syms("size")}};
}

Out to_bool(const In& i, const Attrs&, ShapeEnv&) { return Out{TensorType{DType::Bool, i.at(0)->shape}}; }
Out infer_matmul2(const In& i, const Attrs& a, ShapeEnv& e) { return infer_matmul(i, a, e, "aten.matmul"); }

#define BIN(n) [](const In& i, const Attrs& a, ShapeEnv& e) { return binary(i, a, e, n); }
#define CMP(n) [](const In& i, const Attrs& a, ShapeEnv& e) { return compare(i, a, e, n); }
#define RED(n) [](const In& i, const Attrs& a, ShapeEnv& e) { return reduce(i, a, e, n); }
#define DIMSAME(n) [](const In& i, const Attrs& a, ShapeEnv& e) { return infer_dim_check_same(i, a, e, n); }

AttrSpec req(const std::string& n, const std::string& doc = "") { return AttrSpec{n, true, int64_t{0}, doc}; }
// A required float attribute: the placeholder's type says so (the text IR reads `exponent=2` as a float).
AttrSpec req_f(const std::string& n, const std::string& doc = "") { return AttrSpec{n, true, 0.0, doc}; }
AttrSpec opt(const std::string& n, AttrValue d, const std::string& doc = "") {
  return AttrSpec{n, false, std::move(d), doc};
}

// The backends' one-call lowerings (hfx/ops/op_lowering.h): ExecuTorch portable kernel "aten::<k>", ATen
// overload "torch.ops.aten.<a>", ONNX op. The argument lists are the callees' schemas in order.
using namespace lower;
CallDecl et(const std::string& k, std::vector<CallArg> args) { return {"aten::" + k, std::move(args)}; }
CallDecl aten(const std::string& a, std::vector<CallArg> args) {
  return {"torch.ops.aten." + a, std::move(args)};
}
const std::vector<CallArg> kSelf = {in(0, "self")};
const std::vector<CallArg> kSelfOther = {in(0, "self"), in(1, "other")};
OpLowering with_onnx(OpLowering l, const char* onnx, OnnxForm form) {
  l.onnx = onnx;
  l.onnx_form = form;
  return l;
}
// a ⊕ b, elementwise: ExecuTorch "aten::<e>" (add/sub also take alpha = 1), ATen "<a>", ONNX `onnx`.
OpLowering elementwise2(const std::string& e, const std::string& a, bool alpha, const char* onnx, OnnxForm f,
                        const char* xnn = "") {
  std::vector<CallArg> ea{in(0), in(1)};
  if (alpha) ea.push_back(constant(int64_t{1}, "alpha"));
  OpLowering l = with_onnx(
      {.executorch = et(e, ea), .aten = aten(a, kSelfOther), .aten_layout = AtenLayout::Elementwise}, onnx,
      f);
  l.xnnpack = xnn;
  return l;
}

std::vector<OpSchema> build_table() {
  namespace K = kernels;
  std::vector<OpSchema> t;
  auto add = [&](OpSchema s) { t.push_back(std::move(s)); };
  // f(x), elementwise: "aten::<u>.out" where ExecuTorch's portable library has it, "<u>.default", `onnx`.
  auto unary = [&](const char* name, KernelFn k, bool float_only, bool executorch, const char* onnx,
                   const char* xnn = "") {
    std::string u = std::string(name).substr(5);
    OpLowering l{.executorch = executorch ? et(u + ".out", {in(0)}) : CallDecl{},
                 .aten = aten(u + ".default", kSelf),
                 .aten_layout = AtenLayout::Elementwise};
    l.xnnpack = xnn;
    add({.name = name,
         .min_inputs = 1,
         .max_inputs = 1,
         .infer = float_only ? InferFn(float_unary) : InferFn(same_as_first),
         .kernel = k,
         .lower = onnx ? with_onnx(l, onnx, OnnxForm::Unary) : l});
  };
  // A table of data: one op per line where it fits, its lowerings below it.
  // clang-format off
  using F = OnnxForm;
  // ---- elementwise binary ----
  add({.name = "aten.add.Tensor", .min_inputs = 2, .max_inputs = 2, .infer = BIN("aten.add.Tensor"),
       .kernel = K::add, .doc = "a + b", .lower = elementwise2("add.out", "add.Tensor", true, "Add", F::Binary,
       "XNNAdd")});
  add({.name = "aten.sub.Tensor", .min_inputs = 2, .max_inputs = 2, .infer = BIN("aten.sub.Tensor"),
       .kernel = K::sub, .doc = "a - b", .lower = elementwise2("sub.out", "sub.Tensor", true, "Sub", F::Binary,
       "XNNSubtract")});
  add({.name = "aten.mul.Tensor", .min_inputs = 2, .max_inputs = 2, .infer = BIN("aten.mul.Tensor"),
       .kernel = K::mul, .doc = "a * b", .lower = elementwise2("mul.out", "mul.Tensor", false, "Mul",
       F::Binary, "XNNMultiply")});
  add({.name = "aten.div.Tensor", .min_inputs = 2, .max_inputs = 2, .infer = true_div, .kernel = K::div,
       .doc = "a / b (true division)", .lower = elementwise2("div.out", "div.Tensor", false, "Div", F::Binary,
       "XNNDiv")});
  add({.name = "aten.maximum", .min_inputs = 2, .max_inputs = 2, .infer = BIN("aten.maximum"),
       .kernel = K::maximum, .lower = elementwise2("maximum.out", "maximum.default", false, "Max", F::Binary,
       "XNNMaximum")});
  add({.name = "aten.minimum", .min_inputs = 2, .max_inputs = 2, .infer = BIN("aten.minimum"),
       .kernel = K::minimum, .lower = elementwise2("minimum.out", "minimum.default", false, "Min", F::Binary,
       "XNNMinimum")});
  add({.name = "aten.add.Scalar", .min_inputs = 1, .max_inputs = 1, .attrs = {req_f("other")},
       .infer = same_as_first, .kernel = K::add_scalar, .doc = "a + other"});
  add({.name = "aten.mul.Scalar", .min_inputs = 1, .max_inputs = 1, .attrs = {req_f("other")},
       .infer = same_as_first, .kernel = K::mul_scalar, .doc = "a * other"});
  add({.name = "aten.pow.Tensor_Scalar", .min_inputs = 1, .max_inputs = 1, .attrs = {req_f("exponent")},
       .infer = float_unary, .kernel = K::pow_scalar, .doc = "a ** exponent",
       .lower = {.executorch = et("pow.Tensor_Scalar_out", {in(0), attr("exponent")}),
       .aten = aten("pow.Tensor_Scalar", {in(0, "self"), attr("exponent")}),
       .aten_layout = AtenLayout::LikeInput0}});
  add({.name = "aten.eq.Tensor", .min_inputs = 2, .max_inputs = 2, .infer = CMP("aten.eq.Tensor"),
       .kernel = K::eq, .lower = elementwise2("eq.Tensor_out", "eq.Tensor", false, "Equal", F::Compare)});
  add({.name = "aten.lt.Tensor", .min_inputs = 2, .max_inputs = 2, .infer = CMP("aten.lt.Tensor"),
       .kernel = K::lt, .lower = elementwise2("lt.Tensor_out", "lt.Tensor", false, "Less", F::Compare)});
  add({.name = "aten.le.Tensor", .min_inputs = 2, .max_inputs = 2, .infer = CMP("aten.le.Tensor"),
       .kernel = K::le, .lower = elementwise2("le.Tensor_out", "le.Tensor", false, "LessOrEqual", F::Compare)});
  add({.name = "aten.gt.Tensor", .min_inputs = 2, .max_inputs = 2, .infer = CMP("aten.gt.Tensor"),
       .kernel = K::gt, .lower = elementwise2("gt.Tensor_out", "gt.Tensor", false, "Greater", F::Compare)});
  add({.name = "aten.ge.Tensor", .min_inputs = 2, .max_inputs = 2, .infer = CMP("aten.ge.Tensor"),
       .kernel = K::ge, .lower = elementwise2("ge.Tensor_out", "ge.Tensor", false, "GreaterOrEqual",
       F::Compare)});
  add({.name = "aten.logical_and", .min_inputs = 2, .max_inputs = 2, .infer = CMP("aten.logical_and"),
       .kernel = K::logical_and, .lower = elementwise2("logical_and.out", "logical_and.default", false, "And",
       F::Logical)});
  add({.name = "aten.logical_or", .min_inputs = 2, .max_inputs = 2, .infer = CMP("aten.logical_or"),
       .kernel = K::logical_or, .lower = elementwise2("logical_or.out", "logical_or.default", false, "Or",
       F::Logical)});
  add({.name = "aten.logical_not", .min_inputs = 1, .max_inputs = 1, .infer = to_bool,
       .kernel = K::logical_not, .lower = with_onnx({.executorch = et("logical_not.out", {in(0)}),
       .aten = aten("logical_not.default", kSelf), .aten_layout = AtenLayout::Elementwise},
                "Not", F::Logical)});
  add({.name = "aten.where.self", .min_inputs = 3, .max_inputs = 3, .infer = infer_where, .kernel = K::where,
       .doc = "cond ? a : b", .lower = {.executorch = et("where.self_out", {in(0), in(1), in(2)}),
       .aten = aten("where.self", {in(0, "condition"), in(1, "self"), in(2, "other")}),
       .aten_layout = AtenLayout::Elementwise}});
  // ---- unary ----
  unary("aten.neg", K::neg, false, true, "Neg", "XNNNegate");
  unary("aten.abs", K::abs, false, true, "Abs", "XNNAbs");
  unary("aten.relu", K::relu, false, true, "Relu");
  unary("aten.exp", K::exp, true, true, "Exp", "XNNExp");
  unary("aten.log", K::log, true, true, "Log", "XNNLog");
  unary("aten.sqrt", K::sqrt, true, true, "Sqrt", "XNNSquareRoot");
  unary("aten.rsqrt", K::rsqrt, true, true, nullptr, "XNNReciprocalSquareRoot");
  unary("aten.tanh", K::tanh, true, true, "Tanh", "XNNTanh");
  unary("aten.sigmoid", K::sigmoid, true, true, "Sigmoid", "XNNSigmoid");
  unary("aten.silu", K::silu, true, false, nullptr);  // ExecuTorch: silu_to_sigmoid_mul (no portable kernel)
  unary("aten.sin", K::sin, true, true, "Sin", "XNNSin");
  unary("aten.cos", K::cos, true, true, "Cos", "XNNCos");
  unary("aten.reciprocal", K::reciprocal, true, true, "Reciprocal");
  unary("aten.erf", K::erf, true, true, "Erf");
  add({.name = "aten.gelu", .min_inputs = 1, .max_inputs = 1,
       .attrs = {opt("approximate", std::string("none"), "'none' (erf) or 'tanh'")}, .infer = float_unary,
       .kernel = K::gelu, .lower = {.executorch = et("gelu.out", {in(0), attr("approximate")})}});
  // ---- linear algebra ----
  add({.name = "aten.mm", .min_inputs = 2, .max_inputs = 2, .infer = infer_mm, .kernel = K::mm,
       .doc = "[M,K] @ [K,N]", .lower = {.executorch = et("mm.out", {in(0), in(1)}),
       .aten = aten("mm.default", {in(0, "self"), in(1, "mat2")})}});
  add({.name = "aten.bmm", .min_inputs = 2, .max_inputs = 2, .infer = infer_bmm, .kernel = K::bmm,
       .doc = "[B,M,K] @ [B,K,N]", .lower = {.executorch = et("bmm.out", {in(0), in(1)}),
       .aten = aten("bmm.default", {in(0, "self"), in(1, "mat2")})}});
  add({.name = "aten.matmul", .min_inputs = 2, .max_inputs = 2, .infer = infer_matmul2, .kernel = K::matmul,
       .doc = "batched matmul with broadcasting", .lower = {.aten = aten("matmul.default", kSelfOther)}});
  add({.name = "aten.linear", .min_inputs = 2, .max_inputs = 3, .infer = infer_linear, .kernel = K::linear,
       .doc = "x @ w^T + b"});
  add({.name = "hfx.linear_q", .min_inputs = 3, .max_inputs = 4,
       .attrs = {req("bits", "4 or 8"), req("group_size", "input features per scale"),
        opt("act_bits", int64_t{0}, "8: x rounded to int8 per block (MatMulNBits accuracy_level 4); 0: f32")},
             .infer = op_shapes::linear_q, .kernel = K::linear_q, .decompose = decomp::linear_q,
             .doc = "x @ dequant(codes, scales, zero_points)^T, MatMulNBits layout (hfx/quant/quantize.h)"});
  add({.name = "hfx.embedding_q", .min_inputs = 3, .max_inputs = 4,
       .attrs = {req("bits", "4 or 8"), req("group_size", "features per scale")},
       .infer = op_shapes::embedding_q, .kernel = K::embedding_q,
       .doc = "rows of dequant(codes, scales, zero_points) (inputs: codes, scales, indices[, zero_points])"});
  // ---- reductions ----
  const std::vector<AttrSpec> reduce_attrs = {opt("dim", std::vector<int64_t>{}), opt("keepdim", false)};
  add({.name = "aten.sum.dim_IntList", .min_inputs = 1, .max_inputs = 1, .attrs = reduce_attrs,
       .infer = RED("aten.sum.dim_IntList"), .kernel = K::sum});
  add({.name = "aten.mean.dim", .min_inputs = 1, .max_inputs = 1, .attrs = reduce_attrs,
       .infer = RED("aten.mean.dim"), .kernel = K::mean});
  add({.name = "aten.amax", .min_inputs = 1, .max_inputs = 1, .attrs = reduce_attrs,
       .infer = RED("aten.amax"), .kernel = K::amax,
       .lower = {.executorch = et("amax.out", {in(0), attr("dim"), attr("keepdim")})}});
  add({.name = "aten.argmax", .min_inputs = 1, .max_inputs = 1, .attrs = {req("dim"), opt("keepdim", false)},
       .infer = infer_argmax, .kernel = K::argmax,
       .lower = {.executorch = et("argmax.out", {in(0), attr("dim"), attr("keepdim")}),
       .aten = aten("argmax.default", {in(0, "self"), attr("dim"), attr("keepdim")})}});
  add({.name = "aten.cumsum", .min_inputs = 1, .max_inputs = 1, .attrs = {req("dim")},
       .infer = DIMSAME("aten.cumsum"), .kernel = K::cumsum,
       .lower = {.executorch = et("cumsum.out", {in(0), attr("dim"), none("dtype")})}});
  using NamedKernel = std::pair<const char*, KernelFn>;
  for (auto [name, k] : {NamedKernel{"aten._softmax", K::softmax}, {"aten._log_softmax", K::log_softmax}}) {
    std::string op = name, u = op.substr(5);
    InferFn infer = [op](const In& i, const Attrs& a, ShapeEnv& e) {
      return infer_dim_check_same(i, a, e, op.c_str());
    };
    add({.name = op, .min_inputs = 1, .max_inputs = 1, .attrs = {req("dim")}, .infer = infer, .kernel = k,
         .lower = {.executorch = et(u + ".out", {in(0), attr("dim"), constant(false, "half_to_float")}),
         .aten = aten(u + ".default", {in(0, "self"), attr("dim"), constant(false, "half_to_float")}),
         .aten_layout = AtenLayout::LikeInput0}});
  }
  add({.name = "aten.layer_norm", .min_inputs = 1, .max_inputs = 3, .attrs = {opt("eps", 1e-5)},
       .infer = infer_layer_norm, .kernel = K::layer_norm, .doc = "over the last dim"});
  // ---- indexing and shape ----
  add({.name = "aten.embedding", .min_inputs = 2, .max_inputs = 2, .infer = op_shapes::embedding,
       .kernel = K::embedding, .lower = {.executorch = et("embedding.out", {in(0), in(1), constant(int64_t{-1},
       "padding_idx"),
                            constant(false, "scale_grad_by_freq"), constant(false, "sparse")}),
                                 .aten = aten("embedding.default", {in(0, "weight"), in(1, "indices")})}});
  add({.name = "aten.index_select", .min_inputs = 2, .max_inputs = 2, .attrs = {req("dim")},
       .infer = op_shapes::index_select, .kernel = K::index_select,
       .lower = {.executorch = et("index_select.out", {in(0), attr("dim"), in(1)}),
       .aten = aten("index_select.default", {in(0, "self"), attr("dim"), in(1, "index")})}});
  add({.name = "aten.index_copy", .min_inputs = 3, .max_inputs = 3, .attrs = {req("dim")},
       .infer = op_shapes::index_copy, .kernel = K::index_copy, .doc = "functional index_copy",
       .lower = {.aten = aten("index_copy.default", {in(0, "self"), attr("dim"), in(1, "index"), in(2,
       "source")}), .aten_layout = AtenLayout::LikeInput0}});
  add({.name = "aten.cat", .min_inputs = 1, .max_inputs = -1, .attrs = {opt("dim", int64_t{0})},
       .infer = infer_cat, .kernel = K::cat});
  add({.name = "aten.slice.Tensor", .min_inputs = 1, .max_inputs = 1,
       .attrs = {opt("dim", int64_t{0}), opt("start", Sym(0)), opt("end", Sym(SymRange::kInf)),
        opt("step", int64_t{1})}, .infer = infer_slice, .kernel = K::slice});
  add({.name = "aten.view", .min_inputs = 1, .max_inputs = 1, .attrs = {req("size")}, .infer = infer_view,
       .kernel = K::view, .lower = {.executorch = et("view_copy.out", {in(0), attr("size")})}});
  add({.name = "aten.permute", .min_inputs = 1, .max_inputs = 1, .attrs = {req("dims")},
       .infer = infer_permute, .kernel = K::permute,
       .lower = {.executorch = et("permute_copy.out", {in(0), attr("dims")})}});
  add({.name = "aten.expand", .min_inputs = 1, .max_inputs = 1, .attrs = {req("size")}, .infer = infer_expand,
       .kernel = K::expand, .lower = {.executorch = et("expand_copy.out", {in(0), attr("size"), constant(false,
       "implicit")})}});
  add({.name = "aten.unsqueeze", .min_inputs = 1, .max_inputs = 1, .attrs = {req("dim")},
       .infer = infer_unsqueeze, .kernel = K::unsqueeze,
       .lower = {.executorch = et("unsqueeze_copy.out", {in(0), attr("dim")}),
       .aten = aten("unsqueeze.default", {in(0, "self"), attr("dim")}),
       .aten_layout = AtenLayout::LikeInput0}});
  add({.name = "aten.squeeze.dim", .min_inputs = 1, .max_inputs = 1, .attrs = {req("dim")},
       .infer = infer_squeeze, .kernel = K::squeeze,
       .lower = {.executorch = et("squeeze_copy.dim_out", {in(0), attr("dim")}),
       .aten = aten("squeeze.dim", {in(0, "self"), attr("dim")}), .aten_layout = AtenLayout::LikeInput0}});
  add({.name = "aten._to_copy", .min_inputs = 1, .max_inputs = 1, .attrs = {req("dtype")},
       .infer = infer_to_copy, .kernel = K::to_copy, .doc = "dtype conversion"});
  // ---- factories ----
  add({.name = "aten.arange.start", .min_inputs = 0, .max_inputs = 0,
       .attrs = {opt("start", Sym(0)), req("end"), opt("dtype", DType::I64)}, .infer = infer_arange,
       .kernel = K::arange});
  add({.name = "aten.full", .min_inputs = 0, .max_inputs = 0,
       .attrs = {req("size"), opt("value", 0.0), opt("dtype", DType::F32)}, .infer = infer_full,
       .kernel = K::full});
  // ---- composite ----
  add({.name = "hfx.rms_norm", .min_inputs = 2, .max_inputs = 2,
       .attrs = {opt("eps", 1e-6), opt("weight_offset", 0.0)}, .infer = op_shapes::rms_norm,
       .kernel = K::rms_norm, .decompose = decomp::rms_norm,
       .doc = "x * rsqrt(mean(x^2) + eps) * (w + offset)"});
  add({.name = "hfx.rope", .min_inputs = 3, .max_inputs = 3, .attrs = {opt("interleaved", false)},
       .infer = op_shapes::rope, .kernel = K::rope, .decompose = decomp::rope, .doc = "rotary embedding"});
  add({.name = "hfx.sdpa", .min_inputs = 3, .max_inputs = 4,
       .attrs = {req_f("scale"), opt("causal", true), opt("window", int64_t{0}), opt("softcap", 0.0)},
       .infer = op_shapes::sdpa, .kernel = K::sdpa, .decompose = decomp::sdpa,
       .doc = "scaled dot-product attention (causal, GQA, sliding window, softcap, additive mask)"});
  add({.name = "hfx.moe", .min_inputs = 4, .max_inputs = -1,
       .attrs = {req("top_k"), opt("normalize", false),
                 opt("act", std::string("silu"), "silu, relu, gelu or gelu_tanh"),
                 opt("interleaved", false, "stacked gate_up rows alternate gate, up (else gate rows, then up)")},
       .infer = op_shapes::moe, .kernel = K::moe, .decompose = decomp::moe,
       .doc = "sparse mixture-of-experts MLP: softmax routing, top_k (optionally renormalized), gated experts "
              "(stacked or per expert)"});
  // clang-format on
  return t;
}

}  // namespace

const std::vector<OpSchema>& op_table() {
  static const std::vector<OpSchema> table = build_table();
  return table;
}

}  // namespace hfx
