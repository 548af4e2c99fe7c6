// The checked JSON accessors themselves (hfx/core/json.h): values of the right type pass through, others
// give "[component] expected <where> to be <kind>, got <kind> <value>".
#include <gtest/gtest.h>

#include "hfx/core/error.h"
#include "hfx/core/json.h"

using namespace hfx;
using nlohmann::json;

namespace {
std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}
}  // namespace

TEST(CheckedJson, ValuesOfTheRightType) {
  const json j = {{"n", 3},    {"f", 4096.0}, {"x", 0.5},    {"s", "a"},
                  {"b", true}, {"l", {1, 2}}, {"z", nullptr}};
  EXPECT_EQ(jsonc::get<int64_t>(j, "n", "c", "f.json"), 3);
  EXPECT_EQ(jsonc::get<int64_t>(j, "f", "c", "f.json"), 4096);  // integral floats, as other tools write them
  EXPECT_EQ(jsonc::get<double>(j, "n", "c", "f.json"), 3.0);
  EXPECT_EQ(jsonc::get<std::string>(j, "s", "c", "f.json"), "a");
  EXPECT_TRUE(jsonc::get<bool>(j, "b", "c", "f.json"));
  EXPECT_EQ(jsonc::get<std::vector<int64_t>>(j, "l", "c", "f.json"), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(jsonc::get_or<int64_t>(j, "z", 9, "c", "f.json"), 9);  // null: the default
  EXPECT_EQ(jsonc::get_or<int64_t>(j, "absent", 9, "c", "f.json"), 9);
}

TEST(CheckedJson, WrongTypesAndMissingKeys) {
  const json j = {{"n", "3"}, {"x", 0.5}, {"neg", -1}, {"l", {1, "a"}}, {"b", 1}};
  EXPECT_EQ(
      error_of([&] { jsonc::get<int64_t>(j, "n", "model", "config.json"); }),
      "[model] expected config.json.n to be an integer, got a string \"3\" (fix that value in the file)");
  EXPECT_EQ(error_of([&] { jsonc::get<int64_t>(j, "x", "model", "config.json"); }),
            "[model] expected config.json.x to be an integer, got a number 0.5 (fix that value in the file)");
  EXPECT_EQ(
      error_of([&] { jsonc::get<uint64_t>(j, "neg", "m", "w"); }),
      "[m] expected w.neg to be a non-negative integer, got an integer -1 (fix that value in the file)");
  EXPECT_EQ(error_of([&] { jsonc::get<std::vector<int64_t>>(j, "l", "m", "w"); }),
            "[m] expected w.l[1] to be an integer, got a string \"a\" (fix that value in the file)");
  EXPECT_EQ(error_of([&] { jsonc::get<bool>(j, "b", "m", "w"); }),
            "[m] expected w.b to be a boolean, got an integer 1 (fix that value in the file)");
  EXPECT_EQ(error_of([&] { jsonc::get<int64_t>(j, "missing", "m", "w"); }),
            "[m] expected key 'missing' in w, got none (add it to the file)");
  EXPECT_EQ(error_of([&] { jsonc::get_or<int64_t>(json::array(), "k", 0, "m", "w"); }),
            "[m] expected w to be an object, got a list [] (fix that value in the file)");
  EXPECT_EQ(error_of([&] {
              jsonc::parse("{\"a\": ", "m", "f.json");
            }).rfind("[m] expected valid JSON in f.json", 0),
            0u);
  const std::string long_text(200, 'z');
  EXPECT_LT(error_of([&] { jsonc::as<int64_t>(json(long_text), "m", "w"); }).size(), 150u);  // values are cut
}

// Found by fuzz_model_config and fuzz_manifest (tests/fuzz/*/regressions/*_past_int64.json): a float past
// int64's range was converted to an integer (undefined behaviour, UBSan); an integer past the target type's
// range wrapped silently. Both are now refused, naming the range.
TEST(CheckedJson, IntegersOutsideTheirTypesRangeAreRefused) {
  const json j = json::parse(R"({"huge": 1e86, "neg_huge": -5.2e42, "two63": 9223372036854775808.0,
    "u64": 18446744073709551615, "i32_over": 3000000000, "inf_like": 1.7976931348623157e308,
    "min64": -9223372036854775808, "ok_f": 4096.0, "neg": -1})");
  for (const char* k : {"huge", "neg_huge", "two63", "u64", "inf_like"})
    EXPECT_NE(error_of([&] { jsonc::get<int64_t>(j, k, "model", "config.json"); })
                  .find(std::string("expected config.json.") + k +
                        " to be an integer from -9223372036854775808 to "
                        "9223372036854775807, got"),
              std::string::npos)
        << k;
  EXPECT_NE(error_of([&] {
              jsonc::get<int>(j, "i32_over", "model", "config.json");
            }).find("to be an integer from -2147483648 to 2147483647, got an integer 3000000000"),
            std::string::npos);
  EXPECT_EQ(jsonc::get<uint64_t>(j, "u64", "c", "f.json"), UINT64_MAX);
  EXPECT_EQ(jsonc::get<uint64_t>(j, "two63", "c", "f.json"), uint64_t{1} << 63);
  EXPECT_EQ(jsonc::get<int64_t>(j, "min64", "c", "f.json"), INT64_MIN);
  EXPECT_EQ(jsonc::get<int>(j, "ok_f", "c", "f.json"), 4096);
  EXPECT_NE(
      error_of([&] { jsonc::get<uint64_t>(j, "neg", "c", "f.json"); }).find("a non-negative integer, got"),
      std::string::npos);
  EXPECT_NE(
      error_of([&] { jsonc::get<uint64_t>(j, "neg_huge", "c", "f.json"); }).find("a non-negative integer"),
      std::string::npos);
}
