// Greedy text-to-text generation (see include/hfx/runtime/text2text.h): the settings as transformers
// reads them, the eager engine over a model's `encoder` / `decoder` components, and the loop with
// transformers' logits processors (NoBadWords, ForcedBOS, ForcedEOS) and EOS/pad rules.
#include "hfx/runtime/text2text.h"

#include <algorithm>
#include <filesystem>
#include <limits>

#include <fmt/format.h>

#include "hfx/artifact/manifest.h"
#include "hfx/core/error.h"
#include "hfx/core/json.h"
#include "hfx/io/safetensors.h"
#include "hfx/models/model.h"
#include "hfx/models/quantize_model.h"
#include "hfx/runtime/generator.h"
#include "hfx/tokenizers/tokenizer.h"
#include "runtime/eager_decoder.h"
#include "runtime/json_file.h"

namespace hfx {
namespace fs = std::filesystem;

namespace {

constexpr const char* kComp = "generate";

std::vector<int64_t> int_list(const nlohmann::json& j, const char* key) {
  std::vector<int64_t> r;
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return r;
  if (it->is_number_integer()) return {it->get<int64_t>()};
  HFX_CHECK(it->is_array(), kComp, "expected {} to be an int or a list of ints, got {}", key, it->dump());
  for (const auto& x : *it) {
    HFX_CHECK(x.is_number_integer(), kComp, "expected {} to be an int or a list of ints, got {}", key,
              it->dump());
    r.push_back(x.get<int64_t>());
  }
  return r;
}

// The generation config's value of `key`, else config.json's (null or absent in both: absent).
const nlohmann::json* field(const nlohmann::json& cfg, const std::optional<nlohmann::json>& gen,
                            const char* key) {
  if (gen && gen->contains(key) && !(*gen)[key].is_null()) return &(*gen)[key];
  if (cfg.contains(key) && !cfg[key].is_null()) return &cfg[key];
  return nullptr;
}

std::optional<nlohmann::json> read_json_if_exists(const fs::path& p) {
  return runtime_detail::read_json_if_exists(p, kComp);
}

// ---- eager engine: the model's own components, one EagerBuilder per encoded batch ----
class EagerSeq2Seq : public Seq2SeqEngine {
 public:
  explicit EagerSeq2Seq(std::shared_ptr<const Model> m) : m_(std::move(m)) {
    HFX_CHECK(m_ && m_->structure() == Structure::EncoderDecoder, kComp,
              "expected an encoder-decoder model, got {}", m_ ? structure_name(m_->structure()) : "none");
    decl_ = m_->component("decoder");
  }
  std::string name() const override { return "eager"; }
  int64_t vocab_size() const override { return m_->config().vocab_size; }

  void encode(std::span<const int64_t> ids, std::span<const int64_t> mask, int64_t B, int64_t S) override {
    HFX_CHECK(static_cast<int64_t>(ids.size()) == B * S && mask.size() == ids.size(), kComp,
              "expected input_ids and attention_mask of [{}, {}], got {} and {} values", B, S, ids.size(),
              mask.size());
    b_ = std::make_unique<EagerBuilder>();
    mask_ = b_->wrap(Tensor::from_ints({B, S}, {mask.begin(), mask.end()}));
    NamedVars out = m_->call("encoder", *b_,
                             {{"input_ids", b_->wrap(Tensor::from_ints({B, S}, {ids.begin(), ids.end()}))},
                              {"attention_mask", mask_}});
    hidden_ = get(out, "last_hidden_state");
    past_.clear();
  }

  void step(std::span<const int64_t> ids, int64_t B, std::vector<float>& logits) override {
    HFX_CHECK(b_ != nullptr, kComp, "expected encode() before a decoder step, got none");
    NamedVars in{{"input_ids", b_->wrap(Tensor::from_ints({B, 1}, {ids.begin(), ids.end()}))},
                 {"encoder_attention_mask", mask_},
                 {"encoder_hidden_states", hidden_}};
    runtime_detail::eager_decoder_step(*m_, decl_, *b_, std::move(in), past_, B, logits);
  }

