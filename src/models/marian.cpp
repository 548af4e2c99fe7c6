// marian: MarianMTModel — the BART layers without layernorm_embedding, sinusoidal positions (sin in the
// first half, cos in the second, no offset; computed, or read when the checkpoint carries them),
// optional sqrt(d_model) embedding scale, lm_head tied to model.shared plus final_logits_bias. The
// decoder starts from pad; opus-mt configs forbid generating pad (bad_words_ids) and force eos last.
#include "seq2seq.h"

namespace hfx::models {
namespace {

const BartOptions kMarian{
    .embed_norm = BartEmbedNorm::none, .positions = BartPositions::sinusoidal, .position_offset = 0};

ModelConfig parse(const json& j) {
  ConfigDefaults d;
  d.vocab_size = 58101;
  d.max_position_embeddings = 1024;
  d.tie_word_embeddings = true;
  d.bos = std::nullopt;
  d.eos = 0;
  return parse_bart_family(j, "marian", d);
}

json tiny(const std::string& preset) {
  if (preset != "tiny") unknown_preset("marian", preset, "tiny");
  // The tiny Marian tokenizer puts <pad> last: id vocab_size - 1.
  return json{{"architectures", {"MarianMTModel"}},
              {"model_type", "marian"},
              {"vocab_size", 512},
              {"decoder_vocab_size", 512},
              {"d_model", 64},
              {"encoder_layers", 2},
              {"decoder_layers", 2},
              {"encoder_attention_heads", 4},
              {"decoder_attention_heads", 4},
              {"encoder_ffn_dim", 128},
              {"decoder_ffn_dim", 128},
              {"max_position_embeddings", 128},
              {"activation_function", "swish"},
              {"scale_embedding", true},
              {"share_encoder_decoder_embeddings", true},
              {"init_std", 0.1},
              {"initializer_range", 0.1},  // create-tiny's std
              {"is_encoder_decoder", true},
              {"decoder_start_token_id", 511},
              {"bad_words_ids", {{511}}},
              {"forced_eos_token_id", 0},
              {"tie_word_embeddings", true},
              {"use_cache", true},
              {"torch_dtype", "float32"},
              {"transformers_version", "4.47.0"}};
}

}  // namespace

const Architecture& marian_architecture() {
  static const Architecture a{
      .model_type = "marian",
      .parse_config = parse,
      .weight_specs =
          [](const ModelConfig& c) {
            return bart_weight_specs(bart_options(c, kMarian), c.tie_word_embeddings);
          },
      .create = [](ModelConfig c, std::shared_ptr<io::WeightStore> w) -> std::unique_ptr<Model> {
        BartOptions o = bart_options(c, kMarian);
        return std::make_unique<BartFamilyLM>(std::move(c), std::move(w), std::move(o));
      },
      .tiny_config = tiny,
      .tiny_tokenizer = "marian_unigram",
      .tiny_norm_mean = 1.0,
      .optional_weights = {R"(model\.(en|de)coder\.embed_tokens\.weight)",
                           R"(model\.(en|de)coder\.embed_positions\.weight)"},
      .heads = {{"seq2seq_lm", "MarianMTModel"}},
  };
  return a;
}

}  // namespace hfx::models
