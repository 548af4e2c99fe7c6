// hfx/runtime/embed.h — sentence embeddings from an encoder-only model, as sentence-transformers makes
// them: the Transformer module's last_hidden_state, pooled by the Pooling module (mean over the real
// tokens, the first token, or the max over the real tokens) and, when modules.json lists a Normalize
// module, divided by its L2 norm (F.normalize, eps 1e-12).
//
// The folder is either a checkpoint (config.json + safetensors: the eager model) or an export folder
// (onnx/model.onnx: ONNX Runtime). The settings come from modules.json and the Pooling module's
// config.json (`1_Pooling/config.json`); a folder without modules.json gets mean pooling and
// normalization, as Transformers.js' feature-extraction pipeline with {pooling: 'mean', normalize: true}.
//
//   auto r = hfx::rt::embed("model_dir", {"a sentence", "another"});   // r.vectors[i] has hidden_size floats
//
// Every error is hfx::Error("embed", "expected ..., got ...").
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "hfx/models/sentence_transformers.h"

namespace hfx::tok {
class Tokenizer;
}
namespace hfx {
class Model;
}

namespace hfx::rt {

using models::EmbedSettings;
using models::Pooling;
using models::pooling_from_name;
using models::pooling_name;
using models::read_embed_settings;

/// Texts tokenized with special tokens and right-padded into one batch.
struct TokenBatch {
  int64_t batch = 0, seq = 0;
  std::vector<int64_t> input_ids, attention_mask;
};
/// Throws hfx::Error("embed") for no texts or a text longer than `max_tokens` tokens.
TokenBatch tokenize_batch(const tok::Tokenizer& tokenizer, const std::vector<std::string>& texts,
                          int64_t pad_id, int64_t max_tokens);

/// Pools last_hidden_state [batch, seq, dim] (row-major) over each row's real tokens and normalizes.
std::vector<std::vector<float>> pool(const std::vector<float>& hidden, int64_t batch, int64_t seq,
                                     int64_t dim, const std::vector<int64_t>& attention_mask, Pooling pooling,
                                     bool normalize);

/// last_hidden_state [batch, seq, dim] of an encoder-only base model `m` run eagerly on a batch
/// (token_type_ids zeros when it takes them); `dim` is set from the output.
std::vector<float> eager_last_hidden_state(const Model& m, const TokenBatch& batch, int64_t* dim);

struct EmbedResult {
  std::vector<std::vector<float>> vectors;  ///< one per text, `dim` floats each
  EmbedSettings settings;
  std::string engine;  ///< "eager" or "ort"
  TokenBatch tokens;   ///< the ids the model saw
};
/// Embeds `texts` with the model in `dir` (checkpoint → eager, export folder → ONNX Runtime).
/// `pooling` overrides the folder's Pooling module.
EmbedResult embed(const std::string& dir, const std::vector<std::string>& texts,
                  std::optional<Pooling> pooling = std::nullopt);

#ifdef HFX_HAVE_ORT
/// last_hidden_state [batch, seq, dim] of OUT/onnx/model.onnx for a batch (token_type_ids zeros when the
/// graph takes them); `dim` is set from the output.
std::vector<float> ort_last_hidden_state(const std::string& dir, const TokenBatch& batch, int64_t* dim);
#endif

}  // namespace hfx::rt
