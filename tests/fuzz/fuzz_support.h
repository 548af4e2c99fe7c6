// tests/fuzz/fuzz_support.h — what the fuzz targets share. Each target is a function
// `void hfx_fuzz_<name>(const uint8_t* data, size_t size)` in targets/<name>.cpp that feeds the bytes to one
// parser of untrusted input the way hfx itself reads that file. An hfx::Error is the parser refusing bad
// input (expected); anything else escaping (another exception, a sanitizer report, a hang) is a finding. The
// libFuzzer executables (fuzz_main.cpp) and the corpus regression test (fuzz_corpus_test.cpp) call the same
// functions.
#pragma once
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "hfx/core/error.h"
#include "hfx/models/model.h"

// Every target, in the order docs/fuzzing.md lists them; the corpus of X is tests/fuzz/X/.
#define HFX_FUZZ_TARGETS(X) \
  X(safetensors)            \
  X(safetensors_index)      \
  X(model_config)           \
  X(tokenizer_json) X(tokenizer_config) X(generation_config) X(manifest) X(onnx) X(pte) X(pt2) X(gguf)

#define HFX_FUZZ_DECLARE(name) void hfx_fuzz_##name(const uint8_t* data, size_t size);
HFX_FUZZ_TARGETS(HFX_FUZZ_DECLARE)
#undef HFX_FUZZ_DECLARE

namespace hfx::fuzz {

/// This process's scratch folder (under TMPDIR, removed at exit), made on first use.
const std::filesystem::path& scratch();
/// Writes `size` bytes to scratch()/rel (folders made as needed) and returns the path.
std::filesystem::path put(const std::string& rel, const uint8_t* data, size_t size);
inline std::string text(const uint8_t* data, size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

/// A tiny llama (hfx create-tiny, 1 layer) loaded once: the reference that the ONNX checks compare against.
std::shared_ptr<const CausalLM> tiny_llama();

/// Runs `body`, letting hfx::Error (a clear refusal) through as the expected outcome of bad input.
template <class F>
void refused_or_read(F&& body) {
  try {
    body();
  } catch (const hfx::Error&) {
  }
}

}  // namespace hfx::fuzz
