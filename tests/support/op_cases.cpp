// The op conformance cases and their graphs (op_cases.h).
#include "support/op_cases.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <set>

#include "export/onnx/onnx_test_util.h"

namespace hfx::op_cases {
namespace {
Sym S(const char* n) { return Sym::symbol(n); }

}  // namespace

std::vector<OpCase> cases() {
  const In x{"x", {"B", "S", "8"}}, y{"y", {"B", "S", "8"}};
  std::vector<OpCase> c;
  auto bin = [&](const std::string& n, const std::string& op, In b = {"y", {"B", "S", "8"}}) {
    c.push_back({n, op, {x, b}});
  };
  bin("add", "aten.add.Tensor");
  bin("add_broadcast", "aten.add.Tensor", {"y", {"8"}});
  c.push_back({"add_int_float", "aten.add.Tensor", {x, {"y", {"B", "S", "8"}, DType::I64, "int:5"}}});
  bin("sub", "aten.sub.Tensor");
  bin("mul", "aten.mul.Tensor");
  bin("div", "aten.div.Tensor", {"y", {"B", "S", "8"}, DType::F32, "pos"});
  bin("maximum", "aten.maximum");
  bin("minimum", "aten.minimum");
  c.push_back({"add_scalar", "aten.add.Scalar", {x}, {{"other", 0.75}}});
  c.push_back(
      {"add_scalar_int", "aten.add.Scalar", {{"x", {"B", "S"}, DType::I64, "int:9"}}, {{"other", 3.0}}});
  c.push_back({"mul_scalar", "aten.mul.Scalar", {x}, {{"other", -1.5}}});
  c.push_back({"pow2", "aten.pow.Tensor_Scalar", {x}, {{"exponent", 2.0}}});
  c.push_back({"pow_half",
               "aten.pow.Tensor_Scalar",
               {{"x", {"B", "S", "8"}, DType::F32, "pos"}},
               {{"exponent", 0.5}}});
  for (auto [n, op] : std::vector<std::pair<std::string, std::string>>{{"eq", "aten.eq.Tensor"},
                                                                       {"lt", "aten.lt.Tensor"},
                                                                       {"le", "aten.le.Tensor"},
                                                                       {"gt", "aten.gt.Tensor"},
                                                                       {"ge", "aten.ge.Tensor"}})
    c.push_back({n, op, {{"x", {"B", "S"}, DType::I64, "int:3"}, {"y", {"B", "S"}, DType::I64, "int:3"}}});
  c.push_back({"lt_float", "aten.lt.Tensor", {x, y}});
  c.push_back({"logical_and",
               "aten.logical_and",
               {{"x", {"B", "S"}, DType::Bool, "bool"}, {"y", {"B", "S"}, DType::Bool, "bool"}}});
  c.push_back({"logical_or",
               "aten.logical_or",
               {{"x", {"B", "S"}, DType::Bool, "bool"}, {"y", {"B", "S"}, DType::Bool, "bool"}}});
  c.push_back({"logical_not", "aten.logical_not", {{"x", {"B", "S"}, DType::Bool, "bool"}}});
  c.push_back({"where", "aten.where.self", {{"c", {"B", "S", "1"}, DType::Bool, "bool"}, x, y}});
  for (auto [n, op, gen] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"neg", "aten.neg", "normal"},
           {"abs", "aten.abs", "normal"},
           {"relu", "aten.relu", "normal"},
           {"exp", "aten.exp", "normal"},
           {"log", "aten.log", "pos"},
           {"sqrt", "aten.sqrt", "pos"},
           {"rsqrt", "aten.rsqrt", "pos"},
           {"tanh", "aten.tanh", "normal"},
           {"sigmoid", "aten.sigmoid", "normal"},
           {"silu", "aten.silu", "normal"},
           {"sin", "aten.sin", "normal"},
           {"cos", "aten.cos", "normal"},
           {"reciprocal", "aten.reciprocal", "pos"},
           {"erf", "aten.erf", "normal"},
           {"floor", "aten.floor", "normal"}})
    c.push_back({n, op, {{"x", {"B", "S", "8"}, DType::F32, gen}}});
  c.push_back({"exp_int", "aten.exp", {{"x", {"B", "S"}, DType::I64, "int:4"}}});
  c.push_back({"gelu", "aten.gelu", {x}});
  c.push_back({"gelu_tanh", "aten.gelu", {x}, {{"approximate", std::string("tanh")}}});
  c.push_back({"mm", "aten.mm", {{"a", {"S", "8"}}, {"b", {"8", "T"}}}});
  c.push_back({"bmm", "aten.bmm", {{"a", {"B", "S", "8"}}, {"b", {"B", "8", "T"}}}});
  c.push_back({"matmul_bcast", "aten.matmul", {{"a", {"B", "2", "S", "8"}}, {"b", {"8", "6"}}}});
  c.push_back({"linear", "aten.linear", {x, {"w", {"6", "8"}, DType::F32, "normal", true}}});
  c.push_back({"linear_bias",
               "aten.linear",
               {x, {"w", {"6", "8"}, DType::F32, "normal", true}, {"b", {"6"}, DType::F32, "normal", true}}});
  // Weight-only quantized linear: random codes and zero points are valid, whatever their bytes.
  c.push_back({"linear_q_int4",
               "hfx.linear_q",
               {{"x", {"B", "S", "64"}},
                {"q", {"6", "2", "16"}, DType::U8, "int:256", true},
                {"s", {"6", "2"}, DType::F32, "pos", true},
                {"z", {"6", "1"}, DType::U8, "int:256", true}},
               {{"bits", int64_t{4}}, {"group_size", int64_t{32}}},
               1e-5,
               21,
               true});
  // ExecuTorch's 8da4w pattern (XNNPACK): symmetric 4-bit codes, bf16 scales, and activations on an int8
  // grid, which XNNPACK's run-time per-token quantization keeps exact (scale 1, zero point 0).
  c.push_back({"linear_q_int4_sym",
               "hfx.linear_q",
               {{"x", {"B", "S", "64"}, DType::F32, "int8grid"},
                {"q", {"6", "2", "16"}, DType::U8, "int:256", true},
                {"s", {"6", "2"}, DType::F32, "pos_bf16", true}},
               {{"bits", int64_t{4}}, {"group_size", int64_t{32}}},
               1e-5,
               21,
               true});
  // ExecuTorch's 8da8w: symmetric 8-bit codes with one scale per row (every block of a row holds it).
  c.push_back({"linear_q_int8_channel",
               "hfx.linear_q",
               {{"x", {"B", "S", "64"}, DType::F32, "int8grid"},
                {"q", {"6", "2", "32"}, DType::U8, "int:256", true},
                {"s", {"6", "2"}, DType::F32, "pos_row", true}},
               {{"bits", int64_t{8}}, {"group_size", int64_t{32}}},
               1e-5,
               21,
               true});
  c.push_back({"linear_q_int8_sym",
               "hfx.linear_q",
               {{"x", {"B", "S", "64"}},
                {"q", {"6", "2", "32"}, DType::U8, "int:256", true},
                {"s", {"6", "2"}, DType::F32, "pos", true}},
               {{"bits", int64_t{8}}, {"group_size", int64_t{32}}},
               1e-5,
               21,
               true});
  // Rows of a quantized embedding table (codes, scales, indices[, zero points]); 3 blocks: an odd count,
  // so the packed 4-bit zero points carry a padding nibble.
  c.push_back({"embedding_q_int4",
               "hfx.embedding_q",
               {{"q", {"10", "3", "16"}, DType::U8, "int:256", true},
                {"s", {"10", "3"}, DType::F32, "pos", true},
                {"ids", {"B", "S"}, DType::I64, "int:10"},
                {"z", {"10", "2"}, DType::U8, "int:256", true}},
               {{"bits", int64_t{4}}, {"group_size", int64_t{32}}}});
  c.push_back({"embedding_q_int8_sym",
               "hfx.embedding_q",
               {{"q", {"10", "2", "32"}, DType::U8, "int:256", true},
                {"s", {"10", "2"}, DType::F32, "pos", true},
                {"ids", {"B", "S"}, DType::I64, "int:10"}},
               {{"bits", int64_t{8}}, {"group_size", int64_t{32}}}});
  c.push_back({"sum", "aten.sum.dim_IntList", {x}, {{"dim", std::vector<int64_t>{-1}}}});
  c.push_back({"sum_all", "aten.sum.dim_IntList", {x}, {}});
  c.push_back({"mean_keep", "aten.mean.dim", {x}, {{"dim", std::vector<int64_t>{1, 2}}, {"keepdim", true}}});
  c.push_back({"amax", "aten.amax", {x}, {{"dim", std::vector<int64_t>{-1}}, {"keepdim", true}}});
  c.push_back({"argmax", "aten.argmax", {x}, {{"dim", int64_t{-1}}}});
  c.push_back({"cumsum", "aten.cumsum", {x}, {{"dim", int64_t{1}}}});
  c.push_back({"cumsum_int", "aten.cumsum", {{"x", {"B", "S"}, DType::I64, "int:2"}}, {{"dim", int64_t{1}}}});
  c.push_back({"softmax", "aten._softmax", {x}, {{"dim", int64_t{-1}}}});
  c.push_back({"log_softmax", "aten._log_softmax", {x}, {{"dim", int64_t{1}}}});
  c.push_back({"layer_norm",
               "aten.layer_norm",
               {x, {"w", {"8"}, DType::F32, "normal", true}, {"b", {"8"}, DType::F32, "normal", true}},
               {{"eps", 1e-5}}});
  c.push_back({"layer_norm_plain", "aten.layer_norm", {x}, {{"eps", 1e-5}}});
  c.push_back({"embedding",
               "aten.embedding",
               {{"w", {"11", "8"}, DType::F32, "normal", true}, {"ids", {"B", "S"}, DType::I64, "int:11"}}});
  c.push_back(
      {"index_select", "aten.index_select", {x, {"idx", {"4"}, DType::I64, "int:3"}}, {{"dim", int64_t{1}}}});
  c.push_back({"index_copy",
               "aten.index_copy",
               {{"x", {"B", "6", "4"}}, {"idx", {"3"}, DType::I64, "perm:6"}, {"src", {"B", "3", "4"}}},
               {{"dim", int64_t{1}}}});
  c.push_back({"index_copy_dim0",
               "aten.index_copy",
               {{"x", {"6", "S"}}, {"idx", {"2"}, DType::I64, "perm:6"}, {"src", {"2", "S"}}},
               {{"dim", int64_t{0}}}});
  c.push_back({"cat", "aten.cat", {{"a", {"B", "S", "8"}}, {"b", {"B", "T", "8"}}}, {{"dim", int64_t{1}}}});
  c.push_back({"slice_const",
               "aten.slice.Tensor",
               {{"x", {"B", "T", "8"}}},
               {{"dim", int64_t{1}}, {"start", Sym(1)}, {"end", Sym(-1)}}});
  c.push_back({"slice_step",
               "aten.slice.Tensor",
               {x},
               {{"dim", int64_t{2}}, {"start", Sym(1)}, {"end", Sym(SymRange::kInf)}, {"step", int64_t{2}}}});
  c.push_back({"slice_sym",
               "aten.slice.Tensor",
               {{"x", {"B", "T", "8"}}},
               {{"dim", int64_t{1}}, {"start", S("T") - S("S")}, {"end", S("T")}}});
  c.push_back({"slice_sym_end",
               "aten.slice.Tensor",
               {{"x", {"B", "T", "8"}}},
               {{"dim", int64_t{1}}, {"start", Sym(0)}, {"end", S("S")}}});
  c.push_back({"view_split", "aten.view", {x}, {{"size", std::vector<Sym>{S("B"), S("S"), Sym(2), Sym(4)}}}});
  c.push_back({"view_flat", "aten.view", {x}, {{"size", std::vector<Sym>{S("B") * S("S"), Sym(8)}}}});
  c.push_back({"view_infer", "aten.view", {x}, {{"size", std::vector<Sym>{Sym(-1), Sym(4)}}}});
  c.push_back({"permute", "aten.permute", {x}, {{"dims", std::vector<int64_t>{2, 0, 1}}}});
  c.push_back({"expand",
               "aten.expand",
               {{"x", {"B", "1", "4"}}},
               {{"size", std::vector<Sym>{S("B"), S("T"), Sym(4)}}}});
  c.push_back(
      {"expand_keep", "aten.expand", {{"x", {"1", "S"}}}, {{"size", std::vector<Sym>{Sym(3), Sym(-1)}}}});
  c.push_back({"unsqueeze", "aten.unsqueeze", {x}, {{"dim", int64_t{-1}}}});
  c.push_back({"squeeze", "aten.squeeze.dim", {{"x", {"B", "1", "8"}}}, {{"dim", int64_t{1}}}});
  c.push_back({"squeeze_noop", "aten.squeeze.dim", {x}, {{"dim", int64_t{2}}}});
  c.push_back({"to_i64", "aten._to_copy", {x}, {{"dtype", DType::I64}}});
  c.push_back({"to_f32", "aten._to_copy", {{"x", {"B", "S"}, DType::I64, "int:7"}}, {{"dtype", DType::F32}}});
  c.push_back(
      {"to_bool", "aten._to_copy", {{"x", {"B", "S"}, DType::I64, "int:2"}}, {{"dtype", DType::Bool}}});
  // Factories get their sizes from an input that defines the symbols.
  c.push_back({"arange", "aten.arange.start", {}, {{"start", Sym(1)}, {"end", S("S") + S("T")}}});
  c.push_back(
      {"arange_f32", "aten.arange.start", {}, {{"start", S("S")}, {"end", S("T")}, {"dtype", DType::F32}}});
  c.push_back({"full", "aten.full", {}, {{"size", std::vector<Sym>{S("B"), S("S")}}, {"value", 1.5}}});
  c.push_back({"full_bool",
               "aten.full",
               {},
               {{"size", std::vector<Sym>{S("S"), S("T")}}, {"value", 1.0}, {"dtype", DType::Bool}}});
  // Composite ops.
  c.push_back({"rms_norm", "hfx.rms_norm", {x, {"w", {"8"}, DType::F32, "normal", true}}, {{"eps", 1e-6}}});
  c.push_back({"rms_norm_offset",
               "hfx.rms_norm",
               {x, {"w", {"8"}, DType::F32, "normal", true}},
               {{"eps", 1e-6}, {"weight_offset", 1.0}}});
  const In q{"q", {"B", "4", "S", "8"}};
  c.push_back(
      {"rope",
       "hfx.rope",
       {q, {"cos", {"B", "S", "8"}, DType::F32, "cos"}, {"sin", {"B", "S", "8"}, DType::F32, "sin"}}});
  c.push_back(
      {"rope_partial",
       "hfx.rope",
       {q, {"cos", {"B", "S", "4"}, DType::F32, "cos"}, {"sin", {"B", "S", "4"}, DType::F32, "sin"}}});
  c.push_back(
      {"rope_interleaved",
       "hfx.rope",
       {q, {"cos", {"B", "S", "8"}, DType::F32, "cos_i"}, {"sin", {"B", "S", "8"}, DType::F32, "sin_i"}},
       {{"interleaved", true}}});
  c.push_back(
      {"rope_shared_table",
       "hfx.rope",
       {q, {"cos", {"1", "S", "8"}, DType::F32, "cos"}, {"sin", {"1", "S", "8"}, DType::F32, "sin"}}});
  const In k{"k", {"B", "2", "T", "8"}}, v{"v", {"B", "2", "T", "8"}};
  c.push_back({"sdpa_gqa_causal", "hfx.sdpa", {q, k, v}, {{"scale", 0.0}}});
  c.push_back({"sdpa_mha",
               "hfx.sdpa",
               {q, {"k", {"B", "4", "T", "8"}}, {"v", {"B", "4", "T", "8"}}},
               {{"scale", 0.3}}});
  c.push_back({"sdpa_noncausal", "hfx.sdpa", {q, k, v}, {{"scale", 0.35}, {"causal", false}}});
  // hfx.moe: stacked (GraniteMoE) and per-expert weights; target ort packs them for com.microsoft.MoE
  // (the stage-3 fixes run below), gelu keeps the dense form there too.
  const In logits4{"logits", {"B", "S", "4"}}, logits3{"logits", {"B", "S", "3"}};
  const In gate_up{"gate_up", {"4", "12", "8"}, DType::F32, "normal", true},
      down{"down", {"4", "8", "6"}, DType::F32, "normal", true};
  c.push_back(
      {"moe_stacked", "hfx.moe", {x, logits4, gate_up, down}, {{"top_k", int64_t{2}}, {"normalize", true}}});
  c.push_back({"moe_stacked_gelu",
               "hfx.moe",
               {x, logits4, gate_up, down},
               {{"top_k", int64_t{1}}, {"act", std::string("gelu_tanh")}}});
  std::vector<In> per_expert{x, logits3};
  for (int e = 0; e < 3; e++)
    for (auto [n, d] : std::vector<std::pair<std::string, std::vector<std::string>>>{
             {"gate", {"5", "8"}}, {"up", {"5", "8"}}, {"down", {"8", "5"}}})
      per_expert.push_back({n + std::to_string(e), d, DType::F32, "normal", true});
  c.push_back({"moe_experts", "hfx.moe", per_expert, {{"top_k", int64_t{2}}}});
  c.push_back({"sdpa_window", "hfx.sdpa", {q, k, v}, {{"scale", 0.35}, {"window", int64_t{3}}}});
  c.push_back({"sdpa_softcap", "hfx.sdpa", {q, k, v}, {{"scale", 0.35}, {"softcap", 2.0}}});
  c.push_back({"sdpa_float_mask",
               "hfx.sdpa",
               {q, k, v, {"m", {"B", "1", "S", "T"}, DType::F32, "mask"}},
               {{"scale", 0.35}}});
  c.push_back({"sdpa_head_mask",
               "hfx.sdpa",
               {q, k, v, {"m", {"B", "4", "S", "T"}, DType::F32, "mask"}},
               {{"scale", 0.35}}});
  c.push_back({"sdpa_bool_mask",
               "hfx.sdpa",
               {q, k, v, {"m", {"B", "1", "S", "T"}, DType::Bool, "bool"}},
               {{"scale", 0.35}, {"causal", false}}});
  return c;
}

