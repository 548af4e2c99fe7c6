// deberta-v2 (DeBERTa-v2 and -v3): DebertaV2Model / ForMaskedLM / ForSequenceClassification /
// ForTokenClassification. Embeddings: word (embedding_size), learned positions where position_biased_input,
// token types where type_vocab_size > 0, embed_proj (no bias) to hidden_size, LayerNorm, × the mask. Post-LN
// layers whose attention is disentangled (DisentangledSelfAttention): content scores plus, where
// relative_attention, content→position (c2p) and position→content (p2c) scores against the shared
// rel_embeddings (LayerNorm'd when norm_rel_ebd says layer_norm), indexed by log-bucketed relative positions
// (make_log_bucket_position), all scaled by sqrt(head_dim · (1 + |pos_att_type|)); share_att_key reuses
// query_proj / key_proj for the positions, else pos_query_proj / pos_key_proj. Where conv_kernel_size > 0,
// ConvLayer (a same-padded Conv1d over the embeddings, conv_act, LayerNorm with layer 0's output) follows
// layer 0. Heads: the legacy cls.predictions (transform at embedding_size, decoder tied to the word
// embeddings) or lm_predictions.lm_head (legacy false), ContextPooler (dense → pooler_hidden_act on the
// first token) + classifier, a token classifier. Config names as DebertaV2Config reads them (the knobs it
// takes through getattr included).
#include <cmath>
#include <limits>

#include "encoder_blocks.h"
#include "hfx/core/error.h"

