// The XNNPACK partitioner and payload writer (xnnpack_delegate.h). The payload layout follows ExecuTorch's
// serializer (backends/xnnpack/serialization/xnnpack_graph_serialize.py): a 30-byte XH00 header padded to
// 16 bytes, the XNNGraph flatbuffer padded to 16 bytes, then the inline constant data — empty here, since
// every constant is named data of the program, as ExecuTorch's current XNNPACK flow writes it.
#include "export/executorch/xnnpack_delegate.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <set>

#include <flatbuffers/flatbuffers.h>
#include <fmt/format.h>

#include "hfx/core/error.h"
#include "hfx/ops/op_schema.h"
#include "hfx_gen/xnnpack_schema_generated.h"

namespace hfx::et::xnn {
namespace fx = fb_xnnpack;

namespace {

constexpr uint32_t kInvalidId = std::numeric_limits<uint32_t>::max();  // XNN_INVALID_VALUE_ID
constexpr uint32_t kExternalInput = 1, kExternalOutput = 2;            // XNN_VALUE_FLAG_EXTERNAL_*
constexpr uint32_t kTransposeWeights = 1;                              // XNN_FLAG_TRANSPOSE_WEIGHTS
constexpr size_t kMaxDims = 6;                                         // XNN_MAX_TENSOR_DIMS

bool is_constant(const Value* v) {
  return v && (v->kind == ValueKind::Param || v->kind == ValueKind::Const) && v->data.defined();
}
bool f32(const Value* v) { return v && v->type.dtype == DType::F32 && v->type.shape.size() <= kMaxDims; }
int64_t rank(const Value* v) { return static_cast<int64_t>(v->type.shape.size()); }
// Whether XNNPACK's static reshape can state these sizes: it infers one size written as 0 from the element
// count (the one symbolic size, or -1), and refuses to infer from zero elements — so no constant 0, and the
// symbolic size is never 0 at run time (a decoder's empty past is).
bool inferable(const std::vector<Sym>& sizes, const ShapeEnv& env) {
  int inferred = 0;
  for (const Sym& d : sizes) {
    if (d.is_const() && d.value() == 0) return false;
    if (d.is_const() && d.value() > 0) continue;
    if (!d.is_const() && env.bounds(d).min < 1) return false;
    inferred++;
  }
  return inferred <= 1;
}

// Whether every block of each row holds the row's scale (QuantOptions::per_channel): XNNPACK's 8-bit
// weights take one scale per output channel.
bool per_row_scales(const Tensor& scales) {
  Tensor s = scales.contiguous();
  const int64_t rows = s.shape()[0], blocks = s.shape()[1];
  const float* p = s.data<float>();
  for (int64_t r = 0; r < rows; r++)
    for (int64_t b = 1; b < blocks; b++)
      if (p[r * blocks + b] != p[r * blocks]) return false;
  return true;
}

// Whether every scale is a bfloat16 value (QuantOptions::bf16_scales): XNNPACK's 4-bit kernels read bf16
// block scales, so other scales would be rounded and the delegate would compute other weights than eager.
bool bf16_exact(const Tensor& scales) {
  Tensor s = scales.contiguous();
  const float* p = s.data<float>();
  for (int64_t i = 0; i < s.numel(); i++)
    if (bf16_to_f32(f32_to_bf16(p[i])) != p[i]) return false;
  return true;
}

// ExecuTorch's dynamically quantized linear (hfx.linear_q over symmetric codes with f32 activations): a
// float32 input, constant codes and scales, no zero points (XNNPACK's are fixed: 8 for 4-bit, 0 for the
// signed 8-bit values, hfx's symmetric ones). 4-bit (8da4w): blocks a multiple of 32 wide (XNNPACK's
// blockwise kernels), bf16 scales; 8-bit (8da8w): one scale per row.
bool quantized_linear(const Node& n) {
  if (n.inputs.size() != 3 || n.outputs.size() != 1 || !f32(n.outputs[0])) return false;
  const Value *x = n.inputs[0], *c = n.inputs[1], *s = n.inputs[2];
  if (!f32(x) || x->kind == ValueKind::Param || !is_constant(c) || !is_constant(s) ||
      c->type.dtype != DType::U8 || s->type.dtype != DType::F32 || c->data.dim() != 3 || s->data.dim() != 2)
    return false;
  const int64_t g = n.attrs.i("group_size"), bits = n.attrs.i("bits");
  if ((bits != 4 && bits != 8) || (n.attrs.has("act_bits") && n.attrs.i("act_bits") != 0) || g <= 0 ||
      (bits == 4 && g % 32))
    return false;
  const int64_t blocks = c->data.shape()[1];
  const bool shapes = rank(x) >= 1 && x->type.shape.back().is_const() &&
                      x->type.shape.back().value() == blocks * g && c->data.shape()[2] == g * bits / 8 &&
                      s->data.shape()[0] == c->data.shape()[0] && s->data.shape()[1] == blocks;
  return shapes && (bits == 4 ? bf16_exact(s->data) : per_row_scales(s->data));
}

// What a node becomes, by op: its XNNPACK node kind and the condition beyond float32 operands.
struct Lowering {
  fx::XNodeUnion kind;
  std::function<bool(const Node&, const ShapeEnv&)> when;
};

// The XNNPACK node named `name` in the schema ("XNNExp").
fx::XNodeUnion xnn_kind(const std::string& name) {
  for (fx::XNodeUnion k : fx::EnumValuesXNodeUnion())
    if (name == fx::EnumNameXNodeUnion(k)) return k;
  HFX_THROW("xnnpack", "expected an XNNPACK node name of the schema, got '{}'", name);
}

// Ops whose XNNPACK node the op table declares (OpLowering::xnnpack): elementwise, 1x1 or 2x1.
bool declared_elementwise(const Node& n) {
  const OpSchema* s = find_op_schema(n.op);
  return s && !s->lower.xnnpack.empty();
}

const std::map<std::string, Lowering>& lowerings() {
  static const std::map<std::string, Lowering> t = [] {
    std::map<std::string, Lowering> m;
    auto any = [](const Node&, const ShapeEnv&) { return true; };
    for (const OpSchema* s : all_op_schemas())
      if (!s->lower.xnnpack.empty()) m[s->name] = {xnn_kind(s->lower.xnnpack), any};
    m["aten.mm"] = {fx::XNodeUnion::XNNFullyConnected, [](const Node& n, const ShapeEnv& env) {
                      const Value *x = n.inputs.at(0), *w = n.inputs.at(1);
                      if (rank(x) != 2 || rank(w) != 2) return false;
                      return is_constant(w) ||
                             (inferable(x->type.shape, env) && inferable(w->type.shape, env) &&
                              inferable(n.outputs.at(0)->type.shape, env));
                    }};
    m["aten.bmm"] = {fx::XNodeUnion::XNNBatchMatrixMultiply, any};
    m["aten.view"] = {fx::XNodeUnion::XNNStaticReshape, [](const Node& n, const ShapeEnv& env) {
                        return !n.attrs.syms("size").empty() && inferable(n.attrs.syms("size"), env);
                      }};
    m["aten.permute"] = {fx::XNodeUnion::XNNStaticTranspose, any};
    // A sum or mean over the last dim is a fully-connected product with a constant [1, N] row of ones
    // (or 1/N): the schema has no reduction node, and these are the norms' and the scans' reductions.
    auto last_dim_reduction = [](const Node& n, const ShapeEnv& env) {
      const Value* x = n.inputs.at(0);
      const auto& d = n.attrs.ints("dim");
      const int64_t r = rank(x);
      if (r < 1 || d.size() != 1 || (d[0] != -1 && d[0] != r - 1) || !x->type.shape.back().is_const())
        return false;
      return n.attrs.b("keepdim") || (r >= 2 && inferable(n.outputs.at(0)->type.shape, env));
    };
    m["aten.sum.dim_IntList"] = {fx::XNodeUnion::XNNFullyConnected, last_dim_reduction};
    m["aten.mean.dim"] = {fx::XNodeUnion::XNNFullyConnected, last_dim_reduction};
    m["aten.add.Scalar"] = {fx::XNodeUnion::XNNAdd, any};
    m["aten.mul.Scalar"] = {fx::XNodeUnion::XNNMultiply, any};
    m["aten.relu"] = {fx::XNodeUnion::XNNClamp, any};
    m["aten.gelu"] = {fx::XNodeUnion::XNNGelu, [](const Node& n, const ShapeEnv&) {
                        return !n.attrs.has("approximate") || n.attrs.s("approximate") == "none";
                      }};
    m["aten._softmax"] = {fx::XNodeUnion::XNNSoftmax, [](const Node& n, const ShapeEnv&) {
                            int64_t d = n.attrs.i("dim"), r = rank(n.inputs.at(0));
                            return d == -1 || d == r - 1;
                          }};
    return m;
  }();
  return t;
}

}  // namespace

bool has_rule(const std::string& op) {
  const OpSchema* s = find_op_schema(op);
  return op == "hfx.linear_q" || (lowerings().count(op) && !(s && !s->lower.xnnpack.empty()));
}

const std::vector<XnnOpEntry>& xnnpack_op_table() {
  static const std::vector<XnnOpEntry> t = [] {
    std::vector<XnnOpEntry> rows = {
        {"aten.mm", "XNNFullyConnected",
         "the right operand is a constant (a linear layer after linear_to_mm)",
         "the linear layers: nearly all of a decoder's work; XNNPACK packs the [in, out] weight once at load "
         "(XNN_FLAG_TRANSPOSE_WEIGHTS) and runs its GEMM microkernels"},
        {"aten.mm", "XNNStaticReshape + XNNBatchMatrixMultiply + XNNStaticReshape",
         "the right operand is computed (at most one symbolic size per operand)",
         "a product of two activations (the dense MoE's routed expert weights): XNNPACK's batch matmul over "
         "a "
         "batch of one, the reshapes inferring the one symbolic size"},
        {"hfx.linear_q", "XNNConvert (fp32 → qdint8, per token) + XNNFullyConnected (qcint8 filter)",
         "8-bit symmetric codes with one scale per row, f32 activations (--quantize int8 --symmetric)",
         "ExecuTorch's 8da8w linear: int8 activations per token × int8 weights with one f32 scale per output "
         "channel; hfx's codes become signed int8 values (code − 128) and the row scales f32 named data"},
        {"hfx.linear_q", "XNNConvert (fp32 → qdint8, per token) + XNNFullyConnected (qbint4 filter)",
         "4-bit symmetric codes with bf16 scales, blocks a multiple of 32, f32 activations (--quantize int4 "
         "--symmetric)",
         "ExecuTorch's 8da4w linear: the activations are quantized to int8 per token at run time and "
         "XNNPACK's "
         "qd8 × qb4w GEMM reads hfx's codes as they are (low nibble first, zero point 8) with the block "
         "scales "
         "as bf16 named data"},
        {"aten.bmm", "XNNBatchMatrixMultiply", "",
         "attention's scores and weighted values (q·kᵀ, p·v) over the static cache"},
        {"aten.view", "XNNStaticReshape",
         "at most one size is symbolic or -1 (serialized as 0, inferred at run time)",
         "keeps a linear layer's flatten/unflatten inside its partition instead of two portable copies"},
        {"aten.permute", "XNNStaticTranspose", "", "head transposes between projections and attention"},
        {"aten.sum.dim_IntList, aten.mean.dim", "XNNFullyConnected (+ XNNStaticReshape without keepdim)",
         "over the last dim, of a constant size",
         "RMSNorm's mean and the state-space scans' sums: a product with a constant [1, N] row of ones (1/N "
         "for "
         "the mean), since the XNNPACK schema has no reduction node"},
        {"aten.add.Scalar, aten.mul.Scalar", "XNNAdd, XNNMultiply", "",
         "a binary op with a static rank-0 operand holding the scalar"},
        {"aten.relu", "XNNClamp", "", "relu as a clamp to [0, +inf)"},
        {"aten.gelu", "XNNGelu", "approximate='none'", "the exact (erf) GELU; the tanh form stays portable"},
        {"aten._softmax", "XNNSoftmax", "over the last dim", "attention probabilities"},
    };
    // The elementwise nodes the op table declares (OpLowering::xnnpack), one row per arity, derived: the
    // table is where an op says its node, and this listing follows it.
    for (int arity : {2, 1}) {
      XnnOpEntry row{
          "", "", "",
          arity == 2 ? "elementwise binary ops with NumPy broadcasting (residuals, norm scaling, gating, "
                       "biases)"
                     : "unary activations and norm pieces (SiLU is x·sigmoid(x) after silu_to_sigmoid_mul)"};
      for (const OpSchema* s : all_op_schemas()) {
        if (s->lower.xnnpack.empty() || s->max_inputs != arity) continue;
        row.op += (row.op.empty() ? "" : ", ") + s->name;
        row.xnn_node += (row.xnn_node.empty() ? "" : ", ") + s->lower.xnnpack;
      }
      rows.push_back(row);
    }
    return rows;
  }();
  return t;
}

bool supported(const Node& n, const ShapeEnv& env) {
  if (n.op == "hfx.linear_q") return quantized_linear(n);  // uint8 codes: not a float32-only entry
  auto it = lowerings().find(n.op);
  if (it == lowerings().end() || n.outputs.size() != 1 || !f32(n.outputs[0])) return false;
  for (const Value* v : n.inputs)
    if (!v || !f32(v) || (v->kind != ValueKind::NodeOutput && v->kind != ValueKind::Input && !is_constant(v)))
      return false;
  return it->second.when(n, env);
}

// A value larger than this at the bounds ends its partition (see partition()).
constexpr double kLargeValueBytes = 64.0 * 1024 * 1024;

std::vector<Partition> partition(const Graph& g) {
  std::map<const Value*, std::vector<const Node*>> users;
  for (const auto& n : g.nodes())
    for (const Value* v : n->inputs)
      if (v) users[v].push_back(n.get());
  const std::set<const Value*> graph_out(g.outputs().begin(), g.outputs().end());
  std::vector<Partition> parts;
  Partition cur;
  auto flush = [&] {
    if (cur.nodes.empty()) return;
    const std::set<const Node*> inside(cur.nodes.begin(), cur.nodes.end());
    std::set<const Value*> produced, seen;
    for (const Node* n : cur.nodes) {
      for (const Value* v : n->inputs)
        if (!produced.count(v) && !is_constant(v) && seen.insert(v).second) cur.inputs.push_back(v);
      for (const Value* v : n->outputs) produced.insert(v);
    }
    for (const Node* n : cur.nodes)
      for (const Value* v : n->outputs) {
        bool outside = graph_out.count(v) > 0;
        for (const Node* u : users[v]) outside = outside || !inside.count(u);
        if (outside) cur.outputs.push_back(v);
      }
    parts.push_back(std::move(cur));
    cur = Partition{};
  };
  for (const auto& n : g.nodes()) {
    if (!supported(*n, g.env())) {
      flush();
      continue;
    }
    cur.nodes.push_back(n.get());
    // A value that is large at the bounds ends its partition, so it lives in the method's planned memory
    // (touched at the sizes of each call) rather than in XNNPACK's workspace, which XNNPACK sizes for the
    // bounds and zero-fills on first use (mamba's chunked scan at batch 64: seconds per process).
    for (const Value* v : n->outputs)
      if (v && bound_bytes(*v, g.env()) > kLargeValueBytes) flush();
  }
  flush();
  return parts;
}

namespace {

// The XNNGraph of one partition under construction: values by serialized id, nodes in order.
class GraphBuilder {
 public:
  GraphBuilder(const std::function<std::vector<int32_t>(const Value*)>& bound,
               const std::function<std::string(const Value*)>& named_key)
      : bound_(bound), named_key_(named_key) {
    constant_data_.push_back(
        fx::CreateConstantDataOffset(b_, uint64_t{0}, uint64_t{0}));  // entry 0: "no constant data"
  }

