// target=ort: hfx.sdpa and the KV concats feeding it → one com.microsoft GroupQueryAttention (see
// gqa_fusion.h for the pattern, the semantics kept and why seqlens_k is T - 1 with the padding mask
// as attention_bias).
#include "export/onnx/gqa_fusion.h"

#include <cmath>

#include "export/onnx/lowering.h"
#include "export/onnx/moe_fusion.h"
#include "hfx/core/error.h"

namespace hfx::onnx_export {
namespace {

using Cx = LoweringContext;

onnx::NodeProto& last(Cx& cx) { return *cx.proto().mutable_node(cx.proto().node_size() - 1); }

bool fail(std::string* why, std::string msg) {
  if (why) *why = std::move(msg);
  return false;
}

int64_t norm_dim(int64_t d, size_t rank) { return d < 0 ? d + static_cast<int64_t>(rank) : d; }

// k_all = aten.cat([past graph input, new], 2) read by the sdpa alone (the graph output aside).
bool kv_concat(const Graph& g, const std::map<const Value*, std::vector<Node*>>& users, const Value* all,
               const Node& sdpa, const Node** cat, const Value** past, const Value** fresh) {
  const Node* c = all->producer;
  if (!c || c->op != "aten.cat" || c->inputs.size() != 2 || !c->inputs[0] || !c->inputs[1]) return false;
  if (norm_dim(c->attrs.i("dim"), all->type.shape.size()) != 2) return false;
  if (c->inputs[0]->kind != ValueKind::Input) return false;
  auto it = users.find(all);
  if (it == users.end() || it->second.size() != 1 || it->second[0] != &sdpa) return false;
  *cat = c;
  *past = c->inputs[0];
  *fresh = c->inputs[1];
  return true;
}

bool plan(const Graph& g, const Node& n, GqaPlan& p, std::string* why) {
  if (n.inputs.size() < 3 || !n.inputs[0] || !n.inputs[1] || !n.inputs[2])
    return fail(why, "expected q, k and v");
  const Value *q = n.inputs[0], *k = n.inputs[1], *v = n.inputs[2];
  const Value* m = n.inputs.size() > 3 ? n.inputs[3] : nullptr;
  if (q->type.shape.size() != 4 || k->type.shape.size() != 4 || v->type.shape.size() != 4)
    return fail(why, "q/k/v are not rank 4");
  auto Hq = q->type.shape[1].maybe_value(), Hkv = k->type.shape[1].maybe_value();
  auto D = q->type.shape[3].maybe_value(), Dk = k->type.shape[3].maybe_value(),
       Dv = v->type.shape[3].maybe_value();
  if (!Hq || !Hkv || !D || !Dk || !Dv) return fail(why, "head counts or head sizes are symbolic");
  if (*D != *Dk || *D != *Dv)
    return fail(why, "value head size " + std::to_string(*Dv) + " differs from the key head size " +
                         std::to_string(*D));
  if (*D % 8 != 0)
    return fail(why, "head size " + std::to_string(*D) +
                         " is not a multiple of 8 (ONNX Runtime's CPU kernel needs it)");
  if (*Hkv <= 0 || *Hq % *Hkv != 0) return fail(why, "query heads are not a multiple of key/value heads");
  if (!n.attrs.b("causal")) return fail(why, "non-causal attention (GroupQueryAttention is always causal)");
  int64_t window = n.attrs.i("window");
  if (window < 0) return fail(why, "negative window");
  for (const Value* x : {q, k, v})
    if (export_dtype(x->type.dtype) != DType::F32) return fail(why, "q/k/v are not floating");
  const Sym& S = q->type.shape[2];
  const Sym& B = q->type.shape[0];

  // Keys and values: cat(past input, new) or, without a past, the new ones alone (T == S).
  auto users = g.users();
  if (kv_concat(g, users, k, n, &p.cat_k, &p.past_k, &p.k_new)) {
    if (!kv_concat(g, users, v, n, &p.cat_v, &p.past_v, &p.v_new))
      return fail(why, "keys come from a past concat but values do not");
    if (!p.k_new->type.shape[2].same(S) || !p.v_new->type.shape[2].same(S))
      return fail(why, "the new keys/values do not have the query length");
    for (const Value* x : {p.past_k, p.past_v, p.k_new, p.v_new})
      if (!x->type.shape[0].same(B) || export_dtype(x->type.dtype) != DType::F32)
        return fail(why, "past/new keys have another batch or dtype than the query");
  } else if (k->type.shape[2].same(S) && v->type.shape[2].same(S) &&
             !(k->producer && k->producer->op == "aten.cat")) {
    p.cat_k = p.cat_v = nullptr;
    p.past_k = p.past_v = nullptr;
    p.k_new = k;
    p.v_new = v;
  } else {
    return fail(
        why,
        "keys/values are not aten.cat(past_key_values input, new) along the sequence axis read by this "
        "attention alone (GroupQueryAttention owns the KV concat)");
  }

  // The mask: an additive float mask broadcastable to [B, H, S, T].
  if (m) {
    if (m->type.dtype == DType::Bool || !dtype_is_float(m->type.dtype))
      return fail(why, "non-additive (" + std::string(dtype_name(m->type.dtype)) + ") mask");
    const auto& ms = m->type.shape;
    size_t r = ms.size();
    if (r < 1 || r > 4) return fail(why, "mask of rank " + std::to_string(r));
    auto is1 = [](const Sym& s) { return s.is_const() && s.value() == 1; };
    if (!ms[r - 1].same(k->type.shape[2])) return fail(why, "mask's last axis is not the key length");
    if (r >= 2 && !is1(ms[r - 2]) && !ms[r - 2].same(S))
      return fail(why, "mask's query axis is neither 1 nor the query length");
    // ALiBi's bias has a head axis: attention_bias is [B|1, H|1, S, T].
    if (r >= 3 && !is1(ms[r - 3]) && !(ms[r - 3].is_const() && ms[r - 3].value() == *Hq))
      return fail(why, "mask's head axis is neither 1 nor the query heads");
    if (r == 4 && !is1(ms[0]) && !ms[0].same(B))
      return fail(why, "mask's batch axis is neither 1 nor the batch");
  }

  p.sdpa = &n;
  p.q = q;
  p.mask = m;
  p.num_heads = *Hq;
  p.kv_num_heads = *Hkv;
  p.head_size = *D;
  p.scale = n.attrs.f("scale");
  if (p.scale == 0.0) p.scale = 1.0 / std::sqrt(static_cast<double>(*D));
  p.local_window_size = window > 0 ? window : -1;
  p.softcap = n.attrs.f("softcap");
  return true;
}

// [B, H, S, D] → [B, S, H*D]
std::string to_bsh(Cx& cx, const Node* n, const std::string& x, int64_t H, int64_t D,
                   const std::string& hint) {
  std::string t = cx.op(n, "Transpose", {x}, hint + "_bshd");
  Cx::attr(last(cx), "perm", std::vector<int64_t>{0, 2, 1, 3});
  return cx.op(n, "Reshape", {t, cx.i64s({0, 0, H * D})}, hint + "_bsh");
}

}  // namespace

std::optional<GqaPlan> plan_gqa(const Graph& g, const Node& sdpa, std::string* why) {
  GqaPlan p;
  if (sdpa.op != "hfx.sdpa") {
    fail(why, "not an hfx.sdpa node");
    return std::nullopt;
  }
  if (!plan(g, sdpa, p, why)) return std::nullopt;
  return p;
}

bool fix_gqa_fusion(Graph& g, ExportContext& ctx, std::vector<std::string>&) {
  if (ctx.onnx_target != "ort") return false;
  bool any = false;
  for (const auto& n : g.nodes()) {
    if (n->op != "hfx.sdpa") continue;
    std::string why;
    auto p = plan_gqa(g, *n, &why);
    ctx.gqa.decision[n->name] = p ? "" : why;
    for (const Node* c : {p ? p->cat_k : nullptr, p ? p->cat_v : nullptr})
      if (c) ctx.gqa.cat_owner[c->name] = n->name;
    any = true;
  }
  return any;
}

std::optional<std::string> gqa_decision(const GqaFusionRecord* record, const Node& sdpa) {
  if (!record) return std::nullopt;
  auto it = record->decision.find(sdpa.name);
  if (it == record->decision.end()) return std::nullopt;
  return it->second;
}

bool gqa_owns_cat(const GqaFusionRecord* record, const Node& cat) {
  return record && cat.op == "aten.cat" && record->cat_owner.count(cat.name);
}

// The attention bias from the model's mask: f32, clamped at −1e30, [B|1, H|1, S, T] (the kernel reads the
// bias with the query axis unbroadcast).
std::string gqa_bias(Cx& cx, const GqaPlan& p, const std::string& S1) {
  const Node& n = *p.sdpa;
  const DType f = DType::F32;
  std::string bias = cx.cast(&n, cx.name(p.mask), p.mask->type.dtype, f);
  // A query row whose every key is masked (a left-padding row) must average its causal keys, as
  // hfx.sdpa does with the models' additive mask (score + lowest rounds to lowest: a uniform row).
  // ONNX Runtime's kernel does not give that for a bias of float lowest; clamped at -1e30 it does, and
  // masked keys of other rows still get exp(-1e30 - max) = 0.
  bias = cx.op(&n, "Max", {bias, cx.scalar(-1e30, f)}, "bias_clamped");
  size_t r = p.mask->type.shape.size();
  if (r < 4) {
    std::vector<int64_t> lead;
    for (size_t i = 0; i < 4 - r; i++) lead.push_back(static_cast<int64_t>(i));
    bias = cx.op(&n, "Unsqueeze", {bias, cx.i64s(lead)}, "bias4");
  }
  // [B|1, H|1, 1|S, T] → [B|1, H|1, S, T] (the kernel reads the bias with the query axis unbroadcast).
  const Sym& qa = p.mask->type.shape[r >= 2 ? r - 2 : 0];
  if (r < 2 || !qa.same(p.q->type.shape[2])) {
    std::string es = cx.op(&n, "Concat", {cx.i64s({1, 1}), S1, cx.i64s({1})}, "bias_expand");
    Cx::attr(last(cx), "axis", int64_t{0});
    bias = cx.op(&n, "Expand", {bias, es}, "attention_bias");
  }
  return bias;
}

// ONNX Runtime's kernel takes several new tokens over a non-empty past only at batch 1: the contract says
// so, and hfx's ORT paths refuse such a call by name (hfx/runtime/shape_restriction.h). Every layer's past
// has the same length, so the first fused layer states it for all.
void restrict_chunked_batches(Cx& cx, const GqaPlan& p) {
  const Sym& S = p.q->type.shape[2];
  if (p.past_k && !(S.is_const() && S.value() == 1) && cx.graph().find_input("input_ids") &&
      cx.restrictions().empty())
    cx.restrict(
        {{"when",
          {{{"input", "input_ids"}, {"axis", 1}, {"min", 2}},
           {{"input", p.past_k->name}, {"axis", 2}, {"min", 1}}}},
         {"require", {{"input", "input_ids"}, {"axis", 0}, {"max", 1}}},
         {"why",
          "ONNX Runtime's com.microsoft GroupQueryAttention (--target ort) requires batch_size 1 when "
          "sequence_length > 1 and past context is given; feed such a chunk one row at a time, or export "
          "with --target standard"}});
}

void emit_gqa(Cx& cx, const GqaPlan& p) {
  const Node& n = *p.sdpa;
  const int64_t H = p.num_heads, Hkv = p.kv_num_heads, D = p.head_size;
  std::string q = to_bsh(cx, &n, cx.name(p.q), H, D, "query");
  std::string k = to_bsh(cx, &n, cx.name(p.k_new), Hkv, D, "key");
  std::string v = to_bsh(cx, &n, cx.name(p.v_new), Hkv, D, "value");

  // T = P + S (the key length hfx.sdpa sees); every row is full length: the padding is in the bias.
  auto shape_slice = [&](const std::string& x, int64_t a, const std::string& hint) {
    std::string s = cx.op(&n, "Shape", {x}, hint);
    auto& sp = last(cx);
    Cx::attr(sp, "start", a);
    Cx::attr(sp, "end", a + 1);
    return s;
  };
  std::string S1 = shape_slice(cx.name(p.q), 2, "S");
  std::string B1 = shape_slice(cx.name(p.q), 0, "B");
  std::string T1 = p.past_k ? cx.op(&n, "Add", {shape_slice(cx.name(p.past_k), 2, "P"), S1}, "T") : S1;
  std::string total =
      cx.op(&n, "Cast", {cx.op(&n, "Squeeze", {T1, cx.i64s({0})}, "T_scalar")}, "total_sequence_length");
  Cx::attr(last(cx), "to", static_cast<int64_t>(onnx::TensorProto::INT32));
  std::string t_minus_1 = cx.op(&n, "Sub", {T1, cx.i64s({1})}, "T_minus_1");
  std::string seqlens =
      cx.op(&n, "Cast", {cx.op(&n, "Expand", {t_minus_1, B1}, "seqlens_k_i64")}, "seqlens_k");
  Cx::attr(last(cx), "to", static_cast<int64_t>(onnx::TensorProto::INT32));

  const std::string bias = p.mask ? gqa_bias(cx, p, S1) : "";

  std::string present_k = p.cat_k ? cx.out(*p.cat_k) : cx.tmp(&n, "present_key");
  std::string present_v = p.cat_v ? cx.out(*p.cat_v) : cx.tmp(&n, "present_value");
  std::string o3 = cx.tmp(&n, "gqa_output");
  std::vector<std::string> ins = {
      q, k, v, p.past_k ? cx.name(p.past_k) : "", p.past_v ? cx.name(p.past_v) : "", seqlens, total};
  if (!bias.empty())
    ins.insert(ins.end(), {"", "", "", bias});  // cos_cache, sin_cache, position_ids, attention_bias
  auto& g = cx.emit("GroupQueryAttention", ins, {o3, present_k, present_v}, &n, "com.microsoft");
  restrict_chunked_batches(cx, p);
  Cx::attr(g, "num_heads", H);
  Cx::attr(g, "kv_num_heads", Hkv);
  Cx::attr(g, "scale", p.scale);
  if (p.local_window_size >= 0) Cx::attr(g, "local_window_size", p.local_window_size);
  if (p.softcap > 0) Cx::attr(g, "softcap", p.softcap);

  // [B, S, H*D] → [B, H, S, D] (the model's transpose back to [B, S, H, D] cancels it in ORT).
  std::string o4 = cx.op(&n, "Reshape", {o3, cx.i64s({0, 0, H, D})}, "output_bshd");
  auto& t = cx.emit("Transpose", {o4}, {cx.out(n)}, &n);
  Cx::attr(t, "perm", std::vector<int64_t>{0, 2, 1, 3});
}

}  // namespace hfx::onnx_export
