// `hfx generate MODEL_OR_OUT --prompt TEXT ...`: eager generation from a checkpoint folder, or generation
// over an export folder through ONNX Runtime (`--engine eager` runs the reference from the checkpoint
// files in it). One prompt streams its tokens as they come; several are batched (left padding) and
// printed row by row at the end. Timing goes to stderr so stdout holds only the text (or JSON).
// `--chat TEXT` (and `--system TEXT`) renders the model's chat template around the message; `--chat -i`
// reads user turns from stdin, one a line, keeping the conversation and its KV cache (hfx/runtime/chat.h).
// `--image FILE` (repeatable) runs a vision-language checkpoint eagerly or its ONNX export folder in ONNX
// Runtime (hfx/runtime/image_text.h), with --prompt (one image marker per image, written by the user) or
// --chat (the processor's chat template places the markers); the same decoding options apply.
// `--json` prints one schema in every mode (docs/cli.md).
#include <unistd.h>

#include <fmt/format.h>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>

#include "commands.h"
#include "hfx/core/error.h"
#include "hfx/core/progress.h"
#include "hfx/io/safetensors.h"
#include "hfx/models/model.h"
#include "hfx/runtime/chat.h"
#include "hfx/runtime/generator.h"
#include "hfx/runtime/image_text.h"
#include "hfx/runtime/text2text.h"
#include "hfx/runtime/transcribe.h"
#include "hfx/tokenizers/tokenizer.h"

