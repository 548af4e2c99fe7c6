// The .pte reader's XnnpackBackend (pte_method_impl.h): re-reads a delegate payload the way ExecuTorch's
// XNNCompiler does — the XH00 header (or a bare XN00 flatbuffer), the flatbuffers verifier, values with
// their external ids and constants (named data of the program, or the payload's own constant region), the
// nodes — and runs it with op-table kernels. It shares nothing with the writer but the generated schema.
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <tuple>

#include <flatbuffers/flatbuffers.h>

#include "hfx/ops/op_schema.h"
#include "hfx_gen/xnnpack_schema_generated.h"
#include "verify/pte_method_impl.h"

namespace hfx::verify::pte_detail {
namespace fx = fb_xnnpack;

namespace {
constexpr uint32_t kInvalid = std::numeric_limits<uint32_t>::max();
constexpr uint32_t kInput = 1, kOutput = 2, kTranspose = 1;

uint64_t le(const uint8_t* p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; i--) v = v << 8 | p[i];
  return v;
}

Tensor run_op(const char* op, const std::vector<Tensor>& in, const Attrs& a = {}) {
  const OpSchema& s = op_schema(op);
  return s.kernel(in, normalize_attrs(s, a)).at(0);
}
}  // namespace

struct XnnGraph {
  struct Val {
    fx::XNNDatatype dt = fx::XNNDatatype::xnn_datatype_fp32;
    Shape dims;
    uint32_t external = kInvalid, flags = 0;
    Tensor constant;
  };
  struct Op {
    fx::XNodeUnion kind = fx::XNodeUnion::NONE;
    std::vector<uint32_t> in;
    std::vector<int64_t> dims;  // reshape: new shape (0 = inferred); transpose: permutation
    uint32_t out = kInvalid, flags = 0;
    float lo = -INFINITY, hi = INFINITY;
  };
  std::map<uint32_t, Val> values;
  std::vector<Op> ops;
  uint32_t num_externs = 0;
};

void XnnGraphDeleter::operator()(XnnGraph* g) const { delete g; }

