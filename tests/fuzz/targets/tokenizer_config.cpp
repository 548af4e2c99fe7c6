// tokenizer_config.json (special tokens, chat template, added_tokens_decoder) over a real tokenizer.json.
// The tokenizer.json is parsed once: a config changes only the tokenizer's TokenizerConfig (the special-token
// lookups, the chat template), so parsing the same tokenizer.json again per input would spend the run on
// it (about 190 inputs/s with it, against the config parse alone below).
#include "fuzz/fuzz_support.h"
#include "hfx/tokenizers/tokenizer.h"

namespace {
hfx::tok::Tokenizer& base_tokenizer() {
  static hfx::tok::Tokenizer t = hfx::tok::Tokenizer::from_json_string(
      hfx::tok::make_tiny_tokenizer_json(hfx::tok::TinyTokenizerKind::SentencePieceBPE, 512));
  return t;
}
}  // namespace

void hfx_fuzz_tokenizer_config(const uint8_t* data, size_t size) {
  hfx::tok::Tokenizer& t = base_tokenizer();
  t.set_config({});
  hfx::fuzz::refused_or_read([&] {
    t.set_config(hfx::tok::Tokenizer::parse_config_json(hfx::fuzz::text(data, size)));
    (void)t.bos_id();
    (void)t.eos_id();
    (void)t.pad_id();
    (void)t.unk_id();
    auto ids = t.encode("Hello <s> world</s>", true);
    (void)t.decode(ids, true);
  });
}
