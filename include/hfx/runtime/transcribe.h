// hfx/runtime/transcribe.h — speech recognition with Whisper (greedy, or any GenerationOptions), from a
// checkpoint (eager) or an export folder (ONNX Runtime over onnx/encoder_model.onnx and
// onnx/decoder_model_merged.onnx).
//
// The audio goes through hfx/audio/audio.h (decode, resample to the feature extractor's rate, log-mel);
// the rules are Whisper's greedy generate() as transformers and Transformers.js apply them with the
// checkpoint's generation_config.json: the decoder starts from the prompt <|startoftranscript|>
// <|lang|> <|task|> <|notimestamps|> (multilingual; English-only models: <|startoftranscript|>
// <|notimestamps|>) in one call, then one token per call over the caches; suppress_tokens are banned at
// every step and begin_suppress_tokens at the first generated one; a row stops at an EOS id.
// With timestamps (transformers' return_timestamps=True) the prompt has no <|notimestamps|> and
// WhisperTimeStampLogitsProcessor's rules apply after the suppressions, as in transformers 5.x: the first
// token is a timestamp no later than max_initial_timestamp_index, timestamps come in pairs (except right
// before EOS), never decrease, and a timestamp is forced when the timestamps' total probability beats every
// text token. The result is split into segments at timestamp pairs; an unfinished last segment (text with
// no closing timestamp) is dropped, as transformers drops it.
// Every clip runs through transformers 5.x's window loop (a 30-s clip too; single_call opts out), and audio
// longer than the feature extractor's chunk (30 s) always with timestamps: log-mel over the whole clip, then
// 30-second windows from a
// seek position, each decoded from the same prompt and cut into segments; the next window starts at the
// window's last timestamp pair (or after the whole window when it ends on a lone timestamp or has none; also
// when that pair is at 0.00, where transformers' loop would decode the same window forever).
//
//   auto t = hfx::Transcriber::open("out/");          // export folder → ONNX Runtime
//   auto r = t.transcribe_file("speech.wav", {.language = "en"});
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "hfx/audio/audio.h"
#include "hfx/quant/quantize.h"
#include "hfx/runtime/generator.h"

namespace hfx {
class Model;
namespace tok {
class Tokenizer;
}

/// The audio encoder once, then decoder calls; the engine keeps the decoder's caches.
class SpeechSeq2SeqEngine {
 public:
  virtual ~SpeechSeq2SeqEngine() = default;
  virtual std::string name() const = 0;  ///< "eager" | "ort"
  virtual int64_t vocab_size() const = 0;
  /// Runs the encoder on input_features [B, mels, frames] (row-major) and drops the decoder caches.
  virtual void encode(std::span<const float> features, int64_t batch, int64_t mels, int64_t frames) = 0;
  /// One decoder call on input_ids [B, S] over the caches; writes the last position's logits [B, V].
  virtual void step(std::span<const int64_t> input_ids, int64_t batch, int64_t seq,
                    std::vector<float>& logits) = 0;
  /// Drops the decoder caches and keeps the encoder's output (a new prompt over the same audio).
  virtual void reset_decoder() = 0;
};

/// The model library's own components on the CPU kernels.
std::unique_ptr<SpeechSeq2SeqEngine> make_eager_speech_engine(std::shared_ptr<const Model> model);
/// ONNX Runtime over DIR/onnx/encoder_model.onnx + decoder_model_merged.onnx (empty pasts first). Throws
/// hfx::Error("transcribe", ...) when hfx was built without ONNX Runtime or a file is missing.
std::unique_ptr<SpeechSeq2SeqEngine> make_ort_speech_engine(const std::string& dir, int threads = 0);

/// What Whisper's greedy generation reads from generation_config.json (config.json as a fallback).
struct WhisperSettings {
  int64_t decoder_start_token_id = 0;
  std::vector<int64_t> eos_token_ids;
  std::vector<int64_t> suppress_tokens, begin_suppress_tokens;
  std::map<std::string, int64_t> lang_to_id;      ///< "<|en|>" → id
  std::map<std::string, int64_t> task_to_id;      ///< "transcribe" / "translate" → id
  std::optional<int64_t> no_timestamps_token_id;  ///< timestamps are the ids after it
  std::optional<int64_t> max_initial_timestamp_index;
  std::optional<int64_t> pad_token_id;  ///< long-form: trailing pads of a window's sequence are removed
  bool is_multilingual = false;
  int64_t max_length = 448;
};
WhisperSettings whisper_settings(const nlohmann::json& config,
                                 const std::optional<nlohmann::json>& generation_config);

struct TranscribeOptions {
  /// "en", "english" or "<|en|>"; empty: English (as Transformers.js defaults); "auto": detected as
  /// transformers' generate() does without a language (one decoder call on <|startoftranscript|>, the
  /// most likely language token).
  std::string language;
  std::string task = "transcribe";  ///< "transcribe" | "translate"
  int64_t max_new_tokens = 0;       ///< 0: up to max_length (long-form: per 30-second window)
  bool timestamps = false;          ///< segment timestamps (return_timestamps)
  /// One decoder call over the clip, no re-decoding from its last timestamp (transformers'
  /// force_unique_generate_call; Transformers.js's only mode): `ids` are that call's tokens, EOS kept.
  /// Clips of at most 30 s only.
  bool single_call = false;
  /// How each window's tokens are picked (hfx/runtime/generator.h; the default is greedy): sampling, stop
  /// strings, repetition penalty over the decoder's ids, ignore_eos — hfx::Generator's loop after Whisper's
  /// logits processors (suppress_tokens, begin_suppress_tokens, the timestamp rules). Its max_new_tokens is
  /// not read (max_new_tokens above is). A stop string ends the whole transcription (text cut before it,
  /// finish reason "stop", ids up to the token that completed it); segments are left as decoded.
  GenerationOptions decoding;
};

/// One timed segment: from its opening to its closing timestamp token.
struct TranscribeSegment {
  double start = 0, end = 0;  ///< seconds (token - timestamp_begin) × time_precision
  std::vector<int64_t> ids;   ///< the segment's tokens, both timestamps included
  std::string text;           ///< its text tokens decoded
};

struct TranscribeResult {
  std::vector<int64_t> prompt;  ///< the decoder prompt (start, language, task, no-timestamps)
  std::string language;         ///< the prompt's language token ("<|en|>"), given or detected; empty: none
  /// What transformers 5.x generate() returns: every window's segments' tokens joined (each window's
  /// prompt, pads and final EOS dropped). A clip whose decoding stops inside a segment is decoded again from
  /// that segment's start, so `ids` can hold more than max_new_tokens. With single_call: see there.
  std::vector<int64_t> ids;
  std::string text;           ///< decoded without special tokens
  std::string finish_reason;  ///< the last window's: "eos" | "length"
  /// The segments (transformers' return_segments), cut at timestamp pairs; `text` is their texts joined.
  /// Without timestamps a window is one segment unless the model emits timestamp tokens anyway.
  std::vector<TranscribeSegment> segments;
  GenerationStats stats;  ///< summed over the windows' decodings
};

class Transcriber {
 public:
  /// `path` is a checkpoint (eager) or an export folder (ONNX Runtime unless engine = "eager"); both need
  /// preprocessor_config.json and generation_config.json.
  /// Eager only: `quantize` quantizes the linear layers at load (unset: an export folder's own quantization).
  static Transcriber open(const std::string& path, const std::string& engine = "auto", int threads = 0,
                          const quant::QuantOptions& quantize = {});
  Transcriber(std::unique_ptr<SpeechSeq2SeqEngine> engine, std::shared_ptr<const tok::Tokenizer> tokenizer,
              WhisperSettings settings, audio::WhisperFeatureConfig features);
  Transcriber(Transcriber&&) noexcept;
  ~Transcriber();

