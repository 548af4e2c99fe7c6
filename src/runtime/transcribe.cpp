// Greedy Whisper transcription (see include/hfx/runtime/transcribe.h): the settings as transformers and
// Transformers.js read them, the eager engine over the model's `encoder` / `decoder` components, the
// prompt, and the loop with SuppressTokens / SuppressTokensAtBegin and EOS.
#include "hfx/runtime/transcribe.h"
#include "whisper_timestamps.h"

#include <algorithm>
#include <filesystem>
#include <limits>

#include <fmt/format.h>

#include "hfx/artifact/manifest.h"
#include "hfx/core/error.h"
#include "hfx/io/safetensors.h"
#include "hfx/models/model.h"
#include "hfx/models/quantize_model.h"
#include "hfx/ops/builder.h"
#include "hfx/runtime/generator.h"
#include "hfx/tokenizers/tokenizer.h"
#include "runtime/eager_decoder.h"
#include "runtime/json_file.h"

namespace hfx {
namespace fs = std::filesystem;

namespace {

constexpr const char* kComp = "transcribe";

std::optional<nlohmann::json> read_json_if_exists(const fs::path& p) {
  return runtime_detail::read_json_if_exists(p, kComp);
}

std::vector<int64_t> ints(const nlohmann::json& v, const char* key) {
  if (v.is_number_integer()) return {v.get<int64_t>()};
  HFX_CHECK(v.is_array(), kComp, "expected {} to be an int or a list of ints, got {}", key, v.dump());
  std::vector<int64_t> r;
  for (const auto& x : v) {
    HFX_CHECK(x.is_number_integer(), kComp, "expected {} to be a list of ints, got {}", key, v.dump());
    r.push_back(x.get<int64_t>());
  }
  return r;
}

std::map<std::string, int64_t> id_map(const nlohmann::json& v, const char* key) {
  HFX_CHECK(v.is_object(), kComp, "expected {} to be an object of ids, got {}", key, v.dump());
  std::map<std::string, int64_t> r;
  for (auto it = v.begin(); it != v.end(); ++it) {
    HFX_CHECK(it.value().is_number_integer(), kComp, "expected {}['{}'] to be an id, got {}", key, it.key(),
              it.value().dump());
    r[it.key()] = it.value().get<int64_t>();
  }
  return r;
}

// "en" (or empty: English, as Transformers.js defaults) → "<|en|>"; a token as given stays.
std::string language_token(const std::string& language) {
  const std::string lang = language.empty() ? "en" : language;
  return lang.rfind("<|", 0) == 0 ? lang : "<|" + lang + "|>";
}

class EagerSpeech : public SpeechSeq2SeqEngine {
 public:
  explicit EagerSpeech(std::shared_ptr<const Model> m) : m_(std::move(m)) {
    HFX_CHECK(m_ && m_->structure() == Structure::EncoderDecoder, kComp,
              "expected an encoder-decoder speech model, got {}",
              m_ ? structure_name(m_->structure()) : "none");
    const ComponentDecl enc = m_->component("encoder");
    HFX_CHECK(!enc.inputs.empty() && enc.inputs[0].name == "input_features", kComp,
              "expected an encoder that takes input_features (Whisper), got {} taking '{}'",
              m_->config().model_type, enc.inputs.empty() ? "nothing" : enc.inputs[0].name);
    decl_ = m_->component("decoder");
  }
  std::string name() const override { return "eager"; }
  int64_t vocab_size() const override { return m_->config().vocab_size; }

  void encode(std::span<const float> f, int64_t B, int64_t mels, int64_t frames) override {
    HFX_CHECK(static_cast<int64_t>(f.size()) == B * mels * frames, kComp,
              "expected input_features of [{}, {}, {}], got {} values", B, mels, frames, f.size());
    b_ = std::make_unique<EagerBuilder>();
    Tensor t = Tensor::empty({B, mels, frames}, DType::F32);
    std::copy(f.begin(), f.end(), t.data<float>());
    hidden_ = get(m_->call("encoder", *b_, {{"input_features", b_->wrap(t)}}), "last_hidden_state");
    past_.clear();
  }

  void step(std::span<const int64_t> ids, int64_t B, int64_t S, std::vector<float>& logits) override {
    HFX_CHECK(b_ != nullptr, kComp, "expected encode() before a decoder step, got none");
    NamedVars in{{"input_ids", b_->wrap(Tensor::from_ints({B, S}, {ids.begin(), ids.end()}))},
                 {"encoder_hidden_states", hidden_}};
    runtime_detail::eager_decoder_step(*m_, decl_, *b_, std::move(in), past_, B, logits);
  }
  void reset_decoder() override { past_.clear(); }

