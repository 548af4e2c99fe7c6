// hfx/runtime/generator.h — text generation over eager models and exported artifacts.
//
// A `Generator` owns an `Engine` (one forward step of a causal LM that keeps its own KV cache), the
// tokenizer and the stop rules. One `generate` call encodes the prompts, LEFT-pads them into one batch
// with an attention mask, runs the prefill and then one decode step per new token, and picks each token
// with hfx/runtime/sampling.h. Position ids are HF's: cumsum(attention_mask) - 1, clamped at 0, passed
// explicitly to every engine so that a padded row sees the positions it would see alone.
//
//   auto g = hfx::Generator::open("out/", {.engine = "auto"});   // export folder → ONNX Runtime
//   hfx::GenerationOptions o;  o.max_new_tokens = 32;             // greedy by default
//   auto r = g.generate({"Hello"}, o, [](const hfx::TokenEvent& e) { fputs(e.text.c_str(), stdout); });
//
// Engines: `EagerEngine` (CausalLM + EagerBuilder + DynamicCache, logits_to_keep = 1) and `OrtEngine`
// (ONNX Runtime over OUT/onnx/model.onnx, the merged graph whose past inputs may be empty, or
// prefill.onnx + decode.onnx when both exist; each step's present.N.* outputs are fed back as
// past_key_values.N.* without a copy). A row stops on an EOS id (generation_config.json's eos_token_id,
// int or list, plus config.json's and the tokenizer's), on a stop string found in its decoded text (the
// text is cut before it), or after max_new_tokens. Finished rows keep stepping with the pad id (as HF
// does) until every row is done.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "hfx/quant/quantize.h"
#include "hfx/runtime/sampling.h"

namespace hfx {

class CausalLM;
namespace tok {
class Tokenizer;
}

/// One forward step of a causal LM; the engine keeps the KV cache between steps.
class Engine {
 public:
  virtual ~Engine() = default;
  /// "eager" or "ort".
  virtual std::string name() const = 0;
  virtual int64_t vocab_size() const = 0;
  /// Drops the cache; the next step starts new sequences.
  virtual void reset() = 0;
  /// Tokens already in the cache (P).
  virtual int64_t past_length() const = 0;
  /// Keeps the first `length` positions of the cache (0 < length <= P) and drops the rest, as HF's
  /// DynamicCache.crop. Returns false, with the cache untouched, where the engine cannot (a state-space
  /// cache has no positions to cut).
  virtual bool crop(int64_t length) { return false; }
  /// Runs input_ids [B, S], attention_mask [B, P + S] and position_ids [B, S] (int64, row-major) and
  /// writes the logits of each row's last position to `logits` [B, V] (resized when needed).
  virtual void step(std::span<const int64_t> input_ids, std::span<const int64_t> attention_mask,
                    std::span<const int64_t> position_ids, int64_t batch, int64_t seq,
                    std::vector<float>& logits) = 0;
};

/// The reference engine: the model library's own forward on the CPU kernels.
class EagerEngine : public Engine {
 public:
  explicit EagerEngine(std::shared_ptr<const CausalLM> model);
  ~EagerEngine() override;
  std::string name() const override { return "eager"; }
  int64_t vocab_size() const override;
  void reset() override;
  int64_t past_length() const override;
  bool crop(int64_t length) override;
  void step(std::span<const int64_t> input_ids, std::span<const int64_t> attention_mask,
            std::span<const int64_t> position_ids, int64_t batch, int64_t seq,
            std::vector<float>& logits) override;
  const CausalLM& model() const { return *model_; }