namespace {

// The flatbuffer and the constant region of a payload: behind an XH00 header, or the whole payload.
struct Regions {
  const uint8_t *fb = nullptr, *constants = nullptr;
  size_t fb_size = 0, constants_size = 0;
};
Regions regions(const uint8_t* d, size_t n) {
  Regions r;
  if (n >= 30 && std::memcmp(d + 4, "XH00", 4) == 0) {
    const uint64_t fo = le(d + 10, 4), fs = le(d + 14, 4), co = le(d + 18, 4), cs = le(d + 22, 8);
    if (fo > n || fs > n - fo || co > n || cs > n - co || co < fo + fs)
      HFX_THROW("pte",
                "expected an XNNPACK header whose regions fit the {}-byte payload, got flatbuffer "
                "[{}, +{}) and constants [{}, +{})",
                n, fo, fs, co, cs);
    r.fb = d + fo, r.fb_size = fs, r.constants = d + co, r.constants_size = cs;
  } else {
    r.fb = d, r.fb_size = n;
  }
  if (r.fb_size < 8 || (std::memcmp(r.fb + 4, "XN00", 4) != 0 && std::memcmp(r.fb + 4, "XN01", 4) != 0))
    HFX_THROW("pte",
              "expected an XNNGraph flatbuffer (identifier XN00/XN01) in the delegate payload, got "
              "{} bytes without it",
              r.fb_size);
  return r;
}

Tensor constant_of(const fx::XNNGraph* g, uint32_t idx, const Shape& dims, const Regions& r,
                   const NamedData& named) {
  if (!g->constant_data() || idx >= g->constant_data()->size())
    HFX_THROW("pte", "expected constant index {} inside the payload's constant_data table", idx);
  const auto* cd = g->constant_data()->Get(idx);
  const uint8_t* src = nullptr;
  size_t avail = 0;
  if (cd->named_key()) {
    std::tie(src, avail) = named(cd->named_key()->str());
  } else {
    if (cd->offset() > r.constants_size || cd->size() > r.constants_size - cd->offset())
      HFX_THROW("pte", "expected constant {} inside the payload's {}-byte constant region", idx,
                r.constants_size);
    src = r.constants + cd->offset(), avail = cd->size();
  }
  // The bytes the shape needs, checked against what the file holds before anything is allocated (a
  // corrupt payload may state any dims).
  uint64_t need = sizeof(float);
  for (int64_t d : dims)
    if (__builtin_mul_overflow(need, static_cast<uint64_t>(d), &need))
      HFX_THROW("pte", "expected the dims {} of an XNNPACK constant to fit 64-bit bytes",
                shape_to_string(dims));
  if (avail < need)
    HFX_THROW("pte", "expected {} bytes for an XNNPACK constant of shape {}, got {}", need,
              shape_to_string(dims), avail);
  Tensor t = Tensor::zeros(dims);
  if (t.nbytes()) std::memcpy(t.raw(), src, t.nbytes());
  return t;
}

// The raw bytes of constant `idx`, at least `need` of them.
const uint8_t* constant_bytes(const fx::XNNGraph* g, uint32_t idx, uint64_t need, const Regions& r,
                              const NamedData& named) {
  if (!g->constant_data() || idx == 0 || idx >= g->constant_data()->size())
    HFX_THROW("pte", "expected constant index {} (not 0) inside the payload's constant_data table", idx);
  const auto* cd = g->constant_data()->Get(idx);
  const uint8_t* src = nullptr;
  size_t avail = 0;
  if (cd->named_key())
    std::tie(src, avail) = named(cd->named_key()->str());
  else if (cd->offset() <= r.constants_size && cd->size() <= r.constants_size - cd->offset())
    src = r.constants + cd->offset(), avail = cd->size();
  if (!src || avail < need)
    HFX_THROW("pte", "expected {} bytes for XNNPACK constant {}, got {}", need, idx, src ? avail : 0);
  return src;
}

// A qbint4 filter [N, K] (XNNPACK's blockwise 4-bit weights: two codes per byte along K, the even element
// in the low nibble, zero point 8, one bf16 scale per block of group_size) as float32 (code − 8) · scale.
Tensor qbint4_filter(const fx::XNNGraph* g, const fx::XNNTensorValue* tv, const fx::PerChannelGroupQuant* q,
                     const Shape& dims, const Regions& r, const NamedData& named) {
  const int64_t gs = q->group_size();
  if (dims.size() != 2 || q->channel_dim() != 0 || gs <= 0 || gs % 2 || dims[1] % gs || dims[0] <= 0 ||
      dims[0] > (int64_t{1} << 31) || dims[1] > (int64_t{1} << 31))
    HFX_THROW(
        "pte",
        "expected a qbint4 filter [N, K] with channel dim 0 and K a multiple of an even group size, got "
        "{} in groups of {} along dim {}",
        shape_to_string(dims), gs, q->channel_dim());
  const int64_t n = dims[0], k = dims[1], blocks = k / gs;
  if (q->num_scales() != static_cast<uint64_t>(n * blocks) || !tv->constant_buffer_idx() ||
      !q->scale_buffer_idx())
    HFX_THROW("pte", "expected {} bf16 block scales in named data and codes for a qbint4 filter {}, got {}",
              n * blocks, shape_to_string(dims), q->num_scales());
  const uint8_t* codes =
      constant_bytes(g, tv->constant_buffer_idx(), static_cast<uint64_t>(n * k / 2), r, named);
  const uint8_t* sc =
      constant_bytes(g, q->scale_buffer_idx(), static_cast<uint64_t>(n * blocks * 2), r, named);
  Tensor w = Tensor::zeros({n, k});
  float* p = w.data<float>();
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < k; j++) {
      const uint8_t byte = codes[(i * k + j) / 2];
      const int code = (j % 2 == 0) ? (byte & 0x0F) : (byte >> 4);
      const size_t si = static_cast<size_t>(i * blocks + j / gs) * 2;
      p[i * k + j] =
          static_cast<float>(code - 8) * bf16_to_f32(static_cast<uint16_t>(sc[si] | sc[si + 1] << 8));
    }
  return w;
}

