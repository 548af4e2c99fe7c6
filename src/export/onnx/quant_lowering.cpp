// hfx.linear_q → ONNX (see quant_lowering.h). The standard form needs the codes transposed to [K, N]
// (DequantizeLinear blocks along one axis of the tensor it reads, and MatMul wants [K, N]), so its
// initializers are written here, embedded in the graph, and the stored [N, blocks, blob] codes that
// lowering declared for the node are dropped from it.
#include "export/onnx/quant_lowering.h"

#include <algorithm>
#include <cstring>

#include "hfx/core/error.h"
#include "hfx/quant/quantize.h"

namespace hfx::onnx_export {

namespace {

using Cx = LoweringContext;
// TensorProto.DataType UINT4 (onnx.proto, IR version 10 / opset 21); Debian's onnx headers predate it,
// and data_type is a plain int32 field.
constexpr int kUint4 = 21;

// Codes of `bits` packed two per byte (4-bit, low nibble first) or one per byte, row-major.
std::string pack(const std::vector<uint8_t>& codes, int bits) {
  if (bits == 8) return std::string(codes.begin(), codes.end());
  std::string out((codes.size() + 1) / 2, '\0');
  for (size_t i = 0; i < codes.size(); i++)
    out[i / 2] = static_cast<char>(static_cast<uint8_t>(out[i / 2]) | (codes[i] << (i % 2 ? 4 : 0)));
  return out;
}

void drop_initializer(Cx& cx, const std::string& name) {
  auto* inits = cx.proto().mutable_initializer();
  for (int i = 0; i < inits->size(); i++)
    if (inits->Get(i).name() == name) {
      inits->DeleteSubrange(i, 1);
      return;
    }
}

std::string add_initializer(Cx& cx, const Node& n, const std::string& hint, int elem,
                            std::vector<int64_t> dims, std::string bytes) {
  std::string name = cx.tmp(&n, hint);
  onnx::TensorProto* t = cx.proto().add_initializer();
  t->set_name(name);
  t->set_data_type(elem);
  for (int64_t d : dims) t->add_dims(d);
  t->set_raw_data(std::move(bytes));
  return name;
}

void standard(Cx& cx, const Node& n, const quant::QuantizedWeight& q) {
  if (cx.opset() < 21)
    HFX_THROW("onnx",
              "expected opset ≥ 21 for a quantized weight (blocked DequantizeLinear), got {} at '{}'; "
              "export with --opset 21 (or --target ort for MatMulNBits)",
              cx.opset(), n.name);
  const int64_t N = q.N, K = q.K, B = q.blocks(), g = q.group_size;
  // Codes and zero points back to one code per element, transposed to [K, N] / [B, N].
  std::vector<uint8_t> codes(static_cast<size_t>(K * N)), zps(static_cast<size_t>(B * N));
  const uint8_t* qb = q.qweight.data<uint8_t>();
  const int64_t blob = g * q.bits / 8, zb = (B * q.bits + 7) / 8;
  for (int64_t r = 0; r < N; r++) {
    for (int64_t k = 0; k < K; k++) {
      const uint8_t* p = qb + r * B * blob;
      codes[k * N + r] = q.bits == 8 ? p[k] : ((k % 2 == 0) ? (p[k / 2] & 0x0F) : (p[k / 2] >> 4));
    }
    for (int64_t b = 0; b < B; b++) {
      const uint8_t* z = q.zero_points.defined() ? q.zero_points.data<uint8_t>() + r * zb : nullptr;
      zps[b * N + r] = !z            ? static_cast<uint8_t>(1 << (q.bits - 1))
                       : q.bits == 8 ? z[b]
                                     : ((b % 2 == 0) ? (z[b / 2] & 0x0F) : (z[b / 2] >> 4));
    }
  }
  std::string sc(static_cast<size_t>(B * N * 4), '\0');
  for (int64_t r = 0; r < N; r++)
    for (int64_t b = 0; b < B; b++)
      std::memcpy(sc.data() + (b * N + r) * 4, q.scales.data<float>() + r * B + b, 4);
  const int elem = q.bits == 8 ? onnx::TensorProto::UINT8 : kUint4;
  std::string wq = add_initializer(cx, n, "weight_q", elem, {K, N}, pack(codes, q.bits));
  std::string ws = add_initializer(cx, n, "weight_scale", onnx::TensorProto::FLOAT, {B, N}, std::move(sc));
  std::string wz = add_initializer(cx, n, "weight_zero_point", elem, {B, N}, pack(zps, q.bits));
  std::string wf = cx.tmp(&n, "weight");
  auto& dq = cx.emit("DequantizeLinear", {wq, ws, wz}, {wf}, &n);
  Cx::attr(dq, "axis", int64_t{0});
  Cx::attr(dq, "block_size", g);
  cx.emit("MatMul", {cx.in_as(n, 0, DType::F32), wf}, {cx.out(n)}, &n);
  // The stored codes go unless another node reads them (a tied head's codes are the quantized embedding
  // table's, which hfx.embedding_q gathers).
  const auto users = cx.graph().users();
  for (size_t i = 1; i < n.inputs.size(); i++)
    if (n.inputs[i] && users.at(n.inputs[i]).size() == 1) drop_initializer(cx, cx.name(n.inputs[i]));
}

}  // namespace

void linear_q_translation(Cx& cx, const Node& n) {
  const Value* x = n.inputs.at(0);
  const int64_t K = x->type.shape.back().value();
  for (size_t i = 1; i < n.inputs.size(); i++)
    if (n.inputs[i] && n.inputs[i]->kind != ValueKind::Param)
      HFX_THROW("onnx",
                "expected the codes, scales and zero points of hfx.linear_q '{}' to be weights, got a "
                "computed value '{}'",
                n.name, n.inputs[i]->name);
  quant::QuantizedWeight q = quant::describe(
      n.inputs[1]->data, n.inputs[2]->data, n.inputs.size() > 3 && n.inputs[3] ? n.inputs[3]->data : Tensor(),
      K, n.inputs[1]->name);
  if (cx.target() != "ort") return standard(cx, n, q);
  auto& p = cx.emit("MatMulNBits", {cx.in_as(n, 0, DType::F32), cx.in(n, 1), cx.in(n, 2), cx.in(n, 3)},
                    {cx.out(n)}, &n, "com.microsoft");
  Cx::attr(p, "K", K);
  Cx::attr(p, "N", q.N);
  Cx::attr(p, "bits", static_cast<int64_t>(q.bits));
  Cx::attr(p, "block_size", q.group_size);
  // Accuracy level 0 (the default): f32 activations, the eager kernel's math. Level 4 (--activations int8:
  // int8 activations per block, what ORT's own DequantizeLinear→MatMul fusion picks) is faster, 8-bit above
  // all (ONNX Runtime 1.30's 8-bit kernel with f32 activations is slower than the f32 graph), but is other
  // math: verify holds it to its own measured tolerance row (docs/quantization.md).
  Cx::attr(p, "accuracy_level", int64_t{cx.int8_activations() ? 4 : 0});
}

namespace {

// Gathered packed bytes [.., n, bytes] → one code per element [.., n, 2·bytes] (4-bit: low nibble first,
// Mod 16 and BitShift 4 on uint8, interleaved by Unsqueeze + Concat + Reshape) or as they are (8-bit).
std::string unpack_rows(Cx& cx, const Node& n, const std::string& bytes, int bits, int64_t rank,
                        int64_t count, int64_t per, const std::string& hint) {
  if (bits == 8) return bytes;
  const std::string lo = cx.op(&n, "Mod", {bytes, cx.scalar(16, DType::U8)}, hint + "_lo");
  auto& shift = cx.emit("BitShift", {bytes, cx.scalar(4, DType::U8)}, {cx.tmp(&n, hint + "_hi")}, &n);
  Cx::attr(shift, "direction", std::string("RIGHT"));
  const std::string hi = shift.output(0), axis = cx.i64s({-1});
  const std::string lo1 = cx.op(&n, "Unsqueeze", {lo, axis}), hi1 = cx.op(&n, "Unsqueeze", {hi, axis});
  auto& cat = cx.emit("Concat", {lo1, hi1}, {cx.tmp(&n, hint + "_pairs")}, &n);
  Cx::attr(cat, "axis", int64_t{-1});
  const std::string both = cat.output(0);
  std::vector<int64_t> shape(static_cast<size_t>(rank), 0);  // 0: the gathered index dims as they are
  shape.push_back(count);
  shape.push_back(per);
  return cx.op(&n, "Reshape", {both, cx.i64s(shape)}, hint + "_codes");
}

}  // namespace

namespace {

// --target ort: com.microsoft.GatherBlockQuantized over the stored table as it is. With uint8 data ONNX
// Runtime reads MatMulNBits' conventions (low nibble first, zero point 2^(bits−1) when none is given) and
// needs the quantized axis last: the codes [V, blocks, blob] are read as `blocks` rows of one block each
// (quantize_axis 2, block_size = the group), so a tied head's MatMulNBits and the gather share one
// initializer; the scales get a trailing axis of 1, and the zero points (packed two blocks per byte across
// a row for MatMulNBits) are rewritten one block per byte, the layout this view needs.
void gather_block_quantized(Cx& cx, const Node& n, int bits, int64_t group, int64_t B, int64_t rank) {
  std::vector<std::string> ins = {cx.in(n, 0), cx.in_as(n, 2, DType::I64),
                                  cx.op(&n, "Unsqueeze", {cx.in(n, 1), cx.i64s({-1})}, "scale_blocks")};
  if (n.inputs.size() > 3 && n.inputs[3]) {
    const Tensor& z = n.inputs[3]->data;
    const int64_t V = z.shape().at(0), zb = z.shape().at(1);
    const uint8_t* zp = z.data<uint8_t>();
    std::string one(static_cast<size_t>(V * B), '\0');
    for (int64_t r = 0; r < V; r++)
      for (int64_t b = 0; b < B; b++) {
        const uint8_t byte = zp[r * zb + (bits == 8 ? b : b / 2)];
        one[r * B + b] = static_cast<char>(bits == 8 ? byte : (b % 2 == 0 ? byte & 0x0F : byte >> 4));
      }
    ins.push_back(add_initializer(cx, n, "zero_point_blocks", onnx::TensorProto::UINT8, {V, B, 1}, one));
    // The stored zero points go unless a tied head's MatMulNBits reads them too.
    if (cx.graph().users().at(n.inputs[3]).size() == 1) drop_initializer(cx, cx.name(n.inputs[3]));
  }
  const std::string rows = cx.tmp(&n, "rows");
  auto& g = cx.emit("GatherBlockQuantized", ins, {rows}, &n, "com.microsoft");
  Cx::attr(g, "gather_axis", int64_t{0});
  Cx::attr(g, "quantize_axis", int64_t{2});
  Cx::attr(g, "block_size", group);
  Cx::attr(g, "bits", static_cast<int64_t>(bits));
  std::vector<int64_t> out(static_cast<size_t>(rank), 0);  // [.., blocks, group] → [.., blocks · group]
  out.push_back(B * group);
  cx.emit("Reshape", {rows, cx.i64s(out)}, {cx.out(n)}, &n);
}

}  // namespace

// Standard target: the rows of the table are gathered first (codes, scales and zero points stay packed in the
// graph and in memory), then unpacked and de-quantized with standard ops: (code − zero point) · scale in
// f32, the eager kernel's arithmetic. --target ort: ONNX Runtime's GatherBlockQuantized does the same.
void embedding_q_translation(Cx& cx, const Node& n) {
  for (size_t i : {size_t{0}, size_t{1}, size_t{3}})
    if (i < n.inputs.size() && n.inputs[i] && n.inputs[i]->kind != ValueKind::Param)
      HFX_THROW("onnx",
                "expected the codes, scales and zero points of hfx.embedding_q '{}' to be weights, got '{}'",
                n.name, n.inputs[i]->name);
  const Value* codes = n.inputs.at(0);
  const int64_t B = codes->type.shape.at(1).value(), blob = codes->type.shape.at(2).value();
  const int bits = static_cast<int>(n.attrs.i("bits"));
  const int64_t group = n.attrs.i("group_size"),
                rank = static_cast<int64_t>(n.inputs.at(2)->type.shape.size());
  if (cx.target() == "ort") return gather_block_quantized(cx, n, bits, group, B, rank);
  const std::string ids = cx.in_as(n, 2, DType::I64);
  auto gather = [&](size_t i, const std::string& hint) {
    auto& g = cx.emit("Gather", {cx.in(n, i), ids}, {cx.tmp(&n, hint)}, &n);
    Cx::attr(g, "axis", int64_t{0});
    return g.output(0);
  };
  const std::string q =
      unpack_rows(cx, n, gather(0, "rows_q"), bits, rank, B, bits == 4 ? 2 * blob : blob, "q");
  std::string zp;
  if (n.inputs.size() > 3 && n.inputs[3]) {
    const int64_t zbytes = n.inputs[3]->type.shape.at(1).value();
    std::string z =
        unpack_rows(cx, n, gather(3, "rows_zp"), bits, rank, 1, bits == 4 ? 2 * zbytes : zbytes, "zp");
    // [.., 1, blocks(+1)] → [.., blocks, 1]: the zero point of each block against its codes
    std::vector<int64_t> zs(static_cast<size_t>(rank), 0);
    zs.push_back(-1);
    z = cx.op(&n, "Reshape", {z, cx.i64s(zs)}, "zp_flat");
    if (bits == 4 && 2 * zbytes != B)
      z = cx.op(&n, "Slice", {z, cx.i64s({0}), cx.i64s({B}), cx.i64s({-1})}, "zp_blocks");
    zp = cx.op(&n, "Unsqueeze", {cx.cast(&n, z, DType::U8, DType::F32), cx.i64s({-1})}, "zp");
  } else {
    zp = cx.scalar(1 << (bits - 1), DType::F32);
  }
  const std::string centered = cx.op(&n, "Sub", {cx.cast(&n, q, DType::U8, DType::F32), zp}, "centered");
  const std::string scales = cx.op(&n, "Unsqueeze", {gather(1, "rows_scale"), cx.i64s({-1})}, "scale");
  std::vector<int64_t> out(static_cast<size_t>(rank), 0);
  out.push_back(B * group);
  cx.emit("Reshape", {cx.op(&n, "Mul", {centered, scales}, "rows"), cx.i64s(out)}, {cx.out(n)}, &n);
}

}  // namespace hfx::onnx_export
