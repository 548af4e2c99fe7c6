// The generation loop; see include/hfx/runtime/generator.h. Engines are chosen in Generator::open; the
// loop itself only sees Engine::step, so eager and ONNX Runtime share every rule (padding, positions,
// EOS, stop strings, streaming) and differ only in the forward.
#include "hfx/runtime/generator.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <type_traits>

#include <nlohmann/json.hpp>

#include "hfx/artifact/manifest.h"
#include "hfx/core/error.h"
#include "hfx/io/safetensors.h"
#include "hfx/models/model.h"
#include "hfx/models/quantize_model.h"
#include "hfx/tokenizers/tokenizer.h"
#include "kernels/kernels.h"
#include "runtime/generation_config.h"
#include "runtime/json_file.h"

namespace hfx {
namespace fs = std::filesystem;

namespace {

constexpr const char* kComp = "generate";

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

std::optional<nlohmann::json> read_json_if_exists(const fs::path& p) {
  return runtime_detail::read_json_if_exists(p, kComp);
}

void add_unique(std::vector<int64_t>& v, int64_t x) {
  if (std::find(v.begin(), v.end(), x) == v.end()) v.push_back(x);
}

// Length of the longest suffix of `text` that is a proper prefix of some stop string: those bytes may
// still become a stop string, so they are not streamed yet.
size_t stop_holdback(const std::string& text, const std::vector<std::string>& stops) {
  size_t best = 0;
  for (const auto& s : stops)
    for (size_t n = std::min(s.size() - 1, text.size()); n > best; n--)
      if (text.compare(text.size() - n, n, s, 0, n) == 0) {
        best = n;
        break;
      }
  return best;
}

// Earliest occurrence of any stop string at or after `from`; npos if none.
size_t find_stop(const std::string& text, const std::vector<std::string>& stops, size_t from) {
  size_t best = std::string::npos;
  for (const auto& s : stops) {
    size_t p = text.find(s, from);
    if (p < best) best = p;
  }
  return best;
}

struct Row {
  std::vector<int64_t> history;  // prompt + generated (repetition penalty)
  std::vector<int64_t> generated;
  std::unique_ptr<tok::DecodeStream> stream;
  std::string text;      // streamed text so far (cut at a stop string)
  std::string streamed;  // what the callback received
  size_t emitted = 0;    // bytes of `text` handed to the callback (= streamed.size())
  bool stream_broken = false;
  size_t searched = 0;  // stop strings were searched up to here
  sampling::Rng rng;
  bool done = false;
  std::string reason;
};

}  // namespace

std::vector<int64_t> positions_from_mask(std::span<const int64_t> mask, int64_t batch, int64_t total,
                                         int64_t seq) {
  HFX_CHECK(static_cast<int64_t>(mask.size()) == batch * total && seq <= total, kComp,
            "expected a mask of [{}, {}] and seq <= {}, got {} values and seq {}", batch, total, total,
            mask.size(), seq);
  std::vector<int64_t> pos(static_cast<size_t>(batch * seq));
  for (int64_t b = 0; b < batch; b++) {
    int64_t c = 0;
    for (int64_t j = 0; j < total; j++) {
      c += mask[b * total + j];
      if (j >= total - seq) pos[b * seq + (j - (total - seq))] = std::max<int64_t>(c - 1, 0);
    }
  }
  return pos;
}

bool is_export_dir(const std::string& dir) {
  return fs::exists(fs::path(dir) / "manifest.json") || fs::is_directory(fs::path(dir) / "onnx");
}

#ifndef HFX_HAVE_ORT
std::unique_ptr<Engine> make_ort_engine(const std::string& dir, int) {
  HFX_THROW(kComp,
            "expected an hfx built with ONNX Runtime to run {}, got a build without it (use --engine eager)",
            dir);
}
#endif

Generator::Generator(std::unique_ptr<Engine> engine, std::shared_ptr<const tok::Tokenizer> tokenizer,
                     std::vector<int64_t> eos_token_ids, std::optional<int64_t> pad_token_id)
    : engine_(std::move(engine)), tokenizer_(std::move(tokenizer)), eos_(std::move(eos_token_ids)) {
  HFX_CHECK(engine_ != nullptr, kComp, "expected an engine, got none");
  pad_ = pad_token_id ? *pad_token_id : (eos_.empty() ? 0 : eos_.front());
}
Generator::Generator(Generator&&) noexcept = default;
Generator& Generator::operator=(Generator&&) noexcept = default;
Generator::~Generator() = default;

Generator Generator::open(const std::string& path, const GeneratorConfig& config) {
  const fs::path dir(path);
  HFX_CHECK(fs::is_directory(dir), kComp, "expected a checkpoint or export folder, got '{}' (not a folder)",
            path);
  const bool exported = is_export_dir(path);
  std::string kind = config.engine;
  if (kind == "auto") kind = exported ? "ort" : "eager";
  HFX_CHECK(kind == "eager" || kind == "ort", kComp, "expected engine auto, eager or ort, got '{}'",
            config.engine);

  std::unique_ptr<Engine> engine;
  auto cfg_json = read_json_if_exists(dir / "config.json");
  if (kind == "ort") {
    HFX_CHECK(exported, kComp,
              "expected an export folder (with manifest.json or onnx/) for the ort engine, got '{}'", path);
    HFX_CHECK(!config.quantize.enabled(), kComp,
              "expected --quantize only with the eager engine, got engine ort on '{}': an export folder is "
              "quantized when exported (hfx export --quantize)",
              path);
    engine = make_ort_engine(path, config.threads);
  } else {
    HFX_CHECK(cfg_json.has_value(), kComp,
              "expected config.json and model.safetensors in '{}' for the eager engine{}, got no config.json",
              path, exported ? " (an export folder keeps a copy of the checkpoint files)" : "");
    if (config.threads > 0) kernels::set_num_threads(config.threads);
    // An export folder may hold the checkpoint files; if it lacks the weights, its manifest names the
    // checkpoint it came from.
    std::string weights_dir = path;
    const bool has_weights =
        fs::exists(dir / "model.safetensors") || fs::exists(dir / "model.safetensors.index.json");
    if (!has_weights && exported && fs::exists(dir / "manifest.json")) {
      const std::string src = artifact::Manifest::read(path).source_path;
      if (!src.empty() && fs::exists(fs::path(src) / "config.json")) weights_dir = src;
    }
    HFX_CHECK(has_weights || weights_dir != path || !exported, kComp,
              "expected model.safetensors in the export folder '{}' or a manifest.json naming the source "
              "checkpoint for the "
              "eager engine, got neither (pass the checkpoint folder itself instead)",
              path);
    std::shared_ptr<const CausalLM> model = load_causal_lm(weights_dir);
    const quant::QuantOptions q =
        config.quantize.enabled() || !exported ? config.quantize : quant::export_quantization(path);
    if (q.enabled()) {
      std::shared_ptr<Model> qm = quant::quantize_model(*model, q);
      model = std::shared_ptr<const CausalLM>(qm, &as_causal_lm(*qm));
    }
    engine = std::make_unique<EagerEngine>(std::move(model));
  }

  std::shared_ptr<const tok::Tokenizer> tokenizer;
  if (fs::exists(dir / "tokenizer.json"))
    tokenizer = std::make_shared<const tok::Tokenizer>(tok::Tokenizer::from_dir(path));

  SpecialIds ids = special_ids_of(path, tokenizer.get());
  return Generator(std::move(engine), std::move(tokenizer), std::move(ids.eos), ids.pad);
}

GenerationDefaults generation_defaults_of(const std::string& path) {
  GenerationDefaults d;
  const auto j = read_json_if_exists(fs::path(path) / "generation_config.json");
  if (!j || !j->is_object()) return d;
  auto number = [&](const char* key, auto& out) {
    auto it = j->find(key);
    if (it == j->end() || it->is_null()) return false;
    HFX_CHECK(it->is_number(), kComp, "expected generation_config.json's {} to be a number, got {} in '{}'",
              key, it->dump(), path);
    out = it->get<std::decay_t<decltype(out)>>();
    return true;
  };
  if (auto it = j->find("do_sample"); it != j->end() && !it->is_null()) {
    HFX_CHECK(it->is_boolean(), kComp,
              "expected generation_config.json's do_sample to be a bool, got {} in '{}'", it->dump(), path);
    d.do_sample = it->get<bool>();
  }
  number("temperature", d.temperature);
  if (j->contains("top_k") && (*j)["top_k"].is_null())
    d.top_k = 0;  // None: no top-k warper
  else
    number("top_k", d.top_k);
  number("top_p", d.top_p);
  number("repetition_penalty", d.repetition_penalty);
  int64_t n = 0;
  if (number("max_new_tokens", n)) d.max_new_tokens = n;
  return d;
}

SpecialIds special_ids_of(const std::string& path, const tok::Tokenizer* tokenizer) {
  const fs::path dir(path);
  // EOS: generation_config.json wins over config.json (as GenerationConfig.from_model_config); the
  // tokenizer's eos token is added too.
  SpecialIds r;
  auto cfg_json = read_json_if_exists(dir / "config.json");
  auto gen_json = read_json_if_exists(dir / "generation_config.json");
  if (gen_json) r.eos = ids_of(*gen_json, "eos_token_id");
  if (r.eos.empty() && cfg_json) r.eos = ids_of(*cfg_json, "eos_token_id");
  if (tokenizer && tokenizer->eos_id()) add_unique(r.eos, *tokenizer->eos_id());
  for (const auto* j : {gen_json ? &*gen_json : nullptr, cfg_json ? &*cfg_json : nullptr}) {
    if (!j || r.pad) continue;
    auto p = ids_of(*j, "pad_token_id");
    if (!p.empty()) r.pad = p.front();
  }
  if (!r.pad && tokenizer && tokenizer->pad_id()) r.pad = *tokenizer->pad_id();
  return r;
}

GenerationResult Generator::generate(const std::vector<std::string>& prompts,
                                     const GenerationOptions& options, const TokenCallback& callback) {
  HFX_CHECK(tokenizer_ != nullptr, kComp,
            "expected a tokenizer (tokenizer.json) to encode text prompts, got none");
  std::vector<std::vector<int64_t>> ids;
  for (const auto& p : prompts) {
    auto e = tokenizer_->encode(p, options.add_special_tokens);
    ids.emplace_back(e.begin(), e.end());
  }
  return generate_ids(ids, options, callback);
}

namespace {

// What the rows of one generate_ids call share while they advance.
struct RowRules {
  const GenerationOptions& options;
  const std::vector<int64_t>& eos;
  const std::vector<std::string>& stops;
  const tok::Tokenizer* tokenizer;
  bool is_eos(int64_t id) const {
    return !options.ignore_eos && std::find(eos.begin(), eos.end(), id) != eos.end();
  }
  // Generated ids → text, without a final EOS id.
  std::string decode(const std::vector<int64_t>& gen) const {
    std::vector<int32_t> ids;
    ids.reserve(gen.size());
    for (size_t i = 0; i < gen.size(); i++)
      if (!(i + 1 == gen.size() && is_eos(gen[i]))) ids.push_back(static_cast<int32_t>(gen[i]));
    return tokenizer->decode(ids, options.skip_special_tokens);
  }
};

// The longest prompt; every prompt non-empty with ids in [0, V).
int64_t check_prompts(const std::vector<std::vector<int64_t>>& prompts, int64_t V) {
  int64_t L = 0;
  for (size_t r = 0; r < prompts.size(); r++) {
    HFX_CHECK(!prompts[r].empty(), kComp, "expected prompt {} to encode to at least one token, got none", r);
    for (int64_t id : prompts[r])
      HFX_CHECK(id >= 0 && id < V, kComp, "expected token ids in [0, {}), got {} in prompt {}", V, id, r);
    L = std::max<int64_t>(L, static_cast<int64_t>(prompts[r].size()));
  }
  return L;
}

// Prefill inputs: left padding to L, mask 0 on pads, and each row's count of real tokens.
struct Prefill {
  std::vector<int64_t> ids, mask, count;
};
Prefill left_padded(const std::vector<std::vector<int64_t>>& prompts, int64_t L, int64_t pad, int64_t cap) {
  const int64_t B = static_cast<int64_t>(prompts.size());
  Prefill f;
  f.ids.assign(B * L, pad);
  f.mask.reserve(B * cap);
  f.mask.assign(B * L, 0);
  f.count.assign(B, 0);
  for (int64_t r = 0; r < B; r++) {
    const auto& p = prompts[r];
    const int64_t off = L - static_cast<int64_t>(p.size());
    for (size_t j = 0; j < p.size(); j++) {
      f.ids[r * L + off + j] = p[j];
      f.mask[r * L + off + j] = 1;
    }
    f.count[r] = static_cast<int64_t>(p.size());
  }
  return f;
}

// The row's streamed text after token `id`, cut at a stop string (which ends the row).
void extend_text(Row& row, int64_t id, const RowRules& rules) {
  // HF's DecodeStream refuses a decoder whose output is not prefix-stable (e.g. byte-fallback runs
  // of a random model); the row then re-decodes all its ids each step instead.
  if (!row.stream_broken) {
    try {
      row.text += row.stream->step(static_cast<int32_t>(id));
    } catch (const Error&) {
      row.stream_broken = true;
      row.searched = 0;
    }
  }
  if (row.stream_broken) row.text = rules.decode(row.generated);
  if (rules.stops.empty()) return;
  size_t maxlen = 0;
  for (const auto& s : rules.stops) maxlen = std::max(maxlen, s.size());
  size_t from = row.searched >= maxlen ? row.searched - maxlen + 1 : 0;
  size_t p = find_stop(row.text, rules.stops, from);
  row.searched = row.text.size();
  if (p != std::string::npos) {
    row.text.resize(p);
    row.done = true;
    row.reason = "stop";
  }
}

// The row's final text: the decoded ids (which also completes a tail the stream still held, such as an
// incomplete UTF-8 sequence), cut before a stop string.
void finish_text(Row& row, const RowRules& rules) {
  if (!rules.tokenizer) return;
  std::string full = rules.decode(row.generated);
  size_t p = row.reason == "stop" ? find_stop(full, rules.stops, 0) : std::string::npos;
  if (row.reason != "stop" || p != std::string::npos) {
    if (p != std::string::npos) full.resize(p);
    if (full.compare(0, row.emitted, row.streamed) == 0) row.text = std::move(full);
  }
}

// Appends token `id` to the row and decides whether the row ends (eos, stop string, length).
void take_token(Row& row, int64_t id, const RowRules& rules) {
  row.history.push_back(id);
  row.generated.push_back(id);
  if (rules.is_eos(id)) {
    row.done = true;
    row.reason = "eos";
  } else if (row.stream) {
    extend_text(row, id, rules);
  }
  if (!row.done && static_cast<int64_t>(row.generated.size()) >= rules.options.max_new_tokens) {
    row.done = true;
    row.reason = "length";
  }
  if (row.done) finish_text(row, rules);
}

// The event for the text the row may hand out now: never a possible stop-string prefix, never half a
// UTF-8 sequence, only text that extends what was already streamed.
TokenEvent stream_event(Row& row, int64_t r, int64_t id, const std::vector<std::string>& stops) {
  size_t limit = row.text.size();
  if (!row.done) {
    limit -= stop_holdback(row.text, stops);
    while (limit > row.emitted && limit < row.text.size() &&
           (static_cast<unsigned char>(row.text[limit]) & 0xC0) == 0x80)
      limit--;
  }
  // Nothing new where the text no longer extends what was streamed (a re-decoded row, or a stop string cut
  // inside a character that was already handed out): the result's text is the authority then.
  if (limit <= row.emitted || row.text.compare(0, row.emitted, row.streamed) != 0)
    return {r, id, "", row.done};
  TokenEvent ev{r, id, row.text.substr(row.emitted, limit - row.emitted), row.done};
  row.streamed += ev.text;
  row.emitted = limit;
  return ev;
}

// The mask of the next decode step: a column of ones appended to every row (finished rows too, as HF).
void grow_mask(std::vector<int64_t>& mask, std::vector<int64_t>& prev_mask, int64_t B, int64_t total) {
  prev_mask.swap(mask);  // both buffers hold B × cap: no reallocation while the mask grows
  mask.resize(B * (total + 1));
  for (int64_t r = B - 1; r >= 0; r--) {
    std::copy(prev_mask.begin() + r * total, prev_mask.begin() + (r + 1) * total,
              mask.begin() + r * (total + 1));
    mask[r * (total + 1) + total] = 1;
  }
}

}  // namespace

void Generator::check_request(const std::vector<std::vector<int64_t>>& prompts,
                              const GenerationOptions& options, const std::vector<std::string>& stops) const {
  sampling::validate(options.sampling);
  HFX_CHECK(!prompts.empty(), kComp, "expected at least one prompt, got none");
  HFX_CHECK(options.max_new_tokens >= 0, kComp, "expected max_new_tokens >= 0, got {}",
            options.max_new_tokens);
  HFX_CHECK(stops.empty() || tokenizer_, kComp, "expected a tokenizer to match stop strings, got none");
  const int64_t P = options.cached_tokens;  // prompt tokens already in the engine's cache
  if (P > 0) {
    HFX_CHECK(prompts.size() == 1 && P < static_cast<int64_t>(prompts[0].size()), kComp,
              "expected one prompt longer than its {} cached tokens, got {} prompt(s) of {} tokens", P,
              prompts.size(), prompts[0].size());
    HFX_CHECK(engine_->past_length() == P, kComp,
              "expected the {} engine to hold the {} cached tokens, got {}", engine_->name(), P,
              engine_->past_length());
  }
}

GenerationResult Generator::generate_ids(const std::vector<std::vector<int64_t>>& prompts,
                                         const GenerationOptions& options, const TokenCallback& callback) {
  std::vector<std::string> stops;
  for (const auto& s : options.stop)
    if (!s.empty()) stops.push_back(s);
  check_request(prompts, options, stops);
  const int64_t P = options.cached_tokens;
  const RowRules rules{options, options.eos_token_ids.empty() ? eos_ : options.eos_token_ids, stops,
                       tokenizer_.get()};
  const int64_t V = engine_->vocab_size(), B = static_cast<int64_t>(prompts.size());
  const int64_t L = check_prompts(prompts, V);
  GenerationResult res;
  res.prompt_ids = prompts;
  std::vector<Row> rows(B);
  for (int64_t r = 0; r < B; r++) {
    rows[r].history = prompts[r];
    rows[r].history.reserve(prompts[r].size() + options.max_new_tokens);
    rows[r].generated.reserve(options.max_new_tokens);
    rows[r].rng.seed(options.sampling.seed + static_cast<uint64_t>(r));
    if (tokenizer_)
      rows[r].stream = std::make_unique<tok::DecodeStream>(*tokenizer_, options.skip_special_tokens);
  }
  const int64_t cap = L + std::max<int64_t>(options.max_new_tokens, 1);
  Prefill f = left_padded(prompts, L, pad_, cap);
  std::vector<int64_t> prev_mask, step_ids(B), step_pos(B);
  prev_mask.reserve(B * cap);
  // With a cached prefix (batch 1, no padding) only the last L - P ids are fed, at positions P..L-1.
  const std::vector<int64_t> pos = positions_from_mask(f.mask, B, L, L - P);
  if (P > 0) f.ids.erase(f.ids.begin(), f.ids.begin() + P);
  res.stats.prompt_tokens = B * (L - P);
  res.stats.cached_tokens = P;

  std::vector<float> logits;
  int64_t total = L, active = B;
  if (P == 0) engine_->reset();
  if (options.max_new_tokens == 0) {
    for (auto& row : rows) row.reason = "length";
    active = 0;
  } else {
    auto t0 = Clock::now();
    engine_->step(f.ids, f.mask, pos, B, L - P, logits);
    res.stats.prefill_s = res.stats.engine_s = seconds_since(t0);
  }
  auto t_decode = Clock::now();
  while (active > 0) {
    HFX_CHECK(static_cast<int64_t>(logits.size()) == B * V, kComp,
              "expected logits [{}, {}] from the {} engine, got {} values", B, V, engine_->name(),
              logits.size());
    for (int64_t r = 0; r < B; r++) {
      Row& row = rows[r];
      if (row.done) {
        step_ids[r] = pad_;
        continue;
      }
      std::span<float> lr(logits.data() + r * V, static_cast<size_t>(V));
      const int64_t id = sampling::select_next(lr, row.history, options.sampling, row.rng);
      step_ids[r] = id;
      res.stats.new_tokens++;
      take_token(row, id, rules);
      if (row.done) active--;
      if (callback) callback(stream_event(row, r, id, stops));
    }
    if (active == 0) break;
    grow_mask(f.mask, prev_mask, B, total);
    for (int64_t r = 0; r < B; r++) step_pos[r] = f.count[r]++;
    total++;
    auto t0 = Clock::now();
    engine_->step(step_ids, f.mask, step_pos, B, 1, logits);
    res.stats.engine_s += seconds_since(t0);
    res.stats.decode_steps++;
  }
  res.stats.decode_s = seconds_since(t_decode);
  for (Row& row : rows) {
    res.ids.push_back(std::move(row.generated));
    res.texts.push_back(std::move(row.text));
    res.finish_reasons.push_back(row.reason);
  }
  return res;
}

}  // namespace hfx