Tensor make_input(const In& in, const Shape& shape, std::mt19937& rng) {
  int64_t n = shape_numel(shape);
  std::normal_distribution<float> nd(0.f, 1.f);
  std::uniform_real_distribution<float> ud(0.2f, 2.f);
  if (in.gen.rfind("int:", 0) == 0) {
    int64_t hi = std::stoll(in.gen.substr(4));
    std::vector<int64_t> v(n);
    for (auto& x : v) x = static_cast<int64_t>(rng() % hi);
    return Tensor::from_ints(shape, v, in.dt);
  }
  if (in.gen.rfind("perm:", 0) == 0) {
    int64_t hi = std::stoll(in.gen.substr(5));
    std::vector<int64_t> all(hi);
    for (int64_t i = 0; i < hi; i++) all[i] = i;
    std::shuffle(all.begin(), all.end(), rng);
    all.resize(n);
    return Tensor::from_ints(shape, all, in.dt);
  }
  if (in.gen == "bool") {
    std::vector<int64_t> v(n);
    for (auto& x : v) x = (rng() % 4) != 0;  // mostly true
    return Tensor::from_ints(shape, v, DType::Bool);
  }
  std::vector<float> v(n);
  if (in.gen == "cos" || in.gen == "sin" || in.gen == "cos_i" || in.gen == "sin_i") {
    // [B, S, R] tables with the structure rope expects: [f, f] halves, or [f0, f0, f1, f1, ...] pairs.
    int64_t R = shape.back(), rows = n / R;
    bool inter = in.gen.size() > 3;
    bool is_sin = in.gen[0] == 's';
    for (int64_t r = 0; r < rows; r++)
      for (int64_t j = 0; j < R; j++) {
        int64_t f = inter ? j / 2 : j % (R / 2);
        double ang = static_cast<double>(r + 1) * std::pow(10000.0, -2.0 * f / R);
        v[r * R + j] = static_cast<float>(is_sin ? std::sin(ang) : std::cos(ang));
      }
    return Tensor::from_floats(shape, v);
  }
  if (in.gen == "int8grid") {
    // Integers in [-128, 127], each row (last dim) holding both ends: XNNPACK's per-token int8 quantization
    // of such a row has scale 1 and zero point 0, so it is exact and a quantized linear can be held to f32.
    const int64_t k = shape.empty() ? 1 : shape.back();
    for (int64_t i = 0; i < n; i++)
      v[i] = (i % k == 0)   ? -128.f
             : (i % k == 1) ? 127.f
                            : static_cast<float>(static_cast<int>(rng() % 256) - 128);
    return Tensor::from_floats(shape, v).to(in.dt);
  }
  for (auto& x : v) {
    if (in.gen == "pos")
      x = ud(rng);
    else if (in.gen == "pos_bf16")  // what bf16 block scales hold (XNNPACK's 4-bit weights)
      x = bf16_to_f32(f32_to_bf16(ud(rng)));
    else if (in.gen == "pos_row")  // one value per row (per-channel scales stored blockwise)
      x = (&x - v.data()) % shape.back() == 0 ? ud(rng) : *(&x - 1);
    else if (in.gen == "mask")
      x = (rng() % 5 == 0) ? -std::numeric_limits<float>::infinity() : nd(rng);
    else
      x = nd(rng);
  }
  return Tensor::from_floats(shape, v).to(in.dt);
}