// A qcint8 filter [N, K] (XNNPACK's per-channel 8-bit weights: signed values, zero point 0, one f32 scale
// per row along channel dim 0, from named data or inline) as float32 value · scale.
Tensor qcint8_filter(const fx::XNNGraph* g, const fx::XNNTensorValue* tv, const fx::PerChannelQuant* q,
                     const Shape& dims, const Regions& r, const NamedData& named) {
  if (dims.size() != 2 || q->channel_dim() != 0 || dims[0] <= 0 || dims[0] > (int64_t{1} << 31) ||
      dims[1] > (int64_t{1} << 31) || !tv->constant_buffer_idx())
    HFX_THROW("pte", "expected a constant qcint8 filter [N, K] with channel dim 0, got {} along dim {}",
              shape_to_string(dims), q->channel_dim());
  const int64_t n = dims[0], k = dims[1];
  const float* scales = nullptr;
  std::vector<float> named_scales(static_cast<size_t>(n));
  if (q->scale_buffer_idx()) {
    const uint8_t* p = constant_bytes(g, q->scale_buffer_idx(), static_cast<uint64_t>(n) * 4, r, named);
    std::memcpy(named_scales.data(), p, named_scales.size() * 4);
    scales = named_scales.data();
  } else if (q->scale() && q->scale()->size() == static_cast<uint32_t>(n)) {
    scales = q->scale()->data();
  } else {
    HFX_THROW("pte", "expected {} per-channel scales for a qcint8 filter {}", n, shape_to_string(dims));
  }
  const auto* v = reinterpret_cast<const int8_t*>(
      constant_bytes(g, tv->constant_buffer_idx(), static_cast<uint64_t>(n * k), r, named));
  Tensor w = Tensor::zeros({n, k});
  float* p = w.data<float>();
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < k; j++) p[i * k + j] = static_cast<float>(v[i * k + j]) * scales[i];
  return w;
}

// A quantized value: the qdint8 a Convert node computes (per-token parameters at run time; internal, no
// data), or a constant qbint4 filter, which the reader holds de-quantized.
XnnGraph::Val quantized_value(const fx::XNNGraph* g, const fx::XNNQuantizedTensorValue* qv, const Regions& r,
                              const NamedData& named) {
  const fx::XNNTensorValue* tv = qv->tensor_value();
  if (!tv) HFX_THROW("pte", "expected a tensor_value in an XNNPACK quantized value");
  XnnGraph::Val v;
  v.dt = tv->datatype();
  if (tv->dims())
    for (uint32_t d : *tv->dims()) v.dims.push_back(d);
  v.external = tv->external_id(), v.flags = tv->flags();
  if (v.dt == fx::XNNDatatype::xnn_datatype_qdint8 && qv->quant_params_as_PerTokenDynamicQuant()) {
    if (tv->constant_buffer_idx() || (v.flags & (kInput | kOutput)) ||
        qv->quant_params_as_PerTokenDynamicQuant()->num_nonbatch_dims() != 1)
      HFX_THROW("pte",
                "expected a qdint8 value to be internal, without data, quantized per token (1 "
                "non-batch dim)");
    return v;
  }
  if (v.dt == fx::XNNDatatype::xnn_datatype_qbint4 && qv->quant_params_as_PerChannelGroupQuant() &&
      !v.flags) {
    v.constant = qbint4_filter(g, tv, qv->quant_params_as_PerChannelGroupQuant(), v.dims, r, named);
    return v;
  }
  if (v.dt == fx::XNNDatatype::xnn_datatype_qcint8 && qv->quant_params_as_PerChannelQuant() && !v.flags) {
    v.constant = qcint8_filter(g, tv, qv->quant_params_as_PerChannelQuant(), v.dims, r, named);
    return v;
  }
  HFX_THROW("pte",
            "expected a qdint8 (per token), or a constant qbint4 (per channel group) or qcint8 (per "
            "channel) XNNPACK value, got {} with {}",
            fx::EnumNameXNNDatatype(v.dt), fx::EnumNameXNNQuantParams(qv->quant_params_type()));
}

