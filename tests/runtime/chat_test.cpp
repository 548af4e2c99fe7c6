// ChatSession on a tiny random llama (eager): the second turn prefills only the ids the cache lacks, and
// each reply equals a fresh greedy run over the whole rendered conversation; a template that re-renders
// earlier turns differently drops the cache and still gives the fresh run's reply.
#include <gtest/gtest.h>

#include <unistd.h>
#include <filesystem>

#include "hfx/io/safetensors.h"
#include "hfx/models/tiny.h"
#include "hfx/runtime/chat.h"
#include "hfx/tokenizers/tokenizer.h"

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

namespace {

// ChatML-like turns that end in the tiny tokenizer's EOS, an added token: a reply that ends in EOS is
// followed by the same special token when re-rendered, so the cached ids stay a prefix.
constexpr const char* kTurnTemplate =
    "{{ bos_token }}{% for m in messages %}{{ m.role }}:\n{{ m.content }}{{ eos_token }}\n{% endfor %}"
    "{% if add_generation_prompt %}assistant:\n{% endif %}";

struct TinyChat : ::testing::Test {
  static inline fs::path dir;
  static void SetUpTestSuite() {
    dir = fs::temp_directory_path() / ("hfx_chat_" + std::to_string(::getpid()));
    hfx::TinyOptions opt;
    opt.dtype = hfx::DType::F32;
    hfx::create_tiny("llama", dir.string(), opt);
  }
  static void TearDownTestSuite() { fs::remove_all(dir); }

  static hfx::GenerationOptions greedy(int64_t n) {
    hfx::GenerationOptions o;
    o.max_new_tokens = n;
    return o;
  }

  // The reply a fresh generator gives for the conversation `messages` + the next user turn.
  static hfx::GenerationResult fresh(const hfx::tok::ChatTemplate& t, const ojson& messages,
                                     const std::string& user, int64_t n) {
    hfx::Generator g = hfx::Generator::open(dir.string(), {.engine = "eager"});
    hfx::tok::ChatInputs in;
    in.messages = messages;
    in.messages.push_back({{"role", "user"}, {"content", user}});
    in.add_generation_prompt = true;
    auto ids = g.tokenizer()->encode(t.render(in), false);
    return g.generate_ids({{ids.begin(), ids.end()}}, greedy(n));
  }
};

}  // namespace

TEST_F(TinyChat, SecondTurnPrefillsOnlyNewTokensAndEqualsFreshRun) {
  auto t = hfx::tok::ChatTemplate::from_json(
      kTurnTemplate, {{"bos_token", "<|begin_of_text|>"}, {"eos_token", "<|end_of_text|>"}});
  hfx::Generator g = hfx::Generator::open(dir.string(), {.engine = "eager"});
  hfx::ChatSession chat(g, t, "You are terse.");
  const std::vector<std::string> turns = {"Hello there", "Tell me more", "Why?"};
  for (size_t i = 0; i < turns.size(); i++) {
    const ojson before = chat.messages();
    hfx::GenerationResult r = chat.send(turns[i], greedy(6));
    hfx::GenerationResult ref = fresh(t, before, turns[i], 6);
    EXPECT_EQ(r.ids[0], ref.ids[0]) << "turn " << i + 1;
    EXPECT_EQ(r.texts[0], ref.texts[0]) << "turn " << i + 1;
    const hfx::ChatTurnStats& s = chat.last_turn();
    EXPECT_EQ(s.prompt_tokens, static_cast<int64_t>(ref.prompt_ids[0].size()));
    EXPECT_EQ(s.prefilled_tokens + s.cached_tokens, s.prompt_tokens);
    EXPECT_EQ(r.stats.prompt_tokens, s.prefilled_tokens);
    if (i == 0) {
      EXPECT_EQ(s.cached_tokens, 0);
    }
    if (i > 0) {
      // The earlier turns came from the cache: all of turn 1 (its ids are a prefix of turn 2's), and up to
      // where this random model's second reply re-encodes differently (stray byte tokens decode to U+FFFD),
      // cut from the cache, for turn 3.
      EXPECT_FALSE(s.cache_dropped) << "turn " << i + 1;
      EXPECT_GT(s.cached_tokens, s.prefilled_tokens) << "turn " << i + 1;
    }
    if (i == 1) {
      EXPECT_EQ(s.cropped_tokens, 0);
    }
    if (i == 2) {
      EXPECT_GT(s.cropped_tokens, 0) << "turn 3 must exercise Engine::crop";
    }
  }
  EXPECT_EQ(chat.messages().size(), 1 + 2 * turns.size());
}

TEST_F(TinyChat, TemplateThatReRendersEarlierTurnsDropsTheCache) {
  // The turn count at the top changes every turn, so no earlier prompt is a prefix of the next one.
  auto t = hfx::tok::ChatTemplate::from_json(
      // Appended, not `std::string(...) + kTurnTemplate`: GCC 12 warns falsely (-Wstringop-overflow) on that
      // concatenation once inlined at -O1.
      std::string("{{ messages | length }} messages\n").append(kTurnTemplate),
      {{"bos_token", "<|begin_of_text|>"}, {"eos_token", "<|end_of_text|>"}});
  hfx::Generator g = hfx::Generator::open(dir.string(), {.engine = "eager"});
  hfx::ChatSession chat(g, t);
  chat.send("Hello there", greedy(5));
  const ojson before = chat.messages();
  hfx::GenerationResult r = chat.send("Tell me more", greedy(5));
  EXPECT_TRUE(chat.last_turn().cache_dropped);
  EXPECT_EQ(chat.last_turn().cached_tokens, 0);
  EXPECT_EQ(chat.last_turn().prefilled_tokens, chat.last_turn().prompt_tokens);
  EXPECT_EQ(r.ids[0], fresh(t, before, "Tell me more", 5).ids[0]);
}