 private:
  std::shared_ptr<const Model> m_;
  ComponentDecl decl_;
  std::unique_ptr<EagerBuilder> b_;
  Var mask_, hidden_;
  NamedVars past_;
};

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Sets every logit but `keep` to -inf (ForcedBOS / ForcedEOS).
void force(float* row, int64_t V, int64_t keep) {
  std::fill(row, row + V, kNegInf);
  if (keep >= 0 && keep < V) row[keep] = 0.0f;
}

// NoBadWordsLogitsProcessor: a bad word's last id is banned when the row ends with the rest of it.
void ban_bad_words(float* row, int64_t V, const std::vector<int64_t>& seq,
                   const std::vector<std::vector<int64_t>>& bad) {
  for (const auto& w : bad) {
    if (w.empty()) continue;
    const size_t pre = w.size() - 1;
    if (pre > seq.size() || !std::equal(w.begin(), w.end() - 1, seq.end() - static_cast<std::ptrdiff_t>(pre)))
      continue;
    if (w.back() >= 0 && w.back() < V) row[w.back()] = kNegInf;
  }
}

// hfx::Engine over an encoder-decoder: the Generator's "prompt" is the decoder start token of each row; the
// first step (an empty cache) runs the encoder on the source prompts (right-padded, as tokenizers pad encoder
// inputs), and every step applies the seq2seq logits processors transformers runs before the sampling ones
// (NoBadWords, ForcedBOS, ForcedEOS), so the Generator's sampling, stop strings, repetition penalty and
// streaming apply unchanged.
class Seq2SeqDecoder : public Engine {
 public:
  Seq2SeqDecoder(Seq2SeqEngine& e, const Text2TextSettings& s, std::vector<std::vector<int64_t>> sources,
                 int64_t max_new_tokens)
      : e_(e), s_(s), sources_(std::move(sources)), max_length_(1 + max_new_tokens) {}
  std::string name() const override { return e_.name(); }
  int64_t vocab_size() const override { return e_.vocab_size(); }
  void reset() override { past_ = 0; }
  int64_t past_length() const override { return past_; }

  void step(std::span<const int64_t> ids, std::span<const int64_t>, std::span<const int64_t>, int64_t B,
            int64_t seq, std::vector<float>& logits) override {
    HFX_CHECK(seq == 1 && B == static_cast<int64_t>(sources_.size()), kComp,
              "expected one decoder token per row for {} rows, got [{}, {}]", sources_.size(), B, seq);
    if (past_ == 0) encode_sources();
    for (int64_t r = 0; r < B; r++) seqs_[r].push_back(ids[r]);
    e_.step(ids, B, logits);
    const int64_t V = e_.vocab_size();
    HFX_CHECK(static_cast<int64_t>(logits.size()) == B * V, kComp, "expected logits [{}, {}], got {} values",
              B, V, logits.size());
    const int64_t cur_len = ++past_;  // decoder tokens so far, the start included (transformers' cur_len)
    for (int64_t r = 0; r < B; r++) {
      float* row = logits.data() + r * V;
      ban_bad_words(row, V, seqs_[r], s_.bad_words_ids);
      if (cur_len == 1 && s_.forced_bos_token_id) force(row, V, *s_.forced_bos_token_id);
      if (cur_len == max_length_ - 1 && s_.forced_eos_token_id) force(row, V, *s_.forced_eos_token_id);
    }
  }

 private:
  void encode_sources() {
    const int64_t B = static_cast<int64_t>(sources_.size());
    int64_t S = 0;
    for (const auto& p : sources_) S = std::max<int64_t>(S, static_cast<int64_t>(p.size()));
    std::vector<int64_t> ids(B * S, s_.pad_token_id), mask(B * S, 0);
    for (int64_t r = 0; r < B; r++)
      for (size_t j = 0; j < sources_[r].size(); j++) {
        ids[r * S + j] = sources_[r][j];
        mask[r * S + j] = 1;
      }
    e_.encode(ids, mask, B, S);
    seqs_.assign(B, {});
  }

