// ChatSession (see include/hfx/runtime/chat.h): the conversation, its rendering and the bookkeeping of
// which ids the engine's cache holds between turns.
#include "hfx/runtime/chat.h"

#include <algorithm>

#include "hfx/core/error.h"
#include "hfx/tokenizers/tokenizer.h"

namespace hfx {

using ojson = nlohmann::ordered_json;

ChatSession::ChatSession(Generator& generator, tok::ChatTemplate chat_template,
                         std::optional<std::string> system)
    : gen_(generator), template_(std::move(chat_template)) {
  HFX_CHECK(gen_.tokenizer() != nullptr, "chat",
            "expected a tokenizer (tokenizer.json) beside the model, got none");
  if (system) messages_.push_back({{"role", "system"}, {"content", *system}});
}

void ChatSession::set_tools(ojson tools) {
  HFX_CHECK(tools.is_array(), "chat", "expected tools as a list of JSON schemas, got {}", tools.type_name());
  for (const auto& t : tools)
    HFX_CHECK(t.is_object(), "chat", "expected each tool to be a JSON schema object, got {}", t.dump());
  tools_ = std::move(tools);
}

namespace {

// A message's content: the text, or (parts) `images` image parts then a text part.
ojson content(const std::string& text, bool parts, int images) {
  if (!parts) return text;
  ojson c = ojson::array();
  for (int i = 0; i < images; i++) c.push_back({{"type", "image"}});
  c.push_back({{"type", "text"}, {"text", text}});
  return c;
}

}  // namespace

void ChatSession::set_encoder(std::function<std::vector<int64_t>(const std::string&)> encode) {
  encode_ = std::move(encode);
}

void ChatSession::attach_images(int n) {
  HFX_CHECK(n >= 0, "chat", "expected a non-negative image count, got {}", n);
  if (!parts_)
    for (auto& m : messages_)
      if (m["content"].is_string()) m["content"] = content(m["content"].get<std::string>(), true, 0);
  parts_ = true;
  images_ = n;
}

std::string ChatSession::render_with(const std::string& user) const {
  tok::ChatInputs in;
  in.messages = messages_;
  in.tools = tools_;
  in.messages.push_back({{"role", "user"}, {"content", content(user, parts_, images_)}});
  in.add_generation_prompt = true;
  return template_.render(in);
}

std::vector<int64_t> ChatSession::encode(const std::string& rendered) const {
  if (encode_) return encode_(rendered);
  // The template wrote the special tokens (BOS, turn markers) itself: adding them again would double BOS.
  auto ids = gen_.tokenizer()->encode(rendered, /*add_special_tokens=*/false);
  return {ids.begin(), ids.end()};
}

GenerationResult ChatSession::send(const std::string& user, GenerationOptions options,
                                   const TokenCallback& callback) {
  last_prompt_ = render_with(user);
  const std::vector<int64_t> ids = encode(last_prompt_);
  last_ = {};
  last_.prompt_tokens = static_cast<int64_t>(ids.size());
  // The cache keeps the longest common prefix of the ids it holds and the new ones, leaving at least one
  // id to prefill (the step that gives the first logits).
  Engine& engine = gen_.engine();
  int64_t keep = 0;
  if (!cached_.empty() && engine.past_length() == static_cast<int64_t>(cached_.size())) {
    const size_t n = std::min(cached_.size(), ids.size() - 1);
    keep = std::mismatch(cached_.begin(), cached_.begin() + n, ids.begin()).first - cached_.begin();
    if (keep > 0 && keep < engine.past_length() && !engine.crop(keep)) keep = 0;
  }
  last_.cropped_tokens = keep > 0 ? static_cast<int64_t>(cached_.size()) - keep : 0;
  last_.cache_dropped = !cached_.empty() && keep == 0;
  options.cached_tokens = keep;
  last_.cached_tokens = keep;
  last_.prefilled_tokens = last_.prompt_tokens - keep;

  cached_.clear();  // a failed turn leaves the cache unknown
  GenerationResult r = gen_.generate_ids({ids}, options, callback);
  messages_.push_back({{"role", "user"}, {"content", content(user, parts_, images_)}});
  messages_.push_back({{"role", "assistant"}, {"content", content(r.texts[0], parts_, 0)}});
  images_ = 0;  // the images went with this message
  // The loop feeds every generated id but the last one back through the engine.
  cached_ = ids;
  if (!r.ids[0].empty()) cached_.insert(cached_.end(), r.ids[0].begin(), r.ids[0].end() - 1);
  if (gen_.engine().past_length() != static_cast<int64_t>(cached_.size())) cached_.clear();
  return r;
}

}  // namespace hfx