void read_values(XnnGraph& out, const fx::XNNGraph* g, const Regions& r, const NamedData& named) {
  for (const auto* xv : *g->xvalues()) {
    if (const auto* qv = xv->xvalue_union_as_XNNQuantizedTensorValue()) {
      XnnGraph::Val v = quantized_value(g, qv, r, named);
      if (!out.values.emplace(qv->tensor_value()->id_out(), std::move(v)).second)
        HFX_THROW("pte", "expected unique XNNPACK value ids, got {} twice", qv->tensor_value()->id_out());
      continue;
    }
    const fx::XNNTensorValue* tv = xv->xvalue_union_as_XNNTensorValue();
    if (!tv)
      HFX_THROW("pte", "expected XNNPACK tensor values, got {}",
                fx::EnumNameXValueUnion(xv->xvalue_union_type()));
    if (tv->datatype() != fx::XNNDatatype::xnn_datatype_fp32)
      HFX_THROW("pte", "expected fp32 XNNPACK values, got {}", fx::EnumNameXNNDatatype(tv->datatype()));
    XnnGraph::Val v;
    if (tv->dims())
      for (uint32_t d : *tv->dims()) v.dims.push_back(d);
    v.external = tv->external_id();
    v.flags = tv->flags();
    if ((v.flags & (kInput | kOutput)) && v.external >= out.num_externs)
      HFX_THROW("pte", "expected external id < {} on XNNPACK value {}, got {}", out.num_externs, tv->id_out(),
                v.external);
    if (tv->constant_buffer_idx()) v.constant = constant_of(g, tv->constant_buffer_idx(), v.dims, r, named);
    if (!out.values.emplace(tv->id_out(), std::move(v)).second)
      HFX_THROW("pte", "expected unique XNNPACK value ids, got {} twice", tv->id_out());
  }
}

// The elementwise nodes the op table declares (OpLowering::xnnpack, 1x1 or 2x1), mapped back to their ops:
// reading and running them needs no entry here, so an op that declares its node is read as it is written.
const OpSchema* declared_op(fx::XNodeUnion kind) {
  static const std::map<std::string, const OpSchema*> elementwise = [] {
    std::map<std::string, const OpSchema*> m;
    for (const OpSchema* s : all_op_schemas())
      if (!s->lower.xnnpack.empty()) m[s->lower.xnnpack] = s;
    return m;
  }();
  auto it = elementwise.find(fx::EnumNameXNodeUnion(kind));
  return it == elementwise.end() ? nullptr : it->second;
}