  void external(const Value* v, uint32_t ext, uint32_t flag) { ids_[v] = add_value(bound_(v), 0, ext, flag); }
  /// An internal value of these sizes that no hfx value stands for.
  uint32_t temp(const std::vector<int32_t>& sizes) { return add_value(sizes, 0, kInvalidId, 0); }

  /// A constant this payload makes (no hfx value stands for it, so it is not cached by address).
  uint32_t constant(const Value& v) { return add_value(bound_(&v), buffer(v), kInvalidId, 0); }
  /// The constant_data entry of `v`'s bytes (program named data): a value's data, or a quantized
  /// filter's block scales.
  uint32_t buffer(const Value& v) {
    const auto idx = static_cast<uint32_t>(constant_data_.size());
    constant_data_.push_back(fx::CreateConstantDataOffsetDirect(b_, std::numeric_limits<uint64_t>::max(),
                                                                static_cast<uint64_t>(v.data.nbytes()),
                                                                named_key_(&v).c_str()));
    return idx;
  }
  /// A quantized value (XNNQuantizedTensorValue): `dt` of these dims over constant `buffer` (0: none)
  /// with quantization parameters `params` of union type `kind`.
  uint32_t quantized(fx::XNNDatatype dt, const std::vector<uint32_t>& dims, uint32_t buffer,
                     fx::XNNQuantParams kind, flatbuffers::Offset<void> params) {
    const auto sid = static_cast<uint32_t>(values_.size());
    auto tv = fx::CreateXNNTensorValueDirect(b_, dt, static_cast<uint32_t>(dims.size()), &dims, buffer,
                                             kInvalidId, 0, sid);
    auto qv = fx::CreateXNNQuantizedTensorValue(b_, tv, kind, params);
    values_.push_back(fx::CreateXValue(b_, fx::XValueUnion::XNNQuantizedTensorValue, qv.Union()));
    return sid;
  }
  uint32_t id(const Value* v) {
    if (auto it = ids_.find(v); it != ids_.end()) return it->second;
    return ids_[v] = add_value(bound_(v), is_constant(v) ? buffer(*v) : 0, kInvalidId, 0);
  }