SymShape symbolic_dims(const In& in) {
  SymShape ss;
  for (const auto& d : in.dims)
    ss.push_back(std::isdigit(static_cast<unsigned char>(d[0])) ? Sym(static_cast<int64_t>(std::stoll(d)))
                                                                : Sym::symbol(d));
  return ss;
}

CaseGraph build_case_graph(const OpCase& oc, std::mt19937& rng, PatchTable* patches) {
  CaseGraph cg;
  cg.graph = std::make_unique<Graph>();
  Graph& g = *cg.graph;
  // Symbols: every name used by a dim or attribute, hinted with the first size binding.
  std::set<std::string> syms, in_dims;
  for (const auto& in : oc.ins)
    for (const auto& d : in.dims)
      if (!std::isdigit(static_cast<unsigned char>(d[0]))) syms.insert(d), in_dims.insert(d);
  for (const auto& [k, v] : oc.attrs.items()) {
    if (auto* s = std::get_if<Sym>(&v))
      for (auto& f : s->free_symbols()) syms.insert(f);
    if (auto* l = std::get_if<std::vector<Sym>>(&v))
      for (auto& x : *l)
        for (auto& f : x.free_symbols()) syms.insert(f);
  }
  // Symbols used only by attributes (factories, expand/slice sizes) are read from a shape-only input,
  // as a captured graph reads them from input_ids or the past.
  cg.dims_input = syms.size() > in_dims.size() || oc.ins.empty();
  if (cg.dims_input) syms.insert({"B", "S", "T"});
  for (const auto& s : syms) g.env().create_symbol(s, 1, 64, oc.sizes[0].at(s));
  TraceBuilder tb(g, patches);
  std::vector<Var> vars;
  for (const auto& in : oc.ins) {
    if (in.name.empty()) {
      vars.push_back(Var());
      continue;
    }
    const SymShape ss = symbolic_dims(in);
    if (in.param) {
      Tensor t = make_input(in, onnx_test::concrete(ss, {}), rng);
      cg.params[in.name] = t;
      vars.push_back(tb.param(in.name, t));
    } else {
      vars.push_back(tb.input(in.name, TensorType{in.dt, ss}));
    }
  }
  // Factories read their symbols from a shape-only input.
  if (cg.dims_input)
    tb.input("dims", TensorType{DType::F32, {Sym::symbol("B"), Sym::symbol("S"), Sym::symbol("T")}});
  auto outs = tb.call(oc.op, vars, oc.attrs);
  g.add_output("out", outs[0].value());
  return cg;
}

