// libFuzzer entry of one target: HFX_FUZZ_ENTRY is hfx_fuzz_<name> (set per executable by CMakeLists.txt),
// defined in targets/<name>.cpp.
#include <cstddef>
#include <cstdint>

void HFX_FUZZ_ENTRY(const uint8_t* data, size_t size);

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  HFX_FUZZ_ENTRY(data, size);
  return 0;
}
