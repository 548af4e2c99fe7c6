// Oracles: the independent references the suite compares hfx against (node and its npm packages,
// Debian's chromium). Every test that needs one asks here, through HFX_REQUIRE_ORACLE, so that a missing
// oracle is handled in one way everywhere: by default the test skips with what is missing and how to
// install it (a developer without deps/npm can still run the rest); with HFX_REQUIRE_ORACLES=1 in the
// environment (.ci/run and scripts/test.sh set it) the same test FAILS with that message, so CI cannot
// pass by skipping. (ONNX Runtime itself is checked when CMake configures: cmake/onnxruntime.cmake.)
#pragma once
#include <string>

#include <gtest/gtest.h>

namespace hfx::test {

/// One oracle: a name for messages, how to install it, and a check that it is present.
struct Oracle {
  const char* name;     ///< e.g. "Transformers.js (@huggingface/transformers)"
  const char* install;  ///< e.g. "run scripts/setup.sh (npm ci in deps/npm)"
  bool (*present)();
};

extern const Oracle kNode;            ///< node on PATH
extern const Oracle kTransformersJs;  ///< @huggingface/transformers under deps/npm/node_modules (and node)
extern const Oracle kTokenizersJs;    ///< tokenizers (HF tokenizers' node binding) (and node)
extern const Oracle kNodeLlamaCpp;    ///< node-llama-cpp (llama.cpp's reference) (and node)
extern const Oracle kHfJinja;         ///< @huggingface/jinja (and node)
extern const Oracle kChromium;        ///< /usr/bin/chromium (headless screenshots of HTML reports)

/// True when HFX_REQUIRE_ORACLES=1: a missing oracle fails the test instead of skipping it.
bool oracles_required();
/// "" when `o` is present; otherwise "[oracle] expected <name>, got none: <install>" plus the mode's note.
std::string oracle_missing(const Oracle& o);

}  // namespace hfx::test

/// In a test body: skips (default) or fails (HFX_REQUIRE_ORACLES=1) when `oracle` is missing.
#define HFX_REQUIRE_ORACLE(oracle)                                           \
  do {                                                                       \
    const std::string hfx_oracle_why_ = ::hfx::test::oracle_missing(oracle); \
    if (!hfx_oracle_why_.empty()) {                                          \
      if (::hfx::test::oracles_required()) GTEST_FAIL() << hfx_oracle_why_;  \
      GTEST_SKIP() << hfx_oracle_why_;                                       \
    }                                                                        \
  } while (0)
