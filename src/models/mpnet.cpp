// mpnet: MPNetModel / MPNetForMaskedLM / MPNetForSequenceClassification / MPNetForTokenClassification.
// RoBERTa's embeddings without token types (positions from input_ids != 1: MPNetEmbeddings hard-codes
// padding_idx 1, whatever pad_token_id says), post-LN layers named attention.attn.{q,k,v,o},
// attention.LayerNorm, intermediate.dense, output.{dense,LayerNorm}, and one relative position bias
// (encoder.relative_attention_bias) computed once from T5's bidirectional buckets and added to every
// layer's scores. MPNetEncoder.compute_position_bias always buckets with num_buckets=32 and
// max_distance=128, whatever relative_attention_num_buckets says (that only sizes the table). Heads:
// MPNetLMHead (dense → gelu → layer_norm → decoder tied to the word embeddings, + lm_head.bias),
// MPNetClassificationHead (dense → tanh → out_proj on the first token), a token classifier; the pooler
// (dense → tanh) belongs to MPNetModel only. Config names as MPNetConfig reads them.
#include <cmath>

#include "encoder_blocks.h"
#include "relative_bucket.h"

namespace hfx::models {
namespace {

constexpr int64_t kPad = 1;  // MPNetEmbeddings.padding_idx
constexpr int64_t kBuckets = 32, kMaxDistance = 128;

int64_t table_buckets(const ModelConfig& c) {
  return jget<int64_t>(c.raw, "relative_attention_num_buckets", 32);
}

ModelConfig parse(const json& j) {
  ConfigDefaults d;
  d.vocab_size = 30527;
  d.hidden_size = 768;
  d.intermediate_size = 3072;
  d.num_hidden_layers = 12;
  d.num_attention_heads = 12;
  d.max_position_embeddings = 512;
  d.norm_eps = 1e-12;
  d.norm_eps_key = "layer_norm_eps";
  d.tie_word_embeddings = true;
  d.bos = 0;
  d.eos = 2;
  json m = j;
  if (!jhas(m, "pad_token_id")) m["pad_token_id"] = kPad;
  ModelConfig c = parse_common(m, "mpnet", d);
  c.raw = j;
  check_activation(jget<std::string>(j, "hidden_act", "gelu"), "mpnet");
  if (table_buckets(c) < kBuckets)
    HFX_THROW("model",
              "expected relative_attention_num_buckets >= {} for mpnet (MPNetEncoder always buckets relative "
              "positions into {}), got {}",
              kBuckets, kBuckets, table_buckets(c));
  if (c.max_position_embeddings <= kPad + 1)
    HFX_THROW("model", "expected max_position_embeddings > {} for mpnet (positions start at {}), got {}",
              kPad + 1, kPad + 1, c.max_position_embeddings);
  c.max_position_embeddings -= kPad + 1;  // the usable length; the table has 2 more rows
  (void)encoder_head(c);                  // an unsupported architectures[0] fails here, at load and create
  return c;
}

WeightSpecs specs(const ModelConfig& c) {
  const int64_t E = c.hidden_size, I = c.intermediate_size;
  const std::string head = encoder_head(c);
  const std::string p = head == kBase ? "" : "mpnet.";
  WeightSpecs s{{p + "embeddings.word_embeddings.weight", {c.vocab_size, E}},
                {p + "embeddings.position_embeddings.weight", {c.max_position_embeddings + kPad + 1, E}},
                {p + "embeddings.LayerNorm.weight", {E}},
                {p + "embeddings.LayerNorm.bias", {E}}};
  auto lin = [&](const std::string& n, int64_t out, int64_t in) {
    s.push_back({n + ".weight", {out, in}});
    s.push_back({n + ".bias", {out}});
  };
  auto ln = [&](const std::string& n) {
    s.push_back({n + ".weight", {E}});
    s.push_back({n + ".bias", {E}});
  };
  for (int64_t i = 0; i < c.num_hidden_layers; i++) {
    const std::string l = p + "encoder.layer." + std::to_string(i) + ".";
    for (const char* n : {"q", "k", "v", "o"}) lin(l + "attention.attn." + n, E, E);
    ln(l + "attention.LayerNorm");
    lin(l + "intermediate.dense", I, E);
    lin(l + "output.dense", E, I);
    ln(l + "output.LayerNorm");
  }
  s.push_back({p + "encoder.relative_attention_bias.weight", {table_buckets(c), c.num_attention_heads}});
  if (head == kBase) lin("pooler.dense", E, E);
  if (head == kMaskedLM) {
    lin("lm_head.dense", E, E);
    ln("lm_head.layer_norm");
    s.push_back({"lm_head.bias", {c.vocab_size}});
    if (!c.tie_word_embeddings) s.push_back({"lm_head.decoder.weight", {c.vocab_size, E}});
  } else if (head == kSeqCls) {
    lin("classifier.dense", E, E);
    lin("classifier.out_proj", num_labels(c), E);
  } else if (head == kTokCls) {
    lin("classifier", num_labels(c), E);
  }
  return s;
}

Var i64(Builder& b, int64_t v) { return b.constant(Tensor::scalar(static_cast<double>(v), DType::I64)); }

class MPNet : public EncoderModel {
 public:
  MPNet(ModelConfig c, std::shared_ptr<io::WeightStore> w)
      : EncoderModel(std::move(c), std::move(w), false) {}

