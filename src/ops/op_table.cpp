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

using namespace op_shapes;  // the shape rules (op_shapes.h)

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
// `l` with the routes `r` says (OpLowering's *_route fields): for entries whose lowering a helper builds.
OpLowering with_routes(OpLowering l, const OpLowering& r) {
  l.onnx_route = r.onnx_route;
  l.executorch_route = r.executorch_route;
  l.aten_route = r.aten_route;
  l.xnnpack_route = r.xnnpack_route;
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
  // `routes`: how the backends whose call is not declared take it; without an XNNPACK node and no route said,
  // the op stays outside the delegate (not_delegated), which is what the partitioner does with it.
  auto unary = [&](const char* name, KernelFn k, bool float_only, bool executorch, const char* onnx,
                   const char* xnn = "", OpLowering routes = {}) {
    std::string u = std::string(name).substr(5);
    if (!*xnn && routes.xnnpack_route.route == Route::unsaid) routes.xnnpack_route = not_delegated();
    OpLowering l = with_routes({.executorch = executorch ? et(u + ".out", {in(0)}) : CallDecl{},
                                .aten = aten(u + ".default", kSelf),
                                .aten_layout = AtenLayout::Elementwise},
                               routes);
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
       .infer = same_as_first, .kernel = K::add_scalar, .doc = "a + other",
       .lower = {.onnx_route = hand("the scalar as an initializer typed by the tensor"),
       .executorch_route = hand("a Scalar argument typed by the tensor"),
       .aten_route = hand("add.Tensor with a scalar operand"),
       .xnnpack_route = hand("XNNAdd with a static scalar")}});
  add({.name = "aten.mul.Scalar", .min_inputs = 1, .max_inputs = 1, .attrs = {req_f("other")},
       .infer = same_as_first, .kernel = K::mul_scalar, .doc = "a * other",
       .lower = {.onnx_route = hand("the scalar as an initializer typed by the tensor"),
       .executorch_route = hand("a Scalar argument typed by the tensor"),
       .aten_route = hand("mul.Tensor with a scalar operand"),
       .xnnpack_route = hand("XNNMultiply with a static scalar")}});
  add({.name = "aten.pow.Tensor_Scalar", .min_inputs = 1, .max_inputs = 1, .attrs = {req_f("exponent")},
       .infer = float_unary, .kernel = K::pow_scalar, .doc = "a ** exponent",
       .lower = {.executorch = et("pow.Tensor_Scalar_out", {in(0), attr("exponent")}),
       .aten = aten("pow.Tensor_Scalar", {in(0, "self"), attr("exponent")}),
       .aten_layout = AtenLayout::LikeInput0, .onnx_route = hand("Mul for exponent 2"),
       .xnnpack_route = not_delegated()}});
  add({.name = "aten.eq.Tensor", .min_inputs = 2, .max_inputs = 2, .infer = CMP("aten.eq.Tensor"),
       .kernel = K::eq, .lower = with_routes(elementwise2("eq.Tensor_out", "eq.Tensor", false, "Equal",
       F::Compare), {.xnnpack_route = not_delegated()})});
  add({.name = "aten.lt.Tensor", .min_inputs = 2, .max_inputs = 2, .infer = CMP("aten.lt.Tensor"),
       .kernel = K::lt, .lower = with_routes(elementwise2("lt.Tensor_out", "lt.Tensor", false, "Less",
       F::Compare), {.xnnpack_route = not_delegated()})});
  add({.name = "aten.le.Tensor", .min_inputs = 2, .max_inputs = 2, .infer = CMP("aten.le.Tensor"),
       .kernel = K::le, .lower = with_routes(elementwise2("le.Tensor_out", "le.Tensor", false, "LessOrEqual",
       F::Compare), {.xnnpack_route = not_delegated()})});
  add({.name = "aten.gt.Tensor", .min_inputs = 2, .max_inputs = 2, .infer = CMP("aten.gt.Tensor"),
       .kernel = K::gt, .lower = with_routes(elementwise2("gt.Tensor_out", "gt.Tensor", false, "Greater",
       F::Compare), {.xnnpack_route = not_delegated()})});
  add({.name = "aten.ge.Tensor", .min_inputs = 2, .max_inputs = 2, .infer = CMP("aten.ge.Tensor"),
       .kernel = K::ge, .lower = with_routes(elementwise2("ge.Tensor_out", "ge.Tensor", false, "GreaterOrEqual",
       F::Compare), {.xnnpack_route = not_delegated()})});
  add({.name = "aten.logical_and", .min_inputs = 2, .max_inputs = 2, .infer = CMP("aten.logical_and"),
       .kernel = K::logical_and, .lower = with_routes(elementwise2("logical_and.out", "logical_and.default",
       false, "And",
       F::Logical), {.xnnpack_route = not_delegated()})});
  add({.name = "aten.logical_or", .min_inputs = 2, .max_inputs = 2, .infer = CMP("aten.logical_or"),
       .kernel = K::logical_or, .lower = with_routes(elementwise2("logical_or.out", "logical_or.default",
       false, "Or",
       F::Logical), {.xnnpack_route = not_delegated()})});
  add({.name = "aten.logical_not", .min_inputs = 1, .max_inputs = 1, .infer = to_bool,
       .kernel = K::logical_not, .lower = with_routes(with_onnx({.executorch = et("logical_not.out", {in(0)}),
       .aten = aten("logical_not.default", kSelf), .aten_layout = AtenLayout::Elementwise},
                "Not", F::Logical), {.xnnpack_route = not_delegated()})});
  add({.name = "aten.where.self", .min_inputs = 3, .max_inputs = 3, .infer = infer_where, .kernel = K::where,
       .doc = "cond ? a : b", .lower = {.executorch = et("where.self_out", {in(0), in(1), in(2)}),
       .aten = aten("where.self", {in(0, "condition"), in(1, "self"), in(2, "other")}),
       .aten_layout = AtenLayout::Elementwise, .onnx_route = hand("the condition cast to bool"),
       .xnnpack_route = not_delegated()}});
  // ---- unary ----
  unary("aten.neg", K::neg, false, true, "Neg", "XNNNegate");
  unary("aten.abs", K::abs, false, true, "Abs", "XNNAbs");
  unary("aten.relu", K::relu, false, true, "Relu", "", {.xnnpack_route = hand("XNNClamp to [0, inf)")});
  unary("aten.exp", K::exp, true, true, "Exp", "XNNExp");
  unary("aten.log", K::log, true, true, "Log", "XNNLog");
  unary("aten.sqrt", K::sqrt, true, true, "Sqrt", "XNNSquareRoot");
  unary("aten.rsqrt", K::rsqrt, true, true, nullptr, "XNNReciprocalSquareRoot",
        {.onnx_route = hand("Reciprocal(Sqrt): no ONNX op")});
  unary("aten.tanh", K::tanh, true, true, "Tanh", "XNNTanh");
  unary("aten.sigmoid", K::sigmoid, true, true, "Sigmoid", "XNNSigmoid");
  unary("aten.silu", K::silu, true, false, nullptr, "",  // ExecuTorch: no portable kernel
        {.onnx_route = hand("Mul(x, Sigmoid(x)): no ONNX op"),
         .executorch_route = decomposed("node fix silu_to_sigmoid_mul")});
  unary("aten.sin", K::sin, true, true, "Sin", "XNNSin");
  unary("aten.cos", K::cos, true, true, "Cos", "XNNCos");
  unary("aten.reciprocal", K::reciprocal, true, true, "Reciprocal");
  unary("aten.erf", K::erf, true, true, "Erf");
  unary("aten.floor", K::floor, true, true, "Floor", "XNNFloor");
  add({.name = "aten.gelu", .min_inputs = 1, .max_inputs = 1,
       .attrs = {opt("approximate", std::string("none"), "'none' (erf) or 'tanh'")}, .infer = float_unary,
       .kernel = K::gelu, .lower = {.executorch = et("gelu.out", {in(0), attr("approximate")}),
       .onnx_route = hand("Gelu (opset 20) or its erf/tanh formula"),
       .aten_route = hand("approximate keyword"), .xnnpack_route = hand("XNNGelu, approximate='none' only")}});
  // ---- linear algebra ----
  add({.name = "aten.mm", .min_inputs = 2, .max_inputs = 2, .infer = infer_mm, .kernel = K::mm,
       .doc = "[M,K] @ [K,N]", .lower = {.executorch = et("mm.out", {in(0), in(1)}),
       .aten = aten("mm.default", {in(0, "self"), in(1, "mat2")}),
       .onnx_route = hand("MatMul on a pre-transposed weight"),
       .xnnpack_route = hand("XNNFullyConnected (constant weight) or batch matmul")}});
  add({.name = "aten.bmm", .min_inputs = 2, .max_inputs = 2, .infer = infer_bmm, .kernel = K::bmm,
       .doc = "[B,M,K] @ [B,K,N]", .lower = {.executorch = et("bmm.out", {in(0), in(1)}),
       .aten = aten("bmm.default", {in(0, "self"), in(1, "mat2")}),
       .onnx_route = hand("MatMul, f16/bf16 weights cast"), .xnnpack_route = hand("XNNBatchMatrixMultiply")}});
  add({.name = "aten.matmul", .min_inputs = 2, .max_inputs = 2, .infer = infer_matmul2, .kernel = K::matmul,
       .doc = "batched matmul with broadcasting", .lower = {.aten = aten("matmul.default", kSelfOther),
       .onnx_route = hand("MatMul, f16/bf16 weights cast"),
       .executorch_route = decomposed("node fix matmul_to_bmm"), .xnnpack_route = not_delegated()}});
  add({.name = "aten.linear", .min_inputs = 2, .max_inputs = 3, .infer = infer_linear, .kernel = K::linear,
       .doc = "x @ w^T + b", .lower = {.onnx_route = hand("MatMul on the weight stored [in, out] (+ Add)"),
       .executorch_route = decomposed("node fix linear_to_mm"), .aten_route = hand("optional bias"),
       .xnnpack_route = not_delegated()}});
  add({.name = "hfx.linear_q", .min_inputs = 3, .max_inputs = 4,
       .attrs = {req("bits", "4 or 8"), req("group_size", "input features per scale"),
                 opt("act_bits", int64_t{0}, "8: x rounded to int8 per block (MatMulNBits accuracy_level 4); 0: f32")},
       .infer = op_shapes::linear_q, .kernel = K::linear_q, .decompose = decomp::linear_q,
       .doc = "x @ dequant(codes, scales, zero_points)^T, MatMulNBits layout (hfx/quant/quantize.h)",
       .lower = {.onnx_route = hand("MatMulNBits (ort) or DequantizeLinear + MatMul"),
                 .executorch_route = refused("portable has no kernel: --quantize is refused but on --backend "
                                             "xnnpack, whose partitioner takes it"),
                 .aten_route = decomposed("stage-2 patch: codes de-quantized by core ATen ops"),
                 .xnnpack_route = hand("XNNConvert + XNNFullyConnected (8da4w / 8da8w)")}});
  add({.name = "hfx.embedding_q", .min_inputs = 3, .max_inputs = 4,
       .attrs = {req("bits", "4 or 8"), req("group_size", "features per scale")},
       .infer = op_shapes::embedding_q, .kernel = K::embedding_q,
       .doc = "rows of dequant(codes, scales, zero_points) (inputs: codes, scales, indices[, zero_points])",
       .lower = {.onnx_route = hand("Gather of codes and scales, de-quantized rows"),
       .executorch_route = refused("--quantize-embedding is refused for ExecuTorch (ExecutorchConfig)"),
       .aten_route = refused("--quantize-embedding is refused for dynamo (DynamoConfig)"),
       .xnnpack_route = not_delegated()}});
  // ---- reductions ----
  const std::vector<AttrSpec> reduce_attrs = {opt("dim", std::vector<int64_t>{}), opt("keepdim", false)};
  add({.name = "aten.sum.dim_IntList", .min_inputs = 1, .max_inputs = 1, .attrs = reduce_attrs,
       .infer = RED("aten.sum.dim_IntList"), .kernel = K::sum,
       .lower = {.onnx_route = hand("axes as an input; all dims when empty"),
       .executorch_route = hand("a dim list written as None when empty"), .aten_route = hand("a dim list"),
       .xnnpack_route = hand("XNNFullyConnected with a row of ones")}});
  add({.name = "aten.mean.dim", .min_inputs = 1, .max_inputs = 1, .attrs = reduce_attrs,
       .infer = RED("aten.mean.dim"), .kernel = K::mean,
       .lower = {.onnx_route = hand("axes as an input (opset 18)"),
       .executorch_route = hand("a dim list written as None when empty"), .aten_route = hand("a dim list"),
       .xnnpack_route = hand("XNNFullyConnected with a 1/N row")}});
  add({.name = "aten.amax", .min_inputs = 1, .max_inputs = 1, .attrs = reduce_attrs,
       .infer = RED("aten.amax"), .kernel = K::amax,
       .lower = {.executorch = et("amax.out", {in(0), attr("dim"), attr("keepdim")}),
       .onnx_route = hand("axes as an input (opset 18)"), .aten_route = hand("a dim list"),
       .xnnpack_route = not_delegated()}});
  add({.name = "aten.argmax", .min_inputs = 1, .max_inputs = 1, .attrs = {req("dim"), opt("keepdim", false)},
       .infer = infer_argmax, .kernel = K::argmax,
       .lower = {.executorch = et("argmax.out", {in(0), attr("dim"), attr("keepdim")}),
       .aten = aten("argmax.default", {in(0, "self"), attr("dim"), attr("keepdim")}),
       .onnx_route = hand("keepdims and the dim as attributes"), .xnnpack_route = not_delegated()}});
  add({.name = "aten.cumsum", .min_inputs = 1, .max_inputs = 1, .attrs = {req("dim")},
       .infer = DIMSAME("aten.cumsum"), .kernel = K::cumsum,
       .lower = {.executorch = et("cumsum.out", {in(0), attr("dim"), none("dtype")}),
       .onnx_route = hand("the axis as an input"), .aten_route = hand("dtype keyword"),
       .xnnpack_route = not_delegated()}});
  using NamedKernel = std::pair<const char*, KernelFn>;
  for (auto [name, k] : {NamedKernel{"aten._softmax", K::softmax}, {"aten._log_softmax", K::log_softmax}}) {
    std::string op = name, u = op.substr(5);
    InferFn infer = [op](const In& i, const Attrs& a, ShapeEnv& e) {
      return infer_dim_check_same(i, a, e, op.c_str());
    };
    add({.name = op, .min_inputs = 1, .max_inputs = 1, .attrs = {req("dim")}, .infer = infer, .kernel = k,
         .lower = {.executorch = et(u + ".out", {in(0), attr("dim"), constant(false, "half_to_float")}),
         .aten = aten(u + ".default", {in(0, "self"), attr("dim"), constant(false, "half_to_float")}),
         .aten_layout = AtenLayout::LikeInput0,
         .onnx_route = hand("the axis attribute by opset"),
         .xnnpack_route = op == "aten._softmax" ? hand("XNNSoftmax over the last dim") : not_delegated()}});
  }
  add({.name = "aten.layer_norm", .min_inputs = 1, .max_inputs = 3, .attrs = {opt("eps", 1e-5)},
       .infer = infer_layer_norm, .kernel = K::layer_norm, .doc = "over the last dim",
       .lower = {.onnx_route = hand("LayerNormalization with optional weight and bias"),
       .executorch_route = hand("three outputs (native_layer_norm.out)"),
       .aten_route = hand("normalized_shape from the input"), .xnnpack_route = not_delegated()}});
  // ---- indexing and shape ----
  add({.name = "aten.embedding", .min_inputs = 2, .max_inputs = 2, .infer = op_shapes::embedding,
       .kernel = K::embedding, .lower = {.executorch = et("embedding.out", {in(0), in(1), constant(int64_t{-1},
       "padding_idx"),
                            constant(false, "scale_grad_by_freq"), constant(false, "sparse")}),
                                 .aten = aten("embedding.default", {in(0, "weight"), in(1, "indices")}),
                                 .onnx_route = hand("Gather on the table as it is stored"),
                                 .xnnpack_route = not_delegated()}});
  add({.name = "aten.index_select", .min_inputs = 2, .max_inputs = 2, .attrs = {req("dim")},
       .infer = op_shapes::index_select, .kernel = K::index_select,
       .lower = {.executorch = et("index_select.out", {in(0), attr("dim"), in(1)}),
       .aten = aten("index_select.default", {in(0, "self"), attr("dim"), in(1, "index")}),
       .onnx_route = hand("the dim as an attribute"), .xnnpack_route = not_delegated()}});
  add({.name = "aten.index_copy", .min_inputs = 3, .max_inputs = 3, .attrs = {req("dim")},
       .infer = op_shapes::index_copy, .kernel = K::index_copy, .doc = "functional index_copy",
       .lower = {.aten = aten("index_copy.default", {in(0, "self"), attr("dim"), in(1, "index"), in(2,
       "source")}), .aten_layout = AtenLayout::LikeInput0,
            .onnx_route = hand("Transpose + ScatterND + Transpose"),
            .executorch_route = hand("the in-place KV update of a mutable buffer"),
            .xnnpack_route = not_delegated()}});
  add({.name = "aten.cat", .min_inputs = 1, .max_inputs = -1, .attrs = {opt("dim", int64_t{0})},
       .infer = infer_cat, .kernel = K::cat,
       .lower = {.onnx_route = hand("a tensor list; nothing for a KV concat a GroupQueryAttention owns"),
       .executorch_route = hand("a tensor list"), .aten_route = hand("a tensor list"),
       .xnnpack_route = not_delegated()}});
  add({.name = "aten.slice.Tensor", .min_inputs = 1, .max_inputs = 1,
       .attrs = {opt("dim", int64_t{0}), opt("start", Sym(0)), opt("end", Sym(SymRange::kInf)),
        opt("step", int64_t{1})}, .infer = infer_slice, .kernel = K::slice,
             .lower = {.onnx_route = hand("symbolic bounds materialized from input shapes"),
             .executorch_route = hand("slice_copy.Tensor_out with symbolic bounds"),
             .aten_route = hand("symbolic bounds"), .xnnpack_route = not_delegated()}});
  add({.name = "aten.view", .min_inputs = 1, .max_inputs = 1, .attrs = {req("size")}, .infer = infer_view,
       .kernel = K::view, .lower = {.executorch = et("view_copy.out", {in(0), attr("size")}),
       .onnx_route = hand("symbolic sizes materialized"), .aten_route = hand("symbolic sizes"),
       .xnnpack_route = hand("XNNStaticReshape (one inferred size)")}});
  add({.name = "aten.permute", .min_inputs = 1, .max_inputs = 1, .attrs = {req("dims")},
       .infer = infer_permute, .kernel = K::permute,
       .lower = {.executorch = et("permute_copy.out", {in(0), attr("dims")}),
       .onnx_route = hand("perm as an attribute"), .aten_route = hand("a dims list"),
       .xnnpack_route = hand("XNNStaticTranspose")}});
  add({.name = "aten.expand", .min_inputs = 1, .max_inputs = 1, .attrs = {req("size")}, .infer = infer_expand,
       .kernel = K::expand, .lower = {.executorch = et("expand_copy.out", {in(0), attr("size"), constant(false,
       "implicit")}), .onnx_route = hand("symbolic sizes materialized"), .aten_route = hand("symbolic sizes"),
            .xnnpack_route = not_delegated()}});
  add({.name = "aten.unsqueeze", .min_inputs = 1, .max_inputs = 1, .attrs = {req("dim")},
       .infer = infer_unsqueeze, .kernel = K::unsqueeze,
       .lower = {.executorch = et("unsqueeze_copy.out", {in(0), attr("dim")}),
       .aten = aten("unsqueeze.default", {in(0, "self"), attr("dim")}),
       .aten_layout = AtenLayout::LikeInput0, .onnx_route = hand("axes as an input"),
       .xnnpack_route = not_delegated()}});
  add({.name = "aten.squeeze.dim", .min_inputs = 1, .max_inputs = 1, .attrs = {req("dim")},
       .infer = infer_squeeze, .kernel = K::squeeze,
       .lower = {.executorch = et("squeeze_copy.dim_out", {in(0), attr("dim")}),
       .aten = aten("squeeze.dim", {in(0, "self"), attr("dim")}), .aten_layout = AtenLayout::LikeInput0,
       .onnx_route = hand("Identity when the dim is not 1"), .xnnpack_route = not_delegated()}});
  add({.name = "aten._to_copy", .min_inputs = 1, .max_inputs = 1, .attrs = {req("dtype")},
       .infer = infer_to_copy, .kernel = K::to_copy, .doc = "dtype conversion",
       .lower = {.onnx_route = hand("the ONNX dtype from the output; Identity when unchanged"),
       .executorch_route = hand("the dtype from the output (_to_copy.out)"),
       .aten_route = hand("dtype as a keyword argument"), .xnnpack_route = not_delegated()}});
  // ---- factories ----
  add({.name = "aten.arange.start", .min_inputs = 0, .max_inputs = 0,
       .attrs = {opt("start", Sym(0)), req("end"), opt("dtype", DType::I64)}, .infer = infer_arange,
       .kernel = K::arange, .lower = {.onnx_route = hand("symbolic bounds materialized from input shapes"),
       .executorch_route = hand("start_out with symbolic bounds"), .aten_route = hand("symbolic bounds"),
       .xnnpack_route = not_delegated()}});
  add({.name = "aten.full", .min_inputs = 0, .max_inputs = 0,
       .attrs = {req("size"), opt("value", 0.0), opt("dtype", DType::F32)}, .infer = infer_full,
       .kernel = K::full, .lower = {.onnx_route = hand("a symbolic size materialized"),
       .executorch_route = hand("a symbolic size"), .aten_route = hand("symbolic size"),
       .xnnpack_route = not_delegated()}});
  // ---- composite ----
  add({.name = "hfx.rms_norm", .min_inputs = 2, .max_inputs = 2,
       .attrs = {opt("eps", 1e-6), opt("weight_offset", 0.0)}, .infer = op_shapes::rms_norm,
       .kernel = K::rms_norm, .decompose = decomp::rms_norm,
       .doc = "x * rsqrt(mean(x^2) + eps) * (w + offset)",
       .lower = {.onnx_route = hand("SimplifiedLayerNormalization / RMSNormalization"),
       .executorch_route = decomposed("stage-2 patch: its decomposition"),
       .aten_route = hand("torch.ops.aten.rms_norm"), .xnnpack_route = not_delegated()}});
  add({.name = "hfx.rope", .min_inputs = 3, .max_inputs = 3, .attrs = {opt("interleaved", false)},
       .infer = op_shapes::rope, .kernel = K::rope, .decompose = decomp::rope, .doc = "rotary embedding",
       .lower = {.onnx_route = hand("RotaryEmbedding (ort) or its formula"),
       .executorch_route = decomposed("stage-2 patch: its decomposition"),
       .aten_route = decomposed("stage-2 patch: its decomposition"), .xnnpack_route = not_delegated()}});
  add({.name = "hfx.sdpa", .min_inputs = 3, .max_inputs = 4,
       .attrs = {req_f("scale"), opt("causal", true), opt("window", int64_t{0}), opt("softcap", 0.0)},
       .infer = op_shapes::sdpa, .kernel = K::sdpa, .decompose = decomp::sdpa,
       .doc = "scaled dot-product attention (causal, GQA, sliding window, softcap, additive mask)",
       .lower = {.onnx_route = hand("GroupQueryAttention (ort, gqa_fusion) or Attention / its formula"),
       .executorch_route = decomposed("stage-2 patch: its decomposition (stage 3: static-cache attention)"),
       .aten_route = hand("scaled_dot_product_attention (or its formula where torch's differs)"),
       .xnnpack_route = not_delegated()}});
  add({.name = "hfx.moe", .min_inputs = 4, .max_inputs = -1,
       .attrs = {req("top_k"), opt("normalize", false),
                 opt("act", std::string("silu"), "silu, relu, gelu or gelu_tanh"),
                 opt("interleaved", false, "stacked gate_up rows alternate gate, up (else gate rows, then up)")},
       .infer = op_shapes::moe, .kernel = K::moe, .decompose = decomp::moe,
       .doc = "sparse mixture-of-experts MLP: softmax routing, top_k (optionally renormalized), gated experts "
              "(stacked or per expert)",
       .lower = {.onnx_route = hand("com.microsoft.MoE (ort, packed) or the dense experts"),
                 .executorch_route = decomposed("stage-2 patch: dense experts"),
                 .aten_route = decomposed("stage-2 patch: its decomposition"), .xnnpack_route = not_delegated()}});
  // clang-format on
  return t;
}

}  // namespace

const std::vector<OpSchema>& op_table() {
  static const std::vector<OpSchema> table = build_table();
  return table;
}

}  // namespace hfx
