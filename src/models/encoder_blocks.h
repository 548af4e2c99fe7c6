// src/models/encoder_blocks.h — shared pieces of the encoder-only architectures (BERT, RoBERTa, XLM-R,
// DistilBERT, ModernBERT): the encoder-only Model base (one component `model`, the task heads of
// Architecture::heads), LayerNorm and bidirectional attention blocks, and the BERT-family encoder that
// bert, roberta and xlm-roberta share (BertEmbeddings + BertLayer, same module names in all three).
//
// Every intermediate is named after its Hugging Face module: scopes follow the module tree of the
// transformers class (`bert.encoder.layer.0.attention.self.query` under BertForMaskedLM,
// `encoder.layer.0...` under BertModel), and weights are looked up by the scope's path, so the names a
// checkpoint must carry are the names the forward reads.
#pragma once
#include <string>
#include <vector>

#include "blocks.h"

namespace hfx::models {

/// The task heads of the encoder families (Architecture::heads order: the first is the default).
inline constexpr const char* kBase = "base";
inline constexpr const char* kMaskedLM = "masked_lm";
inline constexpr const char* kSeqCls = "sequence_classification";
inline constexpr const char* kTokCls = "token_classification";

/// Architecture::heads for a family whose classes are PREFIX + Model / ForMaskedLM / ... (e.g. "Bert").
std::vector<std::pair<std::string, std::string>> encoder_heads(const std::string& class_prefix);
/// The head config.json selects (head_of over the model_type's architecture).
std::string encoder_head(const ModelConfig& cfg);
/// Number of labels of a classification head: len(id2label), else num_labels, else 2 (transformers' default).
int64_t num_labels(const ModelConfig& cfg);

/// An encoder-only model: one component `model` with inputs input_ids, attention_mask (and
/// token_type_ids when `token_types`) → `last_hidden_state` (head base) or `logits` (other heads).
/// Subclasses implement `forward`; call() checks the inputs and names the output.
class EncoderModel : public Model {
 public:
  EncoderModel(ModelConfig cfg, std::shared_ptr<io::WeightStore> w, bool token_types);
  Structure structure() const override { return Structure::EncoderOnly; }
  std::string head() const override { return head_; }
  std::vector<ComponentDecl> components() const override;
  NamedVars call(const std::string& component, Builder& b, const NamedVars& inputs,
                 const CallOptions& opts = {}) const override;
  /// The output name of the head: last_hidden_state or logits.
  std::string output_name() const;

 protected:
  struct Inputs {
    Var input_ids;       ///< int64 [B, S]
    Var attention_mask;  ///< int64 [B, S] (absent: all ones)
    Var token_type_ids;  ///< int64 [B, S] (absent: zeros)
  };
  /// The head's output: last_hidden_state [B, S, E] or logits [B, S, V|L] / [B, L].
  virtual Var forward(Builder& b, const Inputs& in) const = 0;
  /// The scope of the base model inside the head class ("bert", "roberta", "distilbert", "model"), empty
  /// for the base class itself (BertModel's weights carry no prefix).
  std::string base_scope(const std::string& prefix) const { return head_ == kBase ? "" : prefix; }

 private:
  std::string head_;
  bool token_types_;
};

// ---- blocks (scoped by `local`, output named after the module) ----
/// nn.LayerNorm: `local`.weight and, when `bias`, `local`.bias.
Var layer_norm(Builder& b, const Model& m, const Var& x, const std::string& local, double eps,
               bool bias = true);
/// Bidirectional attention over q/k/v [B, S, H*D] (heads split here) with an additive mask broadcast to
/// [B, H, S, S]; returns [B, S, H*D]. Scale head_dim^-0.5.
Var encoder_attention(const Var& q, const Var& k, const Var& v, const Var& mask, int64_t heads);
/// nn.Embedding `local` of the current scope (weight `<scope>.<local>.weight`) looked up at `idx`, as f32 and
/// named after the module.
Var embedding_table(Builder& b, const Model& m, const std::string& local, const Var& idx);
/// h[:, 0] ([B, E] from [B, S, E]).
Var first_token(const Var& h);
/// Sum over the sequence of h × mask divided by the mask's count ([B, E]); mask int64 [B, S].
Var masked_mean(const Var& h, const Var& mask);

// ---- the BERT family: bert, ernie, electra, roberta, xlm-roberta, camembert, data2vec-text,
// roberta-prelayernorm ----
struct BertFamilyOptions {
  std::string prefix = "bert";  ///< base model scope inside the head classes: "bert", "roberta", "ernie", ...
  bool roberta = false;         ///< position ids from input_ids != pad (RoBERTa), RobertaLMHead and
                                ///< RobertaClassificationHead; no pooler in the head classes
  bool pre_ln = false;      ///< RoBERTa-PreLayerNorm: attention.LayerNorm and intermediate.LayerNorm before
                            ///< each sublayer, plain residuals, the base model's LayerNorm at the end
  bool task_types = false;  ///< ERNIE use_task_id: + task_type_embeddings row 0 (the task_type_ids default)
  /// ELECTRA: embeddings of embedding_size (+ embeddings_project to hidden_size when they differ), no
  /// pooler, generator_predictions + generator_lm_head as the MLM head, a gelu ElectraClassificationHead.
  bool electra = false;
};
/// The width of a BERT-family checkpoint's embedding tables (ELECTRA: embedding_size, else hidden_size).
int64_t embedding_size(const ModelConfig& cfg, const BertFamilyOptions& o);
WeightSpecs bert_family_weight_specs(const ModelConfig& cfg, const BertFamilyOptions& o);
/// Rows of the position table before the first usable position: pad + 1 for RoBERTa (positions start
/// at pad + 1), 0 for BERT. ModelConfig::max_position_embeddings is the usable length (the table's rows
/// minus this offset), so export contracts never index past the table.
int64_t position_offset(const ModelConfig& cfg, const BertFamilyOptions& o);
/// Weights a BERT-family checkpoint may carry that the head does not use (pooler, NSP head, tied
/// decoders, position_ids buffers).
std::vector<std::string> bert_family_optional_weights(const std::string& prefix);
/// BertConfig / RobertaConfig fields: hidden_act (gelu), layer_norm_eps (1e-12), type_vocab_size (2),
/// position_embedding_type must be absolute.
ModelConfig parse_bert_family(const json& j, const std::string& model_type, const ConfigDefaults& d);
/// Throws the unsupported-activation error unless `name` is an ACT2FN name hfx implements.
void check_activation(const std::string& name, const std::string& model_type);

class BertFamilyEncoder : public EncoderModel {
 public:
  BertFamilyEncoder(ModelConfig cfg, std::shared_ptr<io::WeightStore> w, BertFamilyOptions o,
                    bool token_types)
      : EncoderModel(std::move(cfg), std::move(w), token_types), o_(std::move(o)) {}

 protected:
  Var forward(Builder& b, const Inputs& in) const override;

 private:
  Var embeddings(Builder& b, const Inputs& in) const;
  Var position_ids(Builder& b, const Var& input_ids) const;
  Var layer(Builder& b, const Var& h, const Var& mask, int64_t i) const;
  Var mlm_head(Builder& b, const Var& h) const;
  Var seq_cls_head(Builder& b, const Var& h) const;
  Var electra_head(Builder& b, const Var& h) const;
  BertFamilyOptions o_;
};

/// tiny preset config.json skeleton of the BERT family (hidden 64, 2 layers, 4 heads, intermediate 128,
/// max positions 128, initializer_range 0.1); the architecture adds its own fields.
json tiny_encoder_config(const char* model_type, int64_t vocab_size);

}  // namespace hfx::models
