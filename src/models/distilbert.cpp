// distilbert: DistilBertModel / DistilBertForMaskedLM / DistilBertForSequenceClassification /
// DistilBertForTokenClassification — learned positions, no token types, post-LN layers
// (sa_layer_norm, output_layer_norm, eps 1e-12 fixed in the modeling code), padding masked with
// finfo(f32).min; MLM head vocab_transform → activation → vocab_layer_norm → vocab_projector (tied to the
// word embeddings); sequence classification pre_classifier → ReLU → classifier on the first token.
// Config names as DistilBertConfig reads them (dim, n_layers, n_heads, hidden_dim, activation).
#include <cmath>

#include "encoder_blocks.h"

namespace hfx::models {
namespace {

constexpr double kEps = 1e-12;  // nn.LayerNorm(config.dim, eps=1e-12) everywhere in modeling_distilbert.py

ModelConfig parse(const json& j) {
  json m = j;
  m["hidden_size"] = jget<int64_t>(j, "dim", 768);
  m["num_attention_heads"] = jget<int64_t>(j, "n_heads", 12);
  m["num_hidden_layers"] = jget<int64_t>(j, "n_layers", 6);
  m["intermediate_size"] = jget<int64_t>(j, "hidden_dim", 4 * 768);
  m.erase("head_dim");
  if (!jhas(m, "pad_token_id")) m["pad_token_id"] = 0;
  ConfigDefaults d;
  d.vocab_size = 30522;
  d.max_position_embeddings = 512;
  d.tie_word_embeddings = true;
  d.bos = std::nullopt;
  d.eos = std::nullopt;
  ModelConfig c = parse_common(m, "distilbert", d);
  c.raw = j;
  c.norm_eps = kEps;
  check_activation(jget<std::string>(j, "activation", "gelu"), "distilbert");
  (void)encoder_head(c);
  return c;
}

WeightSpecs specs(const ModelConfig& c) {
  const int64_t E = c.hidden_size, I = c.intermediate_size;
  const std::string head = encoder_head(c);
  const std::string p = head == kBase ? "" : "distilbert.";
  WeightSpecs s{{p + "embeddings.word_embeddings.weight", {c.vocab_size, E}},
                {p + "embeddings.position_embeddings.weight", {c.max_position_embeddings, E}},
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
    std::string l = p + "transformer.layer." + std::to_string(i) + ".";
    for (const char* n : {"q_lin", "k_lin", "v_lin", "out_lin"}) lin(l + "attention." + n, E, E);
    ln(l + "sa_layer_norm");
    lin(l + "ffn.lin1", I, E);
    lin(l + "ffn.lin2", E, I);
    ln(l + "output_layer_norm");
  }
  if (head == kMaskedLM) {
    lin("vocab_transform", E, E);
    ln("vocab_layer_norm");
    if (!c.tie_word_embeddings) s.push_back({"vocab_projector.weight", {c.vocab_size, E}});
    s.push_back({"vocab_projector.bias", {c.vocab_size}});
  } else if (head == kSeqCls) {
    lin("pre_classifier", E, E);
    lin("classifier", num_labels(c), E);
  } else if (head == kTokCls) {
    lin("classifier", num_labels(c), E);
  }
  return s;
}

class DistilBert : public EncoderModel {
 public:
  DistilBert(ModelConfig c, std::shared_ptr<io::WeightStore> w)
      : EncoderModel(std::move(c), std::move(w), false) {}

