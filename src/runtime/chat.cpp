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

std::string ChatSession::render_with(const std::string& user) const {
  tok::ChatInputs in;
  in.messages = messages_;
  in.messages.push_back({{"role", "user"}, {"content", user}});
  in.add_generation_prompt = true;
  return template_.render(in);
}

std::vector<int64_t> ChatSession::encode(const std::string& rendered) const {
  // The template wrote the special tokens (BOS, turn markers) itself: adding them again would double BOS.
  auto ids = gen_.tokenizer()->encode(rendered, /*add_special_tokens=*/false);
  return {ids.begin(), ids.end()};
}

GenerationResult ChatSession::send(const std::string& user, GenerationOptions options,
                                   const TokenCallback& callback) {
  const std::vector<int64_t> ids = encode(render_with(user));
  // Reuse the cache only when it holds a prefix of the new ids, and leaves at least one id to prefill.
  const bool reuse = !cached_.empty() && cached_.size() < ids.size() &&
                     gen_.engine().past_length() == static_cast<int64_t>(cached_.size()) &&
                     std::equal(cached_.begin(), cached_.end(), ids.begin());
  last_ = {};
  last_.prompt_tokens = static_cast<int64_t>(ids.size());
  last_.cache_dropped = !cached_.empty() && !reuse;
  options.cached_tokens = reuse ? static_cast<int64_t>(cached_.size()) : 0;
  last_.cached_tokens = options.cached_tokens;
  last_.prefilled_tokens = last_.prompt_tokens - last_.cached_tokens;

  cached_.clear();  // a failed turn leaves the cache unknown
  GenerationResult r = gen_.generate_ids({ids}, options, callback);
  messages_.push_back({{"role", "user"}, {"content", user}});
  messages_.push_back({{"role", "assistant"}, {"content", r.texts[0]}});
  // The loop feeds every generated id but the last one back through the engine.
  cached_ = ids;
  if (!r.ids[0].empty()) cached_.insert(cached_.end(), r.ids[0].begin(), r.ids[0].end() - 1);
  if (gen_.engine().past_length() != static_cast<int64_t>(cached_.size())) cached_.clear();
  return r;
}

}  // namespace hfx