XnnGraph::Op read_op(const fx::XNode* n) {
  XnnGraph::Op op;
  op.kind = n->xnode_union_type();
  if (const auto* mm = n->output_min_max()) op.lo = mm->output_min(), op.hi = mm->output_max();
  if (const OpSchema* s = declared_op(op.kind)) {
    if (s->max_inputs == 1) {
      const auto* u = static_cast<const fx::_XNNNode1x1*>(n->xnode_union());
      op.in = {u->input_id()};
      op.out = u->output_id(), op.flags = u->flags();
    } else {
      const auto* b = static_cast<const fx::_XNNNode2x1*>(n->xnode_union());
      op.in = {b->input1_id(), b->input2_id()};
      op.out = b->output_id(), op.flags = b->flags();
    }
    return op;
  }
  using K = fx::XNodeUnion;
  switch (op.kind) {
    case K::XNNFullyConnected: {
      const auto* f = n->xnode_union_as_XNNFullyConnected();
      op.in = {f->input1_id(), f->filter_id(), f->bias_id()};
      op.out = f->output_id(), op.flags = f->flags();
      return op;
    }
    case K::XNNBatchMatrixMultiply: {
      const auto* b = static_cast<const fx::_XNNNode2x1*>(n->xnode_union());
      op.in = {b->input1_id(), b->input2_id()};
      op.out = b->output_id(), op.flags = b->flags();
      return op;
    }
    case K::XNNStaticReshape: {
      const auto* r = n->xnode_union_as_XNNStaticReshape();
      op.in = {r->input_id()};
      op.out = r->output_id(), op.flags = r->flags();
      if (r->new_shape())
        for (uint32_t d : *r->new_shape()) op.dims.push_back(d);
      return op;
    }
    case K::XNNStaticTranspose: {
      const auto* t = n->xnode_union_as_XNNStaticTranspose();
      op.in = {t->input_id()};
      op.out = t->output_id(), op.flags = t->flags();
      if (t->perm())
        for (uint32_t d : *t->perm()) op.dims.push_back(d);
      return op;
    }
    case K::XNNSoftmax:
    case K::XNNGelu:
    case K::XNNConvert:
    case K::XNNClamp: {
      const auto* u = static_cast<const fx::_XNNNode1x1*>(n->xnode_union());
      op.in = {u->input_id()};
      op.out = u->output_id(), op.flags = u->flags();
      return op;
    }
    default:
      HFX_THROW("pte", "expected an XNNPACK node the reader runs, got {}", fx::EnumNameXNodeUnion(op.kind));
  }
}

// The datatypes the reader's kernels take: a Convert turns fp32 into qdint8, a fully-connected reads
// qdint8 with a qbint4 or qcint8 filter, or fp32 with an fp32 one; every other node reads and writes fp32.
void check_types(const XnnGraph& g, const XnnGraph::Op& op) {
  using D = fx::XNNDatatype;
  auto dt = [&](uint32_t id) { return id == kInvalid ? D::xnn_datatype_fp32 : g.values.at(id).dt; };
  bool ok = true;
  if (op.kind == fx::XNodeUnion::XNNConvert)
    ok = dt(op.in[0]) == D::xnn_datatype_fp32 && dt(op.out) == D::xnn_datatype_qdint8;
  else if (op.kind == fx::XNodeUnion::XNNFullyConnected && dt(op.in[0]) == D::xnn_datatype_qdint8)
    ok = (dt(op.in[1]) == D::xnn_datatype_qbint4 || dt(op.in[1]) == D::xnn_datatype_qcint8) &&
         !(op.flags & kTranspose) && dt(op.in[2]) == D::xnn_datatype_fp32 &&
         dt(op.out) == D::xnn_datatype_fp32;
  else
    for (uint32_t id : op.in) ok = ok && dt(id) == D::xnn_datatype_fp32;
  if (!ok || (op.kind != fx::XNodeUnion::XNNConvert && dt(op.out) != D::xnn_datatype_fp32))
    HFX_THROW("pte",
              "expected the operand datatypes a {} node takes (fp32; Convert fp32 → qdint8; "
              "FullyConnected qdint8 × qbint4 or qcint8), got others",
              fx::EnumNameXNodeUnion(op.kind));
}

}  // namespace

