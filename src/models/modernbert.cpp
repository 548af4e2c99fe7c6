// modernbert: ModernBertModel / ModernBertForMaskedLM / ModernBertForSequenceClassification /
// ModernBertForTokenClassification (transformers >= 4.48), as the eager attention path computes it on a
// padded batch: embeddings tok_embeddings → norm; pre-LN layers (layer 0 has no attn_norm) with a fused
// Wqkv, rotary embeddings on every head dim, global layers (i % global_attn_every_n_layers == 0, rope
// theta global_rope_theta) over the whole sequence and local layers (theta local_rope_theta) over
// |i - j| <= local_attention / 2; GeGLU MLP Wi → (act(input) * gate) → Wo; final_norm. LayerNorms and
// linears have no bias unless norm_bias / attention_bias / mlp_bias say so. Heads: ModernBertPredictionHead
// (dense → classifier_activation → norm) then the MLM decoder (tied to tok_embeddings, bias), or the
// classifier (sequence classification pools by classifier_pooling: cls or masked mean).
#include <cmath>
#include <limits>

#include "encoder_blocks.h"
#include "hfx/core/error.h"

namespace hfx::models {
namespace {

struct Options {
  bool norm_bias = false, attention_bias = false, mlp_bias = false, classifier_bias = false,
       decoder_bias = true;
  int64_t every_n = 3, local_window = 128;
  double global_theta = 160000.0, local_theta = 10000.0;
  std::string act = "gelu", classifier_act = "gelu", pooling = "cls";
};

Options options(const ModelConfig& c) {
  const json& j = c.raw;
  Options o;
  o.norm_bias = jget<bool>(j, "norm_bias", false);
  o.attention_bias = jget<bool>(j, "attention_bias", false);
  o.mlp_bias = jget<bool>(j, "mlp_bias", false);
  o.classifier_bias = jget<bool>(j, "classifier_bias", false);
  o.decoder_bias = jget<bool>(j, "decoder_bias", true);
  o.every_n = jget<int64_t>(j, "global_attn_every_n_layers", 3);
  o.local_window = jget<int64_t>(j, "local_attention", 128);
  o.global_theta = jget<double>(j, "global_rope_theta", 160000.0);
  o.local_theta = jget<double>(j, "local_rope_theta", o.global_theta);  // None → the global theta
  // transformers 5 writes the thetas per layer type instead: rope_parameters.{full,sliding}_attention.
  if (jhas(j, "rope_parameters") && j["rope_parameters"].is_object()) {
    const json& rp = j["rope_parameters"];
    if (jhas(rp, "full_attention"))
      o.global_theta = jget<double>(rp["full_attention"], "rope_theta", o.global_theta);
    if (jhas(rp, "sliding_attention"))
      o.local_theta = jget<double>(rp["sliding_attention"], "rope_theta", o.local_theta);
  }
  o.act = jget<std::string>(j, "hidden_activation", "gelu");
  o.classifier_act = jget<std::string>(j, "classifier_activation", "gelu");
  o.pooling = jget<std::string>(j, "classifier_pooling", "cls");
  return o;
}

bool is_global(const Options& o, int64_t layer) { return layer % o.every_n == 0; }

ModelConfig parse(const json& j) {
  ConfigDefaults d;
  d.vocab_size = 50368;
  d.hidden_size = 768;
  d.intermediate_size = 1152;
  d.num_hidden_layers = 22;
  d.num_attention_heads = 12;
  d.max_position_embeddings = 8192;
  d.norm_eps = 1e-5;
  d.norm_eps_key = "norm_eps";
  d.tie_word_embeddings = true;
  d.bos = 50281;
  d.eos = 50282;
  json m = j;
  m.erase("head_dim");
  if (!jhas(m, "pad_token_id")) m["pad_token_id"] = 50283;
  ModelConfig c = parse_common(m, "modernbert", d);
  c.raw = j;
  Options o = options(c);
  if (o.every_n <= 0)
    HFX_THROW("model", "expected global_attn_every_n_layers > 0 for modernbert, got {}", o.every_n);
  if (o.local_window <= 0)
    HFX_THROW("model", "expected local_attention > 0 for modernbert, got {}", o.local_window);
  if (o.pooling != "cls" && o.pooling != "mean")
    HFX_THROW("model", "expected classifier_pooling 'cls' or 'mean' for modernbert, got '{}'", o.pooling);
  if (jhas(j, "rope_scaling"))
    HFX_THROW("model", "expected no rope_scaling for modernbert, got {}", j["rope_scaling"].dump());
  check_activation(o.act, "modernbert");
  check_activation(o.classifier_act, "modernbert");
  (void)encoder_head(c);
  return c;
}

WeightSpecs specs(const ModelConfig& c) {
  const int64_t E = c.hidden_size, I = c.intermediate_size;
  const Options o = options(c);
  const std::string head = encoder_head(c);
  const std::string p = head == kBase ? "" : "model.";
  WeightSpecs s;
  auto lin = [&](const std::string& n, int64_t out, int64_t in, bool bias) {
    s.push_back({n + ".weight", {out, in}});
    if (bias) s.push_back({n + ".bias", {out}});
  };
  auto ln = [&](const std::string& n) {
    s.push_back({n + ".weight", {E}});
    if (o.norm_bias) s.push_back({n + ".bias", {E}});
  };
  s.push_back({p + "embeddings.tok_embeddings.weight", {c.vocab_size, E}});
  ln(p + "embeddings.norm");
  for (int64_t i = 0; i < c.num_hidden_layers; i++) {
    std::string l = p + "layers." + std::to_string(i) + ".";
    if (i != 0) ln(l + "attn_norm");  // layer 0's attn_norm is nn.Identity
    lin(l + "attn.Wqkv", 3 * E, E, o.attention_bias);
    lin(l + "attn.Wo", E, E, o.attention_bias);
    ln(l + "mlp_norm");
    lin(l + "mlp.Wi", 2 * I, E, o.mlp_bias);
    lin(l + "mlp.Wo", E, I, o.mlp_bias);
  }
  ln(p + "final_norm");
  if (head == kBase) return s;
  lin("head.dense", E, E, o.classifier_bias);
  ln("head.norm");
  if (head == kMaskedLM) {
    if (!c.tie_word_embeddings) s.push_back({"decoder.weight", {c.vocab_size, E}});
    if (o.decoder_bias) s.push_back({"decoder.bias", {c.vocab_size}});
  } else {
    lin("classifier", num_labels(c), E, true);
  }
  return s;
}

class ModernBert : public EncoderModel {
 public:
  ModernBert(ModelConfig c, std::shared_ptr<io::WeightStore> w)
      : EncoderModel(std::move(c), std::move(w), false), o_(options(config())) {}

