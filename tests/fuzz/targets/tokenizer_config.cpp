// tokenizer_config.json (special tokens, chat template, added_tokens_decoder) over a real tokenizer.json.
#include <fstream>
#include <sstream>

#include "fuzz/fuzz_support.h"
#include "hfx/tokenizers/tokenizer.h"

namespace {
const std::string& base_tokenizer() {
  static const std::string s =
      hfx::tok::make_tiny_tokenizer_json(hfx::tok::TinyTokenizerKind::SentencePieceBPE, 512);
  return s;
}
}  // namespace

void hfx_fuzz_tokenizer_config(const uint8_t* data, size_t size) {
  hfx::fuzz::refused_or_read([&] {
    auto t = hfx::tok::Tokenizer::from_json_string(base_tokenizer(), hfx::fuzz::text(data, size));
    auto ids = t.encode("Hello <s> world</s>", true);
    (void)t.decode(ids, true);
  });
}
