// The ExecuTorch backend's registry entries: patches (stages 2–3), program fixes (stage 4) and node
// fixes (stage 5), each with its reason; appended to the registries by register_executorch_entries(),
// which src/export/registry_table.cpp calls once. executorch_registry_lines() lists the stage-1
// backend-preparation table for `hfx registries`.
#include <cmath>

#include <fmt/format.h>

#include "export/executorch/executorch_exporter.h"
#include "export/executorch/static_cache.h"
#include "export/executorch/xnnpack_delegate.h"
#include "hfx/core/error.h"
#include "hfx/export/registry.h"
#include "hfx/ops/functional.h"
#include "hfx/ops/op_schema.h"
#include "hfx/passes/pass.h"

namespace hfx {
namespace {

const char* kBackend = "executorch";

// ---------------------------------------------------------------- stage 2: torch patches
// ---------------------------------------------------------------- stage 3: ExecuTorch patches
// Inside a static-cache capture the keys are the whole buffer [.., max_seq_len, D]; hfx.sdpa's causal
// mask is aligned bottom-right on the key length, which is wrong there. Replace it by the position mask
// (key j visible to query i iff j <= input_pos[i], and within the window), then call the handler that
// was installed before (the stage-2 decomposition).
PatchEntry static_cache_attention_patch() {
  return PatchEntry{
      kBackend,
      3,
      {"hfx.sdpa"},
      [](const OpHandler* original, ExportContext& export_ctx) -> OpHandler {
        return [original, &export_ctx](Builder& b, const std::vector<Var>& in,
                                       const Attrs& attrs) -> std::vector<Var> {
          const OpSchema& s = op_schema("hfx.sdpa");
          Attrs a = normalize_attrs(s, attrs);
          et::StaticAttentionContext* ctx = export_ctx.static_attention;
          auto klen = in.size() > 1 && in[1].defined() ? in[1].size(2).maybe_value() : std::nullopt;
          if (ctx && klen && *klen == ctx->max_seq_len) {
            if (!a.b("causal"))
              HFX_THROW("executorch",
                        "expected causal attention over the static cache at '{}', got causal=false",
                        b.scope());
            Var mask = et::static_position_mask(b, *ctx, a.i("window"));
            if (in.size() > 3 && in[3].defined()) mask = F::add(in[3], mask);
            std::vector<Var> args{in[0], in[1], in[2], mask};
            a.set("causal", false);
            a.set("window", int64_t{0});
            if (original) return (*original)(b, args, a);
            return b.call("hfx.sdpa", args, a);
          }
          if (original) return (*original)(b, in, a);
          return b.call("hfx.sdpa", in, a);
        };
      },
      "ExecuTorch's LLM runners keep the KV cache in fixed buffers [1, Hkv, max_seq_len, D] updated in place "
      "at "
      "input_pos; hfx.sdpa's bottom-right causal alignment assumes a cache that grows, so inside the "
      "static-cache "
      "capture attention is masked by position instead. Remove when hfx.sdpa takes explicit query "
      "positions."};
}

// ---------------------------------------------------------------- node-rewrite helper
// passes' rewrite_node (the one helper), returning true as a node fix does.
bool rewrite(Graph& g, Node& n,
             const std::function<std::vector<Var>(TraceBuilder&, const std::vector<Var>&)>& fn) {
  rewrite_node(g, &n, fn);
  return true;
}

bool is_constant(const Value* v) { return v && (v->kind == ValueKind::Param || v->kind == ValueKind::Const); }

Sym product(const SymShape& s, size_t from, size_t to) {
  Sym p(1);
  for (size_t i = from; i < to; i++) p = p * s[i];
  return p;
}

// ---------------------------------------------------------------- stage 5: node fixes
// aten.pow.Tensor_Scalar with exponent 2..4 → a chain of aten.mul.Tensor.
bool fix_pow(Graph& g, Node& n) {
  if (n.op != "aten.pow.Tensor_Scalar") return false;
  double e = n.attrs.f("exponent");
  if (e != std::floor(e) || e < 2 || e > 4) return false;
  int k = static_cast<int>(e);
  return rewrite(g, n, [k](TraceBuilder&, const std::vector<Var>& in) {
    Var y = in[0];
    for (int i = 1; i < k; i++) y = F::mul(y, in[0]);
    return std::vector<Var>{y};
  });
}

// aten.silu → x * sigmoid(x) (the portable library has no silu kernel).
bool fix_silu(Graph& g, Node& n) {
  if (n.op != "aten.silu") return false;
  return rewrite(g, n, [](TraceBuilder&, const std::vector<Var>& in) {
    return std::vector<Var>{F::mul(in[0], F::sigmoid(in[0]))};
  });
}

// aten.linear → [view to 2-d] mm(x, wᵀ) [+ bias] [view back]. A constant weight is transposed once at
// export (a new constant); otherwise a permute runs.
bool fix_linear(Graph& g, Node& n) {
  if (n.op != "aten.linear") return false;
  Value* w = n.inputs.at(1);
  Value* wt_const = nullptr;
  if (is_constant(w) && w->data.defined())
    wt_const = g.add_const(w->data.transpose(0, 1).contiguous(), w->name + ".T");
  return rewrite(g, n, [&](TraceBuilder& tb, const std::vector<Var>& in) {
    const SymShape& xs = in[0].shape();
    Var wt = wt_const ? tb.wrap(wt_const) : F::permute(in[1], {1, 0});
    Var x2 = xs.size() == 2 ? in[0] : F::reshape(in[0], {product(xs, 0, xs.size() - 1), xs.back()});
    Var y = F::mm(x2, wt);
    if (in.size() > 2 && in[2].defined()) y = F::add(y, in[2]);
    if (xs.size() != 2) {
      SymShape ys(xs.begin(), xs.end() - 1);
      ys.push_back(in[1].size(0));
      y = F::reshape(y, ys);
    }
    return std::vector<Var>{y};
  });
}

// aten.matmul → mm (2-d) or bmm over flattened, broadcast batch dims.
bool fix_matmul(Graph& g, Node& n) {
  if (n.op != "aten.matmul") return false;
  return rewrite(g, n, [&](TraceBuilder& tb, const std::vector<Var>& in) {
    Var a = in[0], b = in[1];
    bool a1 = a.dim() == 1, b1 = b.dim() == 1;
    if (a1) a = F::unsqueeze(a, 0);
    if (b1) b = F::unsqueeze(b, -1);
    Var y;
    if (a.dim() == 2 && b.dim() == 2) {
      y = F::mm(a, b);
    } else {
      size_t r = static_cast<size_t>(std::max(a.dim(), b.dim()));
      while (static_cast<size_t>(a.dim()) < r) a = F::unsqueeze(a, 0);
      while (static_cast<size_t>(b.dim()) < r) b = F::unsqueeze(b, 0);
      SymShape as = a.shape(), bs = b.shape(), batch;
      for (size_t i = 0; i + 2 < r; i++) {
        bool a_one = as[i].is_const() && as[i].value() == 1, b_one = bs[i].is_const() && bs[i].value() == 1;
        batch.push_back(a_one ? bs[i] : (b_one ? as[i] : as[i]));
      }
      auto expand_to = [&](Var x, const SymShape& xs) {
        SymShape target = batch;
        target.push_back(xs[r - 2]);
        target.push_back(xs[r - 1]);
        bool same = true;
        for (size_t i = 0; i < r; i++) same = same && target[i].same(xs[i]);
        return same ? x : F::expand(x, target);
      };
      a = expand_to(a, as);
      b = expand_to(b, bs);
      Sym nb = product(batch, 0, batch.size());
      Var y3 = F::bmm(F::reshape(a, {nb, as[r - 2], as[r - 1]}), F::reshape(b, {nb, bs[r - 2], bs[r - 1]}));
      SymShape ys = batch;
      ys.push_back(as[r - 2]);
      ys.push_back(bs[r - 1]);
      y = F::reshape(y3, ys);
    }
    if (a1) y = F::squeeze(y, -2);
    if (b1) y = F::squeeze(y, -1);
    (void)tb;
    return std::vector<Var>{y};
  });
}

// aten._to_copy to the dtype it already has → its input.
bool fix_identity_cast(Graph& g, Node& n) {
  if (n.op != "aten._to_copy" || !n.inputs.at(0)) return false;
  Value* x = n.inputs[0];
  if (x->type.dtype != n.outputs[0]->type.dtype) return false;
  bool is_output = false;
  for (Value* o : g.outputs()) is_output = is_output || o == n.outputs[0];
  if (is_output && x->kind != ValueKind::NodeOutput) return false;
  g.replace_all_uses(n.outputs[0], x);
  g.erase_node(&n);
  return true;
}

// ---------------------------------------------------------------- stage 4: program fixes
// A dim without an upper bound cannot be written (the portable runtime refuses DYNAMIC_UNBOUND): cap
// it at max(4 × lower bound, 4 × sample, 1024) and say so, naming the dim.
bool fix_cap_unbounded(Graph& g, ExportContext&, std::vector<std::string>& warnings) {
  bool changed = false;
  ShapeEnv& env = g.env();
  for (const auto& [name, r] : std::map<std::string, SymRange>(env.ranges())) {
    if (r.bounded()) continue;
    int64_t hint = env.hints().count(name) ? env.hints().at(name) : 0;
    int64_t cap = std::max({4 * r.min, 4 * hint, int64_t{1024}});
    env.set_range(name, SymRange{r.min, cap});
    warnings.push_back(fmt::format(
        "[executorch] dim '{}' has no upper bound; capped at {} = max(4 × lower bound {}, 4 × sample {}, "
        "1024) because ExecuTorch needs bounded shapes — give the Dim a max to choose another",
        name, cap, r.min, hint));
    changed = true;
  }
  return changed;
}

// Weights in the dtype the backend-preparation row chose (ExportContext::constant_dtype).
// Every weight (Param) of another float dtype is stored in that dtype and cast back to the dtype the
// model reads it in, inside the program (a row with bfloat16 weights keeps float32 math). Then each cast of a
// constant whose result is the chosen dtype (or not a float) is folded into a constant, so no weight is
// copied at every call (portable: a bfloat16 checkpoint becomes float32 constants).
bool fix_constant_dtype(Graph& g, ExportContext& ctx, std::vector<std::string>&) {
  if (!ctx.constant_dtype) return false;
  const DType want = *ctx.constant_dtype;
  bool changed = false;
  auto users = g.users();
  Node* first = g.nodes().empty() ? nullptr : g.nodes().front().get();
  for (Value* p : std::vector<Value*>(g.params().begin(), g.params().end())) {
    if (!p->data.defined() || !dtype_is_float(p->type.dtype) || p->type.dtype == want || users[p].empty() ||
        !first)
      continue;
    Value* stored = g.add_const(p->data.to(want), p->name + "." + dtype_name(want));
    Node* cast = add_node(g, "aten._to_copy", {stored}, Attrs{{"dtype", p->type.dtype}},
                          p->name + "/to_" + dtype_name(p->type.dtype));
    g.move_before(cast, first);
    g.replace_all_uses(p, cast->outputs[0]);
    changed = true;
  }
  std::vector<Node*> casts;
  for (const auto& n : g.nodes())
    if (n->op == "aten._to_copy" && is_constant(n->inputs.at(0)) && n->inputs[0]->data.defined())
      casts.push_back(n.get());
  for (Node* n : casts) {
    Value* c = n->inputs[0];
    DType target = n->outputs[0]->type.dtype;
    if (target != want && dtype_is_float(target))
      continue;  // the backend keeps this cast (bf16 weight → f32)
    Value* folded = g.add_const(c->data.to(target), c->name + "." + dtype_name(target));
    g.replace_all_uses(n->outputs[0], folded);
    g.erase_node(n);
    changed = true;
  }
  if (changed) g.eliminate_dead_code();
  return changed;
}

}  // namespace

void register_executorch_entries() {
  auto& patches = patch_registry();
  patches.push_back(decomposition_patch(
      kBackend, 2, "hfx.sdpa",
      "The portable kernel library has no fused attention: scaled dot-product attention becomes "
      "matmul/softmax/"
      "where ops (the op table's decomposition). Remove when hfx targets a backend with an SDPA kernel."));
  patches.push_back(decomposition_patch(
      kBackend, 2, "hfx.rms_norm",
      "The portable kernel library has no RMS norm: x * rsqrt(mean(x²) + eps) * w from portable ops "
      "(the op table's decomposition)."));
  patches.push_back(decomposition_patch(
      kBackend, 2, "hfx.rope",
      "The portable kernel library has no rotary-embedding kernel: slice/neg/cat/mul/add from portable ops "
      "(the op table's decomposition)."));
  patches.push_back(decomposition_patch(
      kBackend, 2, "hfx.moe",
      "The portable kernel library has no mixture-of-experts or grouped-matmul kernel: the routed experts "
      "become "
      "the op table's dense form (top-k by repeated argmax into a dense routing matrix, every expert on "
      "every "
      "token, weighted sum). Remove when a backend with a grouped/MoE kernel is targeted."));
  patches.push_back(static_cache_attention_patch());

  auto& pf = program_fix_registry();
  pf.push_back({kBackend, 4, "cap_unbounded_dims", fix_cap_unbounded,
                "ExecuTorch's portable runtime refuses DYNAMIC_UNBOUND tensors (tensor_parser: 'Fully "
                "dynamic tensor shapes not "
                "yet supported'); a dim without an upper bound gets one, with a warning naming it."});
  pf.push_back({kBackend,
                4,
                "constant_dtype",
                fix_constant_dtype,
                "Applies the backend-preparation dtype to the weights: the model casts every weight to "
                "float32 at use, which "
                "would copy each weight on every call; the cast of each weight is folded into a float32 "
                "constant at export.",
                {Fact::constant_dtype}});

  auto& nf = node_fix_registry();
  nf.push_back({kBackend, 5, "linear_to_mm", fix_linear,
                "The portable library has no aten::linear kernel: mm with the weight transposed once at "
                "export (+ add for "
                "the bias), flattening leading dims with view_copy."});
  nf.back().ops = {"aten.linear"};
  nf.push_back({kBackend, 5, "matmul_to_bmm", fix_matmul,
                "The portable library has no aten::matmul kernel: mm for 2-d operands, else expand_copy + "
                "view_copy to "
                "[batch, M, K] and bmm."});
  nf.back().ops = {"aten.matmul"};
  nf.push_back({kBackend, 5, "silu_to_sigmoid_mul", fix_silu,
                "The portable library has no aten::silu kernel: x * sigmoid(x)."});
  nf.back().ops = {"aten.silu"};
  nf.push_back({kBackend, 5, "pow_small_int_to_mul", fix_pow,
                "aten.pow.Tensor_Scalar with an integer exponent 2..4 becomes a chain of aten.mul.Tensor: "
                "exact and cheaper "
                "than the portable pow kernel."});
  nf.push_back({kBackend, 5, "drop_identity_to_copy", fix_identity_cast,
                "_to_copy to the dtype a tensor already has is a full copy in ExecuTorch; it is dropped."});
}

std::vector<RegistryLine> executorch_registry_lines() {
  std::vector<RegistryLine> v;
  for (const auto& b : et::backend_prep_table()) {
    std::string what =
        fmt::format("{} ({}, {} weights, {}): {}", b.name, b.device, dtype_name(b.constant_dtype),
                    b.partitioner.empty() ? "no partitioner" : "partitioner " + b.partitioner, b.reason);
    if (!b.warning.empty()) what += "; warns: " + b.warning;
    v.push_back({"backend_prep", kBackend, 1, b.name, what});
  }
  for (const auto& e : et::xnn::xnnpack_op_table())
    v.push_back({"partitioner", kBackend, 6, e.op,
                 fmt::format("xnnpack → {}{}: {}", e.xnn_node, e.when.empty() ? "" : " (when " + e.when + ")",
                             e.reason)});
  return v;
}

}  // namespace hfx
