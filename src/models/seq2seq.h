// src/models/seq2seq.h — shared pieces of the encoder-decoder architectures (t5, bart, marian): the two
// components and their signatures, the self- and cross-attention with their cache leaves, and the
// BART-family encoder/decoder (bart, marian, mbart, ...: one class, knobs as data).
//
// Components (Optimum / Transformers.js names):
//   encoder: input_ids i64 [batch_size, encoder_sequence_length], attention_mask i64 [same]
//            → last_hidden_state f32 [batch_size, encoder_sequence_length, d_model]
//   decoder: input_ids i64 [batch_size, decoder_sequence_length], encoder_attention_mask,
//            encoder_hidden_states, past_key_values.N.{decoder,encoder}.{key,value} (optional)
//            → logits, present.N.{decoder,encoder}.{key,value}
// The cross-attention cache needs no branch: K = cat(past_encoder_key, proj(encoder_hidden_states[:,
// past_encoder_len:, :])). An empty past (first call) projects everything; a full past projects an
// empty slice, so cached steps do not recompute it. Its length is its own dim,
// past_encoder_sequence_length, because it is 0 in the first call of the merged program.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "blocks.h"

namespace hfx::models {

/// One decoder layer's cache: the past leaves it was given (absent = empty) and the present ones it made.
struct Seq2SeqLayerCache {
  Var past_self_k, past_self_v, past_cross_k, past_cross_v;
  Var self_k, self_v, cross_k, cross_v;
};

/// What a decoder call gets. `cache` is null when the call keeps no cache (use_cache false).
struct Seq2SeqDecoderArgs {
  Var input_ids;               ///< i64 [B, S]
  Var encoder_hidden_states;   ///< f32 [B, Te, d_model]
  Var encoder_attention_mask;  ///< i64 [B, Te]; absent = all ones
  std::vector<Seq2SeqLayerCache>* cache = nullptr;
  int64_t logits_to_keep = 0;
};

/// The sizes the component signatures need.
struct Seq2SeqDims {
  int64_t d_model = 0, decoder_layers = 0, heads = 0, head_dim = 0;
};

/// Base of the encoder-decoder LMs: components `encoder` and `decoder`, driven by the encoder-decoder loop.
class Seq2SeqLM : public Model {
 public:
  using Model::Model;
  Structure structure() const override { return Structure::EncoderDecoder; }
  std::string head() const override { return "seq2seq_lm"; }
  std::vector<ComponentDecl> components() const override;
  NamedVars call(const std::string& component, Builder& b, const NamedVars& inputs,
                 const CallOptions& opts = {}) const override;

