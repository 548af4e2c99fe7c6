// bart: BartForConditionalGeneration — post-LN encoder and decoder over one shared embedding
// (model.shared), learned positions offset by 2, layernorm_embedding, lm_head tied to model.shared plus
// the final_logits_bias buffer. decoder_start is eos (2); generation forces bos first and eos last.
#include "seq2seq.h"

namespace hfx::models {
namespace {

ModelConfig parse(const json& j) {
  ConfigDefaults d;
  d.vocab_size = 50265;
  d.max_position_embeddings = 1024;
  d.tie_word_embeddings = true;
  d.bos = 0;
  d.eos = 2;
  return parse_bart_family(j, "bart", d);
}

json tiny(const std::string& preset) {
  if (preset != "tiny") unknown_preset("bart", preset, "tiny");
  return json{{"architectures", {"BartForConditionalGeneration"}},
              {"model_type", "bart"},
              {"vocab_size", 512},
              {"d_model", 64},
              {"encoder_layers", 2},
              {"decoder_layers", 2},
              {"encoder_attention_heads", 4},
              {"decoder_attention_heads", 4},
              {"encoder_ffn_dim", 128},
              {"decoder_ffn_dim", 128},
              {"max_position_embeddings", 128},
              {"activation_function", "gelu"},
              {"scale_embedding", false},
              {"init_std", 0.1},
              {"initializer_range", 0.1},  // create-tiny's std
              {"is_encoder_decoder", true},
              {"decoder_start_token_id", 2},
              {"forced_bos_token_id", 0},
              {"forced_eos_token_id", 2},
              {"tie_word_embeddings", true},
              {"use_cache", true},
              {"torch_dtype", "float32"},
              {"transformers_version", "4.47.0"}};
}

}  // namespace

const Architecture& bart_architecture() {
  static const Architecture a{
      .model_type = "bart",
      .parse_config = parse,
      .weight_specs =
          [](const ModelConfig& c) {
            return bart_weight_specs(bart_options(c, BartOptions{}), c.tie_word_embeddings);
          },
      .create = [](ModelConfig c, std::shared_ptr<io::WeightStore> w) -> std::unique_ptr<Model> {
        BartOptions o = bart_options(c, BartOptions{});
        return std::make_unique<BartFamilyLM>(std::move(c), std::move(w), std::move(o));
      },
      .tiny_config = tiny,
      .tiny_tokenizer = "roberta_bpe",
      .tiny_norm_mean = 1.0,
      .optional_weights = {R"(model\.(en|de)coder\.embed_tokens\.weight)"},
      .heads = {{"seq2seq_lm", "BartForConditionalGeneration"}},
  };
  return a;
}

}  // namespace hfx::models
