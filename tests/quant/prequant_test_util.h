// Helpers of the pre-quantized checkpoint tests (tests/quant/*prequantized_test.cpp).
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "hfx/core/error.h"
#include "hfx/quant/checkpoint_formats.h"
#include "hfx/verify/verify.h"
#include "models/model_test_util.h"

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

/// Worst |logit| difference of `lm` against a prequant golden's transformers logits (its "cases": input_ids
/// and the logits of every position; tests/data/goldens/prequant-*.json).
inline double worst_vs_golden(const CausalLM& lm, const nlohmann::json& golden) {
  double worst = 0;
  for (const auto& c : golden["cases"]) {
    const auto ids = c["input_ids"].get<std::vector<int64_t>>();
    const int64_t S = static_cast<int64_t>(ids.size());
    EagerBuilder eb;
    ForwardArgs a;
    a.input_ids = eb.wrap(ints({1, S}, ids));
    Tensor logits = lm.forward(eb, a).logits.tensor().contiguous();
    const int64_t V = logits.size(2);
    for (int64_t s = 0; s < S; s++)
      for (int64_t t = 0; t < V; t++)
        worst = std::max(worst, std::fabs(logits.data<float>()[s * V + t] - c["logits"][s][t].get<double>()));
  }
  return worst;
}

/// `hfx verify OUT --reference REF`, quiet, no manifest written: passes, or fails with its first failure.
inline void expect_verified(const std::string& out, const std::string& reference) {
  verify::VerifyOptions vo;
  vo.out_dir = out;
  vo.reference = reference;
  vo.quiet = true;
  vo.write_manifest = false;
  const verify::VerifyReport r = verify::run_verify(vo);
  EXPECT_TRUE(r.passed) << r.first_failure;
}

}  // namespace hfx::test
