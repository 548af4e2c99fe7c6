// tokenizer.json: model, normalizer, pre-tokenizer (user regexes), post-processor, decoder, added tokens;
// then one encode and decode through whatever was built.
#include "fuzz/fuzz_support.h"
#include "hfx/tokenizers/tokenizer.h"

void hfx_fuzz_tokenizer_json(const uint8_t* data, size_t size) {
  hfx::fuzz::refused_or_read([&] {
    auto t = hfx::tok::Tokenizer::from_json_string(hfx::fuzz::text(data, size));
    auto ids = t.encode("Hello wörld! 123 <s> tabs\tand  spaces ☃", true);
    (void)t.decode(ids, false);
    (void)t.decode(ids, true);
  });
}