XnnGraphPtr load_xnn_graph(const uint8_t* data, size_t size, const NamedData& named) {
  const Regions r = regions(data, size);
  flatbuffers::Verifier v(r.fb, r.fb_size);
  if (!v.VerifyBuffer<fx::XNNGraph>(nullptr))
    HFX_THROW("pte",
              "expected a valid XNNGraph flatbuffer in the delegate payload, got one the verifier refuses");
  const fx::XNNGraph* g = fx::GetXNNGraph(r.fb);
  if (!g->xvalues() || !g->xnodes()) HFX_THROW("pte", "expected xvalues and xnodes in the XNNGraph");
  XnnGraphPtr out(new XnnGraph);
  out->num_externs = g->num_externs();
  read_values(*out, g, r, named);
  for (const auto* n : *g->xnodes()) {
    XnnGraph::Op op = read_op(n);
    for (size_t i = 0; i < op.in.size(); i++) {
      const bool optional = op.kind == fx::XNodeUnion::XNNFullyConnected && i == 2;  // the bias
      if (op.in[i] == kInvalid && optional) continue;
      if (!out->values.count(op.in[i]))
        HFX_THROW("pte", "expected XNNPACK value {} (input {} of a {} node) to be defined", op.in[i], i,
                  fx::EnumNameXNodeUnion(op.kind));
    }
    if (!out->values.count(op.out)) HFX_THROW("pte", "expected XNNPACK value {} to be defined", op.out);
    check_types(*out, op);
    out->ops.push_back(std::move(op));
  }
  return out;
}

namespace {

Tensor clamp_output(Tensor t, float lo, float hi) {
  if (lo == -INFINITY && hi == INFINITY) return t;
  t = t.contiguous().clone();
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); i++) p[i] = std::min(std::max(p[i], lo), hi);
  return t;
}

Tensor fully_connected(const Tensor& x, const Tensor& w, const Tensor& bias, uint32_t flags) {
  if (w.dim() != 2)
    HFX_THROW("pte", "expected a 2-d fully-connected filter, got {}", shape_to_string(w.shape()));
  const Tensor wt = flags & kTranspose ? w : w.transpose(0, 1).contiguous();  // [in, out]
  const int64_t k = wt.shape()[0];
  if (x.dim() < 1 || x.shape().back() != k)
    HFX_THROW("pte", "expected a fully-connected input with {} features, got {}", k,
              shape_to_string(x.shape()));
  Shape lead(x.shape().begin(), x.shape().end() - 1), out = lead;
  out.push_back(wt.shape()[1]);
  Tensor y = run_op("aten.mm", {x.contiguous().reshape({x.numel() / std::max<int64_t>(k, 1), k}), wt});
  if (bias.defined()) y = run_op("aten.add.Tensor", {y, bias});
  return y.reshape(out);
}

// XNNPACK's dynamic int8 quantization of each row (the last dim): the range [min(0, lo), max(0, hi)] onto
// [-128, 127] with a zero point nudged to an integer (xnn_qd8_asymmetric_quantization_params), each value
// rounded half to even after clamping (the vcvt kernels' magic-bias rounding). The reader keeps the result
// de-quantized, (q − zp) · scale, which the fully-connected then multiplies exactly as XNNPACK's integer
// sums do up to float rounding.
Tensor quantize_per_token(const Tensor& x) {
  Tensor y = x.contiguous().clone();
  const int64_t k = y.dim() ? y.shape().back() : 1, rows = k ? y.numel() / k : 0;
  float* p = y.data<float>();
  for (int64_t r = 0; r < rows; r++, p += k) {
    float lo = 0.0f, hi = 0.0f;
    for (int64_t j = 0; j < k; j++) lo = std::min(lo, p[j]), hi = std::max(hi, p[j]);
    const float inv = lo == hi ? 1.0f : 255.0f / (hi - lo);
    const float dmin = lo * inv, dmax = hi * inv;
    float zp = (-128.0f + dmin) + (127.0f + dmax) > 0 ? -128.0f - dmin : 127.0f - dmax;
    zp = std::nearbyint(std::min(std::max(zp, -128.0f), 127.0f));
    const float scale = 1.0f / inv;
    for (int64_t j = 0; j < k; j++) {
      const float q = std::nearbyint(std::min(std::max(p[j] * inv, -128.0f - zp), 127.0f - zp));
      p[j] = q * scale;
    }
  }
  return y;
}

