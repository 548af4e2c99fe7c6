// .pt2 (torch.export zip) as `hfx verify` reads it: libzip's archive checks, names, overlaps, bomb bounds,
// and the models/*.json ExportedProgram records inflated and parsed.
#include "fuzz/fuzz_support.h"
#include "verify/verify_internal.h"

void hfx_fuzz_pt2(const uint8_t* data, size_t size) {
  hfx::fuzz::refused_or_read(
      [&] { (void)hfx::verify::detail::read_pt2_structure(hfx::fuzz::text(data, size)); });
}
