// model.gguf as `hfx verify` reads it back (GgufReader): the header, key/value pairs, tensor table and every
// tensor decoded (f32, f16, bf16, q8_0, q4_0, q5_0, q4_k, q6_k blocks).
#include "hfx/export/gguf.h"
#include "fuzz/fuzz_support.h"

void hfx_fuzz_gguf(const uint8_t* data, size_t size) {
  const auto path = hfx::fuzz::put("gguf/model.gguf", data, size);
  hfx::fuzz::refused_or_read([&] {
    hfx::GgufReader r(path.string());
    volatile float sum = 0;
    for (const hfx::GgufTensor& t : r.tensors()) {
      if (t.bytes > (64u << 20))
        continue;  // the reader checked it lies in the file; decoding is the same code
      const hfx::Tensor x = r.decode(t);
      const auto* p = x.data<float>();
      for (int64_t i = 0; i < x.numel(); i++) sum = sum + p[i];
    }
  });
}
