// The ONNX translation table: every op of the op table → the ONNX nodes that compute it. Declared here
// and nowhere else (the composite ops' translations live in translations_composite.cpp);
// `register_onnx_translation` overrides one entry (and returns the previous one).
//
// All translations target opset ≥ 18 (Reduce* take axes as an input, Split/Squeeze/Unsqueeze too).
// Opset 23 uses the standard RMSNormalization, RotaryEmbedding and Attention ops for the composite
// ops; `target=ort` uses ONNX Runtime's fused ops (SimplifiedLayerNormalization, com.microsoft
// SkipSimplifiedLayerNormalization and RotaryEmbedding, and com.microsoft GroupQueryAttention, which
// takes over the KV concat where the stage-3 pass gqa_fusion decided so: see gqa_fusion.h). Where a
// fused op does not apply, the
// composite is emitted from primitive ops and the reason goes to the export warnings.
#include <cmath>
#include <limits>
#include <numeric>

#include "export/onnx/gqa_fusion.h"
#include "export/onnx/lowering.h"
#include "export/onnx/moe_fusion.h"
#include "export/onnx/quant_lowering.h"
#include "export/onnx/translations_composite.h"
#include "export/onnx/weight_layout.h"
#include "hfx/core/error.h"
#include "hfx/ops/op_schema.h"