 protected:
  Var forward(Builder& b, const Inputs& in) const override {
    const auto& c = config();
    Var h;
    {
      std::optional<Scope> sb;
      if (head() != kBase) sb.emplace(b, "distilbert");
      h = embeddings(b, in.input_ids);
      Var mask = padding_mask(b, in.attention_mask);
      Scope st(b, "transformer");
      for (int64_t i = 0; i < c.num_hidden_layers; i++) {
        Scope sl(b, "layer." + std::to_string(i));
        h = layer(b, h, mask);
      }
    }
    const std::string act = jget<std::string>(c.raw, "activation", "gelu");
    if (head() == kBase) return h;
    if (head() == kTokCls) return linear(b, *this, h, "classifier", true);
    if (head() == kSeqCls) {
      Var x = F::relu(linear(b, *this, first_token(h), "pre_classifier", true));
      return linear(b, *this, x, "classifier", true);
    }
    Var x = activation(linear(b, *this, h, "vocab_transform", true), act);
    x = layer_norm(b, *this, x, "vocab_layer_norm", kEps);
    Scope sp(b, "vocab_projector");
    Var y = F::linear(
        x,
        W(b, *this,
          c.tie_word_embeddings ? "distilbert.embeddings.word_embeddings.weight" : "vocab_projector.weight"),
        W(b, *this, "vocab_projector.bias"));
    b.name_output(y);
    return y;
  }

 private:
  Var embeddings(Builder& b, const Var& ids) const {
    Scope se(b, "embeddings");
    Var h, pos;
    {
      Scope s(b, "word_embeddings");
      h = F::to(F::embedding(w(b, b.scope() + ".weight"), ids), DType::F32);
      b.name_output(h);
    }
    {
      Scope s(b, "position_embeddings");
      pos = F::to(F::embedding(w(b, b.scope() + ".weight"), F::unsqueeze(F::arange(b, 0, ids.size(1)), 0)),
                  DType::F32);
      b.name_output(pos);
    }
    h = layer_norm(b, *this, F::add(h, pos), "LayerNorm", kEps);
    b.name_output(h);
    return h;
  }

  Var layer(Builder& b, const Var& h, const Var& mask) const {
    const auto& c = config();
    Var a;
    {
      Scope sa(b, "attention");
      Var ctx = encoder_attention(linear(b, *this, h, "q_lin", true), linear(b, *this, h, "k_lin", true),
                                  linear(b, *this, h, "v_lin", true), mask, c.num_attention_heads);
      a = linear(b, *this, ctx, "out_lin", true);
      b.name_output(a);
    }
    Var sa = layer_norm(b, *this, F::add(a, h), "sa_layer_norm", kEps);
    Var f;
    {
      Scope sf(b, "ffn");
      f = linear(
          b, *this,
          activation(linear(b, *this, sa, "lin1", true), jget<std::string>(c.raw, "activation", "gelu")),
          "lin2", true);
      b.name_output(f);
    }
    Var o = layer_norm(b, *this, F::add(f, sa), "output_layer_norm", kEps);
    b.name_output(o);
    return o;
  }
};

json tiny(const std::string& preset) {
  if (preset != "tiny") unknown_preset("distilbert", preset, "tiny");
  return json{{"architectures", {"DistilBertModel"}},
              {"model_type", "distilbert"},
              {"vocab_size", 300},
              {"dim", 64},
              {"n_layers", 2},
              {"n_heads", 4},
              {"hidden_dim", 128},
              {"activation", "gelu"},
              {"max_position_embeddings", 128},
              {"sinusoidal_pos_embds", false},
              {"initializer_range", 0.1},
              {"tie_weights_", true},
              {"torch_dtype", "float32"},
              {"transformers_version", "4.47.0"}};
}

}  // namespace

const Architecture& distilbert_architecture() {
  static const Architecture a{
      .model_type = "distilbert",
      .parse_config = parse,
      .weight_specs = specs,
      .create = [](ModelConfig c, std::shared_ptr<io::WeightStore> w) -> std::unique_ptr<Model> {
        return std::make_unique<DistilBert>(std::move(c), std::move(w));
      },
      .tiny_config = tiny,
      .tiny_tokenizer = "wordpiece",
      .tiny_norm_mean = 1.0,
      .optional_weights = {R"((distilbert\.)?embeddings\.position_ids)", R"(vocab_projector\.weight)"},
      .heads = encoder_heads("DistilBert"),
  };
  return a;
}

}  // namespace hfx::models
