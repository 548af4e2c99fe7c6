// hfx/runtime/text2text.h — text-to-text generation over encoder-decoder models (t5, bart, marian, ...),
// from a checkpoint (eager) or an export folder (ONNX Runtime over onnx/encoder_model.onnx and
// onnx/decoder_model_merged.onnx): greedy, or any GenerationOptions through hfx::Generator's loop.
//
// The rules are transformers' greedy generate() with the checkpoint's own generation config: the
// encoder runs once on the right-padded prompts; the decoder starts from decoder_start_token_id and
// adds one token per step over its self- and cross-attention caches; the logits processors are
// NoBadWords (bad_words_ids), ForcedBOS (first token = forced_bos_token_id) and ForcedEOS (the token at
// max_length - 1, i.e. the last of max_new_tokens, = forced_eos_token_id); a row stops at an EOS id and
// is then fed the pad id until every row is done.
//
//   auto g = hfx::Text2TextGenerator::open("out/");            // export folder → ONNX Runtime
//   auto r = g.generate({"translate: hello"}, 32);
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "hfx/quant/quantize.h"
#include "hfx/runtime/generator.h"

namespace hfx {
class Model;
namespace tok {
class Tokenizer;
}

/// The encoder once, then one decoder step per token; the engine keeps the decoder's caches.
class Seq2SeqEngine {
 public:
  virtual ~Seq2SeqEngine() = default;
  virtual std::string name() const = 0;  ///< "eager" | "ort"
  virtual int64_t vocab_size() const = 0;
  /// Runs the encoder on input_ids / attention_mask [B, S] (row-major) and drops the decoder caches.
  virtual void encode(std::span<const int64_t> input_ids, std::span<const int64_t> attention_mask,
                      int64_t batch, int64_t seq) = 0;
  /// One decoder step on input_ids [B, 1]; writes the logits [B, V] (resized when needed).
  virtual void step(std::span<const int64_t> input_ids, int64_t batch, std::vector<float>& logits) = 0;
};

/// The model library's own components (encoder, decoder) on the CPU kernels.
std::unique_ptr<Seq2SeqEngine> make_eager_seq2seq_engine(std::shared_ptr<const Model> model);
/// ONNX Runtime over DIR/onnx/encoder_model.onnx + decoder_model_merged.onnx (empty pasts in the first
/// decoder call; use_cache_branch fed when the graph has it). Throws hfx::Error("generate", ...) when
/// hfx was built without ONNX Runtime or a file is missing.
std::unique_ptr<Seq2SeqEngine> make_ort_seq2seq_engine(const std::string& dir, int threads = 0);

/// The generation settings that greedy text-to-text honors, as transformers reads them.
struct Text2TextSettings {
  int64_t decoder_start_token_id = 0;
  std::vector<int64_t> eos_token_ids;
  int64_t pad_token_id = 0;
  std::optional<int64_t> forced_bos_token_id, forced_eos_token_id;
  std::vector<std::vector<int64_t>> bad_words_ids;
};
/// Each field from generation_config.json when it sets it, else from config.json; pad defaults to the
/// first eos; decoder start falls back to bos (transformers' _get_decoder_start_token_id). Throws
/// hfx::Error("generate", ...) when neither is set. This equals transformers 4.47 whenever the two files
/// agree on the fields they both set (what save_pretrained and create-tiny write); transformers' legacy
/// rule that rebuilds the whole config from config.json in some cases is not modelled.
Text2TextSettings text2text_settings(const nlohmann::json& config,
                                     const std::optional<nlohmann::json>& generation_config);

/// Whether config.json describes an encoder-decoder model (is_encoder_decoder, or a seq2seq head).
bool is_text2text_config(const nlohmann::json& config);
/// Throws hfx::Error("generate", "expected a text-to-text model, got the speech model whisper … use hfx
/// transcribe") for a speech encoder-decoder's config (Whisper's num_mel_bins), found at `path`.
void check_not_speech(const nlohmann::json& config, const std::string& path);

struct Text2TextResult {
  std::vector<std::vector<int64_t>> prompt_ids;  ///< per row, as encoded
  std::vector<std::vector<int64_t>> ids;         ///< generated per row, without the decoder start (EOS kept)
  std::vector<std::string> texts;                ///< decoded without special tokens
  std::vector<std::string> finish_reasons;       ///< "eos" | "length"
};

class Text2TextGenerator {
 public:
  /// `path` is a checkpoint (eager) or an export folder (ONNX Runtime unless engine = "eager"). Eager only:
  /// `quantize` quantizes the linear layers at load; unset, an export folder's own quantization (its
  /// export_config.json) is applied, so the reference runs the exported math.
  static Text2TextGenerator open(const std::string& path, const std::string& engine = "auto", int threads = 0,
                                 const quant::QuantOptions& quantize = {});
  Text2TextGenerator(std::unique_ptr<Seq2SeqEngine> engine, std::shared_ptr<const tok::Tokenizer> tokenizer,
                     Text2TextSettings settings);
  Text2TextGenerator(Text2TextGenerator&&) noexcept;
  ~Text2TextGenerator();

  Text2TextResult generate(const std::vector<std::string>& prompts, int64_t max_new_tokens);
  Text2TextResult generate_ids(const std::vector<std::vector<int64_t>>& prompts, int64_t max_new_tokens);
  /// Any decoding options (hfx/runtime/generator.h: sampling, stop strings, repetition penalty over the
  /// decoder's ids, --ignore-eos, streaming) over the encoded prompts: the Generator's loop on the decoder,
  /// the seq2seq logits processors (NoBadWords, ForcedBOS, ForcedEOS) applied before its own. prompt_ids are
  /// the encoder's inputs; stats.prompt_tokens counts the decoder's start tokens.
  GenerationResult generate_ids(const std::vector<std::vector<int64_t>>& prompts,
                                const GenerationOptions& options, const TokenCallback& callback = {});

  Seq2SeqEngine& engine() { return *engine_; }
  const Text2TextSettings& settings() const { return settings_; }
  /// Null when the folder has no tokenizer.json (generate_ids still works).
  const tok::Tokenizer* tokenizer() const { return tokenizer_.get(); }

 private:
  std::unique_ptr<Seq2SeqEngine> engine_;
  std::shared_ptr<const tok::Tokenizer> tokenizer_;
  Text2TextSettings settings_;
};

}  // namespace hfx
