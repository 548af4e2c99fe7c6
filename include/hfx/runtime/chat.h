// hfx/runtime/chat.h — a conversation with a causal LM through its chat template.
//
// Each turn appends the user's message, renders the whole conversation with add_generation_prompt (as
// transformers' apply_chat_template), encodes it WITHOUT adding special tokens (the template already
// wrote BOS and the turn markers; apply_chat_template(tokenize=True) encodes the same way), generates,
// and appends the decoded reply as the assistant's message.
//
// The engine's KV cache is kept between turns: after a turn it holds the prompt and every generated id
// but the last. The next turn's ids are compared with those: the cache keeps their common prefix (cut with
// Engine::crop where the re-rendered conversation differs, e.g. a reply that re-tokenizes differently or a
// template that drops the reasoning of past replies) and only the rest is prefilled
// (GenerationOptions::cached_tokens). Where nothing is shared or the engine cannot crop (a state-space
// cache), the cache is dropped and the whole conversation prefilled. Either way the reply is the one a
// fresh run over the whole conversation gives.
//
//   hfx::Generator g = hfx::Generator::open("Qwen2.5-0.5B-Instruct");
//   hfx::ChatSession chat(g, hfx::tok::ChatTemplate::from_dir("Qwen2.5-0.5B-Instruct"), "Be brief.");
//   std::string a = chat.send("Hi!", options).texts[0];
//   std::string b = chat.send("And then?", options).texts[0];   // prefills only the new turn
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "hfx/runtime/generator.h"
#include "hfx/tokenizers/chat_template.h"

namespace hfx {

/// How one turn used the cache.
struct ChatTurnStats {
  int64_t prompt_tokens = 0;     ///< ids of the rendered conversation
  int64_t cached_tokens = 0;     ///< of those, taken from the cache
  int64_t prefilled_tokens = 0;  ///< of those, prefilled this turn
  int64_t cropped_tokens = 0;    ///< cached ids after the common prefix, cut from the cache
  bool cache_dropped = false;    ///< the cache was dropped whole (nothing shared, or no crop)
};

class ChatSession {
 public:
  /// `generator` must have a tokenizer and outlive the session. A `system` prompt becomes the first message.
  ChatSession(Generator& generator, tok::ChatTemplate chat_template,
              std::optional<std::string> system = std::nullopt);

  /// Tool JSON schemas ([{"type": "function", "function": {...}}, ...]) passed as `tools` to every later
  /// render, as apply_chat_template(tools=...); the template's "tool_use" variant is chosen when it has one.
  /// Throws hfx::Error("chat", ...) unless `tools` is a list of objects.
  void set_tools(nlohmann::ordered_json tools);
  const nlohmann::ordered_json& tools() const { return tools_; }

  /// How a rendered conversation becomes ids; default: the generator's tokenizer, no special tokens added.
  /// A vision-language model's encoder expands the image markers (hfx/runtime/image_text.h).
  void set_encoder(std::function<std::vector<int64_t>(const std::string&)> encode);
  /// The next user message carries `n` images. From then on every message's content is a list of parts
  /// ({"type": "image"} entries, then {"type": "text", "text": ...}), as processors' chat templates take
  /// them; the system message already there is converted.
  void attach_images(int n);

  /// One turn: returns the generation result (texts[0] is the reply). `options.cached_tokens` is set by the
  /// session; batch 1. Throws hfx::Error("chat", ...) from the template (e.g. its raise_exception).
  GenerationResult send(const std::string& user, GenerationOptions options,
                        const TokenCallback& callback = {});

  /// The rendered prompt of the conversation so far plus `user`, with add_generation_prompt (what send
  /// renders).
  std::string render_with(const std::string& user) const;
  /// Ids of a rendered prompt (no special tokens added).
  std::vector<int64_t> encode(const std::string& rendered) const;

  const nlohmann::ordered_json& messages() const { return messages_; }
  const ChatTurnStats& last_turn() const { return last_; }
  /// The rendered prompt of the last send().
  const std::string& last_prompt() const { return last_prompt_; }

 private:
  Generator& gen_;
  tok::ChatTemplate template_;
  nlohmann::ordered_json messages_ = nlohmann::ordered_json::array();
  nlohmann::ordered_json tools_ = nullptr;  // none: `tools` renders as none
  std::vector<int64_t> cached_;             // the ids in the engine's cache, in order
  ChatTurnStats last_;
  std::string last_prompt_;
  std::function<std::vector<int64_t>(const std::string&)> encode_;  // empty: the tokenizer's
  bool parts_ = false;  // contents as lists of parts (attach_images was called)
  int images_ = 0;      // images of the next user message
};

}  // namespace hfx