namespace hfx::models {
namespace {

// Everything the config says about the architecture, read once.
struct DebertaOptions {
  int64_t embedding = 0, head_dim = 0, type_vocab = 0, span = 0, buckets = -1, max_relative = 0;
  bool position_biased_input = true, relative = false, share_att_key = false, c2p = false, p2c = false;
  bool rel_layer_norm = false, legacy = true;
  int64_t conv_kernel = 0;
  std::string act, conv_act, pooler_act;
};

DebertaOptions options(const ModelConfig& c) {
  const json& j = c.raw;
  DebertaOptions o;
  o.embedding = jget<int64_t>(j, "embedding_size", c.hidden_size);
  o.head_dim = jget<int64_t>(j, "attention_head_size", c.hidden_size / c.num_attention_heads);
  o.type_vocab = jget<int64_t>(j, "type_vocab_size", 0);
  o.position_biased_input = jget<bool>(j, "position_biased_input", true);
  o.relative = jget<bool>(j, "relative_attention", false);
  o.share_att_key = jget<bool>(j, "share_att_key", false);
  o.buckets = jget<int64_t>(j, "position_buckets", -1);
  o.max_relative = jget<int64_t>(j, "max_relative_positions", -1);
  if (o.max_relative < 1) o.max_relative = jget<int64_t>(j, "max_position_embeddings", 512);
  o.span = o.buckets > 0 ? o.buckets : o.max_relative;
  // pos_att_type: a list, or the "p2c|c2p" string the config class splits; other entries are ignored there.
  std::vector<std::string> types;
  if (jhas(j, "pos_att_type") && j["pos_att_type"].is_array()) {
    for (const auto& t : j["pos_att_type"])
      if (t.is_string()) types.push_back(t.get<std::string>());
  } else {
    std::string s = jget<std::string>(j, "pos_att_type", "");
    for (size_t at = 0; at <= s.size();) {
      size_t bar = std::min(s.find('|', at), s.size());
      std::string t = s.substr(at, bar - at);
      t.erase(0, t.find_first_not_of(' '));
      t.erase(t.find_last_not_of(' ') + 1);
      for (char& ch : t) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      types.push_back(t);
      at = bar + 1;
    }
  }
  for (const auto& t : types) {
    o.c2p = o.c2p || t == "c2p";
    o.p2c = o.p2c || t == "p2c";
  }
  o.rel_layer_norm = jget<std::string>(j, "norm_rel_ebd", "none").find("layer_norm") != std::string::npos;
  o.conv_kernel = jget<int64_t>(j, "conv_kernel_size", 0);
  o.legacy = jget<bool>(j, "legacy", true);
  o.act = jget<std::string>(j, "hidden_act", "gelu");
  o.conv_act = jget<std::string>(j, "conv_act", "tanh");
  o.pooler_act = jget<std::string>(j, "pooler_hidden_act", "gelu");
  return o;
}

void check(const ModelConfig& c, const DebertaOptions& o) {
  for (const std::string& a : {o.act, o.pooler_act}) check_activation(a, "deberta-v2");
  if (o.conv_kernel > 0) check_activation(o.conv_act, "deberta-v2");
  if (o.head_dim * c.num_attention_heads != c.hidden_size)
    HFX_THROW("model",
              "expected attention_head_size × num_attention_heads == hidden_size for deberta-v2 (its "
              "attention output dense is hidden × hidden), got {} × {} and {}",
              o.head_dim, c.num_attention_heads, c.hidden_size);
  if (o.conv_kernel > 0 && o.conv_kernel % 2 == 0)
    HFX_THROW("model", "expected an odd conv_kernel_size for deberta-v2 (same padding), got {}",
              o.conv_kernel);
  refuse_knob(c, "conv_groups", 1, "DeBERTa's grouped ConvLayer");
  if (jget<int64_t>(c.raw, "pooler_hidden_size", c.hidden_size) != c.hidden_size)
    HFX_THROW("model", "expected pooler_hidden_size == hidden_size ({}) for deberta-v2, got {}",
              c.hidden_size, c.raw["pooler_hidden_size"].dump());
  if (!o.legacy && o.embedding != c.hidden_size)
    HFX_THROW(
        "model",
        "expected embedding_size == hidden_size for deberta-v2 with legacy false (its LM head multiplies "
        "by the word embeddings), got {} and {}",
        o.embedding, c.hidden_size);
  if (o.relative && o.span < 1)
    HFX_THROW("model", "expected a positive relative span for deberta-v2, got {}", o.span);
}

ModelConfig parse(const json& j) {
  ConfigDefaults d;
  d.vocab_size = 128100;
  d.hidden_size = 1536;
  d.intermediate_size = 6144;
  d.num_hidden_layers = 24;
  d.num_attention_heads = 24;
  d.max_position_embeddings = 512;
  d.norm_eps = 1e-7;
  d.norm_eps_key = "layer_norm_eps";
  d.tie_word_embeddings = true;
  d.bos = std::nullopt;
  d.eos = std::nullopt;
  json m = j;
  if (!jhas(m, "pad_token_id")) m["pad_token_id"] = 0;
  ModelConfig c = parse_common(m, "deberta-v2", d);
  c.raw = j;
  check(c, options(c));
  (void)encoder_head(c);  // an unsupported architectures[0] fails here, at load and create
  return c;
}

WeightSpecs specs(const ModelConfig& c) {
  const DebertaOptions o = options(c);
  const int64_t E = c.hidden_size, I = c.intermediate_size, Em = o.embedding;
  const std::string head = encoder_head(c);
  const std::string p = head == kBase ? "" : "deberta.";
  WeightSpecs s{{p + "embeddings.word_embeddings.weight", {c.vocab_size, Em}}};
  auto lin = [&](const std::string& n, int64_t out, int64_t in) {
    s.push_back({n + ".weight", {out, in}});
    s.push_back({n + ".bias", {out}});
  };
  auto ln = [&](const std::string& n, int64_t width) {
    s.push_back({n + ".weight", {width}});
    s.push_back({n + ".bias", {width}});
  };
  if (o.position_biased_input)
    s.push_back({p + "embeddings.position_embeddings.weight", {c.max_position_embeddings, Em}});
  if (o.type_vocab > 0) s.push_back({p + "embeddings.token_type_embeddings.weight", {o.type_vocab, Em}});
  if (Em != E) s.push_back({p + "embeddings.embed_proj.weight", {E, Em}});
  ln(p + "embeddings.LayerNorm", E);
  for (int64_t i = 0; i < c.num_hidden_layers; i++) {
    const std::string l = p + "encoder.layer." + std::to_string(i) + ".";
    for (const char* n : {"query_proj", "key_proj", "value_proj"}) lin(l + "attention.self." + n, E, E);
    if (o.relative && !o.share_att_key && o.c2p) lin(l + "attention.self.pos_key_proj", E, E);
    if (o.relative && !o.share_att_key && o.p2c) lin(l + "attention.self.pos_query_proj", E, E);
    lin(l + "attention.output.dense", E, E);
    ln(l + "attention.output.LayerNorm", E);
    lin(l + "intermediate.dense", I, E);
    lin(l + "output.dense", E, I);
    ln(l + "output.LayerNorm", E);
  }
  if (o.relative) s.push_back({p + "encoder.rel_embeddings.weight", {2 * o.span, E}});
  if (o.rel_layer_norm) ln(p + "encoder.LayerNorm", E);
  if (o.conv_kernel > 0) {
    s.push_back({p + "encoder.conv.conv.weight", {E, E, o.conv_kernel}});
    s.push_back({p + "encoder.conv.conv.bias", {E}});
    ln(p + "encoder.conv.LayerNorm", E);
  }
  if (head == kMaskedLM && o.legacy) {
    lin("cls.predictions.transform.dense", Em, E);
    ln("cls.predictions.transform.LayerNorm", Em);
    s.push_back({"cls.predictions.bias", {c.vocab_size}});
    if (!c.tie_word_embeddings) s.push_back({"cls.predictions.decoder.weight", {c.vocab_size, Em}});
  } else if (head == kMaskedLM) {
    lin("lm_predictions.lm_head.dense", E, E);
    ln("lm_predictions.lm_head.LayerNorm", E);
    s.push_back({"lm_predictions.lm_head.bias", {c.vocab_size}});
  } else if (head == kSeqCls) {
    lin("pooler.dense", E, E);
    lin("classifier", num_labels(c), E);
  } else if (head == kTokCls) {
    lin("classifier", num_labels(c), E);
  }
  return s;
}

Var i64(Builder& b, int64_t v) { return b.constant(Tensor::scalar(static_cast<double>(v), DType::I64)); }
Var f32(Builder& b, double v) { return b.constant(Tensor::scalar(v, DType::F32)); }

// make_log_bucket_position of every relative position in [-(rows - 1), rows - 1], computed here in f32 as
// torch does, as a constant table the graph indexes (by rel + rows - 1). Not in the graph: a backend's own
// log (XNNPACK's) differs from torch's by an ulp, and at |rel| = max_position - 1 the ratio of the two logs
// is exactly the integer 1 in torch, where an ulp moves the ceil to the next bucket.
Tensor log_bucket_table(int64_t rows, int64_t buckets, int64_t max_position) {
  const int64_t mid = buckets / 2;
  const float denom =
      std::log(static_cast<float>(static_cast<double>(max_position - 1) / static_cast<double>(mid)));
  std::vector<int64_t> t;
  for (int64_t rel = -(rows - 1); rel <= rows - 1; rel++) {
    const int64_t abs_pos = rel < mid && rel > -mid ? mid - 1 : std::abs(rel);
    const float x =
        std::log(static_cast<float>(abs_pos) / static_cast<float>(mid)) / denom * static_cast<float>(mid - 1);
    const float log_pos = std::ceil(x) + static_cast<float>(mid);
    const float sign = rel > 0 ? 1.0f : rel < 0 ? -1.0f : 0.0f;
    t.push_back(abs_pos <= mid ? rel : static_cast<int64_t>(log_pos * sign));
  }
  return Tensor::from_ints({static_cast<int64_t>(t.size())}, t);
}

// torch.gather(x, -1, index) for x [B, H, S, W] and index [S, S] (the same for every batch and head):
// flattened rows picked by index_select, so every backend runs it as a Gather.
Var gather_last(const Var& x, const Var& index, const Sym& S, int64_t width, Builder& b) {
  Var rows = F::mul(F::unsqueeze(F::arange(b, Sym(0), S), 1), i64(b, width));  // [S, 1]
  Var flat_index = F::reshape(F::add(rows, index), {S * S});
  Var flat = F::reshape(x, {x.size(0), x.size(1), S * Sym(width)});
  return F::reshape(F::index_select(flat, 2, flat_index), {x.size(0), x.size(1), S, S});
}

class DebertaV2 : public EncoderModel {
 public:
  DebertaV2(DebertaOptions o, ModelConfig c, std::shared_ptr<io::WeightStore> w)
      : EncoderModel(std::move(c), std::move(w), o.type_vocab > 0), o_(std::move(o)) {}