  void node(fx::XNodeUnion kind, flatbuffers::Offset<void> body, uint32_t handle,
            bool clamp_at_zero = false) {
    flatbuffers::Offset<fx::OutputMinMax> mm = 0;
    if (clamp_at_zero) mm = fx::CreateOutputMinMax(b_, 0.0f, std::numeric_limits<float>::infinity());
    nodes_.push_back(fx::CreateXNode(b_, kind, body, handle, mm));
  }
  flatbuffers::FlatBufferBuilder& fbb() { return b_; }
  std::vector<int32_t> bound(const Value* v) const { return bound_(v); }

  std::vector<uint8_t> finish(uint32_t num_externs, const std::vector<uint32_t>& in,
                              const std::vector<uint32_t>& out);

 private:
  uint32_t add_value(const std::vector<int32_t>& sizes, uint32_t buffer, uint32_t ext, uint32_t flags) {
    const auto sid = static_cast<uint32_t>(values_.size());
    std::vector<uint32_t> dims(sizes.begin(), sizes.end());
    auto tv =
        fx::CreateXNNTensorValueDirect(b_, fx::XNNDatatype::xnn_datatype_fp32,
                                       static_cast<uint32_t>(dims.size()), &dims, buffer, ext, flags, sid);
    values_.push_back(fx::CreateXValue(b_, fx::XValueUnion::XNNTensorValue, tv.Union()));
    return sid;
  }

