// `hfx generate --chat` end to end on a tiny random llama: a single turn, an interactive conversation
// from piped stdin (turn 2 must take the earlier turns from the KV cache, as the per-turn stderr line
// reports), the same conversation over an ONNX export (ONNX Runtime; the export keeps the chat
// template), --tools, and the errors. Every reply must equal a fresh greedy run of the library over the whole
// rendered conversation.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>
#include <cstdlib>
#include <filesystem>
#include <regex>
#include <sstream>

#include "hfx/io/safetensors.h"
#include "hfx/runtime/generator.h"
#include "hfx/tokenizers/chat_template.h"
#include "hfx/tokenizers/tokenizer.h"

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

namespace {

constexpr const char* kTurnTemplate =
    "{{ bos_token }}{% for m in messages %}{{ m.role }}:\n{{ m.content }}{{ eos_token }}\n{% endfor %}"
    "{% if add_generation_prompt %}assistant:\n{% endif %}";

struct CliRun {
  int rc = -1;
  std::string out, err;
};

CliRun sh(const std::string& cmd, const fs::path& dir) {
  const fs::path o = dir / "stdout.txt", e = dir / "stderr.txt";
  int st = std::system((cmd + " > " + o.string() + " 2> " + e.string()).c_str());
  CliRun r;
  r.rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  r.out = hfx::io::read_file(o.string());
  r.err = hfx::io::read_file(e.string());
  return r;
}

struct ChatCli : ::testing::Test {
  static inline fs::path dir;
  static void SetUpTestSuite() {
    dir = fs::temp_directory_path() / ("hfx_chat_cli_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    const std::string cli = HFX_CLI;
    ASSERT_EQ(sh(cli + " create-tiny llama --dtype float32 -o " + (dir / "ckpt").string(), dir).rc, 0);
    hfx::io::write_file_atomic((dir / "ckpt" / "chat_template.jinja").string(), kTurnTemplate);
    CliRun e =
        sh(cli + " export " + (dir / "ckpt").string() + " --format onnx -o " + (dir / "out").string(), dir);
    ASSERT_EQ(e.rc, 0) << e.err;
  }
  static void TearDownTestSuite() { fs::remove_all(dir); }

  // The reply of a fresh greedy run over `messages` + `user` (6 new tokens).
  static std::string fresh(const ojson& messages, const std::string& user) {
    auto t = hfx::tok::ChatTemplate::from_dir((dir / "ckpt").string());
    hfx::Generator g = hfx::Generator::open((dir / "ckpt").string(), {.engine = "eager"});
    hfx::tok::ChatInputs in;
    in.messages = messages;
    in.messages.push_back({{"role", "user"}, {"content", user}});
    in.add_generation_prompt = true;
    auto ids = g.tokenizer()->encode(t.render(in), false);
    hfx::GenerationOptions o;
    o.max_new_tokens = 6;
    return g.generate_ids({{ids.begin(), ids.end()}}, o).texts[0];
  }
};

}  // namespace

TEST_F(ChatCli, SingleTurnWithSystemPrompt) {
  CliRun r = sh(std::string(HFX_CLI) + " generate " + (dir / "ckpt").string() +
                    " --chat 'Hello there' --system 'You are terse.' --max-new-tokens 6",
                dir);
  ASSERT_EQ(r.rc, 0) << r.err;
  const ojson sys = ojson::array({{{"role", "system"}, {"content", "You are terse."}}});
  EXPECT_EQ(r.out, fresh(sys, "Hello there") + "\n");
  EXPECT_NE(r.err.find("hfx: chat turn 1: "), std::string::npos) << r.err;
}

TEST_F(ChatCli, InteractiveKeepsCacheOnEagerAndOnnx) {
  const std::vector<std::string> turns = {"Hello there", "Tell me more", "Why?"};
  ojson messages = ojson::array({{{"role", "system"}, {"content", "You are terse."}}});
  std::string expected;
  for (const auto& u : turns) {
    std::string reply = fresh(messages, u);
    expected += reply + "\n";
    messages.push_back({{"role", "user"}, {"content", u}});
    messages.push_back({{"role", "assistant"}, {"content", reply}});
  }
  EXPECT_TRUE(fs::exists(dir / "out" / "chat_template.jinja")) << "the export must keep the chat template";
  for (const char* model : {"ckpt", "out"}) {
    CliRun r =
        sh("printf 'Hello there\\nTell me more\\n\\nWhy?\\n' | " + std::string(HFX_CLI) + " generate " +
               (dir / model).string() + " --chat -i --system 'You are terse.' --max-new-tokens 6",
           dir);
    ASSERT_EQ(r.rc, 0) << model << ": " << r.err;
    EXPECT_EQ(r.out, expected) << model;
    EXPECT_NE(r.err.find(std::string(model) == "out" ? "ort engine" : "chat turn"), std::string::npos)
        << r.err;
    // "hfx: chat turn N: P prompt tokens, F prefilled, C from the cache"
    const std::regex line(R"(chat turn (\d+): (\d+) prompt tokens, (\d+) prefilled, (\d+) from the cache)");
    int turns_seen = 0;
    for (auto it = std::sregex_iterator(r.err.begin(), r.err.end(), line); it != std::sregex_iterator();
         ++it) {
      const int n = std::stoi((*it)[1]), prompt = std::stoi((*it)[2]), prefilled = std::stoi((*it)[3]),
                cached = std::stoi((*it)[4]);
      turns_seen++;
      EXPECT_EQ(prefilled + cached, prompt) << model << " turn " << n;
      if (n == 1) {
        EXPECT_EQ(cached, 0) << model;
      }
      // Later turns take the earlier ones from the cache (turn 3 after cutting it where this random model's
      // second reply re-encodes differently) and still give the fresh run's reply, checked above.
      if (n > 1) {
        EXPECT_GT(cached, prefilled) << model << " turn " << n << " must reuse the cache: " << r.err;
      }
    }
    EXPECT_EQ(turns_seen, 3) << model << ": " << r.err;
  }
}

// --json in chat mode: the rendered prompt (the library's rendering), its ids (encoded without special
// tokens, as apply_chat_template), the reply and its finish reason, timings; with -i one JSON line per
// turn. The keys are those of --prompt --json (one schema, docs/cli.md).
TEST_F(ChatCli, JsonCarriesTheRenderedPromptPerTurn) {
  const std::string cli = std::string(HFX_CLI) + " generate " + (dir / "ckpt").string();
  CliRun r = sh(cli + " --chat 'Hello there' --system 'You are terse.' --max-new-tokens 6 --json", dir);
  ASSERT_EQ(r.rc, 0) << r.err;
  const ojson j = ojson::parse(r.out);
  ojson messages = ojson::array({{{"role", "system"}, {"content", "You are terse."}}});
  hfx::tok::ChatInputs in;
  in.messages = messages;
  in.messages.push_back({{"role", "user"}, {"content", "Hello there"}});
  in.add_generation_prompt = true;
  const std::string rendered = hfx::tok::ChatTemplate::from_dir((dir / "ckpt").string()).render(in);
  const auto tok = hfx::tok::Tokenizer::from_dir((dir / "ckpt").string());
  const auto ids = tok.encode(rendered, false);
  EXPECT_EQ(j["mode"], "chat");
  EXPECT_EQ(j["turn"], 1);
  EXPECT_EQ(j["message"], "Hello there");
  const ojson& row = j["rows"][0];
  EXPECT_EQ(row["prompt"], rendered);
  EXPECT_EQ(row["prompt_ids"], ojson(std::vector<int64_t>(ids.begin(), ids.end())));
  EXPECT_EQ(row["text"], fresh(messages, "Hello there"));
  EXPECT_TRUE(row["finish_reason"] == "length" || row["finish_reason"] == "eos") << row.dump();
  CliRun p = sh(cli + " --prompt 'Hello there' --max-new-tokens 6 --json", dir);
  ASSERT_EQ(p.rc, 0) << p.err;
  const ojson pj = ojson::parse(p.out);
  EXPECT_EQ(pj["mode"], "prompt");
  for (const char* k : {"mode", "engine", "rows", "timings"})
    EXPECT_TRUE(pj.contains(k) && j.contains(k)) << k;
  for (const auto& [k, v] : pj["rows"][0].items()) EXPECT_TRUE(row.contains(k)) << k;
  for (const auto& [k, v] : pj["timings"].items()) EXPECT_TRUE(j["timings"][k].is_number()) << k;

  r = sh("printf 'Hello there\\nTell me more\\n' | " + cli + " --chat -i --max-new-tokens 6 --json", dir);
  ASSERT_EQ(r.rc, 0) << r.err;
  std::istringstream lines(r.out);
  std::string line;
  int n = 0;
  messages = ojson::array();
  for (const char* u : {"Hello there", "Tell me more"}) {
    ASSERT_TRUE(std::getline(lines, line)) << r.out;
    const ojson t = ojson::parse(line);
    EXPECT_EQ(t["turn"], ++n);
    const std::string reply = fresh(messages, u);
    EXPECT_EQ(t["rows"][0]["text"], reply) << u;
    messages.push_back({{"role", "user"}, {"content", u}});
    messages.push_back({{"role", "assistant"}, {"content", reply}});
  }
  EXPECT_FALSE(std::getline(lines, line)) << "one JSON line per turn: " << r.out;
}

// generation_config.json's decoding fields are the defaults, as transformers' generate() takes them: a file
// saying do_sample with its temperature/top_k/top_p/repetition_penalty/max_new_tokens makes a plain run
// sample exactly as the same flags given explicitly; --greedy overrides do_sample; --json reports the
// options in effect. Without those fields the run is greedy with 64 new tokens at most.
TEST_F(ChatCli, GenerationConfigDefaultsApply) {
  const std::string cli = HFX_CLI;
  fs::path m = dir / "sampling_defaults";
  fs::create_directories(m);
  for (const char* f : {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"})
    fs::copy_file(dir / "ckpt" / f, m / f, fs::copy_options::overwrite_existing);
  ojson gen = ojson::parse(hfx::io::read_file((dir / "ckpt" / "generation_config.json").string()));
  gen.update({{"do_sample", true},
              {"temperature", 0.7},
              {"top_k", 7},
              {"top_p", 0.9},
              {"repetition_penalty", 1.2},
              {"max_new_tokens", 9}});
  hfx::io::write_file_atomic((m / "generation_config.json").string(), gen.dump());
  auto run = [&](const fs::path& model, const std::string& flags) {
    CliRun r =
        sh(cli + " generate " + model.string() + " --prompt 'Hello there' --ignore-eos --json" + flags, dir);
    EXPECT_EQ(r.rc, 0) << r.err;
    return r.rc == 0 ? ojson::parse(r.out) : ojson();
  };
  const ojson plain = run(m, " --seed 5");
  const ojson explicit_flags = run(dir / "ckpt",
                                   " --seed 5 --temperature 0.7 --top-k 7 --top-p 0.9 "
                                   "--repetition-penalty 1.2 --max-new-tokens 9");
  ASSERT_FALSE(plain.is_null() || explicit_flags.is_null());
  EXPECT_EQ(plain["rows"][0]["ids"], explicit_flags["rows"][0]["ids"]);
  EXPECT_EQ(plain["rows"][0]["ids"].size(), 9u);
  EXPECT_EQ(plain["decoding"]["do_sample"], true);
  EXPECT_EQ(plain["decoding"]["top_k"], 7);
  const ojson greedy = run(m, " --greedy");
  EXPECT_EQ(greedy["decoding"]["do_sample"], false);
  EXPECT_EQ(greedy["decoding"]["repetition_penalty"], ojson(1.2f));
  const ojson base = run(dir / "ckpt", "");
  EXPECT_EQ(base["decoding"]["do_sample"], false);
  EXPECT_EQ(base["decoding"]["max_new_tokens"], 64);
  EXPECT_EQ(base["decoding"]["top_k"], 50);  // transformers' global default (used once sampling is on)
  EXPECT_NE(plain["rows"][0]["ids"], run(m, " --greedy --max-new-tokens 9")["rows"][0]["ids"])
      << "the file's do_sample must make the plain run sample";
}

// --json --stream: JSON Lines, one per generated token as it comes ({"row", "id", "text", "finished"}), then
// the result on one line; the tokens' ids and texts add up to the result's. In chat mode the same per turn.
TEST_F(ChatCli, StreamPrintsJsonLinesPerToken) {
  const std::string cli = std::string(HFX_CLI) + " generate " + (dir / "ckpt").string();
  for (const std::string mode : {" --prompt 'Hello there'", " --chat 'Hello there'"}) {
    CliRun r = sh(cli + mode + " --max-new-tokens 6 --ignore-eos --json --stream", dir);
    ASSERT_EQ(r.rc, 0) << r.err;
    std::istringstream lines(r.out);
    std::string line, text;
    std::vector<ojson> events;
    while (std::getline(lines, line)) events.push_back(ojson::parse(line));
    ASSERT_EQ(events.size(), 7u) << r.out;
    const ojson& result = events.back();
    ojson ids = ojson::array();
    for (size_t i = 0; i + 1 < events.size(); i++) {
      ids.push_back(events[i]["id"]);
      text += events[i]["text"].get<std::string>();
      EXPECT_EQ(events[i]["finished"], i + 2 == events.size()) << i;
    }
    EXPECT_EQ(ids, result["rows"][0]["ids"]) << mode;
    EXPECT_EQ(text, result["rows"][0]["text"].get<std::string>()) << mode;
  }
  CliRun alone = sh(cli + " --prompt hi --stream", dir);
  EXPECT_EQ(alone.rc, 2);
  EXPECT_NE(alone.err.find("expected --stream together with --json"), std::string::npos) << alone.err;
}

// --tools FILE.json: the schemas reach the template as `tools` (here printed with tojson, the way Qwen's and
// Llama 3.1's templates print them): the CLI's prompt is the library's rendering with those tools, token for
// token, and its reply the fresh run's. A template that never reads `tools` is refused, not ignored.
TEST_F(ChatCli, ToolsReachTheTemplate) {
  const fs::path model = dir / "with_tools";
  fs::create_directories(model);
  for (const char* f : {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"})
    fs::copy_file(dir / "ckpt" / f, model / f, fs::copy_options::overwrite_existing);
  hfx::io::write_file_atomic(
      (model / "chat_template.jinja").string(),
      std::string("{% if tools %}tools: {{ tools | tojson }}\n{% endif %}") + kTurnTemplate);
  const ojson tools = ojson::parse(R"([{"type": "function", "function": {"name": "get_weather",
      "description": "Weather in a city", "parameters": {"type": "object",
      "properties": {"city": {"type": "string", "description": "City name"}}, "required": ["city"]}}}])");
  hfx::io::write_file_atomic((dir / "tools.json").string(), tools.dump());

  auto t = hfx::tok::ChatTemplate::from_dir(model.string());
  hfx::Generator g = hfx::Generator::open(model.string(), {.engine = "eager"});
  hfx::tok::ChatInputs in;
  in.messages = ojson::array({{{"role", "user"}, {"content", "Weather in Paris?"}}});
  in.add_generation_prompt = true;
  in.tools = tools;
  const std::string prompt = t.render(in);
  ASSERT_NE(prompt.find("tools: [{\"type\": \"function\""), std::string::npos) << prompt;
  auto ids = g.tokenizer()->encode(prompt, false);
  hfx::GenerationOptions o;
  o.max_new_tokens = 6;
  const std::string reply = g.generate_ids({{ids.begin(), ids.end()}}, o).texts[0];

  const std::string cli = std::string(HFX_CLI) + " generate " + model.string();
  CliRun r = sh(
      cli + " --chat 'Weather in Paris?' --max-new-tokens 6 --tools " + (dir / "tools.json").string(), dir);
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, reply + "\n");
  EXPECT_NE(r.err.find("chat turn 1: " + std::to_string(ids.size()) + " prompt tokens"), std::string::npos)
      << "the CLI's prompt must be the rendering with the tools (" << ids.size() << " tokens): " << r.err;

  // Errors: bad JSON, not a list, a template without tools (exit 1); no --chat, no such file (exit 2).
  hfx::io::write_file_atomic((dir / "bad.json").string(), "[{");
  hfx::io::write_file_atomic((dir / "object.json").string(), "{\"name\": \"x\"}");
  const std::vector<std::pair<std::string, std::string>> bad = {
      {model.string() + " --chat hi --tools " + (dir / "bad.json").string(),
       "expected valid JSON in --tools file"},
      {model.string() + " --chat hi --tools " + (dir / "object.json").string(), "got object"},
      {(dir / "ckpt").string() + " --chat hi --tools " + (dir / "tools.json").string(),
       "got one of the decoder-only model llama that never reads `tools`"}};
  for (const auto& [args, message] : bad) {
    r = sh(std::string(HFX_CLI) + " generate " + args, dir);
    EXPECT_EQ(r.rc, 1) << args << ": " << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << args << ": " << r.err;
  }
  r = sh(cli + " --prompt hi --tools " + (dir / "tools.json").string(), dir);
  EXPECT_EQ(r.rc, 2) << r.err;
  EXPECT_NE(r.err.find("expected --tools together with --chat"), std::string::npos) << r.err;
  r = sh(cli + " --chat hi --tools " + (dir / "none.json").string(), dir);
  EXPECT_EQ(r.rc, 2) << r.err;
  EXPECT_NE(r.err.find("none.json"), std::string::npos) << r.err;
}

TEST_F(ChatCli, ErrorsAndUsage) {
  const std::string cli = HFX_CLI;
  fs::path bare = dir / "no_template";
  fs::create_directories(bare);
  for (const char* f : {"config.json", "model.safetensors", "tokenizer.json"})
    fs::copy_file(dir / "ckpt" / f, bare / f, fs::copy_options::overwrite_existing);
  ojson config = ojson::parse(hfx::io::read_file((dir / "ckpt" / "tokenizer_config.json").string()));
  config.erase("chat_template");
  hfx::io::write_file_atomic((bare / "tokenizer_config.json").string(), config.dump());
  CliRun r = sh(cli + " generate " + bare.string() + " --chat hi", dir);
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(
      r.err.find("[chat] expected a chat_template in tokenizer_config.json or chat_template.json, got none — "
                 "pass --prompt without --chat"),
      std::string::npos)
      << r.err;
  // A template's raise_exception reaches the user as its message.
  hfx::io::write_file_atomic((bare / "chat_template.jinja").string(),
                             "{{ raise_exception('Conversation roles must alternate user/assistant') }}");
  r = sh(cli + " generate " + bare.string() + " --chat hi", dir);
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("[chat] the chat template raised an exception: Conversation roles must alternate"),
            std::string::npos)
      << r.err;
  const std::string ckpt = (dir / "ckpt").string();
  for (const char* args :
       {" --system x --prompt y", " --chat", " --chat hi --prompt y", " -i --prompt y", ""}) {
    r = sh(cli + " generate " + ckpt + args, dir);
    EXPECT_EQ(r.rc, 2) << args << ": " << r.err;
  }
}