CaseRun eager_case_run(const OpCase& oc, const CaseGraph& cg, const std::map<std::string, int64_t>& binding,
                       std::mt19937& rng) {
  CaseRun r;
  EagerBuilder eb;
  std::vector<Var> ev;
  for (const auto& in : oc.ins) {
    if (in.name.empty()) {
      ev.push_back(Var());
      continue;
    }
    if (in.param) {
      ev.push_back(eb.wrap(cg.params.at(in.name)));
      continue;
    }
    Tensor t = make_input(in, onnx_test::concrete(symbolic_dims(in), binding), rng);
    ev.push_back(eb.wrap(t));
    r.feeds.push_back(t);
  }
  if (cg.dims_input) r.feeds.push_back(Tensor::zeros({binding.at("B"), binding.at("S"), binding.at("T")}));
  r.ref = eb.call(oc.op, ev, onnx_test::concrete_attrs(oc.attrs, binding))[0].tensor();
  return r;
}

double max_rel_diff(const Tensor& a, const Tensor& b) {
  const auto x = a.to(DType::F32).to_floats(), y = b.to(DType::F32).to_floats();
  double err = 0;
  for (size_t i = 0; i < std::min(x.size(), y.size()); i++) {
    if (std::isinf(x[i]) && x[i] == y[i]) continue;
    err = std::max(err, std::abs(static_cast<double>(x[i]) - y[i]) / std::max(1.0, std::abs(double(y[i]))));
  }
  return err;
}

}  // namespace hfx::op_cases
