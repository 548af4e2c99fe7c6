// `hfx generate MODEL_OR_OUT --prompt TEXT ...`: eager generation from a checkpoint folder, or generation
// over an export folder through ONNX Runtime (`--engine eager` runs the reference from the checkpoint
// files in it). One prompt streams its tokens as they come; several are batched (left padding) and
// printed row by row at the end. Timing goes to stderr so stdout holds only the text (or JSON).
// `--chat TEXT` (and `--system TEXT`) renders the model's chat template around the message; `--chat -i`
// reads user turns from stdin, one a line, keeping the conversation and its KV cache (hfx/runtime/chat.h).
// `--image FILE` (repeatable, one <image> marker each in the prompt) runs a llava checkpoint eagerly or
// its ONNX export folder in ONNX Runtime (hfx/runtime/image_text.h).
#include <unistd.h>

#include <fmt/format.h>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>

#include "commands.h"
#include "hfx/core/error.h"
#include "hfx/core/progress.h"
#include "hfx/io/safetensors.h"
#include "hfx/runtime/chat.h"
#include "hfx/runtime/generator.h"
#include "hfx/runtime/image_text.h"
#include "hfx/runtime/text2text.h"

namespace hfx::cli {

namespace {

constexpr int64_t kBarTokens = 32;  // fewer new tokens (all rows together) come back too fast for a bar

struct GenerateArgs {
  std::string model, engine = "auto";
  std::vector<std::string> prompts, stop, images;
  std::optional<std::string> chat, system, tools;
  int64_t max_new_tokens = 64;
  bool greedy = false, json = false, ignore_eos = false, raw = false, interactive = false;
  std::optional<float> temperature, top_p;
  std::optional<int64_t> top_k;
  std::optional<uint64_t> seed;
  float repetition_penalty = 1.0f;
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

// Encoder-decoder checkpoints and exports (t5, bart, marian): greedy text-to-text.
bool is_text2text_dir(const std::string& dir) {
  std::string path = dir + "/config.json";
  if (!std::filesystem::exists(path)) return false;
  try {
    return is_text2text_config(nlohmann::json::parse(io::read_file(path)));
  } catch (const nlohmann::json::exception&) {
    return false;  // the generator reports the bad JSON
  }
}

void run_text2text(const GenerateArgs& a) {
  HFX_CHECK(!(a.temperature || a.top_k || a.top_p || a.seed) && a.repetition_penalty == 1.0f &&
                a.stop.empty() && !a.ignore_eos,
            "generate",
            "expected greedy decoding for an encoder-decoder model (no sampling, repetition penalty, stop or "
            "--ignore-eos), got some");
  HFX_CHECK(a.quantize == "none", "generate",
            "expected no --quantize for an encoder-decoder model (only decoder-only "
            "models built on the shared decoder blocks quantize), got --quantize {}",
            a.quantize);
  Text2TextGenerator g = Text2TextGenerator::open(a.model, a.engine, a.threads);
  Text2TextResult r = g.generate(a.prompts, a.max_new_tokens);
  if (a.json) {
    nlohmann::json j;
    j["engine"] = g.engine().name();
    for (size_t i = 0; i < r.texts.size(); i++)
      j["rows"].push_back({{"prompt", a.prompts[i]},
                           {"prompt_ids", r.prompt_ids[i]},
                           {"ids", r.ids[i]},
                           {"text", r.texts[i]},
                           {"finish_reason", r.finish_reasons[i]}});
    fmt::print("{}\n", j.dump(2));
    return;
  }
  if (r.texts.size() == 1)
    fmt::print("{}\n", r.texts[0]);
  else
    for (size_t i = 0; i < r.texts.size(); i++) fmt::print("--- [{}] {}\n{}\n", i, a.prompts[i], r.texts[i]);
}

GenerationOptions options_from(const GenerateArgs& a) {
  const bool sampling_flags = a.temperature || a.top_k || a.top_p || a.seed;
  HFX_CHECK(!(a.greedy && sampling_flags), "generate",
            "expected either --greedy or sampling flags (--temperature/--top-k/--top-p/--seed), got both");
  GenerationOptions o;
  o.max_new_tokens = a.max_new_tokens;
  o.stop = a.stop;
  o.ignore_eos = a.ignore_eos;
  o.add_special_tokens = !a.raw;
  o.sampling.greedy = !sampling_flags;
  if (a.temperature) o.sampling.temperature = *a.temperature;
  if (a.top_k) o.sampling.top_k = *a.top_k;
  if (a.top_p) o.sampling.top_p = *a.top_p;
  if (a.seed) o.sampling.seed = *a.seed;
  o.sampling.repetition_penalty = a.repetition_penalty;
  return o;
}

void print_text(const TokenEvent& e) {
  if (e.text.empty()) return;
  std::fwrite(e.text.data(), 1, e.text.size(), stdout);
  std::fflush(stdout);
}

// --tools FILE.json: the tool schemas apply_chat_template(tools=...) takes, checked before the model loads.
// A template that never reads `tools` would ignore them silently; that is refused, not ignored.
nlohmann::ordered_json read_tools(const std::string& path, const tok::ChatTemplate& t) {
  nlohmann::ordered_json tools;
  try {
    tools = nlohmann::ordered_json::parse(io::read_file(path));
  } catch (const nlohmann::json::exception& e) {
    HFX_THROW("generate", "expected valid JSON in --tools file '{}', got: {}", path, e.what());
  }
  HFX_CHECK(tools.is_array() && !tools.empty(), "generate",
            "expected --tools file '{}' to hold a non-empty list of tool schemas "
            "([{{\"type\": \"function\", \"function\": {{\"name\": ...}}}}]), got {}",
            path, tools.is_array() ? "an empty list" : tools.type_name());
  HFX_CHECK(t.source(true).find("tools") != std::string::npos, "generate",
            "expected a chat template that takes tools for --tools, got one that never reads `tools` "
            "(the model was not trained with tool schemas in its prompt): drop --tools");
  return tools;
}

// --chat: one turn, or (-i) one turn per stdin line. Each reply is streamed and ends with a newline; a
// line on stderr per turn says how many prompt tokens came from the cache.
void run_chat(const GenerateArgs& a) {
  HFX_CHECK(!is_text2text_dir(a.model), "generate",
            "expected a decoder-only model for --chat, got an encoder-decoder one in '{}' (use --prompt)",
            a.model);
  tok::ChatTemplate chat_template = tok::ChatTemplate::from_dir(a.model);
  nlohmann::ordered_json tools;
  if (a.tools) tools = read_tools(*a.tools, chat_template);
  Generator g = Generator::open(a.model, a.config());
  ChatSession chat(g, std::move(chat_template), a.system);
  if (a.tools) chat.set_tools(std::move(tools));
  const GenerationOptions o = options_from(a);
  auto turn = [&](const std::string& user, int n) {
    GenerationResult r = chat.send(user, o, print_text);
    fmt::print("\n");
    std::fflush(stdout);
    const ChatTurnStats& t = chat.last_turn();
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

// --image: a vision-language checkpoint (llava, eager) or its ONNX export (ort): greedy decoding
// (hfx/runtime/image_text.h).
void run_image_text(const GenerateArgs& a) {
  if (a.prompts.size() != 1 || a.chat)
    throw UsageError("generate", fmt::format("expected one --prompt with --image, got {} prompt(s){}",
                                             a.prompts.size(), a.chat ? " and --chat" : ""));
  if (a.temperature || a.top_k || a.top_p || a.seed || a.repetition_penalty != 1.0f || !a.stop.empty())
    throw UsageError("generate",
                     "expected greedy decoding with --image (no sampling, repetition penalty or "
                     "stop), got them");
  if (a.ignore_eos || a.raw || a.system || a.tools || a.interactive || a.quantize != "none")
    throw UsageError("generate",
                     "expected none of --ignore-eos, --no-special-tokens, --system, --tools, "
                     "--interactive, --quantize with --image (not supported for llava yet), got one");
  const auto r = rt::generate_with_images(a.model, a.images, a.prompts[0], a.max_new_tokens, a.engine);
  if (!a.json) return fmt::print("{}\n", r.text);
  nlohmann::json j = {{"engine", r.engine}, {"images", a.images}};
  j["rows"].push_back(
      {{"prompt", a.prompts[0]}, {"prompt_ids", r.prompt_ids}, {"ids", r.ids}, {"text", r.text}});
  fmt::print("{}\n", j.dump(2));
}

void run_generate(GenerateArgs a) {
  a.model = resolve_model(a.model);
  if (!a.images.empty()) return run_image_text(a);
  if (a.chat || a.interactive) {
    if (!a.prompts.empty() || a.json || a.raw)
      throw UsageError("generate",
                       "expected --chat without --prompt, --json or --no-special-tokens, got them together");
    if (a.interactive && !a.chat)
      throw UsageError("generate", "expected --interactive together with --chat, got it alone");
    if (!a.interactive && a.chat->empty())
      throw UsageError("generate",
                       "expected a message after --chat (or --chat -i for an interactive chat), got none");
    return run_chat(a);
  }
  if (a.system) throw UsageError("generate", "expected --system together with --chat, got it alone");
  if (a.tools) throw UsageError("generate", "expected --tools together with --chat, got it alone");
  if (a.prompts.empty()) throw UsageError("generate", "expected --prompt TEXT or --chat TEXT, got neither");
  if (is_text2text_dir(a.model)) return run_text2text(a);
  const GenerationOptions o = options_from(a);
  Generator g = Generator::open(a.model, a.config());
  const bool stream = a.prompts.size() == 1 && !a.json;
  // Long generations show a token bar, unless the text itself streams to the same terminal.
  const int64_t budget = a.max_new_tokens * static_cast<int64_t>(a.prompts.size());
  std::optional<Progress> bar;
  if (budget >= kBarTokens && !(stream && ::isatty(STDOUT_FILENO)))
    bar.emplace("generate", static_cast<uint64_t>(budget), Progress::Unit::kTokens);
  uint64_t tokens = 0;
  TokenCallback cb = [&](const TokenEvent& e) {
    if (bar) bar->update(++tokens);
    if (stream) print_text(e);
  };
  GenerationResult r = g.generate(a.prompts, o, cb);
  if (bar) bar->finish();
  if (a.json) {
    nlohmann::json j;
    j["engine"] = g.engine().name();
    for (size_t i = 0; i < r.texts.size(); i++)
      j["rows"].push_back({{"prompt", a.prompts[i]},
                           {"prompt_ids", r.prompt_ids[i]},
                           {"ids", r.ids[i]},
                           {"text", r.texts[i]},
                           {"finish_reason", r.finish_reasons[i]}});
    fmt::print("{}\n", j.dump(2));
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

}  // namespace

void register_generate(CLI::App& app) {
  auto a = std::make_shared<GenerateArgs>();
  auto* cmd = app.add_subcommand(
      "generate", "Generate text from a checkpoint (eager) or an export folder (ONNX Runtime)");
  cmd->footer(
      "Example:\n  hfx generate tiny-llama-onnx --prompt 'Hello, world' --max-new-tokens 16 --greedy\n"
      "  hfx generate Qwen2.5-0.5B-Instruct --chat 'Name three colors' --system 'Be brief.'\n"
      "  hfx generate Qwen2.5-0.5B-Instruct --chat -i   (one user turn per line on stdin)\n"
      "  hfx generate Qwen2.5-0.5B-Instruct --chat 'Weather in Paris?' --tools tools.json\n"
      "    (tools.json: [{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", ...}}])");
  cmd->add_option("model", a->model, "Checkpoint folder, export folder or model id ORG/NAME[@REVISION]")
      ->required();
  cmd->add_option("--prompt", a->prompts, "Prompt text (repeat for a batch)");
  cmd->add_option("--image", a->images,
                  "PNG/JPEG for a vision-language model (llava), repeatable: one <image> marker per image in "
                  "the prompt; eager, greedy");
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
  cmd->add_option("--max-new-tokens", a->max_new_tokens, "Tokens to generate per prompt")
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag("--greedy", a->greedy, "Argmax decoding (the default without sampling flags)");
  cmd->add_option("--temperature", a->temperature, "Sampling temperature (> 0)");
  cmd->add_option("--top-k", a->top_k, "Keep the k most likely tokens (0 = off)");
  cmd->add_option("--top-p", a->top_p, "Nucleus sampling mass in [0, 1]");
  cmd->add_option("--seed", a->seed, "RNG seed (row r uses seed + r)");
  cmd->add_option("--repetition-penalty", a->repetition_penalty, "HF repetition penalty (1 = off)");
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
  cmd->add_flag("--json", a->json, "Print prompts, ids, texts and finish reasons as JSON");
  cmd->callback([a, chat] {
    if (chat->count() > 0 && !a->chat) a->chat = "";  // a bare --chat (for -i)
    run_generate(*a);
  });
}

}  // namespace hfx::cli