 protected:
  Var forward(Builder& b, const Inputs& in) const override;

 private:
  Var embeddings(Builder& b, const Inputs& in, const Var& mask3) const;
  Var relative_positions(Builder& b, const Sym& S) const;
  Var layer(Builder& b, const Var& h, const Var& pad, const Var& rel_pos, const Var& rel_emb) const;
  Var disentangled_bias(Builder& b, const Var& q, const Var& k, const Var& rel_pos, const Var& rel_emb,
                        double scale) const;
  Var conv_layer(Builder& b, const Var& emb, const Var& residual, const Var& mask3) const;
  Var mlm_head(Builder& b, const Var& h) const;
  Var split(const Var& x) const;
  DebertaOptions o_;
};

Var DebertaV2::split(const Var& x) const {
  return F::transpose(
      F::reshape(x, {x.size(0), x.size(1), Sym(config().num_attention_heads), Sym(o_.head_dim)}), 1, 2);
}

Var DebertaV2::embeddings(Builder& b, const Inputs& in, const Var& mask3) const {
  Scope se(b, "embeddings");
  auto table = [&](const char* local, const Var& idx) { return embedding_table(b, *this, local, idx); };
  Var h = table("word_embeddings", in.input_ids);
  if (o_.position_biased_input)
    h = F::add(h, table("position_embeddings", F::unsqueeze(F::arange(b, 0, in.input_ids.size(1)), 0)));
  if (o_.type_vocab > 0) {
    if (in.token_type_ids) {
      h = F::add(h, table("token_type_embeddings", in.token_type_ids));
    } else {  // token_type_ids default to zeros: row 0
      Scope s(b, "token_type_embeddings");
      h = F::add(h, F::slice(W(b, *this, b.scope() + ".weight"), 0, 0, 1));
    }
  }
  if (o_.embedding != config().hidden_size) h = linear(b, *this, h, "embed_proj", false);
  h = F::mul(layer_norm(b, *this, h, "LayerNorm", config().norm_eps), mask3);
  b.name_output(h);
  return h;
}

// build_relative_position for S queries and keys: bucket(q - k), [S, S] int64. The bucket table covers
// sequences up to max_position_embeddings, the length export contracts allow.
Var DebertaV2::relative_positions(Builder& b, const Sym& S) const {
  Var rel = F::sub(F::unsqueeze(F::arange(b, Sym(0), S), 1), F::unsqueeze(F::arange(b, Sym(0), S), 0));
  if (o_.buckets <= 0) return rel;
  const int64_t rows = std::max<int64_t>(config().max_position_embeddings, 1);
  Var table = b.constant(log_bucket_table(rows, o_.buckets, o_.max_relative));
  Var flat = F::reshape(F::add(rel, i64(b, rows - 1)), {S * S});
  return F::reshape(F::index_select(table, 0, flat), {S, S});
}

// DisentangledSelfAttention.disentangled_attention_bias: [B, H, S, S], already divided by the scale.
Var DebertaV2::disentangled_bias(Builder& b, const Var& q, const Var& k, const Var& rel_pos,
                                 const Var& rel_emb, double scale) const {
  const Sym S = q.size(2);
  const int64_t W2 = 2 * o_.span;
  auto pos_proj = [&](const char* shared, const char* own) {  // [H, 2·span, D]
    Var p = linear(b, *this, F::unsqueeze(rel_emb, 0), o_.share_att_key ? shared : own, true);
    return F::squeeze(split(p), 0);
  };
  auto clamp = [&](const Var& x) { return F::minimum(F::maximum(x, i64(b, 0)), i64(b, W2 - 1)); };
  Var score;
  if (o_.c2p) {
    Var att = F::matmul(q, F::transpose(pos_proj("key_proj", "pos_key_proj"), 1, 2));  // [B, H, S, 2·span]
    Var c2p = gather_last(att, clamp(F::add(rel_pos, i64(b, o_.span))), S, W2, b);
    score = F::div(c2p, f32(b, scale));
  }
  if (o_.p2c) {
    Var att = F::matmul(k, F::transpose(pos_proj("query_proj", "pos_query_proj"), 1, 2));  // keys' rows
    Var p2c = gather_last(att, clamp(F::sub(i64(b, o_.span), rel_pos)), S, W2, b);
    p2c = F::div(F::transpose(p2c, 2, 3), f32(b, scale));
    score = score ? F::add(score, p2c) : p2c;
  }
  return score;
}

Var DebertaV2::layer(Builder& b, const Var& h, const Var& pad, const Var& rel_pos, const Var& rel_emb) const {
  const auto& c = config();
  Var a;
  {
    Scope sa(b, "attention");
    Var ctx;
    {
      Scope ss(b, "self");
      Var q = split(linear(b, *this, h, "query_proj", true));
      Var k = split(linear(b, *this, h, "key_proj", true));
      Var v = split(linear(b, *this, h, "value_proj", true));
      const int64_t factor = 1 + (o_.c2p ? 1 : 0) + (o_.p2c ? 1 : 0);
      // scaled_size_sqrt: sqrt(float32(head_dim) · factor), in f32 as torch computes it.
      const double scale = static_cast<double>(std::sqrt(static_cast<float>(o_.head_dim * factor)));
      Var mask = pad;
      if (o_.relative && (o_.c2p || o_.p2c))
        mask = F::add(disentangled_bias(b, q, k, rel_pos, rel_emb, scale), pad);
      Var o = F::sdpa(q, k, v, mask, 1.0 / scale, /*causal=*/false);
      ctx = F::reshape(F::transpose(o, 1, 2), {h.size(0), h.size(1), Sym(c.hidden_size)});
      b.name_output(ctx);
    }
    Scope so(b, "output");
    a = layer_norm(b, *this, F::add(linear(b, *this, ctx, "dense", true), h), "LayerNorm", c.norm_eps);
    b.name_output(a);
  }
  Var i;
  {
    Scope si(b, "intermediate");
    i = activation(linear(b, *this, a, "dense", true), o_.act);
    b.name_output(i);
  }
  Scope so(b, "output");
  Var o = layer_norm(b, *this, F::add(linear(b, *this, i, "dense", true), a), "LayerNorm", c.norm_eps);
  b.name_output(o);
  return o;
}

// ConvLayer: Conv1d(kernel K, padding (K-1)/2) over the embeddings as im2col (K shifted views of the
// zero-padded sequence, one matmul), padding rows zeroed, conv_act, LayerNorm(residual + out), × the mask.
Var DebertaV2::conv_layer(Builder& b, const Var& emb, const Var& residual, const Var& mask3) const {
  Scope sc(b, "conv");
  const int64_t K = o_.conv_kernel, pad = (K - 1) / 2;
  const Sym S = emb.size(1), E = emb.size(2);
  Var out;
  {
    Scope s(b, "conv");
    Var zeros = F::full(b, {emb.size(0), Sym(pad), E}, 0.0);
    Var xp = F::cat({zeros, emb, zeros}, 1);
    std::vector<Var> taps;
    for (int64_t t = 0; t < K; t++) taps.push_back(F::slice(xp, 1, Sym(t), Sym(t) + S));
    Var wk = W(b, *this, b.scope() + ".weight");  // [O, C, K]
    wk = F::reshape(F::permute(wk, {0, 2, 1}), {wk.size(0), Sym(K) * wk.size(1)});
    out = F::linear(F::cat(taps, 2), wk, W(b, *this, b.scope() + ".bias"));
    b.name_output(out);
  }
  out = activation(F::mul(out, mask3), o_.conv_act);
  Var y = F::mul(layer_norm(b, *this, F::add(residual, out), "LayerNorm", config().norm_eps), mask3);
  b.name_output(y);
  return y;
}

Var DebertaV2::mlm_head(Builder& b, const Var& h) const {
  const auto& c = config();
  const std::string tied = "deberta.embeddings.word_embeddings.weight";
  if (!o_.legacy) {  // DebertaV2LMPredictionHead: dense → act → LayerNorm → @ word_embeddings^T + bias
    Scope sp(b, "lm_predictions");
    Scope s(b, "lm_head");
    Var x = activation(linear(b, *this, h, "dense", true), o_.act);
    x = layer_norm(b, *this, x, "LayerNorm", c.norm_eps);
    Var y = F::linear(x, W(b, *this, tied), W(b, *this, "lm_predictions.lm_head.bias"));
    b.name_output(y);
    return y;
  }
  Scope sc(b, "cls");
  Scope sp(b, "predictions");
  Var x;
  {
    Scope st(b, "transform");
    x = activation(linear(b, *this, h, "dense", true), o_.act);
    x = layer_norm(b, *this, x, "LayerNorm", c.norm_eps);
    b.name_output(x);
  }
  Scope sd(b, "decoder");
  Var y = F::linear(x, W(b, *this, c.tie_word_embeddings ? tied : "cls.predictions.decoder.weight"),
                    W(b, *this, "cls.predictions.bias"));
  b.name_output(y);
  return y;
}

Var DebertaV2::forward(Builder& b, const Inputs& in) const {
  const auto& c = config();
  const std::string scope = base_scope("deberta");
  Var h;
  {
    std::optional<Scope> sb;
    if (!scope.empty()) sb.emplace(b, scope);
    Var m = F::to(in.attention_mask, DType::F32);
    Var mask3 = F::unsqueeze(m, 2);  // [B, S, 1]
    // get_attention_mask: query and key both real, else finfo(f32).min (masked_fill's value).
    Var both = F::mul(F::unsqueeze(mask3, 1), F::unsqueeze(F::unsqueeze(m, 1), 1));  // [B, 1, S, S]
    Var pad = F::mul(F::sub(f32(b, 1.0), both), f32(b, std::numeric_limits<float>::lowest()));
    Var emb = embeddings(b, in, mask3);
    Scope se(b, "encoder");
    Var rel_pos, rel_emb;
    if (o_.relative) {
      rel_pos = relative_positions(b, in.input_ids.size(1));
      Scope sr(b, "rel_embeddings");
      rel_emb = W(b, *this, b.scope() + ".weight");
    }
    if (o_.relative && o_.rel_layer_norm) rel_emb = layer_norm(b, *this, rel_emb, "LayerNorm", c.norm_eps);
    h = emb;
    for (int64_t i = 0; i < c.num_hidden_layers; i++) {
      {
        Scope sl(b, "layer." + std::to_string(i));
        h = layer(b, h, pad, rel_pos, rel_emb);
      }
      if (i == 0 && o_.conv_kernel > 0) h = conv_layer(b, emb, h, mask3);
    }
  }
  if (head() == kBase) return h;
  if (head() == kTokCls) return linear(b, *this, h, "classifier", true);
  if (head() == kMaskedLM) return mlm_head(b, h);
  Var pooled;
  {
    Scope sp(b, "pooler");
    pooled = activation(linear(b, *this, first_token(h), "dense", true), o_.pooler_act);
    b.name_output(pooled);
  }
  return linear(b, *this, pooled, "classifier", true);
}

json tiny(const std::string& preset) {
  if (preset != "tiny") unknown_preset("deberta-v2", preset, "tiny");
  json j = tiny_encoder_config("deberta-v2", 320);
  j["architectures"] = {"DebertaV2Model"};
  // DeBERTa-v3's shape: relative attention only, log buckets, shared keys, LayerNorm'd rel_embeddings.
  j["relative_attention"] = true;
  j["position_buckets"] = 16;
  j["max_relative_positions"] = -1;
  j["pos_att_type"] = "p2c|c2p";
  j["share_att_key"] = true;
  j["norm_rel_ebd"] = "layer_norm";
  j["position_biased_input"] = false;
  j["type_vocab_size"] = 0;
  j["hidden_act"] = "gelu";
  j["layer_norm_eps"] = 1e-7;
  j["pad_token_id"] = 0;
  return j;
}

}  // namespace

const Architecture& deberta_v2_architecture() {
  static const Architecture a{
      .model_type = "deberta-v2",
      .parse_config = parse,
      .weight_specs = specs,
      .create = [](ModelConfig c, std::shared_ptr<io::WeightStore> w) -> std::unique_ptr<Model> {
        DebertaOptions o = options(c);
        return std::make_unique<DebertaV2>(std::move(o), std::move(c), std::move(w));
      },
      .tiny_config = tiny,
      .tiny_tokenizer = "wordpiece",
      .tiny_norm_mean = 1.0,
      // DebertaV2PreTrainedModel ignores unexpected position_embeddings; tied copies, MLM pre-training
      // extras.
      .optional_weights = {R"((deberta\.)?embeddings\.position_(embeddings\.weight|ids))",
                           R"(cls\.predictions\.decoder\.(weight|bias))", R"(mask_predictions\..*)",
                           R"(lm_predictions\.lm_head\.decoder\..*)"},
      .heads = encoder_heads("DebertaV2"),
  };
  return a;
}

}  // namespace hfx::models
