// model.safetensors: the header (length, JSON, dtypes, shapes, offsets) and every tensor view it yields.
#include "hfx/io/safetensors.h"
#include "fuzz/fuzz_support.h"

void hfx_fuzz_safetensors(const uint8_t* data, size_t size) {
  const auto path = hfx::fuzz::put("st/model.safetensors", data, size);
  hfx::fuzz::refused_or_read([&] {
    auto f = hfx::io::SafetensorsFile::open(path.string());
    // Touch every byte the views claim, so ASan sees any view that reaches past the mapping.
    volatile uint8_t sum = 0;
    for (const auto& ti : f->tensors()) {
      hfx::Tensor t = f->get(ti.name);
      const auto* p = static_cast<const uint8_t*>(t.raw());
      for (size_t i = 0; i < t.nbytes(); i++) sum = sum + p[i];
    }
  });
}