 protected:
  Var forward(Builder& b, const Inputs& in) const override {
    const auto& c = config();
    const std::string scope = base_scope("mpnet");
    Var h;
    {
      std::optional<Scope> sb;
      if (!scope.empty()) sb.emplace(b, scope);
      h = embeddings(b, in.input_ids);
      Scope se(b, "encoder");
      // [B, 1, 1, S] padding + [1, H, S, S] position bias: every layer's additive term.
      Var mask = F::add(padding_mask(b, in.attention_mask), position_bias(b, in.input_ids.size(1)));
      for (int64_t i = 0; i < c.num_hidden_layers; i++) {
        Scope sl(b, "layer." + std::to_string(i));
        h = layer(b, h, mask);
      }
    }
    if (head() == kBase) return h;
    if (head() == kTokCls) return linear(b, *this, h, "classifier", true);
    if (head() == kSeqCls) {
      Scope s(b, "classifier");
      Var x = F::tanh(linear(b, *this, first_token(h), "dense", true));
      Var y = linear(b, *this, x, "out_proj", true);
      b.name_output(y);
      return y;
    }
    Scope s(b, "lm_head");
    Var x = F::gelu(linear(b, *this, h, "dense", true));
    x = layer_norm(b, *this, x, "layer_norm", c.norm_eps);
    Scope sd(b, "decoder");
    Var y = F::linear(
        x,
        W(b, *this,
          c.tie_word_embeddings ? "mpnet.embeddings.word_embeddings.weight" : "lm_head.decoder.weight"),
        W(b, *this, "lm_head.bias"));
    b.name_output(y);
    return y;
  }

 private:
  Var embeddings(Builder& b, const Var& ids) const {
    Scope se(b, "embeddings");
    auto table = [&](const char* local, const Var& idx) { return embedding_table(b, *this, local, idx); };
    // create_position_ids_from_input_ids: cumsum(ids != 1) * (ids != 1) + 1.
    Var real = F::to(F::logical_not(F::eq(ids, i64(b, kPad))), DType::I64);
    Var pos = F::add(F::mul(F::cumsum(real, 1), real), i64(b, kPad));
    Var h = F::add(table("word_embeddings", ids), table("position_embeddings", pos));
    h = layer_norm(b, *this, h, "LayerNorm", config().norm_eps);
    b.name_output(h);
    return h;
  }

  // MPNetEncoder.compute_position_bias for S queries and keys: [1, H, S, S].
  Var position_bias(Builder& b, const Sym& S) const {
    Scope s(b, "relative_attention_bias");
    Var ctx = F::unsqueeze(F::arange(b, Sym(0), S), 1);
    Var mem = F::unsqueeze(F::arange(b, Sym(0), S), 0);
    Var bucket = relative_bucket(b, F::sub(mem, ctx), /*bidirectional=*/true, kBuckets, kMaxDistance);
    Var v = F::to(F::embedding(w(b, b.scope() + ".weight"), bucket), DType::F32);  // [S, S, H]
    v = F::unsqueeze(F::permute(v, {2, 0, 1}), 0);
    b.name_output(v);
    return v;
  }

  Var layer(Builder& b, const Var& h, const Var& bias) const {
    const auto& c = config();
    Var a;
    {
      Scope sa(b, "attention");
      Var o;
      {
        Scope ss(b, "attn");
        Var ctx = encoder_attention(linear(b, *this, h, "q", true), linear(b, *this, h, "k", true),
                                    linear(b, *this, h, "v", true), bias, c.num_attention_heads);
        o = linear(b, *this, ctx, "o", true);
        b.name_output(o);
      }
      a = layer_norm(b, *this, F::add(o, h), "LayerNorm", c.norm_eps);
      b.name_output(a);
    }
    Var i;
    {
      Scope si(b, "intermediate");
      i = activation(linear(b, *this, a, "dense", true), jget<std::string>(c.raw, "hidden_act", "gelu"));
      b.name_output(i);
    }
    Scope so(b, "output");
    Var o = layer_norm(b, *this, F::add(linear(b, *this, i, "dense", true), a), "LayerNorm", c.norm_eps);
    b.name_output(o);
    return o;
  }
};

json tiny(const std::string& preset) {
  if (preset != "tiny") unknown_preset("mpnet", preset, "tiny");
  json j = tiny_encoder_config("mpnet", 400);
  j["architectures"] = {"MPNetModel"};
  j["max_position_embeddings"] = 130;  // 128 usable positions after the pad offset
  j["hidden_act"] = "gelu";
  j["layer_norm_eps"] = 1e-12;
  j["relative_attention_num_buckets"] = 32;
  j["pad_token_id"] = 1;
  j["bos_token_id"] = 0;
  j["eos_token_id"] = 2;
  return j;
}

}  // namespace

const Architecture& mpnet_architecture() {
  static const Architecture a{
      .model_type = "mpnet",
      .parse_config = parse,
      .weight_specs = specs,
      .create = [](ModelConfig c, std::shared_ptr<io::WeightStore> w) -> std::unique_ptr<Model> {
        return std::make_unique<MPNet>(std::move(c), std::move(w));
      },
      .tiny_config = tiny,
      .tiny_tokenizer = "roberta_bpe",
      .tiny_norm_mean = 1.0,
      .optional_weights = {R"((mpnet\.)?pooler\.dense\.(weight|bias))",
                           R"((mpnet\.)?embeddings\.position_ids)", R"(lm_head\.decoder\.(weight|bias))"},
      .heads = encoder_heads("MPNet"),
  };
  return a;
}

}  // namespace hfx::models