namespace hfx::cli {

namespace {

constexpr int64_t kBarTokens = 32;  // fewer new tokens (all rows together) come back too fast for a bar

struct GenerateArgs {
  std::string model, engine = "auto";
  std::vector<std::string> prompts, stop, images;
  std::optional<std::string> audio;
  std::optional<std::string> chat, system, tools;
  std::optional<int64_t> max_new_tokens;  // unset: generation_config.json's max_new_tokens, else 64
  bool greedy = false, json = false, stream = false, ignore_eos = false, raw = false, interactive = false;
  std::optional<float> temperature, top_p;
  std::optional<int64_t> top_k;
  std::optional<uint64_t> seed;
  std::optional<float> repetition_penalty;
  GenerationDefaults defaults;  // the model's generation_config.json (run_generate reads it)
  int threads = 0;
  std::string quantize = "none", activations = "f32";
  int group_size = 32;
  bool symmetric = false, quantize_embedding = false;
  GeneratorConfig config() const {
    quant::QuantOptions q = quant::parse_options(quantize, group_size, symmetric, activations);
    q.embedding = quantize_embedding && q.enabled();
    return {.engine = engine, .threads = threads, .quantize = q};
  }
};

// What config.json says the model is, before anything loads: its generation structure decides which loop
// runs and which options have a meaning. Empty when the folder has no readable config.json or an unknown
// model_type (the loaders then say so).
struct ModelKind {
  Structure structure = Structure::DecoderOnly;
  std::string type;
  bool speech = false;  // an encoder-decoder over audio features (Whisper)
  std::string what() const {
    return fmt::format("the {}{} model {}", speech ? "speech " : "", structure_name(structure), type);
  }
};

std::optional<ModelKind> model_kind(const std::string& dir) {
  const std::string path = dir + "/config.json";
  if (!std::filesystem::exists(path)) return std::nullopt;
  try {
    ModelKind k;
    const nlohmann::json config = nlohmann::json::parse(io::read_file(path));
    k.structure = structure_of_config(config);
    k.type = config.value("model_type", "");
    k.speech = config.contains("num_mel_bins");
    return k;
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  } catch (const Error&) {
    return std::nullopt;
  }
}

using ojson = nlohmann::ordered_json;

// --json: one schema for every mode (docs/cli.md, "hfx generate --json").
ojson json_row(const std::string& prompt, const std::vector<int64_t>& prompt_ids,
               const std::vector<int64_t>& ids, const std::string& text, const std::string& finish_reason) {
  return {{"prompt", prompt},
          {"prompt_ids", prompt_ids},
          {"ids", ids},
          {"text", text},
          {"finish_reason", finish_reason}};
}

ojson json_decoding(const GenerationOptions& o);

ojson json_doc(const char* mode, const std::string& engine, ojson rows, double total_s,
               const GenerationStats& s, const GenerationOptions& o) {
  ojson t = {{"total_s", total_s},
             {"prefill_s", s.prefill_s},
             {"decode_s", s.decode_s},
             {"prompt_tokens", s.prompt_tokens},
             {"cached_tokens", s.cached_tokens},
             {"new_tokens", s.new_tokens}};
  return {{"mode", mode},
          {"engine", engine},
          {"rows", std::move(rows)},
          {"timings", std::move(t)},
          {"decoding", json_decoding(o)}};
}

// Generated text may end inside a UTF-8 character (a stop string or the token budget cut it there): such
// bytes are written as U+FFFD, not an exception.
std::string dump(const ojson& j, int indent) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The decoding options as transformers' generate() settles them: the flags, else the model's
// generation_config.json, else transformers' global defaults. Sampling flags imply sampling; --greedy wins
// over a do_sample in the file.
GenerationOptions options_from(const GenerateArgs& a) {
  const bool sampling_flags = a.temperature || a.top_k || a.top_p || a.seed;
  HFX_CHECK(!(a.greedy && sampling_flags), "generate",
            "expected either --greedy or sampling flags (--temperature/--top-k/--top-p/--seed), got both");
  const GenerationDefaults& d = a.defaults;
  GenerationOptions o;
  o.max_new_tokens = a.max_new_tokens.value_or(d.max_new_tokens.value_or(64));
  o.stop = a.stop;
  o.ignore_eos = a.ignore_eos;
  o.add_special_tokens = !a.raw;
  o.sampling.greedy = a.greedy || !(sampling_flags || d.do_sample);
  o.sampling.temperature = a.temperature.value_or(d.temperature);
  o.sampling.top_k = a.top_k.value_or(d.top_k);
  o.sampling.top_p = a.top_p.value_or(d.top_p);
  o.sampling.seed = a.seed.value_or(0);
  o.sampling.repetition_penalty = a.repetition_penalty.value_or(d.repetition_penalty);
  return o;
}

// --json's "decoding": the options in effect (from the flags or the model's generation_config.json).
ojson json_decoding(const GenerationOptions& o) {
  return {{"do_sample", !o.sampling.greedy},
          {"temperature", o.sampling.temperature},
          {"top_k", o.sampling.top_k},
          {"top_p", o.sampling.top_p},
          {"repetition_penalty", o.sampling.repetition_penalty},
          {"seed", o.sampling.seed},
          {"max_new_tokens", o.max_new_tokens},
          {"ignore_eos", o.ignore_eos},
          {"stop", o.stop}};
}

void print_text(const TokenEvent& e) {
  if (e.text.empty()) return;
  std::fwrite(e.text.data(), 1, e.text.size(), stdout);
  std::fflush(stdout);
}

TokenCallback output_callback(const GenerateArgs& a, bool one_row);

// An encoder-decoder checkpoint or export (t5, bart, marian, ...): the decoding options of decoder-only
// models through the Generator's loop; one prompt streams, several print row by row.
void run_text2text(const GenerateArgs& a) {
  const GenerationOptions o = options_from(a);
  Text2TextGenerator g = Text2TextGenerator::open(a.model, a.engine, a.threads, a.config().quantize);
  HFX_CHECK(g.tokenizer() != nullptr, "generate",
            "expected tokenizer.json in '{}' to encode the prompts, got none", a.model);
  std::vector<std::vector<int64_t>> ids;
  for (const auto& p : a.prompts) {
    const auto e = g.tokenizer()->encode(p, !a.raw);
    ids.emplace_back(e.begin(), e.end());
  }
  const bool stream = a.prompts.size() == 1 && !a.json;
  const auto t0 = std::chrono::steady_clock::now();
  GenerationResult r = g.generate_ids(ids, o, output_callback(a, a.prompts.size() == 1));
  if (a.json) {
    ojson rows = ojson::array();
    for (size_t i = 0; i < r.texts.size(); i++)
      rows.push_back(json_row(a.prompts[i], r.prompt_ids[i], r.ids[i], r.texts[i], r.finish_reasons[i]));
    fmt::print("{}\n",
               dump(json_doc("text2text", g.engine().name(), std::move(rows), seconds_since(t0), r.stats, o),
                    a.stream ? -1 : 2));
  } else if (stream) {
    fmt::print("\n");
  } else {
    for (size_t i = 0; i < r.texts.size(); i++) fmt::print("--- [{}] {}\n{}\n", i, a.prompts[i], r.texts[i]);
  }
}

// --json --stream: one JSON line per generated token ({"row", "id", "text", "finished"}), before the final
// object (printed on one line then).
void print_event(const TokenEvent& e) {
  const ojson j = {{"row", e.row}, {"id", e.token}, {"text", e.text}, {"finished", e.finished}};
  fmt::print("{}\n", dump(j, -1));
  std::fflush(stdout);
}

// What each generated token does on stdout: streamed text (one row, text mode), a JSON line (--json
// --stream), or nothing (the result prints at the end).
TokenCallback output_callback(const GenerateArgs& a, bool one_row) {
  if (a.json) return a.stream ? TokenCallback(print_event) : TokenCallback();
  return one_row ? TokenCallback(print_text) : TokenCallback();
}

// --tools FILE.json: the tool schemas apply_chat_template(tools=...) takes, checked before the model loads.
// A template that never reads `tools` would ignore them silently; that is refused, not ignored.
ojson read_tools(const std::string& path, const tok::ChatTemplate& t, const std::string& model) {
  ojson tools;
  try {
    tools = ojson::parse(io::read_file(path));
  } catch (const nlohmann::json::exception& e) {
    HFX_THROW("generate", "expected valid JSON in --tools file '{}', got: {}", path, e.what());
  }
  HFX_CHECK(tools.is_array() && !tools.empty(), "generate",
            "expected --tools file '{}' to hold a non-empty list of tool schemas "
            "([{{\"type\": \"function\", \"function\": {{\"name\": ...}}}}]), got {}",
            path, tools.is_array() ? "an empty list" : tools.type_name());
  HFX_CHECK(t.source(true).find("tools") != std::string::npos, "generate",
            "expected a chat template that takes tools for --tools, got one of {} that never reads `tools` "
            "(the model was not trained with tool schemas in its prompt): drop --tools",
            model);
  return tools;
}

// --chat: one turn, or (-i) one turn per stdin line. Text mode streams each reply and ends it with a newline,
// with a line on stderr per turn saying how many prompt tokens came from the cache; --json prints one object
// per turn (pretty for one turn, one line each with -i). `vlm`: the images go with the first message.
void run_chat(const GenerateArgs& a, Generator& g, tok::ChatTemplate chat_template,
              const rt::ImageTextGenerator* vlm, const std::string& model) {
  ojson tools;
  if (a.tools) tools = read_tools(*a.tools, chat_template, model);
  ChatSession chat(g, std::move(chat_template), a.system);
  if (a.tools) chat.set_tools(std::move(tools));
  if (vlm) {
    chat.set_encoder([vlm](const std::string& r) { return rt::encode_chat_prompt(*vlm, r); });
    chat.attach_images(static_cast<int>(a.images.size()));
  }
  const GenerationOptions o = options_from(a);
  auto turn = [&](const std::string& user, int n) {
    const auto t0 = std::chrono::steady_clock::now();
    GenerationResult r = chat.send(user, o, output_callback(a, true));
    const ChatTurnStats& t = chat.last_turn();
    if (a.json) {
      ojson rows = ojson::array(
          {json_row(chat.last_prompt(), r.prompt_ids[0], r.ids[0], r.texts[0], r.finish_reasons[0])});
      ojson j = json_doc("chat", g.engine().name(), std::move(rows), seconds_since(t0), r.stats, o);
      j["turn"] = n;
      j["message"] = user;
      if (vlm && n == 1) j["images"] = a.images;
      fmt::print("{}\n", dump(j, a.interactive || a.stream ? -1 : 2));
    } else {
      fmt::print("\n");
    }
    std::fflush(stdout);
    std::string dropped;
    if (t.cache_dropped)
      dropped = " (cache dropped: the conversation re-rendered differently from its start)";
    if (t.cropped_tokens > 0)
      dropped = fmt::format(" ({} cached ids cut: the conversation re-rendered differently there)",
                            t.cropped_tokens);
    fmt::print(stderr, "hfx: chat turn {}: {} prompt tokens, {} prefilled, {} from the cache{}; ", n,
               t.prompt_tokens, t.prefilled_tokens, t.cached_tokens, dropped);
    fmt::print(stderr, "{} engine, {} new tokens ({})\n", g.engine().name(), r.stats.new_tokens,
               r.finish_reasons[0]);
  };
  if (!a.interactive) return turn(*a.chat, 1);
  const bool tty = ::isatty(STDIN_FILENO);
  int n = 0;
  std::string line;
  if (a.chat && !a.chat->empty()) turn(*a.chat, ++n);
  while (true) {
    if (tty) fmt::print(stderr, "> ");
    if (!std::getline(std::cin, line)) break;
    if (!line.empty()) turn(line, ++n);
  }
}

// --prompt (repeatable): one prompt streams its tokens as they come; several are batched and printed row by
// row at the end; --json prints the rows at the end. `ids`: the prompts already encoded (a vision-language
// model's, markers expanded); empty: the generator encodes them.
void run_prompts(const GenerateArgs& a, Generator& g, const std::vector<std::vector<int64_t>>& ids,
                 const char* mode) {
  const GenerationOptions o = options_from(a);
  const bool stream = a.prompts.size() == 1 && !a.json;
  // Long generations show a token bar, unless the text itself streams to the same terminal.
  const int64_t budget = o.max_new_tokens * static_cast<int64_t>(a.prompts.size());
  std::optional<Progress> bar;
  if (budget >= kBarTokens && !(stream && ::isatty(STDOUT_FILENO)))
    bar.emplace("generate", static_cast<uint64_t>(budget), Progress::Unit::kTokens);
  uint64_t tokens = 0;
  const TokenCallback out = output_callback(a, stream);
  TokenCallback cb = [&](const TokenEvent& e) {
    if (bar) bar->update(++tokens);
    if (out) out(e);
  };
  const auto t0 = std::chrono::steady_clock::now();
  GenerationResult r = ids.empty() ? g.generate(a.prompts, o, cb) : g.generate_ids(ids, o, cb);
  if (bar) bar->finish();
  if (a.json) {
    ojson rows = ojson::array();
    for (size_t i = 0; i < r.texts.size(); i++)
      rows.push_back(json_row(a.prompts[i], r.prompt_ids[i], r.ids[i], r.texts[i], r.finish_reasons[i]));
    ojson j = json_doc(mode, g.engine().name(), std::move(rows), seconds_since(t0), r.stats, o);
    if (!a.images.empty()) j["images"] = a.images;
    fmt::print("{}\n", dump(j, a.stream ? -1 : 2));
  } else if (stream) {
    fmt::print("\n");
  } else {
    for (size_t i = 0; i < r.texts.size(); i++) fmt::print("--- [{}] {}\n{}\n", i, a.prompts[i], r.texts[i]);
  }
  const double dec = r.stats.decode_s > 0
                         ? static_cast<double>(r.stats.decode_steps * r.texts.size()) / r.stats.decode_s
                         : 0;
  fmt::print(stderr, "hfx: {} engine, batch {}, {} new tokens; prefill {:.1f} ms, decode {:.1f} tok/s\n",
             g.engine().name(), r.texts.size(), r.stats.new_tokens, r.stats.prefill_s * 1e3, dec);
}

// A vision-language checkpoint (eager) or its ONNX export (ort), with --image (none: text alone) and --prompt
// (markers written by the user) or --chat (the processor's chat template places them).
void run_image_text(const GenerateArgs& a, const std::string& model) {
  if (!a.chat && a.prompts.size() != 1)
    throw UsageError("generate",
                     fmt::format("expected one --prompt (or --chat) for {}: a vision-language model "
                                 "runs one conversation at a time, got {} prompts",
                                 model, a.prompts.size()));
  rt::ImageTextGenerator vlm = rt::open_image_text(a.model, a.images, a.config());
  if (a.chat) return run_chat(a, vlm.generator, tok::ChatTemplate::from_dir(a.model, model), &vlm, model);
  run_prompts(a, vlm.generator, {vlm.encode(a.prompts[0], !a.raw)}, "image");
}

// --audio: a speech model (Whisper) checkpoint or export transcribes the clip (English, no timestamps: hfx
// transcribe has the language, task and timestamp options) with the common decoding options. The text is
// printed when final: a window's segments can be decoded again from their start, so nothing streams.
void run_speech(const GenerateArgs& a, const std::string& model) {
  HFX_CHECK(a.prompts.empty() && !a.chat && !a.raw && a.images.empty(), "generate",
            "expected --audio alone for {} (its decoder prompt is its own start, language and task tokens), "
            "got --prompt, --chat, --image or --no-special-tokens",
            model);
  HFX_CHECK(a.max_new_tokens.value_or(1) > 0, "generate",
            "expected --max-new-tokens of at least 1 for {} (each 30-second window decodes at least one "
            "token), got 0",
            model);
  HFX_CHECK(!a.stream, "generate",
            "expected no --stream for {}: a window's segments can be decoded again from their start, so its "
            "text is final only at the end",
            model);
  const GenerationOptions o = options_from(a);
  TranscribeOptions t;
  t.max_new_tokens = a.max_new_tokens.value_or(a.defaults.max_new_tokens.value_or(0));  // 0: max_length
  t.decoding = o;
  const auto t0 = std::chrono::steady_clock::now();
  Transcriber tr = Transcriber::open(a.model, a.engine, a.threads, a.config().quantize);
  const TranscribeResult r = tr.transcribe_file(*a.audio, t);
  if (!a.json) return fmt::print("{}\n", r.text);
  GenerationOptions shown = o;
  shown.max_new_tokens = t.max_new_tokens > 0 ? t.max_new_tokens : tr.settings().max_length;
  ojson j = json_doc("speech", tr.engine().name(),
                     ojson::array({json_row("", r.prompt, r.ids, r.text, r.finish_reason)}),
                     seconds_since(t0), r.stats, shown);
  j["audio"] = ojson::array({*a.audio});
  fmt::print("{}\n", dump(j, 2));
}

void check_usage(const GenerateArgs& a) {
  if (a.stream && !a.json)
    throw UsageError(
        "generate",
        "expected --stream together with --json (JSON Lines per token; text mode already streams "
        "one prompt's tokens as they come), got it alone");
  if (a.chat || a.interactive) {
    if (!a.prompts.empty() || a.raw)
      throw UsageError(
          "generate",
          "expected --chat without --prompt or --no-special-tokens (the chat template writes the "
          "special tokens), got them together");
    if (a.interactive && !a.chat)
      throw UsageError("generate", "expected --interactive together with --chat, got it alone");
    if (!a.interactive && a.chat->empty())
      throw UsageError("generate",
                       "expected a message after --chat (or --chat -i for an interactive chat), got none");
  } else {
    if (a.system) throw UsageError("generate", "expected --system together with --chat, got it alone");
    if (a.tools) throw UsageError("generate", "expected --tools together with --chat, got it alone");
    if (a.prompts.empty() && !a.audio)
      throw UsageError("generate", "expected --prompt TEXT, --chat TEXT or --audio FILE, got none");
  }
}

// Each structure's loop: the refusals of options without a meaning there name the structure.
void run_generate(GenerateArgs a) {
  a.model = resolve_model(a.model);
  check_usage(a);
  const std::optional<ModelKind> kind = model_kind(a.model);
  a.defaults = generation_defaults_of(a.model);
  const std::string model = kind ? kind->what() : fmt::format("the model in '{}'", a.model);
  const bool ort = a.engine == "ort" || (a.engine == "auto" && is_export_dir(a.model));
  HFX_CHECK(
      !ort || a.quantize == "none", "generate",
      "expected --quantize only with the eager engine, got the ort engine on {} in '{}': an export folder "
      "is quantized when exported (hfx export --quantize), or add --engine eager",
      model, a.model);
  HFX_CHECK(!a.audio || !kind || kind->speech, "generate",
            "expected a speech model (whisper) for --audio, got {}: it takes no audio", model);
  if (kind && kind->speech) {
    HFX_CHECK(a.audio.has_value(), "generate",
              "expected --audio FILE for {} (it transcribes audio, it does not continue a text prompt), got "
              "none; hfx transcribe has its language, task and timestamp options",
              model);
    return run_speech(a, model);
  }
  HFX_CHECK(!kind || kind->structure != Structure::EncoderOnly, "generate",
            "expected a model that generates text, got {} (it maps text to hidden states, embeddings or "
            "labels, with no generation loop): use hfx embed MODEL --text TEXT, or hfx export",
            model);
  HFX_CHECK(a.images.empty() || !kind || kind->structure == Structure::VisionLanguage, "generate",
            "expected a vision-language model for --image, got {}: it takes no images", model);
  if (kind && kind->structure == Structure::VisionLanguage) return run_image_text(a, model);
  if (!a.images.empty()) return run_image_text(a, model);  // no config.json: the loader says what is missing
  if (kind && kind->structure == Structure::EncoderDecoder) {
    HFX_CHECK(!a.chat, "generate",
              "expected a decoder-only or vision-language model for --chat, got {} (its encoder reads the "
              "source text as given, with no chat template): use --prompt",
              model);
    return run_text2text(a);
  }
  if (a.chat) {
    tok::ChatTemplate chat_template = tok::ChatTemplate::from_dir(a.model, model);
    Generator g = Generator::open(a.model, a.config());
    return run_chat(a, g, std::move(chat_template), nullptr, model);
  }
  Generator g = Generator::open(a.model, a.config());
  run_prompts(a, g, {}, "prompt");
}

}  // namespace

void register_generate(CLI::App& app) {
  auto a = std::make_shared<GenerateArgs>();
  auto* cmd = app.add_subcommand(
      "generate", "Generate text from a checkpoint (eager) or an export folder (ONNX Runtime)");
  cmd->footer(
      "Example:\n  hfx generate tiny-llama-onnx --prompt 'Hello, world' --max-new-tokens 16 --greedy\n"
      "  hfx generate Qwen/Qwen2.5-0.5B-Instruct --chat 'Name three colors' --system 'Be brief.'\n"
      "  hfx generate Qwen/Qwen2.5-0.5B-Instruct --chat -i   (one user turn per line on stdin)\n"
      "  hfx generate Qwen/Qwen2.5-0.5B-Instruct --chat 'Weather in Paris?' --tools tools.json\n"
      "    (tools.json: [{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", ...}}])\n"
      "  hfx generate tiny-llava --image cat.png --chat 'What is in the picture?' --json");
  cmd->add_option("model", a->model, "Checkpoint folder, export folder or model id ORG/NAME[@REVISION]")
      ->required();
  cmd->add_option("--prompt", a->prompts, "Prompt text (repeat for a batch)");
  cmd->add_option(
      "--image", a->images,
      "PNG/JPEG for a vision-language model (llava, gemma3, idefics3, smolvlm, qwen2_vl), "
      "repeatable: with --prompt one image marker per image in it; with --chat the images go with "
      "the first message");
  cmd->add_option(
         "--audio", a->audio,
         "WAV/FLAC for a speech model (whisper): transcribed with the decoding options (hfx transcribe "
         "has language, task and timestamps)")
      ->check(CLI::ExistingFile);
  CLI::Option* chat =
      cmd->add_option("--chat", a->chat,
                      "User message, wrapped in the model's chat template (value optional with -i)")
          ->expected(0, 1);
  cmd->add_option("--system", a->system, "System prompt for --chat");
  cmd->add_option(
         "--tools", a->tools,
         "With --chat: JSON file with a list of tool schemas, passed to the chat template as `tools`")
      ->check(CLI::ExistingFile);
  cmd->add_flag(
      "-i,--interactive", a->interactive,
      "With --chat: read user turns from stdin line by line, keeping the conversation and its KV cache");
  cmd->add_option("--max-new-tokens", a->max_new_tokens,
                  "Tokens to generate per prompt (default: generation_config.json's max_new_tokens, else 64)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag("--greedy", a->greedy,
                "Argmax decoding (the default unless sampling flags are given or generation_config.json says "
                "do_sample)");
  cmd->add_option("--temperature", a->temperature,
                  "Sampling temperature (> 0; default: generation_config.json's, else 1)");
  cmd->add_option("--top-k", a->top_k,
                  "Keep the k most likely tokens (0 = off; default: generation_config.json's, else 50)");
  cmd->add_option("--top-p", a->top_p,
                  "Nucleus sampling mass in [0, 1] (default: generation_config.json's, else 1)");
  cmd->add_option("--seed", a->seed, "RNG seed (row r uses seed + r)");
  cmd->add_option("--repetition-penalty", a->repetition_penalty,
                  "HF repetition penalty (1 = off; default: generation_config.json's, else 1)");
  cmd->add_option("--stop", a->stop, "Stop when the text contains this string (repeatable; it is cut off)");
  cmd->add_option("--engine", a->engine, "auto | eager | ort")
      ->check(CLI::IsMember({"auto", "eager", "ort"}));
  cmd->add_option("--threads", a->threads, "Compute threads (0 = default)");
  cmd->add_option("--quantize", a->quantize, "Eager: quantize the linear layers at load: none | int8 | int4");
  cmd->add_option("--group-size", a->group_size, "--quantize: input features per scale (32, 64, 128)");
  cmd->add_flag("--symmetric", a->symmetric, "--quantize: symmetric codes (no zero points)");
  cmd->add_flag("--quantize-embedding", a->quantize_embedding, "--quantize: the token embedding table too");
  cmd->add_option("--activations", a->activations,
                  "--quantize: f32 | int8 (the activations rounded to int8 per block, as ONNX Runtime's "
                  "MatMulNBits accuracy_level 4; AVX-512 VNNI integer kernels where the CPU has them)")
      ->check(CLI::IsMember({"f32", "int8"}));
  cmd->add_flag("--ignore-eos", a->ignore_eos, "Keep generating past EOS");
  cmd->add_flag("--no-special-tokens", a->raw, "Encode prompts without BOS/template tokens");
  cmd->add_flag("--stream", a->stream,
                "With --json: one JSON line per generated token ({\"row\", \"id\", \"text\", \"finished\"}), "
                "then the result on one line");
  cmd->add_flag("--json", a->json,
                "Print the rendered prompt, its ids, the new ids, text, finish reason and timings as JSON "
                "(one schema in every mode: docs/cli.md)");
  cmd->callback([a, chat] {
    if (chat->count() > 0 && !a->chat) a->chat = "";  // a bare --chat (for -i)
    run_generate(*a);
  });
}

}  // namespace hfx::cli
