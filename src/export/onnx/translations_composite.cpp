// The composite ops' ONNX translations (translations_composite.h): fused where the opset or target has the
// op (and the node fits it; otherwise the reason goes to the export warnings), else decomposed into
// primitive ONNX ops.
#include "export/onnx/translations_composite.h"

#include <cmath>
#include <limits>

#include "export/onnx/gqa_fusion.h"
#include "export/onnx/weight_layout.h"
#include "hfx/core/error.h"

// One namespace (detail) for the entry points and their helpers: the entry points are declared in the header.
namespace hfx::onnx_export::detail {

using Cx = LoweringContext;

// ---------------------------------------------------------------- composite: rms_norm
std::string rms_weight(Cx& cx, const Node& n) {
  std::string w = cx.in_as(n, 1, DType::F32);
  double off = n.attrs.f("weight_offset");
  if (off != 0.0) w = cx.op(&n, "Add", {w, cx.scalar(off, DType::F32)}, "weight_plus_offset");
  return w;
}

void rms_norm_primitive(Cx& cx, const Node& n) {
  const DType f = DType::F32;
  std::string x = cx.in_as(n, 0, f);
  std::string ms = cx.op(&n, "ReduceMean", {cx.op(&n, "Mul", {x, x}, "x2"), cx.i64s({-1})}, "mean_x2");
  Cx::attr(last(cx), "keepdims", int64_t{1});
  std::string inv =
      cx.op(&n, "Reciprocal", {cx.op(&n, "Sqrt", {cx.op(&n, "Add", {ms, cx.scalar(n.attrs.f("eps"), f)})})},
            "inv_rms");
  cx.emit("Mul", {cx.op(&n, "Mul", {x, inv}), rms_weight(cx, n)}, {cx.out(n)}, &n);
}

// target=ort: add + rms_norm → com.microsoft SkipSimplifiedLayerNormalization where the stage-3 pass
// skip_rms_norm_fusion decided so; the add's value is taken over by the fused op's 4th output.
bool try_skip_rms_norm(Cx& cx, const Node& n) {
  const SkipNormRecord* record = cx.options().skip_rms_norm;
  if (!record || !record->fused.count(n.name)) return false;
  const Value* x = n.inputs[0];
  const Value *a = x->producer->inputs[0], *b = x->producer->inputs[1];
  std::string sum = cx.tmp(&n, "input_skip_sum");
  auto& p = cx.emit("SkipSimplifiedLayerNormalization", {cx.name(a), cx.name(b), rms_weight(cx, n)},
                    {cx.out(n), "", "", sum}, &n, "com.microsoft");
  Cx::attr(p, "epsilon", n.attrs.f("eps"));
  cx.rebind(x, sum);  // later users of the residual read the fused sum (an absorbed add emitted nothing)
  return true;
}

void rms_norm(Cx& cx, const Node& n) {
  if (cx.target() == "ort") {
    if (try_skip_rms_norm(cx, n)) return;
    auto& p = cx.emit("SimplifiedLayerNormalization", {cx.in_as(n, 0, DType::F32), rms_weight(cx, n)},
                      {cx.out(n)}, &n);
    Cx::attr(p, "axis", int64_t{-1});
    Cx::attr(p, "epsilon", n.attrs.f("eps"));
    Cx::attr(p, "stash_type", int64_t{1});
    return;
  }
  if (cx.opset() >= 23) {
    auto& p = cx.emit("RMSNormalization", {cx.in_as(n, 0, DType::F32), rms_weight(cx, n)}, {cx.out(n)}, &n);
    Cx::attr(p, "axis", int64_t{-1});
    Cx::attr(p, "epsilon", n.attrs.f("eps"));
    Cx::attr(p, "stash_type", int64_t{1});
    return;
  }
  rms_norm_primitive(cx, n);
}

// ---------------------------------------------------------------- composite: rope
// cos/sin as [B|1, 1, S, R] (they come as [B, S, R], [B, 1, S, R] or [S, R]).
std::string rope_table_4d(Cx& cx, const Node& n, size_t i) {
  std::string c = cx.in_as(n, i, DType::F32);
  int64_t r = rank_of(n.inputs[i]);
  if (r == 3) return cx.op(&n, "Unsqueeze", {c, cx.i64s({1})}, i == 1 ? "cos4" : "sin4");
  if (r == 2) return cx.op(&n, "Unsqueeze", {c, cx.i64s({0, 1})}, i == 1 ? "cos4" : "sin4");
  return c;
}

std::string slice_last(Cx& cx, const Node& n, const std::string& x, int64_t b, int64_t e, int64_t step = 1,
                       const std::string& hint = "") {
  return cx.op(&n, "Slice", {x, cx.i64s({b}), cx.i64s({e}), cx.i64s({-1}), cx.i64s({step})},
               hint.empty() ? "slice" : hint);
}

void rope_primitive(Cx& cx, const Node& n) {
  const Value* xv = n.inputs[0];
  auto Dm = xv->type.shape[3].maybe_value();
  auto Rm = n.inputs[1]->type.shape.back().maybe_value();
  if (!Dm || !Rm)
    HFX_THROW("onnx", "expected static head size and rotary dims for hfx.rope, got {} and {}", xv->type.str(),
              n.inputs[1]->type.str());
  int64_t D = *Dm, R = *Rm, h = R / 2;
  bool inter = n.attrs.b("interleaved");
  std::string x = cx.in_as(n, 0, DType::F32);
  std::string c = rope_table_4d(cx, n, 1), s = rope_table_4d(cx, n, 2);
  std::string xr = R < D ? slice_last(cx, n, x, 0, R, 1, "x_rot") : x;
  std::string rot;
  if (!inter) {
    std::string x1 = slice_last(cx, n, xr, 0, h, 1, "x1"), x2 = slice_last(cx, n, xr, h, R, 1, "x2");
    rot = cx.op(&n, "Concat", {cx.op(&n, "Neg", {x2}), x1}, "rotate_half");
    Cx::attr(last(cx), "axis", int64_t{-1});
  } else {
    std::string ev = cx.op(&n, "Unsqueeze", {slice_last(cx, n, xr, 0, R, 2, "x_even"), cx.i64s({-1})});
    std::string od =
        cx.op(&n, "Unsqueeze", {cx.op(&n, "Neg", {slice_last(cx, n, xr, 1, R, 2, "x_odd")}), cx.i64s({-1})});
    std::string st = cx.op(&n, "Concat", {od, ev}, "pairs");
    Cx::attr(last(cx), "axis", int64_t{-1});
    rot = cx.op(&n, "Reshape", {st, cx.i64s({0, 0, 0, R})}, "rotate_every_two");
  }
  std::string y =
      cx.op(&n, "Add", {cx.op(&n, "Mul", {xr, c}), cx.op(&n, "Mul", {rot, s})}, R < D ? "y_rot" : "");
  if (R < D) {
    auto& p = cx.emit("Concat", {y, slice_last(cx, n, x, R, D, 1, "x_pass")}, {cx.out(n)}, &n);
    Cx::attr(p, "axis", int64_t{-1});
  } else {
    cx.emit("Identity", {y}, {cx.out(n)}, &n);
  }
}

// The half table [.., R/2] that the standard and com.microsoft ops take: for half rotation cos = [f, f]
// (first half), for interleaved cos = [f0, f0, f1, f1, ...] (even entries).
std::string rope_half(Cx& cx, const Node& n, size_t i, int64_t R) {
  std::string c = cx.in_as(n, i, DType::F32);
  if (rank_of(n.inputs[i]) == 4) c = cx.op(&n, "Squeeze", {c, cx.i64s({1})});
  if (rank_of(n.inputs[i]) == 2) c = cx.op(&n, "Unsqueeze", {c, cx.i64s({0})});
  return n.attrs.b("interleaved") ? slice_last(cx, n, c, 0, R, 2, i == 1 ? "cos_half" : "sin_half")
                                  : slice_last(cx, n, c, 0, R / 2, 1, i == 1 ? "cos_half" : "sin_half");
}

void rope(Cx& cx, const Node& n) {
  const Value* xv = n.inputs[0];
  auto Dm = xv->type.shape[3].maybe_value();
  auto Rm = n.inputs[1]->type.shape.back().maybe_value();
  auto Hm = xv->type.shape[1].maybe_value();
  bool fused = Dm && Rm && Hm;
  // The standard op wants cos/sin with the batch of x; a [1, S, R] table (shared over the batch) does not fit
  // it.
  bool table_batch_ok = rank_of(n.inputs[1]) >= 3 && n.inputs[1]->type.shape[0].same(xv->type.shape[0]);
  if (fused && cx.target() == "ort") {
    // com.microsoft RotaryEmbedding indexes a [max_pos, R/2] cache by position_ids. Our cos/sin are
    // already per token [Bc, S, R]: flatten them to [Bc*S, R/2] and index row b*S + s.
    int64_t R = *Rm;
    std::string c = rope_half(cx, n, 1, R), s = rope_half(cx, n, 2, R);
    std::string shp = cx.op(&n, "Shape", {c}, "table_shape");
    std::string bs = cx.op(&n, "ReduceProd",
                           {cx.op(&n, "Slice", {shp, cx.i64s({0}), cx.i64s({2})}), cx.i64s({0})}, "rows");
    Cx::attr(last(cx), "keepdims", int64_t{1});
    std::string flat_shape = cx.op(&n, "Concat", {bs, cx.i64s({R / 2})}, "flat_shape");
    Cx::attr(last(cx), "axis", int64_t{0});
    std::string cf = cx.op(&n, "Reshape", {c, flat_shape}, "cos_cache"),
                sf = cx.op(&n, "Reshape", {s, flat_shape}, "sin_cache");
    std::string rows = cx.op(&n, "Squeeze", {bs, cx.i64s({0})});
    std::string pos = cx.op(&n, "Range", {cx.i64(0), rows, cx.i64(1)}, "row_ids");
    std::string pos2 =
        cx.op(&n, "Reshape", {pos, cx.op(&n, "Slice", {shp, cx.i64s({0}), cx.i64s({2})})}, "row_ids_2d");
    std::string xshape = cx.op(&n, "Shape", {cx.in(n, 0)}, "x_shape");
    std::string bsx = cx.op(&n, "Concat",
                            {cx.op(&n, "Slice", {xshape, cx.i64s({0}), cx.i64s({1})}),
                             cx.op(&n, "Slice", {xshape, cx.i64s({2}), cx.i64s({3})})},
                            "bs");
    Cx::attr(last(cx), "axis", int64_t{0});
    std::string ids = cx.op(&n, "Expand", {pos2, bsx}, "position_ids");
    auto& p = cx.emit("RotaryEmbedding", {cx.in_as(n, 0, DType::F32), ids, cf, sf}, {cx.out(n)}, &n,
                      "com.microsoft");
    Cx::attr(p, "interleaved", static_cast<int64_t>(n.attrs.b("interleaved")));
    Cx::attr(p, "num_heads", *Hm);
    if (R < *Dm) Cx::attr(p, "rotary_embedding_dim", R);
    return;
  }
  if (fused && cx.opset() >= 23 && cx.target() == "standard" && table_batch_ok) {
    int64_t R = *Rm;
    auto& p = cx.emit("RotaryEmbedding",
                      {cx.in_as(n, 0, DType::F32), rope_half(cx, n, 1, R), rope_half(cx, n, 2, R)},
                      {cx.out(n)}, &n);
    Cx::attr(p, "interleaved", static_cast<int64_t>(n.attrs.b("interleaved")));
    if (R < *Dm) Cx::attr(p, "rotary_embedding_dim", R);
    return;
  }
  if (cx.opset() >= 23 && !table_batch_ok)
    cx.warn(
        "hfx.rope: cos/sin shared over the batch ([1, S, R]) — the standard RotaryEmbedding wants [B, S, "
        "R/2]; decomposed");
  rope_primitive(cx, n);
}

// ---------------------------------------------------------------- composite: sdpa
namespace {

// bool [S, T]: key allowed for query (causal: key ≤ query position; window: within `window` of it); the
// query positions are T - S … T - 1.
std::string position_mask(Cx& cx, const Node& n, const std::string& S1, bool causal, int64_t window) {
  std::string allowed;
  std::string kshape = cx.op(&n, "Shape", {cx.in(n, 1)}, "k_shape");
  std::string T1 = cx.op(&n, "Slice", {kshape, cx.i64s({2}), cx.i64s({3})}, "T");
  std::string T0 = cx.op(&n, "Squeeze", {T1, cx.i64s({0})}), S0 = cx.op(&n, "Squeeze", {S1, cx.i64s({0})});
  std::string qpos = cx.op(&n, "Range", {cx.op(&n, "Sub", {T0, S0}), T0, cx.i64(1)}, "q_pos");
  std::string kpos = cx.op(&n, "Range", {cx.i64(0), T0, cx.i64(1)}, "k_pos");
  std::string diff = cx.op(
      &n, "Sub", {cx.op(&n, "Unsqueeze", {qpos, cx.i64s({1})}), cx.op(&n, "Unsqueeze", {kpos, cx.i64s({0})})},
      "q_minus_k");
  if (causal) allowed = cx.op(&n, "GreaterOrEqual", {diff, cx.i64(0)}, "causal");
  if (window > 0) {
    std::string w = cx.op(&n, "Less", {diff, cx.i64(window)}, "in_window");
    allowed = allowed.empty() ? w : cx.op(&n, "And", {allowed, w}, "allowed");
  }
  return allowed;
}

// The caller's mask broadcast to the score layout ([B, H, S, T], or [B, Hkv, G, S, T] when grouped): a
// bool mask is and-ed into `allowed` (and "" returned), a float mask is returned as an f32 additive bias.
std::string sdpa_mask(Cx& cx, const Node& n, const Value* mv, bool grouped, int64_t Hkv, int64_t G,
                      std::string& allowed) {
  std::string mask = cx.name(mv);
  int64_t mr = rank_of(mv);
  if (mr < 4) {
    std::vector<int64_t> lead;
    for (int64_t i = 0; i < 4 - mr; i++) lead.push_back(i);
    mask = cx.op(&n, "Unsqueeze", {mask, cx.i64s(lead)}, "mask4");
  }
  if (grouped) {
    const Sym& mh = mv->type.shape[mr >= 3 ? mr - 3 : 0];
    if (mr < 3 || (mh.is_const() && mh.value() == 1)) {
      mask = cx.op(&n, "Unsqueeze", {mask, cx.i64s({2})}, "mask5");
    } else {
      std::string ms = cx.op(&n, "Shape", {mask}, "mask_shape");
      std::string s5 = cx.op(&n, "Concat",
                             {cx.op(&n, "Slice", {ms, cx.i64s({0}), cx.i64s({1})}), cx.i64s({Hkv, G}),
                              cx.op(&n, "Slice", {ms, cx.i64s({2}), cx.i64s({4})})},
                             "mask5_shape");
      Cx::attr(last(cx), "axis", int64_t{0});
      mask = cx.op(&n, "Reshape", {mask, s5}, "mask5");
      Cx::attr(last(cx), "allowzero", int64_t{1});
    }
  }
  if (mv->type.dtype == DType::Bool) {
    allowed = allowed.empty() ? mask : cx.op(&n, "And", {allowed, mask}, "allowed");
    return "";
  }
  return cx.cast(&n, mask, mv->type.dtype, DType::F32);
}

}  // namespace

// Primitive attention. Grouped-query heads are handled without repeating K/V: q is viewed as
// [B, Hkv, G, S, D] and K/V get a unit group axis, so MatMul broadcasts. Causal and window masks are
// built from positions (query i sits at T - S + i). Rows with no allowed key give 0, as the kernel does.
void sdpa_primitive(Cx& cx, const Node& n) {
  const DType f = DType::F32;
  const Value *qv = n.inputs[0], *kv = n.inputs[1], *vv = n.inputs[2];
  const Value* mv = n.inputs.size() > 3 ? n.inputs[3] : nullptr;
  auto Hq = qv->type.shape[1].maybe_value(), Hkv = kv->type.shape[1].maybe_value();
  auto D = qv->type.shape[3].maybe_value(), Dv = vv->type.shape[3].maybe_value();
  if (!Hq || !Hkv || !D || !Dv)
    HFX_THROW("onnx", "expected static head counts and head sizes for hfx.sdpa, got q {}, k {}",
              qv->type.str(), kv->type.str());
  int64_t G = *Hq / *Hkv;
  double scale = n.attrs.f("scale");
  if (scale == 0.0) scale = 1.0 / std::sqrt(static_cast<double>(std::max<int64_t>(1, *D)));
  bool causal = n.attrs.b("causal");
  int64_t window = n.attrs.i("window");
  double softcap = n.attrs.f("softcap");
  std::string q = cx.in_as(n, 0, f), k = cx.in_as(n, 1, f), v = cx.in_as(n, 2, f);
  std::string qshape = cx.op(&n, "Shape", {q}, "q_shape");
  std::string B1 = cx.op(&n, "Slice", {qshape, cx.i64s({0}), cx.i64s({1})}, "B");
  std::string S1 = cx.op(&n, "Slice", {qshape, cx.i64s({2}), cx.i64s({3})}, "S");
  bool grouped = G > 1;
  if (grouped) {
    std::string s5 = cx.op(&n, "Concat", {B1, cx.i64s({*Hkv, G}), S1, cx.i64s({*D})}, "q5_shape");
    Cx::attr(last(cx), "axis", int64_t{0});
    q = cx.op(&n, "Reshape", {q, s5}, "q_grouped");
    Cx::attr(last(cx), "allowzero", int64_t{1});
    k = cx.op(&n, "Unsqueeze", {k, cx.i64s({2})}, "k_grouped");
    v = cx.op(&n, "Unsqueeze", {v, cx.i64s({2})}, "v_grouped");
  }
  std::vector<int64_t> perm =
      grouped ? std::vector<int64_t>{0, 1, 2, 4, 3} : std::vector<int64_t>{0, 1, 3, 2};
  std::string kt = cx.op(&n, "Transpose", {k}, "k_t");
  Cx::attr(last(cx), "perm", perm);
  std::string sc = cx.op(&n, "Mul", {cx.op(&n, "MatMul", {q, kt}, "qk"), cx.scalar(scale, f)}, "scores");
  if (softcap > 0)
    sc = cx.op(
        &n, "Mul",
        {cx.op(&n, "Tanh", {cx.op(&n, "Mul", {sc, cx.scalar(1.0 / softcap, f)})}), cx.scalar(softcap, f)},
        "softcapped");
  std::string allowed = causal || window > 0 ? position_mask(cx, n, S1, causal, window) : "";
  std::string mask = mv ? sdpa_mask(cx, n, mv, grouped, *Hkv, G, allowed) : "";
  std::string ninf = cx.scalar(-std::numeric_limits<double>::infinity(), f);
  if (!allowed.empty()) sc = cx.op(&n, "Where", {allowed, sc, ninf}, "masked");
  if (!mask.empty()) sc = cx.op(&n, "Add", {sc, mask}, "masked_add");
  std::string p = cx.op(&n, "Softmax", {sc}, "probs");
  Cx::attr(last(cx), "axis", int64_t{-1});
  if (mv || window > 0)
    p = cx.op(&n, "Where", {cx.op(&n, "IsNaN", {p}), cx.scalar(0.0, f), p}, "probs_no_nan");
  if (!grouped) {
    cx.emit("MatMul", {p, v}, {cx.out(n)}, &n);
    return;
  }
  std::string o5 = cx.op(&n, "MatMul", {p, v}, "out_grouped");
  std::string s4 = cx.op(&n, "Concat", {B1, cx.i64s({*Hq}), S1, cx.i64s({*Dv})}, "out_shape");
  Cx::attr(last(cx), "axis", int64_t{0});
  auto& r = cx.emit("Reshape", {o5, s4}, {cx.out(n)}, &n);
  Cx::attr(r, "allowzero", int64_t{1});
}

// Opset 23: the standard Attention op on 4-d q/k/v with an explicit float bias for causal/window/mask
// (is_causal would align the diagonal top-left, the kernel aligns it bottom-right).
void sdpa_attention23(Cx& cx, const Node& n) {
  const DType f = DType::F32;
  const Value* mv = n.inputs.size() > 3 ? n.inputs[3] : nullptr;
  double scale = n.attrs.f("scale");
  auto D = n.inputs[0]->type.shape[3].maybe_value();
  if (scale == 0.0) scale = 1.0 / std::sqrt(static_cast<double>(std::max<int64_t>(1, D.value_or(1))));
  bool causal = n.attrs.b("causal");
  int64_t window = n.attrs.i("window");
  std::string q = cx.in_as(n, 0, f), k = cx.in_as(n, 1, f), v = cx.in_as(n, 2, f);
  std::string bias;
  if (causal || window > 0) {
    std::string S1 = cx.op(&n, "Shape", {q}, "S");
    Cx::attr(last(cx), "start", int64_t{2});
    Cx::attr(last(cx), "end", int64_t{3});
    std::string T1 = cx.op(&n, "Shape", {k}, "T");
    Cx::attr(last(cx), "start", int64_t{2});
    Cx::attr(last(cx), "end", int64_t{3});
    std::string T0 = cx.op(&n, "Squeeze", {T1, cx.i64s({0})}), S0 = cx.op(&n, "Squeeze", {S1, cx.i64s({0})});
    std::string qpos = cx.op(&n, "Range", {cx.op(&n, "Sub", {T0, S0}), T0, cx.i64(1)}, "q_pos");
    std::string kpos = cx.op(&n, "Range", {cx.i64(0), T0, cx.i64(1)}, "k_pos");
    std::string diff =
        cx.op(&n, "Sub",
              {cx.op(&n, "Unsqueeze", {qpos, cx.i64s({1})}), cx.op(&n, "Unsqueeze", {kpos, cx.i64s({0})})},
              "q_minus_k");
    std::string allowed;
    if (causal) allowed = cx.op(&n, "GreaterOrEqual", {diff, cx.i64(0)}, "causal");
    if (window > 0) {
      std::string w = cx.op(&n, "Less", {diff, cx.i64(window)}, "in_window");
      allowed = allowed.empty() ? w : cx.op(&n, "And", {allowed, w}, "allowed");
    }
    bias =
        cx.op(&n, "Where",
              {allowed, cx.scalar(0.0, f), cx.scalar(-std::numeric_limits<double>::infinity(), f)}, "bias");
  }
  if (mv) {
    std::string m = cx.name(mv);
    if (mv->type.dtype == DType::Bool)
      m = cx.op(&n, "Where", {m, cx.scalar(0.0, f), cx.scalar(-std::numeric_limits<double>::infinity(), f)},
                "mask_bias");
    else
      m = cx.cast(&n, m, mv->type.dtype, f);
    if (bias.empty()) {
      // ORT's Attention kernel does not broadcast the bias over queries: a padding mask [B, 1, 1, T]
      // without a causal part is expanded to [B, 1, S, T] (encoders, cross-attention).
      const SymShape& ms = mv->type.shape;
      const Sym& qs = n.inputs[0]->type.shape[2];
      if (ms.size() >= 2 && ms[ms.size() - 2].is_const() && ms[ms.size() - 2].value() == 1 &&
          !(qs.is_const() && qs.value() == 1)) {
        std::string S1 = cx.op(&n, "Shape", {q}, "S");
        Cx::attr(last(cx), "start", int64_t{2});
        Cx::attr(last(cx), "end", int64_t{3});
        std::vector<std::string> parts;
        for (size_t i = 0; i < ms.size(); i++) parts.push_back(i + 2 == ms.size() ? S1 : cx.i64s({1}));
        std::string shape = cx.op(&n, "Concat", parts, "mask_shape");
        Cx::attr(last(cx), "axis", int64_t{0});
        m = cx.op(&n, "Expand", {m, shape}, "mask_over_queries");
      }
    }
    bias = bias.empty() ? m : cx.op(&n, "Add", {bias, m}, "bias_mask");
  }
  std::string o = bias.empty() ? cx.out(n) : cx.tmp(&n, "attention");
  auto& p = cx.emit("Attention", {q, k, v, bias}, {o}, &n);
  Cx::attr(p, "scale", scale);
  Cx::attr(p, "is_causal", int64_t{0});
  if (!bias.empty()) cx.emit("Where", {cx.op(&n, "IsNaN", {o}), cx.scalar(0.0, f), o}, {cx.out(n)}, &n);
}

void sdpa(Cx& cx, const Node& n) {
  double softcap = n.attrs.f("softcap");
  if (cx.target() == "ort") {
    // The stage-3 pass gqa_fusion decided; its plan still holds here (nothing rewrites the graph since).
    auto decision = gqa_decision(cx.options().gqa, n);
    if (!decision)
      HFX_THROW("onnx",
                "expected the stage-3 fix gqa_fusion to have decided hfx.sdpa '{}' (target ort), got "
                "no record",
                n.name);
    if (decision->empty()) {
      std::string why;
      auto plan = plan_gqa(cx.graph(), n, &why);
      if (!plan)
        HFX_THROW("onnx", "expected gqa_fusion's plan for '{}' to hold at stage 4, got: {}", n.name, why);
      emit_gqa(cx, *plan);
      return;
    }
    cx.warn("hfx.sdpa: com.microsoft GroupQueryAttention does not apply (" + *decision +
            "); decomposed into standard ops");
  }
  if (cx.opset() >= 23 && cx.target() == "standard") {
    if (softcap > 0) {
      cx.warn("hfx.sdpa: softcap — the standard Attention op applies softcap after the mask; decomposed");
    } else {
      sdpa_attention23(cx, n);
      return;
    }
  }
  sdpa_primitive(cx, n);
}

}  // namespace hfx::onnx_export::detail
