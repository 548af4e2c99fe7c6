// Shape restrictions of a contract (hfx/runtime/shape_restriction.h): parsed from hfx.contract JSON,
// applied only when every condition holds, and refused with a message naming the rule and its reason.
#include <gtest/gtest.h>

#include "hfx/core/error.h"
#include "hfx/runtime/shape_restriction.h"

namespace {

using hfx::rt::AxisSize;

const nlohmann::json kContract = nlohmann::json::parse(R"({"inputs": {}, "restrictions": [
  {"when": [{"input": "input_ids", "axis": 1, "min": 2},
            {"input": "past_key_values.0.key", "axis": 2, "min": 1}],
   "require": {"input": "input_ids", "axis": 0, "max": 1}, "why": "the kernel's rule"}]})");

AxisSize sizes(int64_t batch, int64_t seq, int64_t past) {
  return [=](const std::string& input, int axis) -> int64_t {
    if (input == "input_ids") return axis == 0 ? batch : seq;
    if (input == "past_key_values.0.key") return past < 0 ? -1 : (axis == 2 ? past : batch);
    return -1;
  };
}

TEST(ShapeRestriction, AppliesOnlyWhenEveryConditionHolds) {
  auto rs = hfx::rt::restrictions_from_contract(kContract);
  ASSERT_EQ(rs.size(), 1u);
  EXPECT_EQ(hfx::rt::broken_restriction(rs, sizes(2, 4, 12)), &rs[0]);
  EXPECT_EQ(hfx::rt::broken_restriction(rs, sizes(1, 4, 12)), nullptr);
  EXPECT_EQ(hfx::rt::broken_restriction(rs, sizes(2, 1, 12)), nullptr) << "one new token";
  EXPECT_EQ(hfx::rt::broken_restriction(rs, sizes(2, 4, 0)), nullptr) << "empty past";
  EXPECT_EQ(hfx::rt::broken_restriction(rs, sizes(2, 4, -1)), nullptr) << "no past input fed";
  EXPECT_TRUE(
      hfx::rt::restrictions_from_contract(nlohmann::json{{"inputs", nlohmann::json::object()}}).empty());
}

TEST(ShapeRestriction, RefusalNamesTheRuleAndItsReason) {
  auto rs = hfx::rt::restrictions_from_contract(kContract);
  try {
    hfx::rt::check_restrictions(rs, sizes(2, 4, 12), "ort");
    FAIL() << "expected a refusal";
  } catch (const hfx::Error& e) {
    EXPECT_STREQ(e.what(),
                 "[ort] expected input_ids axis 0 <= 1 when input_ids axis 1 >= 2 and past_key_values.0.key "
                 "axis 2 >= 1 (out of "
                 "the graph's contract: the kernel's rule), got input_ids axis 0 = 2 (input_ids axis 1 = 4, "
                 "past_key_values.0.key axis 2 = 12)");
  }
  EXPECT_THROW(
      hfx::rt::restrictions_from_contract(nlohmann::json::parse(R"({"restrictions": [{"when": 3}]})")),
      hfx::Error);
}

// The generation engine's pre-check: each dynamic axis of the contract's inputs in its range, refused in the
// contract's words (ONNX Runtime's own refusal is a Reshape error naming a check node).
TEST(ShapeRestriction, AxisRangesComeFromTheContractsInputs) {
  const auto contract = nlohmann::json::parse(R"({"inputs": {
      "input_ids": [{"symbol": "batch_size", "min": 1, "max": 4}, {"symbol": "sequence_length", "min": 1, "max": 16}],
      "past_key_values.0.key": [{"symbol": "batch_size", "min": 1, "max": 4}, {"min": 2, "max": 2},
                                {"symbol": "past_sequence_length", "min": 0, "max": 15}, {"min": 8, "max": 8}]}})");
  auto rs = hfx::rt::axis_ranges_from_contract(contract, "re-export it");
  ASSERT_EQ(rs.size(), 4u) << "fixed axes are the graph's own business";
  EXPECT_EQ(hfx::rt::broken_restriction(rs, sizes(2, 16, 15)), nullptr);
  try {
    hfx::rt::check_restrictions(rs, sizes(2, 17, 0), "generate");
    FAIL() << "expected 17 new tokens to be refused";
  } catch (const hfx::Error& e) {
    EXPECT_STREQ(
        e.what(),
        "[generate] expected input_ids axis 1 in [1, 16] (the graph's contract: sequence_length in [1, "
        "16]; re-export it), got input_ids axis 1 = 17");
  }
  EXPECT_NE(hfx::rt::broken_restriction(rs, sizes(2, 1, 16)), nullptr) << "a past of 16";
  EXPECT_TRUE(hfx::rt::axis_ranges_from_contract(nlohmann::json::object(), "").empty());
}

}  // namespace
