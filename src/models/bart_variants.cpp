// The BART family's other members, each a row of knobs over the one BartFamilyLM (seq2seq.h):
//   mbart             MBartForConditionalGeneration: pre-LN, layernorm_embedding, learned positions offset 2
//   plbart            PLBartForConditionalGeneration: BART's layers (post-LN), sqrt(d_model) embedding scale
//   pegasus           PegasusForConditionalGeneration: pre-LN, Marian's sinusoidal table, no embedding norm
//   m2m_100           M2M100ForConditionalGeneration: pre-LN, fairseq sinusoidal positions counted over the
//                     non-pad tokens, relu, no final_logits_bias
//   blenderbot        BlenderbotForConditionalGeneration: pre-LN, learned positions without offset
//   blenderbot-small  BlenderbotSmallForConditionalGeneration: post-LN, learned positions without offset,
//                     layernorm_embedding after the positions in the encoder, before them in the decoder
// Every one ends its pre-LN stacks with model.{encoder,decoder}.layer_norm; config names are BartConfig's.
#include "seq2seq.h"

namespace hfx::models {
namespace {

struct Ids {
  int64_t pad;
  std::optional<int64_t> bos;
  int64_t eos, decoder_start;
};

struct Variant {
  const char* model_type;
  const char* class_name;
  BartOptions knobs;
  int64_t vocab, max_positions;
  Ids ids;                ///< the config class's defaults
  const char* tokenizer;  ///< create-tiny's tokenizer kind
  int64_t tiny_vocab;
  Ids tiny_ids;  ///< the tokenizer kind's special ids, written to the tiny config.json
};

constexpr Ids kRobertaIds{1, 0, 2, 2}, kT5Ids{0, std::nullopt, 1, 0};

using P = BartPositions;
using N = BartEmbedNorm;
// knobs.act and knobs.scale_embedding are the config class's defaults (config.json may override them).
const Variant kMbart{"mbart",
                     "MBartForConditionalGeneration",
                     {.pre_norm = true},
                     50265,
                     1024,
                     kRobertaIds,
                     "roberta_bpe",
                     400,
                     kRobertaIds};
const Variant kPlbart{"plbart",
                      "PLBartForConditionalGeneration",
                      {.scale_embedding = true},
                      50005,
                      1024,
                      kRobertaIds,
                      "roberta_bpe",
                      400,
                      kRobertaIds};
const Variant kPegasus{
    "pegasus",
    "PegasusForConditionalGeneration",
    {.embed_norm = N::none, .positions = P::sinusoidal, .position_offset = 0, .pre_norm = true},
    50265,
    1024,
    kT5Ids,
    "t5_unigram",
    320,
    kT5Ids};
const Variant kM2m100{"m2m_100",
                      "M2M100ForConditionalGeneration",
                      {.act = "relu",
                       .scale_embedding = true,
                       .embed_norm = N::none,
                       .positions = P::fairseq,
                       .pre_norm = true,
                       .final_logits_bias = false},
                      128112,
                      1024,
                      kRobertaIds,
                      "roberta_bpe",
                      400,
                      kRobertaIds};
const Variant kBlenderbot{"blenderbot",
                          "BlenderbotForConditionalGeneration",
                          {.embed_norm = N::none, .position_offset = 0, .pre_norm = true},
                          8008,
                          128,
                          {0, 1, 2, 1},
                          "roberta_bpe",
                          400,
                          kRobertaIds};
const Variant kBlenderbotSmall{"blenderbot-small",
                               "BlenderbotSmallForConditionalGeneration",
                               {.embed_norm = N::decoder_before_positions, .position_offset = 0},
                               50265,
                               512,
                               {0, 1, 2, 1},
                               "roberta_bpe",
                               400,
                               kRobertaIds};

template <const Variant& V>
ModelConfig parse(const json& j) {
  ConfigDefaults d;
  d.vocab_size = V.vocab;
  d.max_position_embeddings = V.max_positions;
  d.tie_word_embeddings = true;
  d.bos = V.ids.bos;
  d.eos = V.ids.eos;
  json m = j;
  if (m.is_object() && !jhas(m, "pad_token_id")) m["pad_token_id"] = V.ids.pad;
  ModelConfig c = parse_bart_family(m, V.model_type, d);
  c.raw = j;
  (void)bart_options(c, V.knobs);  // checks the sizes at load
  return c;
}

template <const Variant& V>
json tiny(const std::string& preset) {
  if (preset != "tiny") unknown_preset(V.model_type, preset, "tiny");
  json j{{"architectures", {V.class_name}},
         {"model_type", V.model_type},
         {"vocab_size", V.tiny_vocab},
         {"d_model", 64},
         {"encoder_layers", 2},
         {"decoder_layers", 2},
         {"encoder_attention_heads", 4},
         {"decoder_attention_heads", 4},
         {"encoder_ffn_dim", 128},
         {"decoder_ffn_dim", 128},
         {"max_position_embeddings", 128},
         {"activation_function", V.knobs.act},
         {"scale_embedding", V.knobs.scale_embedding},
         {"init_std", 0.1},
         {"initializer_range", 0.1},  // create-tiny's std
         {"is_encoder_decoder", true},
         {"pad_token_id", V.tiny_ids.pad},
         {"eos_token_id", V.tiny_ids.eos},
         {"decoder_start_token_id", V.tiny_ids.decoder_start},
         {"forced_eos_token_id", V.tiny_ids.eos},
         {"tie_word_embeddings", true},
         {"use_cache", true},
         {"torch_dtype", "float32"},
         {"transformers_version", "5.23.0"}};
  if (V.tiny_ids.bos) j["bos_token_id"] = *V.tiny_ids.bos;
  return j;
}

template <const Variant& V>
Architecture variant_architecture() {
  return Architecture{
      .model_type = V.model_type,
      .parse_config = parse<V>,
      .weight_specs =
          [](const ModelConfig& c) {
            return bart_weight_specs(bart_options(c, V.knobs), c.tie_word_embeddings);
          },
      .create = [](ModelConfig c, std::shared_ptr<io::WeightStore> w) -> std::unique_ptr<Model> {
        BartOptions o = bart_options(c, V.knobs);
        return std::make_unique<BartFamilyLM>(std::move(c), std::move(w), std::move(o));
      },
      .tiny_config = tiny<V>,
      .tiny_tokenizer = V.tokenizer,
      .tiny_norm_mean = 1.0,
      // Tied copies of model.shared; Pegasus' sinusoidal table (computed when absent).
      .optional_weights = {R"(model\.(en|de)coder\.embed_tokens\.weight)",
                           R"(model\.(en|de)coder\.embed_positions\.weight)"},
      .heads = {{"seq2seq_lm", V.class_name}},
  };
}

}  // namespace

#define HFX_BART_VARIANT(fn, V)                              \
  const Architecture& fn() {                                 \
    static const Architecture a = variant_architecture<V>(); \
    return a;                                                \
  }
HFX_BART_VARIANT(mbart_architecture, kMbart)
HFX_BART_VARIANT(plbart_architecture, kPlbart)
HFX_BART_VARIANT(pegasus_architecture, kPegasus)
HFX_BART_VARIANT(m2m_100_architecture, kM2m100)
HFX_BART_VARIANT(blenderbot_architecture, kBlenderbot)
HFX_BART_VARIANT(blenderbot_small_architecture, kBlenderbotSmall)
#undef HFX_BART_VARIANT

}  // namespace hfx::models