  flatbuffers::FlatBufferBuilder b_{1 << 12};
  const std::function<std::vector<int32_t>(const Value*)>& bound_;
  const std::function<std::string(const Value*)>& named_key_;
  std::map<const Value*, uint32_t> ids_;
  std::vector<flatbuffers::Offset<fx::XValue>> values_;
  std::vector<flatbuffers::Offset<fx::XNode>> nodes_;
  std::vector<flatbuffers::Offset<fx::ConstantDataOffset>> constant_data_;
};

void put_le(uint8_t* p, uint64_t v, int n) {
  for (int i = 0; i < n; i++) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

std::vector<uint8_t> GraphBuilder::finish(uint32_t num_externs, const std::vector<uint32_t>& in,
                                          const std::vector<uint32_t>& out) {
  auto root = fx::CreateXNNGraphDirect(b_, "0", &nodes_, &values_, num_externs, &in, &out, nullptr, nullptr,
                                       &constant_data_);
  fx::FinishXNNGraphBuffer(b_, root);
  constexpr size_t kHeader = 30, kAlign = 16;
  const size_t header_padded = (kHeader + kAlign - 1) / kAlign * kAlign;
  const size_t fb_size = b_.GetSize(), fb_padded = (fb_size + kAlign - 1) / kAlign * kAlign;
  std::vector<uint8_t> bytes(header_padded + fb_padded, 0);
  std::memcpy(bytes.data() + 4, "XH00", 4);
  put_le(bytes.data() + 8, kHeader, 2);
  put_le(bytes.data() + 10, header_padded, 4);              // flatbuffer offset
  put_le(bytes.data() + 14, fb_size, 4);                    // flatbuffer size
  put_le(bytes.data() + 18, header_padded + fb_padded, 4);  // constant data offset
  put_le(bytes.data() + 22, 0, 8);                          // constant data size: all named
  std::memcpy(bytes.data() + header_padded, b_.GetBufferPointer(), fb_size);
  return bytes;
}

// New shape of a reshape: constant sizes as they are, the (at most one) symbolic size as 0 (inferred).
std::vector<uint32_t> reshape_dims(const SymShape& s) {
  std::vector<uint32_t> v;
  for (const Sym& d : s) v.push_back(d.is_const() ? static_cast<uint32_t>(d.value()) : 0);
  return v;
}

// mm of two activations: [M, K] → [1, M, K], [K, N] → [1, K, N], batch matmul, [1, M, N] → [M, N].
void emit_mm_as_bmm(GraphBuilder& gb, const Node& n, uint32_t out, uint32_t handle) {
  auto& b = gb.fbb();
  const Value *x = n.inputs[0], *w = n.inputs[1];
  auto batch1 = [&](const Value* v) {
    std::vector<int32_t> sizes = {1};
    for (int32_t s : gb.bound(v)) sizes.push_back(s);
    std::vector<uint32_t> shape = {1};
    for (uint32_t d : reshape_dims(v->type.shape)) shape.push_back(d);
    const uint32_t t = gb.temp(sizes), src = gb.id(v);
    gb.node(
        fx::XNodeUnion::XNNStaticReshape,
        fx::CreateXNNStaticReshapeDirect(b, static_cast<uint32_t>(shape.size()), &shape, src, t, 0).Union(),
        handle);
    return t;
  };
  const uint32_t x3 = batch1(x), w3 = batch1(w);
  const std::vector<int32_t> xs = gb.bound(x), ws = gb.bound(w);
  const uint32_t y3 = gb.temp({1, xs[0], ws[1]});
  gb.node(fx::XNodeUnion::XNNBatchMatrixMultiply, fx::Create_XNNNode2x1(b, x3, w3, y3, 0).Union(), handle);
  std::vector<uint32_t> shape = reshape_dims(n.outputs[0]->type.shape);
  gb.node(
      fx::XNodeUnion::XNNStaticReshape,
      fx::CreateXNNStaticReshapeDirect(b, static_cast<uint32_t>(shape.size()), &shape, y3, out, 0).Union(),
      handle);
}

// The qcint8 filter of an 8-bit hfx.linear_q with per-row scales: the codes as signed values (code − 128,
// hfx's symmetric zero point) [N, K] and each row's scale, f32 [N], both named data.
uint32_t qcint8_filter(GraphBuilder& gb, const Value& codes, const Value& scales) {
  const int64_t rows = codes.data.shape()[0], k = codes.data.shape()[1] * codes.data.shape()[2];
  Value w8, s32;
  w8.kind = s32.kind = ValueKind::Const;
  w8.name = codes.name + ".int8";
  w8.type = TensorType{DType::U8, {Sym(rows), Sym(k)}};
  w8.data = codes.data.contiguous().reshape({rows, k}).clone();
  for (uint8_t *p = w8.data.data<uint8_t>(), *e = p + rows * k; p != e; p++) *p ^= 0x80;  // code − 128
  s32.name = scales.name + ".per_channel";
  s32.type = TensorType{DType::F32, {Sym(rows)}};
  s32.data = scales.data.contiguous().slice(1, 0, 1).contiguous().reshape({rows}).clone();
  const uint32_t scale_buf = gb.buffer(s32);
  return gb.quantized(fx::XNNDatatype::xnn_datatype_qcint8,
                      {static_cast<uint32_t>(rows), static_cast<uint32_t>(k)}, gb.buffer(w8),
                      fx::XNNQuantParams::PerChannelQuant,
                      // An empty inline scale vector beside the named one: ExecuTorch's XNNCompiler reads
                      // scale()->data() before it looks at scale_buffer_idx, so the vector must be present.
                      fx::CreatePerChannelQuant(gb.fbb(), gb.fbb().CreateVector(std::vector<float>{}), 0,
                                                scale_buf, static_cast<uint32_t>(rows))
                          .Union());
}

// The qbint4 filter of a 4-bit hfx.linear_q: the codes as they are (hfx's bytes [N, K/2], element k in the
// low nibble when k is even, code − 8 the value) [N, K] and the block scales as bf16 named data (exact: the
// quantization rounded them to bf16).
uint32_t qbint4_filter(GraphBuilder& gb, const Value& codes, const Value& scales, int64_t group) {
  const int64_t rows = codes.data.shape()[0], blocks = codes.data.shape()[1];
  Value bf16;
  bf16.kind = ValueKind::Const;
  bf16.name = scales.name + ".bf16";
  bf16.type = TensorType{DType::BF16, {Sym(rows), Sym(blocks)}};
  bf16.data = scales.data.to(DType::BF16);
  const uint32_t scale_buf = gb.buffer(bf16);
  return gb.quantized(fx::XNNDatatype::xnn_datatype_qbint4,
                      {static_cast<uint32_t>(rows), static_cast<uint32_t>(blocks * group)}, gb.buffer(codes),
                      fx::XNNQuantParams::PerChannelGroupQuant,
                      fx::CreatePerChannelGroupQuant(gb.fbb(), 0, 0, static_cast<int32_t>(group), scale_buf,
                                                     static_cast<uint32_t>(rows * blocks))
                          .Union());
}

// hfx.linear_q as ExecuTorch's 8da4w / 8da8w: x → XNNConvert → qdint8 (per-token scale and zero point
// computed at run time) → XNNFullyConnected over the qbint4 or qcint8 filter.
void emit_linear_q(GraphBuilder& gb, const Node& n, uint32_t out, uint32_t handle) {
  auto& b = gb.fbb();
  const Value *x = n.inputs[0], *codes = n.inputs[1], *scales = n.inputs[2];
  const uint32_t xi = gb.id(x);
  std::vector<uint32_t> xdims;
  for (int32_t d : gb.bound(x)) xdims.push_back(static_cast<uint32_t>(d));
  const uint32_t xq =
      gb.quantized(fx::XNNDatatype::xnn_datatype_qdint8, xdims, 0, fx::XNNQuantParams::PerTokenDynamicQuant,
                   fx::CreatePerTokenDynamicQuant(b, 1).Union());
  gb.node(fx::XNodeUnion::XNNConvert, fx::Create_XNNNode1x1(b, xi, xq, 0).Union(), handle);
  const uint32_t w = n.attrs.i("bits") == 8 ? qcint8_filter(gb, *codes, *scales)
                                            : qbint4_filter(gb, *codes, *scales, n.attrs.i("group_size"));
  gb.node(fx::XNodeUnion::XNNFullyConnected,
          fx::CreateXNNFullyConnected(b, xq, w, kInvalidId, out, 0).Union(), handle);
}

// sum/mean over the last dim (size N): x[..., N] · [1, N]ᵀ → [..., 1], reshaped when keepdim is false.
void emit_last_dim_reduction(GraphBuilder& gb, const Node& n, uint32_t out, uint32_t handle) {
  auto& b = gb.fbb();
  const Value* x = n.inputs[0];
  const int64_t k = x->type.shape.back().value();
  const float w = n.op == "aten.mean.dim" ? 1.0f / static_cast<float>(k) : 1.0f;
  Value row;  // the constant row, named data of the program (its key names its content)
  row.kind = ValueKind::Const;
  row.name = fmt::format("xnnpack.reduce_row.{}.{}", k, n.op == "aten.mean.dim" ? "mean" : "sum");
  row.type = TensorType{DType::F32, {Sym(1), Sym(k)}};
  row.data = Tensor::full({1, k}, w);
  const bool keep = n.attrs.b("keepdim");
  std::vector<int32_t> sizes = gb.bound(x);
  sizes.back() = 1;
  const uint32_t xi = gb.id(x), wi = gb.constant(row), yi = keep ? out : gb.temp(sizes);
  gb.node(fx::XNodeUnion::XNNFullyConnected,
          fx::CreateXNNFullyConnected(b, xi, wi, kInvalidId, yi, 0).Union(), handle);
  if (keep) return;
  std::vector<uint32_t> shape = reshape_dims(n.outputs[0]->type.shape);
  gb.node(
      fx::XNodeUnion::XNNStaticReshape,
      fx::CreateXNNStaticReshapeDirect(b, static_cast<uint32_t>(shape.size()), &shape, yi, out, 0).Union(),
      handle);
}

// Emits the XNNPACK node of one hfx node.
void emit_node(GraphBuilder& gb, const Node& n, uint32_t handle) {
  if (n.op == "hfx.linear_q") return emit_linear_q(gb, n, gb.id(n.outputs.at(0)), handle);
  const fx::XNodeUnion kind = lowerings().at(n.op).kind;
  auto& b = gb.fbb();
  const uint32_t out = gb.id(n.outputs.at(0));
  if (declared_elementwise(n) && n.inputs.size() == 1) {
    const uint32_t x = gb.id(n.inputs[0]);
    gb.node(kind, fx::Create_XNNNode1x1(b, x, out, 0).Union(), handle);
    return;
  }
  switch (kind) {
    case fx::XNodeUnion::XNNFullyConnected: {
      if (n.op != "aten.mm") return emit_last_dim_reduction(gb, n, out, handle);
      if (!is_constant(n.inputs[1])) return emit_mm_as_bmm(gb, n, out, handle);
      const uint32_t x = gb.id(n.inputs[0]), w = gb.id(n.inputs[1]);
      gb.node(kind, fx::CreateXNNFullyConnected(b, x, w, kInvalidId, out, kTransposeWeights).Union(), handle);
      return;
    }
    case fx::XNodeUnion::XNNStaticReshape: {
      std::vector<uint32_t> shape;  // 0: the one symbolic (or -1) size, inferred from the element count
      for (const Sym& d : n.attrs.syms("size"))
        shape.push_back(d.is_const() && d.value() >= 0 ? static_cast<uint32_t>(d.value()) : 0);
      const uint32_t x = gb.id(n.inputs[0]);
      gb.node(
          kind,
          fx::CreateXNNStaticReshapeDirect(b, static_cast<uint32_t>(shape.size()), &shape, x, out, 0).Union(),
          handle);
      return;
    }
    case fx::XNodeUnion::XNNStaticTranspose: {
      std::vector<uint32_t> perm;
      const int64_t r = rank(n.inputs[0]);
      for (int64_t d : n.attrs.ints("dims")) perm.push_back(static_cast<uint32_t>(d < 0 ? d + r : d));
      const uint32_t x = gb.id(n.inputs[0]);
      gb.node(
          kind,
          fx::CreateXNNStaticTransposeDirect(b, static_cast<uint32_t>(perm.size()), &perm, x, out, 0).Union(),
          handle);
      return;
    }
    case fx::XNodeUnion::XNNSoftmax:
    case fx::XNodeUnion::XNNGelu:
    case fx::XNodeUnion::XNNClamp: {
      const uint32_t x = gb.id(n.inputs[0]);
      gb.node(kind, fx::Create_XNNNode1x1(b, x, out, 0).Union(), handle, kind == fx::XNodeUnion::XNNClamp);
      return;
    }
    default:
      break;
  }
  // Binary: a Scalar overload reads its operand from the node's "scalar" constant input (see serialize).
  const uint32_t a = gb.id(n.inputs[0]), c = gb.id(n.inputs.at(1));
  gb.node(kind, fx::Create_XNNNode2x1(b, a, c, out, 0).Union(), handle);
}

}  // namespace

std::vector<uint8_t> serialize(const Partition& p,
                               const std::function<std::vector<int32_t>(const Value*)>& bound,
                               const std::function<std::string(const Value*)>& named_key) {
  GraphBuilder gb(bound, named_key);
  std::vector<uint32_t> in, out;
  uint32_t ext = 0;
  for (const Value* v : p.inputs) gb.external(v, ext, kExternalInput), in.push_back(ext++);
  for (const Value* v : p.outputs) gb.external(v, ext, kExternalOutput), out.push_back(ext++);
  // The scalar operands of add/mul.Scalar become rank-0 constants owned by this payload.
  std::vector<std::unique_ptr<Value>> scalars;
  uint32_t handle = 0;
  for (const Node* n : p.nodes) {
    if (n->op == "aten.add.Scalar" || n->op == "aten.mul.Scalar") {
      auto s = std::make_unique<Value>();
      s->kind = ValueKind::Const;
      s->name = n->name + ".other";
      s->type = TensorType{DType::F32, {}};
      s->data = Tensor::scalar(n->attrs.f("other"));
      Node copy = *n;
      copy.inputs = {n->inputs.at(0), s.get()};
      scalars.push_back(std::move(s));
      emit_node(gb, copy, handle++);
      continue;
    }
    emit_node(gb, *n, handle++);
  }
  return gb.finish(ext, in, out);
}

}  // namespace hfx::et::xnn
