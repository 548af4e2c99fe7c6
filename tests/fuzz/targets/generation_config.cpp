// generation_config.json: eos_token_id (an int or a list) as the Generator reads it.
#include "fuzz/fuzz_support.h"
#include "hfx/runtime/generator.h"

void hfx_fuzz_generation_config(const uint8_t* data, size_t size) {
  hfx::fuzz::refused_or_read([&] { (void)hfx::eos_ids_from_json_text(hfx::fuzz::text(data, size)); });
}
