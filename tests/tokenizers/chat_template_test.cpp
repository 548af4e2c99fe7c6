// ChatTemplate: where a model folder keeps its template (and which wins), named templates, the special
// tokens passed to the template, and the errors a user sees. Rendering itself is compared with
// @huggingface/jinja in chat_template_parity_test.cpp.
#include <gtest/gtest.h>

#include <unistd.h>
#include <filesystem>

#include "hfx/core/error.h"
#include "hfx/io/safetensors.h"
#include "hfx/tokenizers/chat_template.h"

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;
using hfx::tok::ChatInputs;
using hfx::tok::ChatTemplate;

namespace {

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("hfx_chat_tmpl_" + std::to_string(::getpid()));
  TempDir() {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  void write(const std::string& name, const std::string& text) const {
    hfx::io::write_file_atomic((path / name).string(), text);
  }
};

ChatInputs user(const std::string& text) {
  ChatInputs in;
  in.messages = ojson::array({{{"role", "user"}, {"content", text}}});
  return in;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const hfx::Error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST(ChatTemplate, FolderFilesInTransformersOrder) {
  TempDir d;
  d.write("tokenizer_config.json",
          R"({"chat_template": "A{{ bos_token }}", "bos_token": {"content": "<s>", "lstrip": false}})");
  d.write("chat_template.json", R"({"chat_template": "C{{ bos_token }}"})");
  d.write("chat_template.jinja", "J{{ bos_token }}");
  EXPECT_EQ(ChatTemplate::from_dir(d.path.string()).render(user("x")), "J<s>");
  fs::remove(d.path / "chat_template.jinja");
  EXPECT_EQ(ChatTemplate::from_dir(d.path.string()).render(user("x")), "C<s>");
  fs::remove(d.path / "chat_template.json");
  EXPECT_EQ(ChatTemplate::from_dir(d.path.string()).render(user("x")), "A<s>");
}

TEST(ChatTemplate, NamedTemplatesPickToolUseWithTools) {
  const ojson list = ojson::array({{{"name", "default"}, {"template", "D{{ messages[0].content }}"}},
                                   {{"name", "tool_use"}, {"template", "T{{ tools | length }}"}}});
  ChatTemplate t = ChatTemplate::from_json(list);
  EXPECT_EQ(t.names(), (std::vector<std::string>{"default", "tool_use"}));
  ChatInputs in = user("x");
  EXPECT_EQ(t.render(in), "Dx");
  in.tools = ojson::array({{{"type", "function"}, {"function", {{"name", "f"}}}}});
  EXPECT_EQ(t.render(in), "T1");
  const ojson no_default = ojson::array({{{"name", "rag"}, {"template", "R"}}});
  EXPECT_NE(error_of([&] {
              ChatTemplate::from_json(no_default).render(user("x"));
            }).find("[chat] expected a chat template named 'default'"),
            std::string::npos);
}

TEST(ChatTemplate, VariablesAsApplyChatTemplatePassesThem) {
  const ojson config = {{"bos_token", "<s>"},
                        {"eos_token", {{"content", "</s>"}}},
                        {"pad_token", nullptr},
                        {"unk_token", ""},
                        {"additional_special_tokens", {"<a>", {{"content", "<b>"}}}}};
  // tools=None and documents=None are defined but none, as transformers passes them.
  ChatTemplate t = ChatTemplate::from_json(
      "{{ bos_token }}{{ eos_token }}{{ additional_special_tokens | join(',') }}|{{ pad_token is defined }}"
      "{{ unk_token is defined }}|{{ tools is defined }}{{ tools is none }}|{{ add_generation_prompt }}"
      "{{ enable_thinking }}",
      config);
  ChatInputs in = user("x");
  in.add_generation_prompt = true;
  in.extra = {{"enable_thinking", false}};
  EXPECT_EQ(t.render(in), "<s></s><a>,<b>|FalseFalse|TrueTrue|TrueFalse");
  EXPECT_EQ(t.special_tokens().dump(),
            R"({"bos_token":"<s>","eos_token":"</s>","additional_special_tokens":["<a>","<b>"]})");
}

TEST(ChatTemplate, SpecialTokensMapFillsMissingTokens) {
  TempDir d;
  d.write("tokenizer_config.json",
          R"({"chat_template": "{{ bos_token }}{{ eos_token }}", "bos_token": "<s>"})");
  d.write("special_tokens_map.json", R"({"bos_token": "<ignored>", "eos_token": {"content": "</s>"}})");
  EXPECT_EQ(ChatTemplate::from_dir(d.path.string()).render(user("x")), "<s></s>");
}

TEST(ChatTemplate, ErrorsNameTheFixOrTheTemplatesMessage) {
  TempDir d;
  d.write("tokenizer_config.json", R"({"bos_token": "<s>"})");
  EXPECT_NE(
      error_of([&] { ChatTemplate::from_dir(d.path.string()); })
          .find("[chat] expected a chat_template in tokenizer_config.json or chat_template.json, got none — "
                "pass --prompt without --chat"),
      std::string::npos);
  ChatTemplate raises = ChatTemplate::from_json(
      "{% if messages[0].role == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}ok");
  EXPECT_EQ(raises.render(user("x")), "ok");
  ChatInputs sys;
  sys.messages = ojson::array({{{"role", "system"}, {"content", "s"}}});
  EXPECT_EQ(error_of([&] { raises.render(sys); }),
            "[chat] the chat template raised an exception: System role not supported");
  const std::string parse =
      error_of([] { ChatTemplate::from_json("{% if %}x{% endif %}").render(user("x")); });
  EXPECT_EQ(
      parse.rfind("[chat] expected a chat template that renders, got an error from the Jinja engine", 0), 0u)
      << parse;
  EXPECT_NE(
      error_of([] { ChatTemplate::from_json(42); }).find("[chat] expected chat_template to be a string"),
      std::string::npos);
}
