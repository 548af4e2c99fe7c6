// hfx/tokenizers/chat_template.h — a model's chat template, rendered as transformers' apply_chat_template
// renders it.
//
// The template is Jinja text from the model folder: chat_template.jinja, else chat_template.json
// ({"chat_template": ...}), else tokenizer_config.json's "chat_template" (the first found wins, as in
// transformers, where a chat_template.jinja file overrides the config). The config form may be one
// string or a list of named templates [{"name": "default", "template": ...}, {"name": "tool_use", ...}];
// as transformers' get_chat_template, "tool_use" is chosen when tools are passed and it exists, else
// "default".
//
// Rendering runs llama.cpp's Jinja engine (common/jinja, built into libhfx; see cmake/llama_jinja.cmake)
// with the variables apply_chat_template passes: `messages`, `tools` (none when absent), `documents`
// (none), `add_generation_prompt`, the special tokens of tokenizer_config.json (bos_token, eos_token,
// unk_token, sep_token, pad_token, cls_token, mask_token, additional_special_tokens; missing ones taken
// from special_tokens_map.json) and any extra variables (enable_thinking, date_string, ...). The
// built-ins `raise_exception(msg)` and `strftime_now(fmt)` are the engine's. JSON values keep their key
// order (nlohmann::ordered_json): templates print them with `tojson`.
//
//   auto t = hfx::tok::ChatTemplate::from_dir("Qwen2.5-0.5B-Instruct");
//   hfx::tok::ChatInputs in;
//   in.messages = {{{"role", "user"}, {"content", "Hi"}}};
//   in.add_generation_prompt = true;
//   std::string prompt = t.render(in);   // "<|im_start|>system\n...<|im_start|>assistant\n"
//
// Errors are hfx::Error with component "chat": no template in the folder, a template that does not
// parse (with the engine's line and column), or a template's raise_exception (its message verbatim).
#pragma once
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace hfx::tok {

/// What a chat template is rendered with.
struct ChatInputs {
  /// [{"role": ..., "content": string | [{"type": "text", "text": ...}, ...] | null, more keys such as
  /// tool_calls, tool_call_id, name, reasoning_content}], passed to the template as they are.
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  /// Tool JSON schemas ([{"type": "function", "function": {...}}]); null renders `tools` as none.
  nlohmann::ordered_json tools = nullptr;
  bool add_generation_prompt = false;
  /// More template variables (an object), as apply_chat_template's **kwargs; they override the rest.
  nlohmann::ordered_json extra = nlohmann::ordered_json::object();
};

class ChatTemplate {
 public:
  /// Loads the template and special tokens of a model (or export) folder. Throws hfx::Error("chat",
  /// "expected a chat_template in tokenizer_config.json or chat_template.json, got none — ...") when the
  /// folder has none (naming `model`, e.g. "the decoder-only model llama", where given).
  static ChatTemplate from_dir(const std::string& dir, const std::string& model = "");
  /// `chat_template`: a Jinja string or a list of {"name", "template"} objects. `tokenizer_config`: the
  /// tokenizer_config.json object the special tokens are read from (strings or {"content": ...}).
  static ChatTemplate from_json(
      const nlohmann::ordered_json& chat_template,
      const nlohmann::ordered_json& tokenizer_config = nlohmann::ordered_json::object());

  /// The rendered text. Throws hfx::Error("chat", ...) on a parse or render error and with the message
  /// of the template's raise_exception.
  std::string render(const ChatInputs& inputs) const;
  /// The template variables render() passes to the engine (special tokens, messages, tools, documents,
  /// add_generation_prompt, then `inputs.extra`); another Jinja engine given these renders the same text.
  nlohmann::ordered_json variables(const ChatInputs& inputs) const;

  /// The template text render() uses: "tool_use" when `with_tools` and the folder names one, else "default".
  const std::string& source(bool with_tools = false) const;
  /// Names of the templates ("default" for a single string).
  std::vector<std::string> names() const;
  /// The special-token variables passed to every render (name → string, or a list of strings).
  const nlohmann::ordered_json& special_tokens() const { return special_tokens_; }

 private:
  std::vector<std::pair<std::string, std::string>> templates_;  // name → Jinja source
  nlohmann::ordered_json special_tokens_ = nlohmann::ordered_json::object();
};

}  // namespace hfx::tok
