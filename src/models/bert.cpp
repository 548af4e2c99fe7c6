// bert: BertModel / BertForMaskedLM / BertForSequenceClassification / BertForTokenClassification —
// absolute learned positions, token types (type_vocab_size 2), post-LN layers, pooler (tanh on [CLS])
// for the base model and sequence classification, MLM head tied to the word embeddings. Config names as
// BertConfig reads them (hidden_act, layer_norm_eps, type_vocab_size).
// ernie (ErnieModel …): BERT's modules under `ernie`, plus task_type_embeddings where use_task_id is set.
// electra (ElectraModel …, the discriminator and generator layouts): BERT's layers under `electra` over
// embeddings of embedding_size (projected to hidden_size when they differ), no pooler, ELECTRA's heads.
#include <fmt/format.h>

#include "encoder_blocks.h"

namespace hfx::models {
namespace {

struct Variant {
  const char* model_type;
  const char* class_prefix;
  const char* prefix;
  bool tiny_task_types;  ///< create-tiny writes use_task_id (ERNIE 3.0's checkpoints set it)
  bool electra;
};
constexpr Variant kBert{"bert", "Bert", "bert", false, false};
constexpr Variant kErnie{"ernie", "Ernie", "ernie", true, false};
constexpr Variant kElectra{"electra", "Electra", "electra", false, true};

template <const Variant& V>
BertFamilyOptions options(const ModelConfig& c) {
  return BertFamilyOptions{
      .prefix = V.prefix, .task_types = jget<bool>(c.raw, "use_task_id", false), .electra = V.electra};
}

template <const Variant& V>
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
  ModelConfig c = parse_bert_family(m, V.model_type, d);
  c.raw = j;
  (void)encoder_head(c);  // an unsupported architectures[0] fails here, at load and create
  return c;
}

template <const Variant& V>
json tiny(const std::string& preset) {
  if (preset != "tiny") unknown_preset(V.model_type, preset, "tiny");
  json j = tiny_encoder_config(V.model_type, 320);
  j["architectures"] = {fmt::format("{}Model", V.class_prefix)};
  j["hidden_act"] = "gelu";
  j["layer_norm_eps"] = 1e-12;
  j["type_vocab_size"] = 2;
  j["position_embedding_type"] = "absolute";
  if (V.electra) j["embedding_size"] = 32;  // ELECTRA-small's 128 < 256 hidden: embeddings_project runs
  if (V.tiny_task_types) {
    j["use_task_id"] = true;
    j["task_type_vocab_size"] = 3;
  }
  return j;
}

template <const Variant& V>
Architecture variant_architecture() {
  return Architecture{
      .model_type = V.model_type,
      .parse_config = parse<V>,
      .weight_specs = [](const ModelConfig& c) { return bert_family_weight_specs(c, options<V>(c)); },
      .create = [](ModelConfig c, std::shared_ptr<io::WeightStore> w) -> std::unique_ptr<Model> {
        BertFamilyOptions o = options<V>(c);
        return std::make_unique<BertFamilyEncoder>(std::move(c), std::move(w), std::move(o),
                                                   /*token_types=*/true);
      },
      .tiny_config = tiny<V>,
      .tiny_tokenizer = "wordpiece",
      .tiny_norm_mean = 1.0,
      .optional_weights = bert_family_optional_weights(V.prefix),
      .heads = encoder_heads(V.class_prefix),
  };
}

}  // namespace

const Architecture& bert_architecture() {
  static const Architecture a = variant_architecture<kBert>();
  return a;
}

const Architecture& ernie_architecture() {
  static const Architecture a = variant_architecture<kErnie>();
  return a;
}

const Architecture& electra_architecture() {
  static const Architecture a = variant_architecture<kElectra>();
  return a;
}

}  // namespace hfx::models