  /// last_hidden_state f32 [B, S, d_model].
  virtual Var encode(Builder& b, const Var& input_ids, const Var& attention_mask) const = 0;
  /// logits f32 [B, S or keep, V]; fills the present leaves of args.cache.
  virtual Var decode(Builder& b, Seq2SeqDecoderArgs& args) const = 0;
  virtual Seq2SeqDims dims() const = 0;
};

/// An attention module's layout: projection names under the current scope, heads, scaling.
struct AttnLayout {
  int64_t heads = 0, head_dim = 0;
  double scale = 1.0;  ///< T5: 1 (no scaling); BART: head_dim^-0.5
  bool bias = false;
  const char *q = "q", *k = "k", *v = "v", *o = "o";
  bool k_bias = true;  ///< with `bias`: whether k has one too (Whisper's k_proj has none)
};

/// Self-attention in the current scope (the attention module): q/k/v from x, k/v appended to the past
/// (absent = none) and returned as the present; `mask` additive, broadcast to [B, H, S, T].
Var seq2seq_self_attention(Builder& b, const Model& m, const Var& x, const AttnLayout& a, const Var& mask,
                           bool causal, const Var& past_k, const Var& past_v, Var* present_k, Var* present_v);
/// Cross-attention in the current scope: q from x; k/v = cat(past, proj(enc[:, past_len:, :])).
Var seq2seq_cross_attention(Builder& b, const Model& m, const Var& x, const Var& enc, const AttnLayout& a,
                            const Var& mask, const Var& past_k, const Var& past_v, Var* present_k,
                            Var* present_v);

/// Scope(local) + nn.LayerNorm (weight and bias) + name_output.
Var layer_norm(Builder& b, const Model& m, const Var& x, const std::string& local, double eps);

// ---- the BART family (bart, marian, mbart, plbart, pegasus, m2m_100, blenderbot, blenderbot-small):
// post-LN or pre-LN layers, learned or sinusoidal positions, the layer norms each one adds ----
/// How the position of token t is embedded.
enum class BartPositions {
  learned,     ///< embed_positions.weight[past + t + position_offset] (BART: offset 2, Blenderbot: 0)
  sinusoidal,  ///< Marian/Pegasus: a sin | cos table (read when the checkpoint carries it), no offset
  fairseq,     ///< M2M100: tensor2tensor's table, ids from input_ids: (cumsum(ids != pad) + past) *
               ///< (ids != pad) + pad, pad rows zero; never in the checkpoint
};
/// Where layernorm_embedding sits (BlenderbotSmall's decoder normalizes the unscaled tokens before adding
/// positions).
enum class BartEmbedNorm { none, after_positions, decoder_before_positions };

/// The knobs of one BART-family architecture; the sizes come from config.json (bart_options).
struct BartOptions {
  int64_t d_model = 0, encoder_layers = 0, decoder_layers = 0, encoder_heads = 0, decoder_heads = 0,
          encoder_ffn = 0, decoder_ffn = 0, max_positions = 0, vocab = 0, pad = 1;
  std::string act = "gelu";
  bool scale_embedding = false;
  BartEmbedNorm embed_norm = BartEmbedNorm::after_positions;  ///< BART: yes; Marian: none
  BartPositions positions = BartPositions::learned;
  int64_t position_offset = 2;  ///< rows of the table before position 0 (learned: BART 2; fairseq: pad + 1)
  bool pre_norm = false;        ///< MBart, Pegasus, M2M100, Blenderbot: LN before each sublayer + layer_norm
                                ///< at the end of each stack
  bool final_logits_bias = true;  ///< the buffer added to the logits (M2M100 has none)
};

/// config.json's sizes (BartConfig's field names, shared by the family) into the architecture's `knobs`.
BartOptions bart_options(const ModelConfig& c, BartOptions knobs);
/// ModelConfig fields shared by the BART family (hidden_size = d_model, decoder layers/heads as the cache's).
ModelConfig parse_bart_family(const json& j, const std::string& model_type, const ConfigDefaults& d);
WeightSpecs bart_weight_specs(const BartOptions& o, bool tied);

class BartFamilyLM : public Seq2SeqLM {
 public:
  BartFamilyLM(ModelConfig cfg, std::shared_ptr<io::WeightStore> w, BartOptions o)
      : Seq2SeqLM(std::move(cfg), std::move(w)), o_(std::move(o)) {}
  Var encode(Builder& b, const Var& input_ids, const Var& attention_mask) const override;
  Var decode(Builder& b, Seq2SeqDecoderArgs& args) const override;
  Seq2SeqDims dims() const override {
    return {o_.d_model, o_.decoder_layers, o_.decoder_heads, o_.d_model / o_.decoder_heads};
  }

 private:
  Var embed(Builder& b, const std::string& stack, const Var& ids, const Sym& past) const;
  Var positions(Builder& b, const std::string& stack, const Var& ids, const Sym& past) const;
  /// Pre-LN: norm(x) before the sublayer, x + out after; post-LN: norm(x + out).
  Var sublayer(Builder& b, const Var& x, const std::string& norm,
               const std::function<Var(const Var&)>& f) const;
  Var ffn(Builder& b, const Var& x) const;
  Var encoder_layer(Builder& b, const Var& h, const Var& mask) const;
  Var decoder_layer(Builder& b, const Var& h, const Var& enc, const Var& enc_mask,
                    Seq2SeqLayerCache* c) const;
  BartOptions o_;
};

}  // namespace hfx::models