  /// Reads, resamples and transcribes a WAV / FLAC file.
  TranscribeResult transcribe_file(const std::string& path, const TranscribeOptions& opts = {});
  /// Mono samples at `sample_rate` (resampled to the feature extractor's rate).
  TranscribeResult transcribe(const audio::Waveform& wave, const TranscribeOptions& opts = {});
  /// input_features [mels, nb_max_frames] of one clip (30 s, zero-padded), through transformers 5.x's window
  /// loop when the model has timestamp tokens (no_timestamps_token_id), else one decoding.
  TranscribeResult transcribe_features(std::span<const float> features, const TranscribeOptions& opts = {});
  /// Long-form transcription of input_features [mels, frames] (any number of frames; see the file comment):
  /// timestamps on, segment times from the clip's start, `ids` the segments' tokens concatenated.
  TranscribeResult transcribe_long_features(std::span<const float> features, int64_t frames,
                                            const TranscribeOptions& opts = {});
  /// The decoder prompt for `opts` (throws hfx::Error("transcribe", ...) for an unknown language or task).
  std::vector<int64_t> prompt(const TranscribeOptions& opts) const;

  SpeechSeq2SeqEngine& engine() { return *engine_; }
  const WhisperSettings& settings() const { return settings_; }
  const audio::WhisperFeatureConfig& feature_config() const { return features_; }

 private:
  /// transformers 5.x's window loop over input_features [mels, frames] (see transcribe.cpp).
  TranscribeResult decode_windows(std::span<const float> features, int64_t frames,
                                  const TranscribeOptions& opts);
  /// Appends the segments of `ids` (transformers' _retrieve_segment), `offset` seconds from the clip's start.
  void append_segments(TranscribeResult& r, const std::vector<int64_t>& ids, int64_t timestamp_begin,
                       double window_positions, double offset) const;
  std::string detect_language();
  void cut_at_stop(TranscribeResult& r, const std::vector<std::string>& stops) const;
  TranscribeResult transcribe_encoded(const TranscribeOptions& opts);

  std::unique_ptr<SpeechSeq2SeqEngine> engine_;
  std::shared_ptr<const tok::Tokenizer> tokenizer_;
  WhisperSettings settings_;
  audio::WhisperFeatureConfig features_;
};

}  // namespace hfx