 private:
  struct State;
  std::shared_ptr<const CausalLM> model_;
  std::unique_ptr<State> state_;
};

/// ONNX Runtime over an export folder (or a folder holding model.onnx / prefill.onnx + decode.onnx).
/// Throws hfx::Error("generate", ...) when hfx was built without ONNX Runtime.
std::unique_ptr<Engine> make_ort_engine(const std::string& dir, int threads = 0);

/// One generated token, as it comes.
struct TokenEvent {
  int64_t row = 0;
  int64_t token = 0;
  /// Newly completed text of the row (may be empty: an incomplete UTF-8 sequence, a special token, or
  /// text held back while it could still be the start of a stop string).
  std::string text;
  bool finished = false;  ///< this was the row's last event
};
using TokenCallback = std::function<void(const TokenEvent&)>;

struct GenerationOptions {
  int64_t max_new_tokens = 64;
  sampling::SamplingParams sampling;   ///< greedy by default
  std::vector<std::string> stop;       ///< stop strings (searched in each row's decoded text)
  std::vector<int64_t> eos_token_ids;  ///< empty: the Generator's (generation_config + tokenizer)
  bool ignore_eos = false;
  bool add_special_tokens = true;   ///< prompts encoded with the post-processor (BOS etc.)
  bool skip_special_tokens = true;  ///< in decoded/streamed text
  /// Batch 1 only: the engine's cache already holds the first `cached_tokens` ids of the prompt (what the
  /// previous call left there: its prompt and every generated id but the last), so only the rest is
  /// prefilled. 0: the cache is dropped and the whole prompt prefilled.
  int64_t cached_tokens = 0;
};

struct GenerationStats {
  double prefill_s = 0, decode_s = 0;  ///< wall time of the prefill step / of every decode step
  double engine_s = 0;                 ///< time inside Engine::step (all steps)
  int64_t prompt_tokens = 0;  ///< tokens prefilled: batch × padded prompt length, less cached_tokens
  int64_t cached_tokens = 0;  ///< prompt tokens taken from the cache instead (options.cached_tokens)
  int64_t decode_steps = 0;
  int64_t new_tokens = 0;  ///< tokens kept over all rows
};

struct GenerationResult {
  std::vector<std::vector<int64_t>> prompt_ids;  ///< per row, without padding
  std::vector<std::vector<int64_t>> ids;         ///< generated per row (a final EOS id included)
  std::vector<std::string> texts;                ///< decoded generated text, cut before a stop string
  std::vector<std::string> finish_reasons;       ///< "eos" | "stop" | "length"
  GenerationStats stats;
};

struct GeneratorConfig {
  std::string engine = "auto";  ///< "auto" | "eager" | "ort"
  int threads = 0;              ///< kernel / ORT intra-op threads; 0 = default
  /// Eager only: quantize the linear layers at load (hfx/quant/quantize.h). An export folder whose
  /// export_config.json says "quantize" is quantized the same way when this is unset, so the eager
  /// reference runs the exported math.
  quant::QuantOptions quantize{};
};

class Generator {
 public:
  /// `path` is a checkpoint folder (config.json + safetensors + tokenizer files: eager) or an export
  /// folder (manifest.json or onnx/: ONNX Runtime unless engine = "eager", which then loads the
  /// checkpoint files copied into it). Throws hfx::Error("generate", ...) naming what is missing.
  static Generator open(const std::string& path, const GeneratorConfig& config = {});
  /// An engine with an optional tokenizer (needed for prompts as text and stop strings) and EOS ids.
  Generator(std::unique_ptr<Engine> engine, std::shared_ptr<const tok::Tokenizer> tokenizer,
            std::vector<int64_t> eos_token_ids, std::optional<int64_t> pad_token_id = std::nullopt);
  Generator(Generator&&) noexcept;
  Generator& operator=(Generator&&) noexcept;
  ~Generator();

  GenerationResult generate(const std::vector<std::string>& prompts, const GenerationOptions& options,
                            const TokenCallback& callback = {});
  /// The same from token ids (no tokenizer needed unless stop strings are given).
  GenerationResult generate_ids(const std::vector<std::vector<int64_t>>& prompts,
                                const GenerationOptions& options, const TokenCallback& callback = {});

  Engine& engine() { return *engine_; }
  const tok::Tokenizer* tokenizer() const { return tokenizer_.get(); }
  const std::vector<int64_t>& eos_token_ids() const { return eos_; }
  int64_t pad_token_id() const { return pad_; }

 private:
  /// The request's errors (sampling, prompt count, lengths, stop strings without a tokenizer, cached tokens).
  void check_request(const std::vector<std::vector<int64_t>>& prompts, const GenerationOptions& options,
                     const std::vector<std::string>& stops) const;

  std::unique_ptr<Engine> engine_;
  std::shared_ptr<const tok::Tokenizer> tokenizer_;
  std::vector<int64_t> eos_;
  int64_t pad_ = 0;
};

/// HF prepare_inputs_for_generation: position_ids[b, j] = max(cumsum(mask[b, :j + 1]) - 1, 0) for the
/// last `seq` columns of a [batch, total] mask.
std::vector<int64_t> positions_from_mask(std::span<const int64_t> mask, int64_t batch, int64_t total,
                                         int64_t seq);
/// The stop and pad ids of a model folder as transformers' generate() takes them.
struct SpecialIds {
  std::vector<int64_t> eos;  ///< generation_config.json's eos_token_id, else config.json's; + the tokenizer's
  std::optional<int64_t>
      pad;  ///< generation_config.json's or config.json's pad_token_id, else the tokenizer's
};
/// SpecialIds of `dir` (config.json / generation_config.json absent: only the tokenizer's ids).
SpecialIds special_ids_of(const std::string& dir, const tok::Tokenizer* tokenizer);
/// The decoding defaults a model folder's generation_config.json gives transformers' generate() when the
/// caller passes none: do_sample (greedy unless true), temperature, top_k, top_p, repetition_penalty, with
/// transformers' global defaults (1, 50, 1, 1) where the file is silent, and max_new_tokens when it sets
/// one. No file: greedy, nothing set. Throws hfx::Error("generate", ...) for a field of the wrong type.
struct GenerationDefaults {
  bool do_sample = false;
  float temperature = 1.0f;
  int64_t top_k = 50;  ///< 0: off (the file's null)
  float top_p = 1.0f;
  float repetition_penalty = 1.0f;
  std::optional<int64_t> max_new_tokens;
};
GenerationDefaults generation_defaults_of(const std::string& dir);
/// eos_token_id of a generation_config.json / config.json object (int, list or absent).
std::vector<int64_t> eos_ids_from_json_text(const std::string& json_text);
/// Whether `dir` is an export folder (manifest.json or onnx/).
bool is_export_dir(const std::string& dir);

}  // namespace hfx