  Seq2SeqEngine& e_;
  const Text2TextSettings& s_;
  std::vector<std::vector<int64_t>> sources_, seqs_;
  int64_t max_length_;
  int64_t past_ = 0;
};

}  // namespace

bool is_text2text_config(const nlohmann::json& config) {
  if (config.is_object() && jsonc::get_or<bool>(config, "is_encoder_decoder", false, kComp, "config.json"))
    return true;
  if (!config.is_object() || !config.contains("model_type") || !config["model_type"].is_string())
    return false;
  const Architecture* a = find_architecture(config["model_type"].get<std::string>());
  return a && !a->heads.empty() && head_of(*a, config) == "seq2seq_lm";
}

void check_not_speech(const nlohmann::json& config, const std::string& path) {
  // A speech encoder-decoder (Whisper: config.json's num_mel_bins) reads log-mel features, not text.
  HFX_CHECK(
      !config.contains("num_mel_bins"), kComp,
      "expected a text-to-text model, got the speech model {} in '{}' (its encoder reads audio features, "
      "not a text prompt): use hfx transcribe MODEL FILE.wav",
      config.value("model_type", "?"), path);
}

Text2TextSettings text2text_settings(const nlohmann::json& cfg, const std::optional<nlohmann::json>& gen) {
  Text2TextSettings s;
  if (const auto* e = field(cfg, gen, "eos_token_id"))
    s.eos_token_ids = int_list(nlohmann::json{{"v", *e}}, "v");
  std::optional<int64_t> pad, bos, start;
  auto one = [&](const char* key) -> std::optional<int64_t> {
    const auto* v = field(cfg, gen, key);
    if (!v) return std::nullopt;
    HFX_CHECK(v->is_number_integer(), kComp, "expected {} to be an int, got {}", key, v->dump());
    return v->get<int64_t>();
  };
  pad = one("pad_token_id");
  bos = one("bos_token_id");
  start = one("decoder_start_token_id");
  s.forced_bos_token_id = one("forced_bos_token_id");
  s.forced_eos_token_id = one("forced_eos_token_id");
  if (!start) start = bos;  // transformers' _get_decoder_start_token_id
  HFX_CHECK(
      start.has_value(), kComp,
      "expected decoder_start_token_id or bos_token_id in generation_config.json / config.json, got neither");
  s.decoder_start_token_id = *start;
  s.pad_token_id = pad ? *pad : (s.eos_token_ids.empty() ? 0 : s.eos_token_ids.front());
  if (const auto* b = field(cfg, gen, "bad_words_ids")) {
    HFX_CHECK(b->is_array(), kComp, "expected bad_words_ids to be a list of lists of ints, got {}",
              b->dump());
    for (const auto& w : *b) s.bad_words_ids.push_back(int_list(nlohmann::json{{"v", w}}, "v"));
  }
  return s;
}

std::unique_ptr<Seq2SeqEngine> make_eager_seq2seq_engine(std::shared_ptr<const Model> model) {
  return std::make_unique<EagerSeq2Seq>(std::move(model));
}

#ifndef HFX_HAVE_ORT
std::unique_ptr<Seq2SeqEngine> make_ort_seq2seq_engine(const std::string& dir, int) {
  HFX_THROW(kComp,
            "expected an hfx built with ONNX Runtime to run {}, got a build without it (use --engine eager)",
            dir);
}
#endif

Text2TextGenerator::Text2TextGenerator(std::unique_ptr<Seq2SeqEngine> engine,
                                       std::shared_ptr<const tok::Tokenizer> tokenizer,
                                       Text2TextSettings settings)
    : engine_(std::move(engine)), tokenizer_(std::move(tokenizer)), settings_(std::move(settings)) {
  HFX_CHECK(engine_ != nullptr, kComp, "expected an engine, got none");
}
Text2TextGenerator::Text2TextGenerator(Text2TextGenerator&&) noexcept = default;
Text2TextGenerator::~Text2TextGenerator() = default;

Text2TextGenerator Text2TextGenerator::open(const std::string& path, const std::string& engine, int threads,
                                            const quant::QuantOptions& quantize) {
  const fs::path dir(path);
  HFX_CHECK(fs::is_directory(dir), kComp, "expected a checkpoint or export folder, got '{}' (not a folder)",
            path);
  const bool exported = is_export_dir(path);
  std::string kind = engine == "auto" ? (exported ? "ort" : "eager") : engine;
  HFX_CHECK(kind == "eager" || kind == "ort", kComp, "expected engine auto, eager or ort, got '{}'", engine);
  auto cfg = read_json_if_exists(dir / "config.json");
  HFX_CHECK(cfg.has_value(), kComp, "expected config.json in '{}', got none", path);
  check_not_speech(*cfg, path);
  std::unique_ptr<Seq2SeqEngine> e;
  if (kind == "ort") {
    HFX_CHECK(exported, kComp,
              "expected an export folder (with manifest.json or onnx/) for the ort engine, got '{}'", path);
    HFX_CHECK(!quantize.enabled(), kComp,
              "expected --quantize only with the eager engine, got engine ort on '{}': an export folder is "
              "quantized when exported (hfx export --quantize)",
              path);
    e = make_ort_seq2seq_engine(path, threads);
  } else {
    std::string weights = path;
    if (!fs::exists(dir / "model.safetensors") && exported && fs::exists(dir / "manifest.json"))
      weights = artifact::Manifest::read(path).source_path;
    std::shared_ptr<const Model> model(load_model(weights));
    const quant::QuantOptions q =
        quantize.enabled() || !exported ? quantize : quant::export_quantization(path);
    if (q.enabled()) model = quant::quantize_model(*model, q);
    e = make_eager_seq2seq_engine(std::move(model));
  }
  std::shared_ptr<const tok::Tokenizer> tk;
  if (fs::exists(dir / "tokenizer.json"))
    tk = std::make_shared<const tok::Tokenizer>(tok::Tokenizer::from_dir(path));
  return Text2TextGenerator(std::move(e), std::move(tk),
                            text2text_settings(*cfg, read_json_if_exists(dir / "generation_config.json")));
}

Text2TextResult Text2TextGenerator::generate(const std::vector<std::string>& prompts,
                                             int64_t max_new_tokens) {
  HFX_CHECK(tokenizer_ != nullptr, kComp,
            "expected a tokenizer (tokenizer.json) to encode text prompts, got none");
  std::vector<std::vector<int64_t>> ids;
  for (const auto& p : prompts) {
    auto e = tokenizer_->encode(p, true);
    ids.emplace_back(e.begin(), e.end());
  }
  return generate_ids(ids, max_new_tokens);
}

Text2TextResult Text2TextGenerator::generate_ids(const std::vector<std::vector<int64_t>>& prompts,
                                                 int64_t max_new_tokens) {
  GenerationOptions o;
  o.max_new_tokens = max_new_tokens;
  GenerationResult g = generate_ids(prompts, o);
  return {std::move(g.prompt_ids), std::move(g.ids), std::move(g.texts), std::move(g.finish_reasons)};
}

GenerationResult Text2TextGenerator::generate_ids(const std::vector<std::vector<int64_t>>& prompts,
                                                  const GenerationOptions& options,
                                                  const TokenCallback& callback) {
  HFX_CHECK(!prompts.empty(), kComp, "expected at least one prompt, got none");
  HFX_CHECK(options.max_new_tokens >= 0, kComp, "expected max_new_tokens >= 0, got {}",
            options.max_new_tokens);
  HFX_CHECK(options.cached_tokens == 0, kComp,
            "expected no cached tokens for an encoder-decoder model (its encoder runs on the whole prompt), "
            "got {}",
            options.cached_tokens);
  const int64_t V = engine_->vocab_size();
  for (size_t r = 0; r < prompts.size(); r++) {
    HFX_CHECK(!prompts[r].empty(), kComp, "expected prompt {} to encode to at least one token, got none", r);
    for (int64_t id : prompts[r])
      HFX_CHECK(id >= 0 && id < V, kComp, "expected token ids in [0, {}), got {} in prompt {}", V, id, r);
  }
  Generator g(std::make_unique<Seq2SeqDecoder>(*engine_, settings_, prompts, options.max_new_tokens),
              tokenizer_, settings_.eos_token_ids, settings_.pad_token_id);
  const std::vector<std::vector<int64_t>> starts(prompts.size(), {settings_.decoder_start_token_id});
  GenerationResult r = g.generate_ids(starts, options, callback);
  r.prompt_ids = prompts;  // the encoder's input; the decoder's was the start token alone
  return r;
}

}  // namespace hfx
