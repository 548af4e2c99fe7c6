// roberta, xlm-roberta, camembert, data2vec-text (the same modeling code under other names and config
// defaults) and roberta-prelayernorm (pre-LN layers, a LayerNorm after the encoder), one variant table:
// RobertaModel / RobertaForMaskedLM /
// RobertaForSequenceClassification / RobertaForTokenClassification —
// the BERT encoder with RoBERTa's embeddings (position ids = cumsum(input_ids != pad) * (input_ids != pad)
// + pad, so positions start at pad + 1 and max_position_embeddings is 2 more than the usable length),
// RobertaLMHead (dense → gelu → layer_norm → decoder tied to the word embeddings) and
// RobertaClassificationHead (dense → tanh → out_proj on the first token). Config names as RobertaConfig
// reads them. Optimum exports input_ids and attention_mask only; hfx adds token_type_ids when the
// checkpoint has more than one token type (type_vocab_size > 1), where they change the output.
#include <fmt/format.h>

#include "encoder_blocks.h"
#include "hfx/core/error.h"

namespace hfx::models {
namespace {

// What differs between the model types.
struct Variant {
  const char* model_type;
  const char* class_prefix;  ///< "Roberta" / "XLMRoberta" / ...
  const char* prefix;        ///< the base model's attribute in the head classes
  bool pre_ln;
  const char* tokenizer;  ///< create-tiny's tokenizer kind
  int64_t default_vocab;  ///< the config class's vocab_size default
  int tiny_vocab;
};
constexpr Variant kRoberta{"roberta", "Roberta", "roberta", false, "roberta_bpe", 50265, 400};
constexpr Variant kXlmRoberta{"xlm-roberta", "XLMRoberta", "roberta", false, "xlmr_unigram", 30522, 500};
constexpr Variant kCamembert{"camembert", "Camembert", "roberta", false, "xlmr_unigram", 30522, 500};
constexpr Variant kData2VecText{
    "data2vec-text", "Data2VecText", "data2vec_text", false, "roberta_bpe", 30522, 400};
constexpr Variant kRobertaPreLn{
    "roberta-prelayernorm", "RobertaPreLayerNorm", "roberta_prelayernorm", true, "roberta_bpe", 50265, 400};

template <const Variant& V>
BertFamilyOptions options() {
  return BertFamilyOptions{.prefix = V.prefix, .roberta = true, .pre_ln = V.pre_ln};
}

template <const Variant& V>
ModelConfig parse(const json& j) {
  ConfigDefaults d;
  d.vocab_size = V.default_vocab;
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
  if (!jhas(m, "pad_token_id")) m["pad_token_id"] = 1;
  ModelConfig c = parse_bert_family(m, V.model_type, d);
  c.max_position_embeddings -=
      position_offset(c, options<V>());  // usable length; the table has offset more rows
  if (c.max_position_embeddings <= 0)
    HFX_THROW("model", "expected max_position_embeddings > pad_token_id + 1 for {}, got {}", c.model_type,
              c.max_position_embeddings + position_offset(c, options<V>()));
  c.raw = j;
  (void)encoder_head(c);  // an unsupported architectures[0] fails here, at load and create
  return c;
}

template <const Variant& V>
json tiny(const std::string& preset) {
  if (preset != "tiny") unknown_preset(V.model_type, preset, "tiny");
  json j = tiny_encoder_config(V.model_type, V.tiny_vocab);
  j["architectures"] = {fmt::format("{}Model", V.class_prefix)};
  j["hidden_act"] = "gelu";
  j["layer_norm_eps"] = 1e-5;
  j["type_vocab_size"] = 1;
  j["max_position_embeddings"] = 130;  // 128 usable positions after the pad offset
  j["position_embedding_type"] = "absolute";
  return j;
}

template <const Variant& V>
Architecture variant_architecture() {
  return Architecture{
      .model_type = V.model_type,
      .parse_config = parse<V>,
      .weight_specs = [](const ModelConfig& c) { return bert_family_weight_specs(c, options<V>()); },
      .create = [](ModelConfig c, std::shared_ptr<io::WeightStore> w) -> std::unique_ptr<Model> {
        const bool token_types = jget<int64_t>(c.raw, "type_vocab_size", 2) > 1;
        return std::make_unique<BertFamilyEncoder>(std::move(c), std::move(w), options<V>(), token_types);
      },
      .tiny_config = tiny<V>,
      .tiny_tokenizer = V.tokenizer,
      .tiny_norm_mean = 1.0,
      .optional_weights = bert_family_optional_weights(V.prefix),
      .heads = encoder_heads(V.class_prefix),
  };
}

}  // namespace

const Architecture& roberta_architecture() {
  static const Architecture a = variant_architecture<kRoberta>();
  return a;
}

const Architecture& xlm_roberta_architecture() {
  static const Architecture a = variant_architecture<kXlmRoberta>();
  return a;
}

const Architecture& camembert_architecture() {
  static const Architecture a = variant_architecture<kCamembert>();
  return a;
}

const Architecture& data2vec_text_architecture() {
  static const Architecture a = variant_architecture<kData2VecText>();
  return a;
}

const Architecture& roberta_prelayernorm_architecture() {
  static const Architecture a = variant_architecture<kRobertaPreLn>();
  return a;
}

}  // namespace hfx::models
