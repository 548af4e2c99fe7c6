// Helpers of the pre-quantized checkpoint tests (tests/quant/*prequantized_test.cpp).
#pragma once
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "hfx/core/error.h"
#include "hfx/quant/checkpoint_formats.h"

namespace hfx::test {

inline quant::CheckpointQuant cq_of(const std::string& method, int bits, int64_t group, bool sym,
                                    bool v2 = false) {
  nlohmann::json j = {{"quant_method", method}, {"bits", bits}, {"group_size", group}};
  if (method == "gptq") j["sym"] = sym, j["checkpoint_format"] = v2 ? "gptq_v2" : "gptq";
  return quant::parse_checkpoint_quant(j);
}

/// Runs fn, expecting an hfx::Error whose message holds every part.
inline void expect_error(const std::function<void()>& fn, const std::vector<std::string>& parts) {
  try {
    fn();
    FAIL() << "expected an error";
  } catch (const Error& e) {
    for (const auto& p : parts) EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
  }
}

}  // namespace hfx::test
