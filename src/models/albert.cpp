// albert: AlbertModel / AlbertForMaskedLM / AlbertForSequenceClassification / AlbertForTokenClassification.
// BERT's embeddings (word + token type + learned positions, LayerNorm) at embedding_size, mapped to
// hidden_size by encoder.embedding_hidden_mapping_in; then num_hidden_layers steps, step i running the
// shared group int(i / (num_hidden_layers / num_hidden_groups)) of inner_group_num post-LN AlbertLayers
// (attention.{query,key,value,dense,LayerNorm}, ffn → hidden_act → ffn_output, full_layer_layer_norm).
// Heads as the *For* classes compute them: the pooler (a bare nn.Linear, tanh on the first token) under
// AlbertModel and sequence classification; AlbertMLMHead dense → hidden_act → LayerNorm at embedding_size
// → decoder tied to the word embeddings with predictions.bias. Config names as AlbertConfig reads them.
#include <cmath>

#include "encoder_blocks.h"

namespace hfx::models {
namespace {

int64_t embedding_width(const ModelConfig& c) { return jget<int64_t>(c.raw, "embedding_size", 128); }
int64_t groups(const ModelConfig& c) { return jget<int64_t>(c.raw, "num_hidden_groups", 1); }
int64_t inner(const ModelConfig& c) { return jget<int64_t>(c.raw, "inner_group_num", 1); }
std::string act_of(const ModelConfig& c) { return jget<std::string>(c.raw, "hidden_act", "gelu_new"); }

// AlbertTransformer.forward's group index, in the float arithmetic Python does it in.
int64_t group_of(const ModelConfig& c, int64_t i) {
  const double per = static_cast<double>(c.num_hidden_layers) / static_cast<double>(groups(c));
  return static_cast<int64_t>(static_cast<double>(i) / per);
}

ModelConfig parse(const json& j) {
  ConfigDefaults d;
  d.vocab_size = 30000;
  d.hidden_size = 4096;
  d.intermediate_size = 16384;
  d.num_hidden_layers = 12;
  d.num_attention_heads = 64;
  d.max_position_embeddings = 512;
  d.norm_eps = 1e-12;
  d.norm_eps_key = "layer_norm_eps";
  d.tie_word_embeddings = true;
  d.bos = std::nullopt;
  d.eos = std::nullopt;
  json m = j;
  if (!jhas(m, "pad_token_id")) m["pad_token_id"] = 0;
  ModelConfig c = parse_common(m, "albert", d);
  c.raw = j;
  check_activation(act_of(c), "albert");
  for (const char* key : {"embedding_size", "num_hidden_groups", "inner_group_num"})
    if (jhas(j, key) && jget<int64_t>(j, key, 1) <= 0)
      HFX_THROW("model", "expected {} > 0 for albert, got {}", key, j[key].dump());
  if (jget<int64_t>(j, "type_vocab_size", 2) <= 0)
    HFX_THROW("model", "expected type_vocab_size > 0 for albert, got {}", j["type_vocab_size"].dump());
  (void)encoder_head(c);  // an unsupported architectures[0] fails here, at load and create
  return c;
}

WeightSpecs specs(const ModelConfig& c) {
  const int64_t E = c.hidden_size, I = c.intermediate_size, Em = embedding_width(c);
  const std::string head = encoder_head(c);
  const std::string p = head == kBase ? "" : "albert.";
  WeightSpecs s{
      {p + "embeddings.word_embeddings.weight", {c.vocab_size, Em}},
      {p + "embeddings.position_embeddings.weight", {c.max_position_embeddings, Em}},
      {p + "embeddings.token_type_embeddings.weight", {jget<int64_t>(c.raw, "type_vocab_size", 2), Em}},
      {p + "embeddings.LayerNorm.weight", {Em}},
      {p + "embeddings.LayerNorm.bias", {Em}}};
  auto lin = [&](const std::string& n, int64_t out, int64_t in) {
    s.push_back({n + ".weight", {out, in}});
    s.push_back({n + ".bias", {out}});
  };
  auto ln = [&](const std::string& n, int64_t width) {
    s.push_back({n + ".weight", {width}});
    s.push_back({n + ".bias", {width}});
  };
  lin(p + "encoder.embedding_hidden_mapping_in", E, Em);
  for (int64_t g = 0; g < groups(c); g++)
    for (int64_t j = 0; j < inner(c); j++) {
      const std::string l = p + "encoder.albert_layer_groups." + std::to_string(g) + ".albert_layers." +
                            std::to_string(j) + ".";
      for (const char* n : {"query", "key", "value", "dense"}) lin(l + "attention." + n, E, E);
      ln(l + "attention.LayerNorm", E);
      lin(l + "ffn", I, E);
      lin(l + "ffn_output", E, I);
      ln(l + "full_layer_layer_norm", E);
    }
  if (head == kBase || head == kSeqCls) lin(p + "pooler", E, E);
  if (head == kMaskedLM) {
    lin("predictions.dense", Em, E);
    ln("predictions.LayerNorm", Em);
    s.push_back({"predictions.bias", {c.vocab_size}});
    if (!c.tie_word_embeddings) s.push_back({"predictions.decoder.weight", {c.vocab_size, Em}});
  } else if (head == kSeqCls || head == kTokCls) {
    lin("classifier", num_labels(c), E);
  }
  return s;
}

class Albert : public EncoderModel {
 public:
  Albert(ModelConfig c, std::shared_ptr<io::WeightStore> w)
      : EncoderModel(std::move(c), std::move(w), true) {}