namespace hfx::onnx_export {
namespace {

using Cx = LoweringContext;
constexpr int64_t kI64Max = std::numeric_limits<int64_t>::max();

DType out_dt(const Node& n, size_t i = 0) { return Cx::dt(n.outputs.at(i)); }
DType in_dt(const Node& n, size_t i) { return Cx::dt(n.inputs.at(i)); }
int64_t rank_of(const Value* v) { return detail::rank_of(v); }
int64_t norm_axis(int64_t d, int64_t r) { return d < 0 ? d + std::max<int64_t>(r, 1) : d; }
/// The node emitted last (to set attributes on a node made with cx.op).
onnx::NodeProto& last(Cx& cx) { return detail::last(cx); }
using detail::rms_norm;
using detail::rope;
using detail::sdpa;

// ---------------------------------------------------------------- generic shapes
OnnxTranslation binary(const std::string& onnx_op) {
  return [onnx_op](Cx& cx, const Node& n) {
    DType t = out_dt(n);
    cx.emit(onnx_op, {cx.in_as(n, 0, t), cx.in_as(n, 1, t)}, {cx.out(n)}, &n);
  };
}

OnnxTranslation compare(const std::string& onnx_op) {
  return [onnx_op](Cx& cx, const Node& n) {
    DType t = promote_types(in_dt(n, 0), in_dt(n, 1));
    if (t == DType::Bool && onnx_op != "Equal") t = DType::I32;  // Less/Greater have no bool kernels
    cx.emit(onnx_op, {cx.in_as(n, 0, t), cx.in_as(n, 1, t)}, {cx.out(n)}, &n);
  };
}

OnnxTranslation logical(const std::string& onnx_op) {
  return [onnx_op](Cx& cx, const Node& n) {
    std::vector<std::string> ins;
    for (size_t i = 0; i < n.inputs.size(); i++) ins.push_back(cx.in_as(n, i, DType::Bool));
    cx.emit(onnx_op, ins, {cx.out(n)}, &n);
  };
}

// Unary op; float-only ops first cast integer inputs to f32 (the op table's float_unary rule).
OnnxTranslation unary(const std::string& onnx_op) {
  return [onnx_op](Cx& cx, const Node& n) { cx.emit(onnx_op, {cx.in_as(n, 0, out_dt(n))}, {cx.out(n)}, &n); };
}

OnnxTranslation reduce(const std::string& onnx_op) {
  return [onnx_op](Cx& cx, const Node& n) {
    const auto& dims = n.attrs.ints("dim");
    std::vector<std::string> ins{cx.in_as(n, 0, out_dt(n))};
    if (!dims.empty()) ins.push_back(cx.i64s(dims));
    auto& p = cx.emit(onnx_op, ins, {cx.out(n)}, &n);
    Cx::attr(p, "keepdims", static_cast<int64_t>(n.attrs.b("keepdim")));
  };
}

// ---------------------------------------------------------------- elementwise specials
void scalar_op(Cx& cx, const Node& n, const std::string& onnx_op) {
  DType t = out_dt(n);
  cx.emit(onnx_op, {cx.in_as(n, 0, t), cx.scalar(n.attrs.f("other"), t)}, {cx.out(n)}, &n);
}

void pow_scalar(Cx& cx, const Node& n) {
  DType t = out_dt(n);
  std::string x = cx.in_as(n, 0, t);
  double e = n.attrs.f("exponent");
  if (e == 2.0)
    cx.emit("Mul", {x, x}, {cx.out(n)}, &n);
  else
    cx.emit("Pow", {x, cx.scalar(e, t)}, {cx.out(n)}, &n);
}

void where(Cx& cx, const Node& n) {
  DType t = out_dt(n);
  cx.emit("Where", {cx.in_as(n, 0, DType::Bool), cx.in_as(n, 1, t), cx.in_as(n, 2, t)}, {cx.out(n)}, &n);
}

void rsqrt(Cx& cx, const Node& n) {
  std::string s = cx.op(&n, "Sqrt", {cx.in_as(n, 0, out_dt(n))});
  cx.emit("Reciprocal", {s}, {cx.out(n)}, &n);
}

void silu(Cx& cx, const Node& n) {
  std::string x = cx.in_as(n, 0, out_dt(n));
  cx.emit("Mul", {x, cx.op(&n, "Sigmoid", {x})}, {cx.out(n)}, &n);
}

void gelu(Cx& cx, const Node& n) {
  const std::string& approx = n.attrs.s("approximate");
  std::string x = cx.in_as(n, 0, out_dt(n));
  if (cx.opset() >= 20) {  // Gelu is standard from opset 20
    auto& p = cx.emit("Gelu", {x}, {cx.out(n)}, &n);
    Cx::attr(p, "approximate", approx == "tanh" ? std::string("tanh") : std::string("none"));
    return;
  }
  DType f = DType::F32;
  std::string inner;
  if (approx == "tanh") {
    // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
    std::string x3 = cx.op(&n, "Mul", {x, cx.op(&n, "Mul", {x, x})});
    std::string u = cx.op(&n, "Add", {x, cx.op(&n, "Mul", {x3, cx.scalar(0.044715, f)})});
    inner = cx.op(&n, "Tanh", {cx.op(&n, "Mul", {u, cx.scalar(std::sqrt(2.0 / M_PI), f)})});
  } else {
    inner = cx.op(&n, "Erf", {cx.op(&n, "Mul", {x, cx.scalar(M_SQRT1_2, f)})});
  }
  std::string h = cx.op(&n, "Mul", {x, cx.scalar(0.5, f)});
  cx.emit("Mul", {h, cx.op(&n, "Add", {inner, cx.scalar(1.0, f)})}, {cx.out(n)}, &n);
}

// ---------------------------------------------------------------- linear algebra
void matmul(Cx& cx, const Node& n) {
  DType t = out_dt(n);
  cx.emit("MatMul", {cx.in_as(n, 0, t), cx.in_as(n, 1, t)}, {cx.out(n)}, &n);
}

// The weight is [out, in]; stored transposed ([in, out], weight_layout.h) MatMul reads it as it is.
void linear(Cx& cx, const Node& n) {
  DType t = out_dt(n);
  std::string wt = cx.in_as(n, 1, t);
  if (!cx.weight_transposed(n.inputs[1])) {
    wt = cx.op(&n, "Transpose", {wt}, "weight_t");
    Cx::attr(last(cx), "perm", std::vector<int64_t>{1, 0});
  }
  bool bias = n.inputs.size() > 2 && n.inputs[2];
  if (!bias) {
    cx.emit("MatMul", {cx.in_as(n, 0, t), wt}, {cx.out(n)}, &n);
    return;
  }
  std::string mm = cx.op(&n, "MatMul", {cx.in_as(n, 0, t), wt});
  cx.emit("Add", {mm, cx.in_as(n, 2, t)}, {cx.out(n)}, &n);
}

// ---------------------------------------------------------------- reductions and normalization
void argmax(Cx& cx, const Node& n) {
  auto& p = cx.emit("ArgMax", {cx.in(n, 0)}, {cx.out(n)}, &n);
  Cx::attr(p, "axis", n.attrs.i("dim"));
  Cx::attr(p, "keepdims", static_cast<int64_t>(n.attrs.b("keepdim")));
}

void cumsum(Cx& cx, const Node& n) {
  DType t = out_dt(n);
  cx.emit("CumSum", {cx.in_as(n, 0, t), cx.i64(n.attrs.i("dim"))}, {cx.out(n)}, &n);
}

OnnxTranslation softmax(const std::string& onnx_op) {
  return [onnx_op](Cx& cx, const Node& n) {
    auto& p = cx.emit(onnx_op, {cx.in_as(n, 0, out_dt(n))}, {cx.out(n)}, &n);
    Cx::attr(p, "axis", n.attrs.i("dim"));
  };
}

// ConstantOfShape of x's last dim (a ones/zeros vector for an absent norm weight or bias).
std::string last_dim_fill(Cx& cx, const Node& n, const Value* x, double v) {
  const Sym& d = x->type.shape.back();
  std::string shape = d.is_const() ? cx.i64s({d.value()}) : [&] {
    std::string s = cx.tmp(&n, "last_dim");
    auto& p = cx.emit("Shape", {cx.name(x)}, {s}, &n);
    Cx::attr(p, "start", int64_t{-1});
    return s;
  }();
  std::string o = cx.tmp(&n, v == 0 ? "zeros" : "ones");
  auto& p = cx.emit("ConstantOfShape", {shape}, {o}, &n);
  Cx::attr(p, "value", Cx::value_tensor(v, DType::F32));
  return o;
}

void layer_norm(Cx& cx, const Node& n) {
  const DType f = DType::F32;
  std::string x = cx.in_as(n, 0, f);
  std::string w =
      n.inputs.size() > 1 && n.inputs[1] ? cx.in_as(n, 1, f) : last_dim_fill(cx, n, n.inputs[0], 1.0);
  std::string b = n.inputs.size() > 2 && n.inputs[2] ? cx.in_as(n, 2, f) : "";
  auto& p = cx.emit("LayerNormalization", {x, w, b}, {cx.out(n)}, &n);
  Cx::attr(p, "axis", int64_t{-1});
  Cx::attr(p, "epsilon", n.attrs.f("eps"));
}

// ---------------------------------------------------------------- indexing and shape
// A table stored transposed ([H, V]: it is also a tied lm_head's weight, weight_layout.h) is gathered on
// axis 1, giving [H, ids...], and the hidden axis moved last: a transpose of activations, not weights.
void embedding(Cx& cx, const Node& n) {
  if (!cx.weight_transposed(n.inputs[0])) {
    auto& p = cx.emit("Gather", {cx.in_as(n, 0, out_dt(n)), cx.in(n, 1)}, {cx.out(n)}, &n);
    Cx::attr(p, "axis", int64_t{0});
    return;
  }
  std::string cols = cx.op(&n, "Gather", {cx.in_as(n, 0, out_dt(n)), cx.in(n, 1)}, "columns");
  Cx::attr(last(cx), "axis", int64_t{1});
  std::vector<int64_t> perm;
  const int64_t r = static_cast<int64_t>(n.inputs[1]->type.shape.size());
  for (int64_t i = 1; i <= r; i++) perm.push_back(i);
  perm.push_back(0);
  auto& p = cx.emit("Transpose", {cols}, {cx.out(n)}, &n);
  Cx::attr(p, "perm", perm);
}

void index_select(Cx& cx, const Node& n) {
  auto& p = cx.emit("Gather", {cx.in(n, 0), cx.in(n, 1)}, {cx.out(n)}, &n);
  Cx::attr(p, "axis", n.attrs.i("dim"));
}

void index_copy(Cx& cx, const Node& n) {
  // Bring `dim` to the front, ScatterND rows idx[i] ← src[i], move it back.
  int64_t r = rank_of(n.inputs[0]);
  int64_t d = norm_axis(n.attrs.i("dim"), r);
  DType t = out_dt(n);
  std::string x = cx.in_as(n, 0, t), src = cx.in_as(n, 2, t);
  std::vector<int64_t> perm{d}, inv(r);
  for (int64_t i = 0; i < r; i++)
    if (i != d) perm.push_back(i);
  for (int64_t i = 0; i < r; i++) inv[perm[i]] = i;
  if (d != 0) {
    std::string xt = cx.op(&n, "Transpose", {x}, "x_t");
    Cx::attr(last(cx), "perm", perm);
    std::string st = cx.op(&n, "Transpose", {src}, "src_t");
    Cx::attr(last(cx), "perm", perm);
    x = xt, src = st;
  }
  std::string idx = cx.op(&n, "Unsqueeze", {cx.in_as(n, 1, DType::I64), cx.i64s({-1})}, "index");
  if (d == 0) {
    cx.emit("ScatterND", {x, idx, src}, {cx.out(n)}, &n);
    return;
  }
  std::string sc = cx.op(&n, "ScatterND", {x, idx, src});
  auto& p = cx.emit("Transpose", {sc}, {cx.out(n)}, &n);
  Cx::attr(p, "perm", inv);
}

void cat(Cx& cx, const Node& n) {
  // target=ort: a KV-cache concat feeding a GroupQueryAttention is done by that node (gqa_fusion.h).
  if (cx.target() == "ort" && gqa_owns_cat(cx.options().gqa, n)) return;
  DType t = out_dt(n);
  std::vector<std::string> ins;
  for (size_t i = 0; i < n.inputs.size(); i++) ins.push_back(cx.in_as(n, i, t));
  auto& p = cx.emit("Concat", ins, {cx.out(n)}, &n);
  Cx::attr(p, "axis", n.attrs.i("dim"));
}

// A slice bound: constants as they are (negative counts from the end, as ONNX does); a symbolic bound
// that may be negative at run time is clamped at 0, as the op table's shape rule does.
std::string slice_bound(Cx& cx, const Sym& s) {
  if (s.is_const()) return cx.i64s({s.value() >= SymRange::kInf ? kI64Max : s.value()});
  std::string v = cx.sym(s);
  if (cx.graph().env().bounds(s).min < 0)
    v = cx.op(nullptr, "Max", {v, cx.i64s({0})}, "clamp(" + s.str() + ")");
  return v;
}

void slice(Cx& cx, const Node& n) {
  int64_t d = n.attrs.i("dim");
  cx.emit("Slice",
          {cx.in(n, 0), slice_bound(cx, n.attrs.sym("start")), slice_bound(cx, n.attrs.sym("end")),
           cx.i64s({d}), cx.i64s({n.attrs.i("step")})},
          {cx.out(n)}, &n);
}

// aten.view: the target shape is the inferred output shape (every -1 resolved), materialized at run
// time; allowzero=1 so that a dim that is 0 at run time (an empty past) means 0, not "copy".
void view(Cx& cx, const Node& n) {
  auto& p = cx.emit("Reshape", {cx.in(n, 0), cx.syms(n.outputs[0]->type.shape)}, {cx.out(n)}, &n);
  Cx::attr(p, "allowzero", int64_t{1});
}

void permute(Cx& cx, const Node& n) {
  int64_t r = rank_of(n.inputs[0]);
  std::vector<int64_t> perm;
  for (auto d : n.attrs.ints("dims")) perm.push_back(norm_axis(d, r));
  auto& p = cx.emit("Transpose", {cx.in(n, 0)}, {cx.out(n)}, &n);
  Cx::attr(p, "perm", perm);
}

void expand(Cx& cx, const Node& n) {
  cx.emit("Expand", {cx.in(n, 0), cx.syms(n.outputs[0]->type.shape)}, {cx.out(n)}, &n);
}

void unsqueeze(Cx& cx, const Node& n) {
  int64_t d = norm_axis(n.attrs.i("dim"), rank_of(n.inputs[0]) + 1);
  cx.emit("Unsqueeze", {cx.in(n, 0), cx.i64s({d})}, {cx.out(n)}, &n);
}

void squeeze(Cx& cx, const Node& n) {
  if (rank_of(n.outputs[0]) == rank_of(n.inputs[0])) {
    cx.emit("Identity", {cx.in(n, 0)}, {cx.out(n)}, &n);
    return;
  }
  int64_t d = norm_axis(n.attrs.i("dim"), rank_of(n.inputs[0]));
  cx.emit("Squeeze", {cx.in(n, 0), cx.i64s({d})}, {cx.out(n)}, &n);
}

void to_copy(Cx& cx, const Node& n) {
  DType from = in_dt(n, 0), to = out_dt(n);
  if (from == to && param_behind(n.inputs[0])) {
    cx.rebind(n.outputs[0],
              cx.in(n, 0));  // a weight's widening (already stored f32): readers take the initializer
    return;
  }
  if (from == to) {
    cx.emit("Identity", {cx.in(n, 0)}, {cx.out(n)}, &n);
    return;
  }
  auto& p = cx.emit("Cast", {cx.in(n, 0)}, {cx.out(n)}, &n);
  Cx::attr(p, "to", static_cast<int64_t>(onnx_elem_type(to)));
}

// ---------------------------------------------------------------- factories
void arange(Cx& cx, const Node& n) {
  DType t = out_dt(n);
  std::string s = cx.sym_scalar(n.attrs.sym("start")), e = cx.sym_scalar(n.attrs.sym("end"));
  std::string one = cx.scalar(1, t);
  if (t != DType::I64) s = cx.cast(&n, s, DType::I64, t), e = cx.cast(&n, e, DType::I64, t);
  cx.emit("Range", {s, e, one}, {cx.out(n)}, &n);
}

void full(Cx& cx, const Node& n) {
  auto& p = cx.emit("ConstantOfShape", {cx.syms(n.attrs.syms("size"))}, {cx.out(n)}, &n);
  Cx::attr(p, "value", Cx::value_tensor(n.attrs.f("value"), out_dt(n)));
}

// An op the op table declares as one ONNX node, with what the node's description says it emits.
OnnxTranslationEntry declared(const std::string& onnx_op, OnnxForm form) {
  switch (form) {
    case OnnxForm::Unary:
      return {unary(onnx_op), onnx_op};
    case OnnxForm::Binary:
      return {binary(onnx_op), onnx_op + " (+Cast to the promoted dtype)"};
    case OnnxForm::Compare:
      return {compare(onnx_op), onnx_op};
    case OnnxForm::Logical:
      return {logical(onnx_op), onnx_op + " (+Cast to bool)"};
    case OnnxForm::None:
      break;
  }
  HFX_THROW("onnx", "expected a declared ONNX form for {}, got none", onnx_op);
}

// ---------------------------------------------------------------- the table
std::map<std::string, OnnxTranslationEntry> build() {
  std::map<std::string, OnnxTranslationEntry> t;
  auto add = [&](const std::string& op, OnnxTranslation fn, const std::string& emits) {
    t[op] = {std::move(fn), emits};
  };
  add(
      "aten.add.Scalar", [](Cx& cx, const Node& n) { scalar_op(cx, n, "Add"); },
      "Add with a scalar initializer");
  add(
      "aten.mul.Scalar", [](Cx& cx, const Node& n) { scalar_op(cx, n, "Mul"); },
      "Mul with a scalar initializer");
  add("aten.pow.Tensor_Scalar", pow_scalar, "Pow (Mul for exponent 2)");
  add("aten.where.self", where, "Where");
  add("aten.rsqrt", rsqrt, "Reciprocal(Sqrt)");
  add("aten.silu", silu, "Mul(x, Sigmoid(x))");
  add("aten.gelu", gelu, "Gelu (opset >= 20) or its Erf/Tanh formula");
  add("aten.mm", matmul, "MatMul");
  add("aten.bmm", matmul, "MatMul");
  add("aten.matmul", matmul, "MatMul");
  add("aten.linear", linear,
      "MatMul(x, w stored [in, out]) (+Add bias); MatMul(x, Transpose(w)) when w is not");
  add("hfx.linear_q", linear_q_translation,
      "ort: com.microsoft.MatMulNBits; standard (opset ≥ 21): DequantizeLinear (blocked) → MatMul");
  add("hfx.embedding_q", embedding_q_translation,
      "ort: com.microsoft.GatherBlockQuantized; standard: Gather of the packed rows, Mod/BitShift unpack, "
      "(code − zero point) · scale");
  add("aten.sum.dim_IntList", reduce("ReduceSum"), "ReduceSum (axes input)");
  add("aten.mean.dim", reduce("ReduceMean"), "ReduceMean (axes input, opset >= 18)");
  add("aten.amax", reduce("ReduceMax"), "ReduceMax (axes input, opset >= 18)");
  add("aten.argmax", argmax, "ArgMax");
  add("aten.cumsum", cumsum, "CumSum");
  add("aten._softmax", softmax("Softmax"), "Softmax");
  add("aten._log_softmax", softmax("LogSoftmax"), "LogSoftmax");
  add("aten.layer_norm", layer_norm, "LayerNormalization");
  add("aten.embedding", embedding, "Gather axis 0; of a table stored [H, V]: Gather axis 1 + Transpose");
  add("aten.index_select", index_select, "Gather");
  add("aten.index_copy", index_copy, "Transpose + ScatterND + Transpose");
  add("aten.cat", cat, "Concat (+Cast); ort: nothing for a KV concat a GroupQueryAttention owns");
  add("aten.slice.Tensor", slice, "Slice (symbolic bounds materialized from input shapes)");
  add("aten.view", view, "Reshape allowzero=1 (symbolic sizes materialized)");
  add("aten.permute", permute, "Transpose");
  add("aten.expand", expand, "Expand (symbolic sizes materialized)");
  add("aten.unsqueeze", unsqueeze, "Unsqueeze");
  add("aten.squeeze.dim", squeeze, "Squeeze (Identity when the dim is not 1)");
  add("aten._to_copy", to_copy, "Cast (Identity when the export dtype is unchanged)");
  add("aten.arange.start", arange, "Range (symbolic bounds materialized)");
  add("aten.full", full, "ConstantOfShape");
  add("hfx.rms_norm", rms_norm,
      "opset 18: ReduceMean/Sqrt/Reciprocal/Mul; opset 23: RMSNormalization; ort: "
      "SimplifiedLayerNormalization or "
      "com.microsoft SkipSimplifiedLayerNormalization (add + rms_norm)");
  add("hfx.rope", rope,
      "opset 18: Slice/Neg/Concat/Mul/Add; opset 23: RotaryEmbedding (batch-shaped tables); ort: "
      "com.microsoft "
      "RotaryEmbedding over a per-token cache");
  add("hfx.sdpa", sdpa,
      "opset 18: MatMul/Softmax with grouped heads by broadcasting and position-built causal/window masks; "
      "opset 23: Attention with an explicit bias (softcap → decomposed); ort: com.microsoft "
      "GroupQueryAttention "
      "owning the KV concat (padding mask as attention_bias; else decomposed with a warning)");
  add("hfx.moe", moe_translation,
      "ort: com.microsoft.MoE (swiglu, interleaved fc1) after the stage-3 fix moe_pack_for_ort; otherwise "
      "the "
      "stage-3 fix moe_dense_experts has already decomposed it");
  // The ops whose one ONNX node the op table declares (hfx/ops/op_lowering.h).
  for (const OpSchema* s : all_op_schemas()) {
    if (s->lower.onnx_form == OnnxForm::None) continue;
    if (t.count(s->name))
      HFX_THROW("onnx", "expected {} translated once, got a declared op and a hand-written one", s->name);
    t[s->name] = declared(s->lower.onnx, s->lower.onnx_form);
  }
  return t;
}

}  // namespace

std::map<std::string, OnnxTranslationEntry>& onnx_translation_table() {
  static std::map<std::string, OnnxTranslationEntry> table = build();
  return table;
}

}  // namespace hfx::onnx_export