 private:
  std::shared_ptr<const Model> m_;
  ComponentDecl decl_;
  std::unique_ptr<EagerBuilder> b_;
  Var hidden_;
  NamedVars past_;
};

}  // namespace

WhisperSettings whisper_settings(const nlohmann::json& cfg, const std::optional<nlohmann::json>& gen) {
  auto field = [&](const char* key) -> const nlohmann::json* {
    if (gen && gen->contains(key) && !(*gen)[key].is_null()) return &(*gen)[key];
    if (cfg.contains(key) && !cfg[key].is_null()) return &cfg[key];
    return nullptr;
  };
  WhisperSettings s;
  const nlohmann::json* start = field("decoder_start_token_id");
  HFX_CHECK(start && start->is_number_integer(), kComp,
            "expected decoder_start_token_id in generation_config.json or config.json, "
            "got {}",
            start ? start->dump() : "none");
  s.decoder_start_token_id = start->get<int64_t>();
  if (const auto* e = field("eos_token_id")) s.eos_token_ids = ints(*e, "eos_token_id");
  if (const auto* v = field("suppress_tokens")) s.suppress_tokens = ints(*v, "suppress_tokens");
  if (const auto* v = field("begin_suppress_tokens"))
    s.begin_suppress_tokens = ints(*v, "begin_suppress_tokens");
  if (const auto* v = field("lang_to_id")) s.lang_to_id = id_map(*v, "lang_to_id");
  if (const auto* v = field("task_to_id")) s.task_to_id = id_map(*v, "task_to_id");
  if (const auto* v = field("no_timestamps_token_id"))
    s.no_timestamps_token_id = ints(*v, "no_timestamps_token_id").at(0);
  if (const auto* v = field("max_initial_timestamp_index"))
    s.max_initial_timestamp_index = ints(*v, "max_initial_timestamp_index").at(0);
  if (const auto* v = field("is_multilingual")) s.is_multilingual = v->is_boolean() && v->get<bool>();
  if (const auto* v = field("max_length")) s.max_length = ints(*v, "max_length").at(0);
  if (const auto* v = field("pad_token_id")) s.pad_token_id = ints(*v, "pad_token_id").at(0);
  return s;
}

std::unique_ptr<SpeechSeq2SeqEngine> make_eager_speech_engine(std::shared_ptr<const Model> model) {
  return std::make_unique<EagerSpeech>(std::move(model));
}

#ifndef HFX_HAVE_ORT
std::unique_ptr<SpeechSeq2SeqEngine> make_ort_speech_engine(const std::string& dir, int) {
  HFX_THROW(kComp,
            "expected an hfx built with ONNX Runtime to run {}, got a build without it (use --engine eager)",
            dir);
}
#endif

Transcriber::Transcriber(std::unique_ptr<SpeechSeq2SeqEngine> engine,
                         std::shared_ptr<const tok::Tokenizer> tokenizer, WhisperSettings settings,
                         audio::WhisperFeatureConfig features)
    : engine_(std::move(engine)),
      tokenizer_(std::move(tokenizer)),
      settings_(std::move(settings)),
      features_(features) {
  HFX_CHECK(engine_ != nullptr, kComp, "expected an engine, got none");
}
Transcriber::Transcriber(Transcriber&&) noexcept = default;
Transcriber::~Transcriber() = default;

Transcriber Transcriber::open(const std::string& path, const std::string& engine, int threads,
                              const quant::QuantOptions& quantize) {
  const fs::path dir(path);
  HFX_CHECK(fs::is_directory(dir), kComp, "expected a checkpoint or export folder, got '{}' (not a folder)",
            path);
  const bool exported = is_export_dir(path);
  const std::string kind = engine == "auto" ? (exported ? "ort" : "eager") : engine;
  HFX_CHECK(kind == "eager" || kind == "ort", kComp, "expected engine auto, eager or ort, got '{}'", engine);
  auto cfg = read_json_if_exists(dir / "config.json");
  HFX_CHECK(cfg.has_value(), kComp, "expected config.json in '{}', got none", path);
  auto pre = read_json_if_exists(dir / "preprocessor_config.json");
  HFX_CHECK(pre.has_value(), kComp,
            "expected preprocessor_config.json (WhisperFeatureExtractor's settings) in '{}', got none", path);
  std::unique_ptr<SpeechSeq2SeqEngine> e;
  if (kind == "ort") {
    HFX_CHECK(exported, kComp,
              "expected an export folder (with manifest.json or onnx/) for the ort engine, got '{}'", path);
    HFX_CHECK(!quantize.enabled(), kComp,
              "expected --quantize only with the eager engine, got engine ort on '{}': an export folder is "
              "quantized when exported (hfx export --quantize)",
              path);
    e = make_ort_speech_engine(path, threads);
  } else {
    std::string weights = path;
    if (!fs::exists(dir / "model.safetensors") && exported && fs::exists(dir / "manifest.json"))
      weights = artifact::Manifest::read(path).source_path;
    std::shared_ptr<const Model> model(load_model(weights));
    const quant::QuantOptions q =
        quantize.enabled() || !exported ? quantize : quant::export_quantization(path);
    if (q.enabled()) model = quant::quantize_model(*model, q);
    e = make_eager_speech_engine(std::move(model));
  }
  std::shared_ptr<const tok::Tokenizer> tk;
  if (fs::exists(dir / "tokenizer.json"))
    tk = std::make_shared<const tok::Tokenizer>(tok::Tokenizer::from_dir(path));
  return Transcriber(std::move(e), std::move(tk),
                     whisper_settings(*cfg, read_json_if_exists(dir / "generation_config.json")),
                     audio::WhisperFeatureConfig::from_json(*pre));
}

std::vector<int64_t> Transcriber::prompt(const TranscribeOptions& o) const {
  const WhisperSettings& s = settings_;
  std::vector<int64_t> p{s.decoder_start_token_id};
  if (s.is_multilingual) {
    const std::string lang = language_token(o.language);
    auto it = s.lang_to_id.find(lang);
    if (it == s.lang_to_id.end()) {
      std::string known;
      for (const auto& [k, v] : s.lang_to_id)
        known += (known.empty() ? "" : ", ") + k.substr(2, k.size() - 4);
      HFX_THROW(kComp, "expected a language of this model among [{}], got '{}'", known, o.language);
    }
    p.push_back(it->second);
    auto t = s.task_to_id.find(o.task);
    HFX_CHECK(t != s.task_to_id.end(), kComp, "expected task transcribe or translate (task_to_id), got '{}'",
              o.task);
    p.push_back(t->second);
  } else {
    HFX_CHECK(
        o.language.empty() && o.task == "transcribe", kComp,
        "expected no --language / task for an English-only model (is_multilingual false), got '{}' / '{}'",
        o.language, o.task);
  }
  if (o.timestamps)
    HFX_CHECK(
        s.no_timestamps_token_id, kComp,
        "expected no_timestamps_token_id in generation_config.json for timestamps (the timestamp tokens "
        "follow it), got none");
  else if (s.no_timestamps_token_id)
    p.push_back(*s.no_timestamps_token_id);
  return p;
}

// transformers' segments (whisper_timestamps.h), timed at time_precision = chunk_length / encoder positions
// (30 s / 1500 = 0.02 s), each segment's text its text tokens decoded; r.text joins them.
// Seconds per timestamp position: chunk_length over the encoder's positions (30 / 1500 = 0.02).
double time_precision(const audio::WhisperFeatureConfig& f) {
  return static_cast<double>(f.chunk_length) / (static_cast<double>(f.nb_max_frames) / 2.0);
}

void Transcriber::append_segments(TranscribeResult& r, const std::vector<int64_t>& ids,
                                  int64_t timestamp_begin, double window, double offset) const {
  const double precision = time_precision(features_);
  for (const whisper::SegmentSpan& sp : whisper::segment_spans(ids, timestamp_begin, window)) {
    TranscribeSegment seg;
    seg.ids.assign(ids.begin() + static_cast<std::ptrdiff_t>(sp.begin),
                   ids.begin() + static_cast<std::ptrdiff_t>(sp.end));
    seg.start = offset + sp.start * precision;
    seg.end = offset + sp.stop * precision;
    std::vector<int32_t> text;
    for (int64_t t : seg.ids)
      if (t < timestamp_begin) text.push_back(static_cast<int32_t>(t));
    if (tokenizer_) seg.text = tokenizer_->decode(text, true);
    r.text += seg.text;
    r.segments.push_back(std::move(seg));
  }
}

TranscribeResult Transcriber::transcribe_file(const std::string& path, const TranscribeOptions& opts) {
  return transcribe(audio::read_audio(path), opts);
}

TranscribeResult Transcriber::transcribe(const audio::Waveform& w, const TranscribeOptions& opts) {
  const auto x = audio::resample(w.samples, w.sample_rate, static_cast<int>(features_.sampling_rate));
  if (static_cast<int64_t>(x.size()) <= features_.n_samples)
    return transcribe_features(audio::whisper_log_mel(x, features_), opts);
  // Longer than one chunk: transformers' long-form path (the feature extractor with truncation=False).
  return transcribe_long_features(audio::whisper_log_mel_long(x, features_),
                                  static_cast<int64_t>(x.size()) / features_.hop_length, opts);
}

// transformers 5.x WhisperGenerationMixin.generate runs short and long audio through one loop (batch 1,
// greedy, no temperature fallback, condition_on_prev_tokens off): each window is the features from `seek`,
// zero-padded to nb_max_frames; its sequence loses its pads (all of them, as upstream, but one when pad is
// EOS) and then a final EOS, is cut into segments, and moves seek, until seek passes the last frame. So a
// 30-second clip whose decoding ends inside a segment is decoded again from that segment's start.
TranscribeResult Transcriber::decode_windows(std::span<const float> f, int64_t frames,
                                             const TranscribeOptions& opts) {
  const int64_t M = features_.feature_size, W = features_.nb_max_frames, stride = 2;
  HFX_CHECK(frames > 0 && static_cast<int64_t>(f.size()) == M * frames, kComp,
            "expected input_features [{}, {}] ({} values), got {} values", M, frames, M * frames, f.size());
  TranscribeOptions o = opts;
  if (o.language != "auto") prompt(o);  // a bad language or task fails before the encoder runs
  const int64_t tb = *settings_.no_timestamps_token_id + 1, eos = settings_.eos_token_ids.front();
  const double precision = time_precision(features_);
  TranscribeResult all;
  all.finish_reason = "length";
  std::vector<float> window(static_cast<size_t>(M * W));
  for (int64_t seek = 0; seek < frames;) {
    const int64_t n = std::min(frames - seek, W);
    std::fill(window.begin(), window.end(), 0.0f);
    for (int64_t m = 0; m < M; m++) std::copy_n(f.begin() + m * frames + seek, n, window.begin() + m * W);
    engine_->encode(window, 1, M, W);
    if (o.language == "auto") o.language = detect_language();  // once, on the first window (as transformers)
    TranscribeResult r = transcribe_encoded(o);
    std::vector<int64_t> seq = r.ids;
    if (settings_.pad_token_id && !seq.empty() && seq.back() == *settings_.pad_token_id) {
      auto pads = static_cast<size_t>(std::count(seq.begin(), seq.end(), *settings_.pad_token_id));
      if (*settings_.pad_token_id == eos) pads--;  // upstream keeps that EOS for the fallback's log-prob
      seq.resize(seq.size() - pads);
    }
    if (!seq.empty() && seq.back() == eos) seq.pop_back();
    const size_t before = all.segments.size();
    // A window without a timestamp pair ends at int(n · time_precision_features / time_precision), computed
    // by transformers in float32 (a long tensor times Python floats); the offset is float64.
    const float hop_s =
        static_cast<float>(features_.hop_length) / static_cast<float>(features_.sampling_rate);
    const auto positions =
        static_cast<int64_t>(static_cast<float>(n) * hop_s / static_cast<float>(precision));
    append_segments(all, seq, tb, static_cast<double>(positions),
                    static_cast<double>(seek) * precision / static_cast<double>(stride));
    for (size_t i = before; i < all.segments.size(); i++)
      all.ids.insert(all.ids.end(), all.segments[i].ids.begin(), all.segments[i].ids.end());
    if (all.prompt.empty()) all.prompt = r.prompt;
    all.stats.prefill_s += r.stats.prefill_s;
    all.stats.decode_s += r.stats.decode_s;
    all.stats.engine_s += r.stats.engine_s;
    all.stats.prompt_tokens += r.stats.prompt_tokens;
    all.stats.decode_steps += r.stats.decode_steps;
    all.stats.new_tokens += r.stats.new_tokens;
    all.language = r.language;
    all.finish_reason = r.finish_reason;
    // A window whose last pair is <|0.00|><|0.00|> would not move: transformers' loop decodes the same window
    // forever there; hfx moves on by the whole window instead.
    const int64_t advance = whisper::seek_advance(seq, tb, n, stride);
    seek += advance > 0 ? advance : n;
  }
  return all;
}

// A stop string ends the transcription: its text is cut before the first one, the finish reason is "stop",
// and `ids` keep the shortest prefix whose text holds it (as the decoder-only loop keeps the token that
// completed it). Windows are decoded without it, since a later window may decode a segment again.
void Transcriber::cut_at_stop(TranscribeResult& r, const std::vector<std::string>& stops) const {
  size_t p = std::string::npos;
  for (const auto& s : stops)
    if (!s.empty()) p = std::min(p, r.text.find(s));
  if (p == std::string::npos) return;
  r.text.resize(p);
  r.finish_reason = "stop";
  if (!tokenizer_) return;
  std::vector<int32_t> prefix;
  for (size_t k = 0; k < r.ids.size(); k++) {
    prefix.push_back(static_cast<int32_t>(r.ids[k]));
    const std::string t = tokenizer_->decode(prefix, true);
    if (std::any_of(stops.begin(), stops.end(),
                    [&](const std::string& s) { return !s.empty() && t.find(s) != std::string::npos; })) {
      r.ids.resize(k + 1);
      return;
    }
  }
}

TranscribeResult Transcriber::transcribe_long_features(std::span<const float> f, int64_t frames,
                                                       const TranscribeOptions& opts) {
  HFX_CHECK(settings_.no_timestamps_token_id && !settings_.eos_token_ids.empty(), kComp,
            "expected no_timestamps_token_id and eos_token_id in generation_config.json for long-form audio "
            "(over {} s), got none; cut the audio into {}-second clips",
            features_.chunk_length, features_.chunk_length);
  HFX_CHECK(!opts.single_call, kComp,
            "expected a clip of at most {} s for a single decoder call (single_call, "
            "--single-call), got {} frames; leave it off for long-form transcription",
            features_.chunk_length, frames);
  TranscribeOptions o = opts;
  o.timestamps = true;  // transformers: long-form generation needs (and turns on) timestamps
  TranscribeResult r = decode_windows(f, frames, o);
  cut_at_stop(r, opts.decoding.stop);
  return r;
}

TranscribeResult Transcriber::transcribe_features(std::span<const float> f, const TranscribeOptions& opts) {
  if (!opts.single_call && settings_.no_timestamps_token_id && !settings_.eos_token_ids.empty()) {
    TranscribeResult r = decode_windows(f, features_.nb_max_frames, opts);
    cut_at_stop(r, opts.decoding.stop);
    return r;
  }
  // One decoding of the clip: asked for (transformers' force_unique_generate_call, what Transformers.js
  // does), or the model has no timestamp tokens to cut segments at. Its raw tokens, EOS kept.
  if (opts.language != "auto") prompt(opts);  // a bad language or task fails before the encoder runs
  engine_->encode(f, 1, features_.feature_size, features_.nb_max_frames);
  TranscribeOptions o = opts;
  if (o.language == "auto") o.language = detect_language();
  TranscribeResult r = transcribe_encoded(o);
  if (o.timestamps) {  // the segments of the one sequence; the text is theirs
    std::vector<int64_t> ids = r.ids;
    if (r.finish_reason == "eos") ids.pop_back();
    r.text.clear();
    append_segments(r, ids, *settings_.no_timestamps_token_id + 1,
                    static_cast<double>(features_.nb_max_frames) / 2.0, 0.0);
  }
  cut_at_stop(r, opts.decoding.stop);
  return r;
}

// transformers' WhisperGenerationMixin.detect_language: the decoder on <|startoftranscript|> alone, the
// argmax over the language tokens (lang_to_id) only; the caches are dropped after.
std::string Transcriber::detect_language() {
  const WhisperSettings& s = settings_;
  HFX_CHECK(
      s.is_multilingual && !s.lang_to_id.empty(), kComp,
      "expected a multilingual model (lang_to_id in generation_config.json) to detect the language, got an "
      "English-only one; leave --language out");
  std::vector<float> logits;
  const int64_t start[1] = {s.decoder_start_token_id};
  engine_->step(start, 1, 1, logits);
  engine_->reset_decoder();
  std::string best;
  float top = -std::numeric_limits<float>::infinity();
  for (const auto& [token, id] : s.lang_to_id)
    if (id >= 0 && id < static_cast<int64_t>(logits.size()) && logits[id] > top) {
      top = logits[id];
      best = token;
    }
  return best;
}

// Greedy decoding over the encoded clip: prompt, suppressions, the timestamp rules when asked.
namespace {

// hfx::Engine over Whisper's decoder (the encoder already ran on the window): each call's logits get
// Whisper's processors — suppress_tokens always, begin_suppress_tokens at the first generated position, the
// timestamp rules over the tokens generated so far — before hfx::Generator's own (repetition penalty,
// sampling). Batch 1; the prompt is the decoder prompt.
class WhisperDecoder : public Engine {
 public:
  WhisperDecoder(SpeechSeq2SeqEngine& e, const WhisperSettings& s, const whisper::TimestampRules* rules,
                 int64_t prompt_length)
      : e_(e), s_(s), rules_(rules), prompt_(prompt_length) {}
  std::string name() const override { return e_.name(); }
  int64_t vocab_size() const override { return e_.vocab_size(); }
  void reset() override {
    e_.reset_decoder();
    past_ = 0;
    generated_.clear();
  }
  int64_t past_length() const override { return past_; }