// XNNPACK's static reshape: a 0 in the new shape is the one size inferred from the element count.
Tensor reshape(const Tensor& x, const std::vector<int64_t>& dims) {
  Shape s(dims.begin(), dims.end());
  int64_t known = 1, zeros = 0;
  for (int64_t d : dims)
    if (d == 0)
      zeros++;
    else if (__builtin_mul_overflow(known, d, &known))
      HFX_THROW("pte", "expected reshape sizes whose product fits 64 bits, got {}", shape_to_string(s));
  if (zeros > 1 || (zeros == 0 && known != x.numel()) || (zeros == 1 && (known == 0 || x.numel() % known)))
    HFX_THROW("pte", "expected a reshape of {} to {} (0 = inferred, at most one)", shape_to_string(x.shape()),
              shape_to_string(s));
  for (auto& d : s)
    if (d == 0) d = x.numel() / known;
  return x.contiguous().reshape(s);
}

Tensor run_node(const XnnGraph::Op& op, const std::vector<Tensor>& in) {
  using K = fx::XNodeUnion;
  if (const OpSchema* s = declared_op(op.kind)) {  // the op table's elementwise nodes
    if (s->max_inputs == 1) return run_op(s->name.c_str(), {in[0]});
    return run_op(s->name.c_str(), {in[0], in[1]});
  }
  switch (op.kind) {
    case K::XNNFullyConnected:
      return fully_connected(in[0], in[1], in[2], op.flags);
    case K::XNNBatchMatrixMultiply:
      return run_op("aten.bmm",
                    {in[0], op.flags & kTranspose ? in[1].transpose(-2, -1).contiguous() : in[1]});
    case K::XNNSoftmax:
      return run_op("aten._softmax", {in[0]}, {{"dim", int64_t{-1}}});
    case K::XNNGelu:
      return run_op("aten.gelu", {in[0]}, {{"approximate", std::string("none")}});
    case K::XNNClamp:
      return in[0];
    case K::XNNConvert:
      return quantize_per_token(in[0]);
    case K::XNNStaticReshape:
      return reshape(in[0], op.dims);
    case K::XNNStaticTranspose: {
      std::vector<bool> seen(static_cast<size_t>(in[0].dim()), false);
      bool perm = static_cast<int64_t>(op.dims.size()) == in[0].dim();
      for (int64_t d : op.dims) {
        perm = perm && d >= 0 && d < in[0].dim() && !seen[static_cast<size_t>(d)];
        if (perm) seen[static_cast<size_t>(d)] = true;
      }
      if (!perm)
        HFX_THROW("pte", "expected a permutation of {} dims, got {} entries", in[0].dim(), op.dims.size());
      return in[0].permute(op.dims).contiguous();
    }
    default:
      HFX_THROW("pte", "expected an XNNPACK node the reader runs, got {}", fx::EnumNameXNodeUnion(op.kind));
  }
}

}  // namespace

void run_xnn_graph(const XnnGraph& g, PteMethod::Impl& m, const Args& args) {
  if (args.size() != g.num_externs)
    HFX_THROW("pte", "expected {} arguments (the payload's externals) for the XNNPACK delegate, got {}",
              g.num_externs, args.size());
  std::map<uint32_t, Tensor> vals;
  for (const auto& [id, v] : g.values) {
    if (v.constant.defined()) vals[id] = v.constant;
    if (v.flags & kInput) vals[id] = m.tensor(args[v.external]);
  }
  for (const XnnGraph::Op& op : g.ops) {
    std::vector<Tensor> in;
    for (uint32_t id : op.in) {
      if (id == kInvalid) {
        in.emplace_back();
        continue;
      }
      auto it = vals.find(id);
      if (it == vals.end()) HFX_THROW("pte", "expected XNNPACK value {} computed before its use", id);
      in.push_back(it->second);
    }
    vals[op.out] = clamp_output(run_node(op, in), op.lo, op.hi);
  }
  for (const auto& [id, v] : g.values) {
    if (!(v.flags & kOutput)) continue;
    auto it = vals.find(id);
    if (it == vals.end()) HFX_THROW("pte", "expected XNNPACK output value {} to be computed", id);
    m.write(args[v.external], it->second);
  }
}

}  // namespace hfx::verify::pte_detail
