// bert: BertModel / BertForMaskedLM / BertForSequenceClassification / BertForTokenClassification —
// absolute learned positions, token types (type_vocab_size 2), post-LN layers, pooler (tanh on [CLS])
// for the base model and sequence classification, MLM head tied to the word embeddings. Config names as
// BertConfig reads them (hidden_act, layer_norm_eps, type_vocab_size).
#include "encoder_blocks.h"

namespace hfx::models {
namespace {

const BertFamilyOptions kOptions{.prefix = "bert", .roberta = false};

ModelConfig parse(const json& j) {
  ConfigDefaults d;
  d.vocab_size = 30522;
  d.hidden_size = 768;
  d.intermediate_size = 3072;
  d.num_hidden_layers = 12;
  d.num_attention_heads = 12;
  d.max_position_embeddings = 512;
  d.norm_eps = 1e-12;
  d.norm_eps_key = "layer_norm_eps";
  d.tie_word_embeddings = true;
  d.bos = std::nullopt;
  d.eos = std::nullopt;
  json m = j;
  if (!jhas(m, "pad_token_id")) m["pad_token_id"] = 0;
  ModelConfig c = parse_bert_family(m, "bert", d);
  c.raw = j;
  (void)encoder_head(c);  // an unsupported architectures[0] fails here, at load and create
  return c;
}

json tiny(const std::string& preset) {
  if (preset != "tiny") unknown_preset("bert", preset, "tiny");
  json j = tiny_encoder_config("bert", 320);
  j["architectures"] = {"BertModel"};
  j["hidden_act"] = "gelu";
  j["layer_norm_eps"] = 1e-12;
  j["type_vocab_size"] = 2;
  j["position_embedding_type"] = "absolute";
  return j;
}

}  // namespace

const Architecture& bert_architecture() {
  static const Architecture a{
      .model_type = "bert",
      .parse_config = parse,
      .weight_specs = [](const ModelConfig& c) { return bert_family_weight_specs(c, kOptions); },
      .create = [](ModelConfig c, std::shared_ptr<io::WeightStore> w) -> std::unique_ptr<Model> {
        return std::make_unique<BertFamilyEncoder>(std::move(c), std::move(w), kOptions,
                                                   /*token_types=*/true);
      },
      .tiny_config = tiny,
      .tiny_tokenizer = "wordpiece",
      .tiny_norm_mean = 1.0,
      .optional_weights = bert_family_optional_weights("bert"),
      .heads = encoder_heads("Bert"),
  };
  return a;
}

}  // namespace hfx::models