  void step(std::span<const int64_t> ids, std::span<const int64_t>, std::span<const int64_t>, int64_t B,
            int64_t seq, std::vector<float>& logits) override {
    HFX_CHECK(B == 1, kComp, "expected one clip per decoding, got a batch of {}", B);
    for (int64_t i = 0; i < seq; i++)  // the ids fed after the prompt are the tokens generated so far
      if (past_ + i >= prompt_) generated_.push_back(ids[i]);
    e_.step(ids, 1, seq, logits);
    past_ += seq;
    const int64_t V = e_.vocab_size();
    HFX_CHECK(static_cast<int64_t>(logits.size()) == V, kComp, "expected logits [1, {}], got {} values", V,
              logits.size());
    constexpr float kNegInf = -std::numeric_limits<float>::infinity();
    for (int64_t t : s_.suppress_tokens)
      if (t >= 0 && t < V) logits[t] = kNegInf;
    if (generated_.empty())  // SuppressTokensAtBegin: the first position after the prompt
      for (int64_t t : s_.begin_suppress_tokens)
        if (t >= 0 && t < V) logits[t] = kNegInf;
    if (rules_) whisper::apply_timestamp_rules(*rules_, generated_, logits);
  }

 private:
  SpeechSeq2SeqEngine& e_;
  const WhisperSettings& s_;
  const whisper::TimestampRules* rules_;
  int64_t prompt_;
  int64_t past_ = 0;
  std::vector<int64_t> generated_;
};

}  // namespace

TranscribeResult Transcriber::transcribe_encoded(const TranscribeOptions& opts) {
  const WhisperSettings& s = settings_;
  TranscribeResult r;
  r.prompt = prompt(opts);
  if (s.is_multilingual) r.language = language_token(opts.language);
  const int64_t P = static_cast<int64_t>(r.prompt.size());
  const int64_t budget = s.max_length - P;
  const int64_t n = opts.max_new_tokens > 0 ? std::min(opts.max_new_tokens, budget) : budget;
  HFX_CHECK(n > 0, kComp, "expected max_length ({}) above the prompt's {} tokens, got none left",
            s.max_length, P);
  whisper::TimestampRules rules;
  if (opts.timestamps) {
    HFX_CHECK(!s.eos_token_ids.empty(), kComp,
              "expected eos_token_id in generation_config.json for timestamps, got none");
    rules = {*s.no_timestamps_token_id, s.eos_token_ids.front(), s.max_initial_timestamp_index};
  }
  GenerationOptions o = opts.decoding;
  o.max_new_tokens = n;
  o.cached_tokens = 0;
  o.stop.clear();  // stop strings cut the whole transcription (cut_at_stop), not a window a later one redoes
  Generator g(std::make_unique<WhisperDecoder>(*engine_, s, opts.timestamps ? &rules : nullptr, P),
              tokenizer_, s.eos_token_ids, s.pad_token_id);
  GenerationResult res = g.generate_ids({r.prompt}, o);
  r.ids = std::move(res.ids[0]);
  r.text = tokenizer_ ? std::move(res.texts[0]) : std::string();
  r.finish_reason = res.finish_reasons[0];
  r.stats = res.stats;
  return r;
}

}  // namespace hfx
