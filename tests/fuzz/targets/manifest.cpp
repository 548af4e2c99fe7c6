// manifest.json of an export folder, as `hfx verify` reads it: schema, files (paths kept inside), contracts,
// then the checksum pass over the files it lists.
#include "hfx/artifact/manifest.h"
#include "fuzz/fuzz_support.h"

void hfx_fuzz_manifest(const uint8_t* data, size_t size) {
  const auto dir = hfx::fuzz::put("manifest/manifest.json", data, size).parent_path();
  hfx::fuzz::refused_or_read([&] {
    auto m = hfx::artifact::Manifest::read(dir.string());
    (void)m.verify_checksums(dir.string());
    (void)m.to_json().dump();
  });
}