 protected:
  Var forward(Builder& b, const Inputs& in) const override {
    const auto& c = config();
    Var h;
    {
      std::optional<Scope> sb;
      if (head() != kBase) sb.emplace(b, "model");
      h = embeddings(b, in.input_ids);
      Sym B = in.input_ids.size(0), S = in.input_ids.size(1);
      Var pos = F::expand(F::unsqueeze(F::arange(b, 0, S), 0), {B, S});
      Var global = padding_mask(b, in.attention_mask);  // [B, 1, 1, S]
      Var local = sliding_window_mask(b, global, S);    // [B, 1, S, S]
      for (int64_t i = 0; i < c.num_hidden_layers; i++) {
        Scope sl(b, "layers." + std::to_string(i));
        h = layer(b, h, i, is_global(o_, i) ? global : local, pos);
      }
      h = norm(b, h, "final_norm");
    }
    if (head() == kBase) return h;
    if (head() == kSeqCls) {
      Var pooled = o_.pooling == "cls" ? first_token(h) : masked_mean(h, in.attention_mask);
      return linear(b, *this, prediction_head(b, pooled), "classifier", true);
    }
    Var x = prediction_head(b, h);
    if (head() == kTokCls) return linear(b, *this, x, "classifier", true);
    Scope sd(b, "decoder");
    Var y = F::linear(
        x, W(b, *this, c.tie_word_embeddings ? "model.embeddings.tok_embeddings.weight" : "decoder.weight"),
        o_.decoder_bias ? W(b, *this, "decoder.bias") : Var());
    b.name_output(y);
    return y;
  }

 private:
  RopeConfig rope(double theta) const {
    RopeConfig r;
    r.theta = theta;
    r.head_dim = r.dim = config().head_dim;
    r.max_position_embeddings = config().max_position_embeddings;
    return r;
  }

  Var norm(Builder& b, const Var& x, const std::string& local) const {
    return layer_norm(b, *this, x, local, config().norm_eps, o_.norm_bias);
  }

  // HF's _update_attention_mask: the global mask with finfo.min outside |i - j| <= local_attention // 2.
  Var sliding_window_mask(Builder& b, const Var& global, const Sym& S) const {
    Var rows = F::to(F::arange(b, 0, S), DType::F32);
    Var dist = F::abs(F::sub(F::unsqueeze(rows, 1), F::unsqueeze(rows, 0)));  // [S, S]
    Var inside = F::le(dist, b.constant(Tensor::scalar(static_cast<double>(o_.local_window / 2))));
    Var minv = b.constant(Tensor::scalar(static_cast<double>(std::numeric_limits<float>::lowest())));
    return F::where(F::unsqueeze(F::unsqueeze(inside, 0), 0), global, minv);
  }

