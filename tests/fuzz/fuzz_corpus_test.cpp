// Every committed fuzz input (the seed corpus tests/fuzz/<target>/ and the crash inputs found by fuzzing,
// tests/fuzz/<target>/regressions/) goes through its target in the normal suite: each must be read or
// refused with an hfx::Error, never crash, hang or throw anything else.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <typeinfo>

#include "fuzz/fuzz_support.h"

namespace {

namespace fs = std::filesystem;

std::vector<fs::path> inputs(const std::string& target, bool regressions) {
  std::vector<fs::path> r;
  fs::path dir = fs::path(HFX_SOURCE_DIR) / "tests" / "fuzz" / target;
  if (regressions) dir /= "regressions";
  if (!fs::is_directory(dir)) return r;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file()) r.push_back(e.path());
  std::sort(r.begin(), r.end());
  return r;
}

void run_all(void (*fn)(const uint8_t*, size_t), const std::vector<fs::path>& files) {
  for (const auto& p : files) {
    std::ifstream f(p, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    SCOPED_TRACE(p.string());
    try {
      fn(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    } catch (const std::exception& e) {
      ADD_FAILURE() << p << ": expected a read or an hfx::Error, got " << typeid(e).name() << ": "
                    << e.what();
    }
  }
}

#define HFX_FUZZ_CORPUS_TEST(name)                                                \
  TEST(FuzzCorpus, name) {                                                        \
    auto seeds = inputs(#name, false);                                            \
    ASSERT_FALSE(seeds.empty()) << "expected a seed corpus in tests/fuzz/" #name; \
    run_all(hfx_fuzz_##name, seeds);                                              \
  }                                                                               \
  TEST(FuzzRegressions, name) { run_all(hfx_fuzz_##name, inputs(#name, true)); }
HFX_FUZZ_TARGETS(HFX_FUZZ_CORPUS_TEST)

}  // namespace