 protected:
  Var forward(Builder& b, const Inputs& in) const override {
    const auto& c = config();
    const std::string scope = base_scope("albert");
    Var h;
    {
      std::optional<Scope> sb;
      if (!scope.empty()) sb.emplace(b, scope);
      h = embeddings(b, in);
      Var mask = padding_mask(b, in.attention_mask);
      Scope se(b, "encoder");
      h = linear(b, *this, h, "embedding_hidden_mapping_in", true);
      for (int64_t i = 0; i < c.num_hidden_layers; i++) {
        Scope sg(b, "albert_layer_groups." + std::to_string(group_of(c, i)));
        for (int64_t j = 0; j < inner(c); j++) {
          Scope sl(b, "albert_layers." + std::to_string(j));
          h = layer(b, h, mask);
        }
      }
    }
    if (head() == kBase) return h;
    if (head() == kTokCls) return linear(b, *this, h, "classifier", true);
    if (head() == kSeqCls) {
      Var pooled;
      {
        Scope sb(b, "albert");
        pooled = F::tanh(linear(b, *this, first_token(h), "pooler", true));
      }
      return linear(b, *this, pooled, "classifier", true);
    }
    Scope sp(b, "predictions");
    Var x = activation(linear(b, *this, h, "dense", true), act_of(c));
    x = layer_norm(b, *this, x, "LayerNorm", c.norm_eps);
    Scope sd(b, "decoder");
    Var y = F::linear(
        x,
        W(b, *this,
          c.tie_word_embeddings ? "albert.embeddings.word_embeddings.weight" : "predictions.decoder.weight"),
        W(b, *this, "predictions.bias"));
    b.name_output(y);
    return y;
  }

 private:
  Var embeddings(Builder& b, const Inputs& in) const {
    Scope se(b, "embeddings");
    auto table = [&](const char* local, const Var& idx) { return embedding_table(b, *this, local, idx); };
    Var h = table("word_embeddings", in.input_ids);
    if (in.token_type_ids) {
      h = F::add(h, table("token_type_embeddings", in.token_type_ids));
    } else {  // the token_type_ids buffer (zeros): row 0 of the table
      Scope s(b, "token_type_embeddings");
      h = F::add(h, F::slice(W(b, *this, b.scope() + ".weight"), 0, 0, 1));
    }
    h = F::add(h, table("position_embeddings", F::unsqueeze(F::arange(b, 0, in.input_ids.size(1)), 0)));
    h = layer_norm(b, *this, h, "LayerNorm", config().norm_eps);
    b.name_output(h);
    return h;
  }

  // AlbertLayer: LayerNorm(h + dense(attention)) inside AlbertAttention, then
  // full_layer_layer_norm(ffn_output(act(ffn(a))) + a).
  Var layer(Builder& b, const Var& h, const Var& mask) const {
    const auto& c = config();
    Var a;
    {
      Scope sa(b, "attention");
      Var ctx = encoder_attention(linear(b, *this, h, "query", true), linear(b, *this, h, "key", true),
                                  linear(b, *this, h, "value", true), mask, c.num_attention_heads);
      a = layer_norm(b, *this, F::add(h, linear(b, *this, ctx, "dense", true)), "LayerNorm", c.norm_eps);
      b.name_output(a);
    }
    Var f = linear(b, *this, activation(linear(b, *this, a, "ffn", true), act_of(c)), "ffn_output", true);
    Var o = layer_norm(b, *this, F::add(f, a), "full_layer_layer_norm", c.norm_eps);
    b.name_output(o);
    return o;
  }
};

json tiny(const std::string& preset) {
  if (preset != "tiny") unknown_preset("albert", preset, "tiny");
  json j = tiny_encoder_config("albert", 320);
  j["architectures"] = {"AlbertModel"};
  j["embedding_size"] = 32;  // ALBERT factorizes the embeddings: 128 under 768 in albert-base-v2
  j["num_hidden_layers"] = 3;
  j["num_hidden_groups"] = 2;  // layers 0, 1 share group 0; layer 2 runs group 1
  j["inner_group_num"] = 1;
  j["hidden_act"] = "gelu_new";
  j["layer_norm_eps"] = 1e-12;
  j["type_vocab_size"] = 2;
  j["pad_token_id"] = 0;
  return j;
}

}  // namespace

const Architecture& albert_architecture() {
  static const Architecture a{
      .model_type = "albert",
      .parse_config = parse,
      .weight_specs = specs,
      .create = [](ModelConfig c, std::shared_ptr<io::WeightStore> w) -> std::unique_ptr<Model> {
        return std::make_unique<Albert>(std::move(c), std::move(w));
      },
      .tiny_config = tiny,
      .tiny_tokenizer = "wordpiece",
      .tiny_norm_mean = 1.0,
      // Pre-training checkpoints keep the pooler, the sentence-order head and the tied decoder copies.
      .optional_weights = {R"((albert\.)?pooler\.(weight|bias))", R"((albert\.)?embeddings\.position_ids)",
                           R"((albert\.)?embeddings\.token_type_ids)", R"(sop_classifier\.classifier\..*)",
                           R"(predictions\.decoder\.(weight|bias))"},
      .heads = encoder_heads("Albert"),
  };
  return a;
}

}  // namespace hfx::models