  Var embeddings(Builder& b, const Var& ids) const {
    Scope se(b, "embeddings");
    Var h;
    {
      Scope s(b, "tok_embeddings");
      h = F::to(F::embedding(w(b, b.scope() + ".weight"), ids), DType::F32);
      b.name_output(h);
    }
    h = norm(b, h, "norm");
    b.name_output(h);
    return h;
  }

  // ModernBertAttention (eager): rotary_emb with the layer's theta, then q k^T * D^-0.5 + mask.
  Var attention(Builder& b, const Var& x, int64_t layer, const Var& mask, const Var& pos) const {
    const auto& c = config();
    Scope s(b, "attn");
    auto [cos, sin] =
        rope_cos_sin(b, rope(is_global(o_, layer) ? o_.global_theta : o_.local_theta), pos, pos.size(1));
    const int64_t E = c.hidden_size, H = c.num_attention_heads, D = c.head_dim;
    Sym B = x.size(0), S = x.size(1);
    Var qkv = linear(b, *this, x, "Wqkv", o_.attention_bias);  // [B, S, 3, H, D] flattened
    auto heads = [&](int64_t part) {
      return F::transpose(F::reshape(F::slice(qkv, -1, part * E, (part + 1) * E), {B, S, H, D}), 1, 2);
    };
    Var q = F::rope(heads(0), cos, sin), k = F::rope(heads(1), cos, sin), v = heads(2);
    Var o = F::sdpa(q, k, v, mask, 1.0 / std::sqrt(static_cast<double>(D)), /*causal=*/false);
    o = linear(b, *this, F::reshape(F::transpose(o, 1, 2), {B, S, E}), "Wo", o_.attention_bias);
    b.name_output(o);
    return o;
  }

  Var mlp(Builder& b, const Var& x) const {
    const int64_t I = config().intermediate_size;
    Scope s(b, "mlp");
    Var wi = linear(b, *this, x, "Wi", o_.mlp_bias);
    Var y = F::mul(activation(F::slice(wi, -1, 0, I), o_.act), F::slice(wi, -1, I, 2 * I));
    y = linear(b, *this, y, "Wo", o_.mlp_bias);
    b.name_output(y);
    return y;
  }

  Var layer(Builder& b, const Var& h, int64_t i, const Var& mask, const Var& pos) const {
    Var x = i == 0 ? h : norm(b, h, "attn_norm");
    Var out = F::add(h, attention(b, x, i, mask, pos));
    out = F::add(out, mlp(b, norm(b, out, "mlp_norm")));
    b.name_output(out);
    return out;
  }

  Var prediction_head(Builder& b, const Var& x) const {
    Scope s(b, "head");
    Var y = activation(linear(b, *this, x, "dense", o_.classifier_bias), o_.classifier_act);
    y = norm(b, y, "norm");
    b.name_output(y);
    return y;
  }

  Options o_;
};

json tiny(const std::string& preset) {
  if (preset != "tiny") unknown_preset("modernbert", preset, "tiny");
  // 2 layers with global_attn_every_n_layers 2: layer 0 global, layer 1 local over a window of 8
  // (±4 tokens), so inputs longer than 5 tokens exercise the sliding-window mask.
  json j = tiny_encoder_config("modernbert", 640);
  j["architectures"] = {"ModernBertModel"};
  j["intermediate_size"] = 96;
  j["hidden_activation"] = "gelu";
  j["norm_eps"] = 1e-5;
  j["norm_bias"] = false;
  j["attention_bias"] = false;
  j["mlp_bias"] = false;
  j["decoder_bias"] = true;
  j["classifier_bias"] = false;
  j["classifier_activation"] = "gelu";
  j["classifier_pooling"] = "mean";  // exercises the attention mask in the pooling
  j["global_attn_every_n_layers"] = 2;
  j["local_attention"] = 8;
  j["global_rope_theta"] = 160000.0;
  j["local_rope_theta"] = 10000.0;
  j["reference_compile"] = false;
  j["tie_word_embeddings"] = true;
  j["transformers_version"] = "4.51.0";
  return j;
}

}  // namespace

const Architecture& modernbert_architecture() {
  static const Architecture a{
      .model_type = "modernbert",
      .parse_config = parse,
      .weight_specs = specs,
      .create = [](ModelConfig c, std::shared_ptr<io::WeightStore> w) -> std::unique_ptr<Model> {
        return std::make_unique<ModernBert>(std::move(c), std::move(w));
      },
      .tiny_config = tiny,
      .tiny_tokenizer = "modernbert_bpe",
      .tiny_norm_mean = 1.0,
      .optional_weights = {R"(decoder\.weight)"},
      .heads = encoder_heads("ModernBert"),
  };
  return a;
}

}  // namespace hfx::models
