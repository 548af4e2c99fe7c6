// StaticCache, the attention-position context, and the static-cache capture. See static_cache.h.
#include "export/executorch/static_cache.h"

#include <limits>

#include <fmt/format.h>

#include "hfx/core/error.h"
#include "hfx/ops/functional.h"

namespace hfx::et {

StaticCache::StaticCache(std::vector<CacheLayerSpec> layout, int64_t max_seq_len, std::vector<Var> keys,
                         std::vector<Var> values, Var input_pos)
    : layout_(std::move(layout)),
      max_seq_len_(max_seq_len),
      keys_(std::move(keys)),
      values_(std::move(values)),
      input_pos_(std::move(input_pos)) {
  if (keys_.size() != layout_.size() || values_.size() != layout_.size())
    HFX_THROW("executorch", "expected {} key and value buffers for the static cache, got {} and {}",
              layout_.size(), keys_.size(), values_.size());
}

std::pair<Var, Var> StaticCache::update(int layer, const Var& k, const Var& v) {
  if (layer < 0 || layer >= static_cast<int>(layout_.size()))
    HFX_THROW("executorch", "expected a cache layer in [0, {}), got {}", layout_.size(), layer);
  keys_[layer] = F::index_copy(keys_[layer], 2, input_pos_, k);
  values_[layer] = F::index_copy(values_[layer], 2, input_pos_, v);
  return {keys_[layer], values_[layer]};
}

std::string StaticCache::buffer_name(int layer, const std::string& kind) {
  return fmt::format("kv_cache.{}.{}", layer, kind == "key" ? "k_cache" : "v_cache");
}

StaticAttentionScope::StaticAttentionScope(ExportContext& export_ctx, Var input_pos, int64_t max_seq_len)
    : export_ctx_(export_ctx), prev_(export_ctx.static_attention) {
  ctx_.input_pos = std::move(input_pos);
  ctx_.max_seq_len = max_seq_len;
  export_ctx_.static_attention = &ctx_;
}
StaticAttentionScope::~StaticAttentionScope() { export_ctx_.static_attention = prev_; }

Var static_position_mask(Builder& b, StaticAttentionContext& ctx, int64_t window) {
  if (auto it = ctx.masks.find(window); it != ctx.masks.end()) return it->second;
  Scope s(b, window > 0 ? fmt::format("static_mask_w{}", window) : "static_mask");
  Var kpos = F::unsqueeze(F::arange(b, Sym(0), Sym(ctx.max_seq_len)), 0);  // [1, T]
  Var qpos = F::unsqueeze(ctx.input_pos, 1);                               // [S, 1]
  Var keep = F::le(kpos, qpos);                                            // key at or before the query
  if (window > 0) keep = F::logical_and(keep, F::gt(kpos, F::add(qpos, -static_cast<double>(window))));
  Var zero = b.constant(Tensor::scalar(0.0));
  Var minv = b.constant(Tensor::scalar(static_cast<double>(std::numeric_limits<float>::lowest())));
  Var mask = F::where(keep, zero, minv);  // f32 [S, T]
  b.name_output(mask);
  ctx.masks[window] = mask;
  return mask;
}

namespace {

// The tokens' sequence dim: a symbol in the Dim's range (hint: the sample length) when dynamic, else 1;
// and the contract of tokens and input_pos.
Sym sequence_symbol(const StaticCaptureOptions& o, ShapeEnv& env, CapturedProgram& prog) {
  Sym S(1);
  if (o.dynamic) {
    Dim d = o.seq;
    if (d.max == 0) d.max = o.max_seq_len;
    if (d.min < 1 || d.min > d.max)
      HFX_THROW("executorch", "expected 1 <= min <= max for Dim '{}', got [{}, {}]", d.name, d.min, d.max);
    int64_t hint = std::clamp<int64_t>(o.sample_seq, d.min, std::min(d.max, o.max_seq_len));
    S = env.create_symbol(d.name, d.min, d.max, hint);
    prog.contract["tokens"] = {AxisContract{"", 1, 1}, AxisContract{d.name, d.min, d.max}};
    prog.contract["input_pos"] = {AxisContract{d.name, d.min, d.max}};
  } else {
    prog.contract["tokens"] = {AxisContract{"", 1, 1}, AxisContract{"", 1, 1}};
    prog.contract["input_pos"] = {AxisContract{"", 1, 1}};
  }
  return S;
}

// Each cache buffer's update as output `<buffer>_out`, recorded as a cache leaf; a layer the forward did
// not update is refused.
void add_cache_outputs(Graph& g, StaticCache& cache, const std::vector<CacheLayerSpec>& layout) {
  for (size_t i = 0; i < layout.size(); i++) {
    for (const char* kind : {"key", "value"}) {
      const Var& v =
          std::string(kind) == "key" ? cache.key(static_cast<int>(i)) : cache.value(static_cast<int>(i));
      std::string in = StaticCache::buffer_name(static_cast<int>(i), kind);
      if (v.value() == g.find_input(in))
        HFX_THROW("executorch", "expected the forward to update cache layer {}, got no {} update", i, kind);
      g.add_output(in + "_out", v.value());
      CacheLeaf leaf;
      leaf.layer = static_cast<int>(i);
      leaf.kind = kind;
      leaf.layer_type = layout[i].layer_type;
      leaf.window = layout[i].window;
      leaf.input_name = in;
      leaf.output_name = in + "_out";
      g.cache_leaves().push_back(leaf);
    }
  }
}

}  // namespace

CapturedProgram capture_static_forward(const CausalLM& model, const StaticCaptureOptions& o,
                                       ExportContext& ctx) {
  if (o.max_seq_len < 1) HFX_THROW("executorch", "expected max_seq_len >= 1, got {}", o.max_seq_len);
  CapturedProgram prog;
  prog.component = "forward";
  prog.graph = std::make_shared<Graph>();
  Graph& g = *prog.graph;
  ShapeEnv& env = g.env();
  TraceBuilder tb(g, &ctx.patches);
  const ModelConfig& cfg = model.config();

  const Sym S = sequence_symbol(o, env, prog);
  std::vector<CacheLayerSpec> layout = model.cache_layout();
  try {
    Var tokens = tb.input("tokens", TensorType{DType::I64, {Sym(1), S}});
    Var pos = tb.input("input_pos", TensorType{DType::I64, {S}});
    std::vector<Var> ks, vs;
    for (size_t i = 0; i < layout.size(); i++) {
      TensorType t{DType::F32,
                   {Sym(1), Sym(layout[i].num_kv_heads), Sym(o.max_seq_len), Sym(layout[i].head_dim)}};
      ks.push_back(tb.input(StaticCache::buffer_name(static_cast<int>(i), "key"), t));
      vs.push_back(tb.input(StaticCache::buffer_name(static_cast<int>(i), "value"), t));
      for (const char* kind : {"key", "value"}) {
        std::string n = StaticCache::buffer_name(static_cast<int>(i), kind);
        prog.contract[n] = {AxisContract{"", 1, 1},
                            AxisContract{"", layout[i].num_kv_heads, layout[i].num_kv_heads},
                            AxisContract{"", o.max_seq_len, o.max_seq_len},
                            AxisContract{"", layout[i].head_dim, layout[i].head_dim}};
      }
    }
    StaticCache cache(layout, o.max_seq_len, ks, vs, pos);
    StaticAttentionScope attention(ctx, pos, o.max_seq_len);
    ForwardArgs args;
    args.input_ids = tokens;
    args.position_ids = F::unsqueeze(pos, 0);  // [1, S]
    args.cache = &cache;
    args.logits_to_keep = o.logits_to_keep;
    ForwardOut out = model.forward(tb, args);
    g.add_output("logits", out.logits.value());
    add_cache_outputs(g, cache, layout);
  } catch (const Error& e) {
    HFX_THROW("executorch", "capturing the static-cache forward of architecture '{}' failed: {}",
              cfg.model_type, e.what());
  }
  for (const Guard& gd : env.guards()) {
    if (gd.lower == gd.upper && gd.expr.kind() == Sym::Kind::Symbol)
      HFX_THROW(
          "executorch",
          "expected dim '{}' to stay dynamic in the forward of '{}', got it specialized to {} at {} ({})",
          gd.expr.name(), cfg.model_type, gd.lower, gd.where, gd.what);
    prog.guards.push_back(gd);
  }
  g.eliminate_dead_code();
  return prog;
}

}  // namespace hfx::et
