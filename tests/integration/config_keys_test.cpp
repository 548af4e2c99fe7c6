// Every key an `hfx export --config` file accepts does something or is refused (issue 45: a configuration
// value without an implementation is a defect). The keys are read from hfx's own refusal of an unknown key
// (per format, and inside "quantize"), so a new key without a case here fails the test. Each case exports the
// tiny llama (gpt2 where the key needs a model with guards) with a base config, and with the base plus the
// key; the only outcomes allowed:
//   * the export succeeds and its artifact files (everything but manifest.json) differ from the base's;
//   * the export is refused, naming what was expected, and writes nothing.
// Negative control: the base exported twice gives identical artifacts (ExportFlags.Baseline... does the same
// for flags), so "differ" is not noise.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "hfx/io/safetensors.h"
#include "models/model_test_util.h"
#include "support/artifact_files.h"
#include "support/shell.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace hfx {
namespace {

using testsupport::artifact_hashes;
using testsupport::sh;

struct KeyCase {
  std::string key;                             ///< "opset", or "quantize.group_size" inside quantize
  json value;                                  ///< what the case sets it to
  json base;                                   ///< per format: the config of both runs (null: {})
  std::string model;                           ///< "llama" or "gpt2"
  std::map<std::string, json> value_for = {};  ///< a format's own value where the common one is its default
};

const std::vector<std::string> kFormats = {"onnx", "executorch", "dynamo"};

// Quantized bases: ONNX's blocked DequantizeLinear needs opset 21; ExecuTorch quantizes for XNNPACK only,
// with symmetric codes.
json quant_base(const std::string& q) {
  return json::parse(R"({"onnx": {"opset": 21, "quantize": )" + q + R"(}, "executorch": {"backend": "xnnpack",
      "quantize": )" +
                     q + R"(}, "dynamo": {"quantize": )" + q + "}}");
}

KeyCase key_case(const std::string& key, const std::string& value, json base = nullptr,
                 const std::string& model = "llama", std::map<std::string, json> value_for = {}) {
  return KeyCase{key, json::parse(value), std::move(base), model, std::move(value_for)};
}

std::vector<KeyCase> cases() {
  const std::string q4 = R"({"method": "int4", "symmetric": true})",
                    q8 = R"({"method": "int8", "symmetric": true})";
  return {
      key_case("opset", "23"),
      key_case("external_data", "true"),
      key_case("optimize", "false"),
      key_case("target", R"("ort")"),
      key_case("quantize", q4, quant_base("{}")),
      key_case("dynamic", "false"),
      key_case("dynamic_shapes", R"({"input_ids": {"1": {"name": "seq", "min": 1, "max": 64}}})"),
      // gpt2's learned positions ask a question the ranges cannot answer: false makes capture refuse it.
      key_case("prefer_deferred_runtime_asserts_over_guards", "false", nullptr, "gpt2"),
      key_case("max_batch", "2"),
      key_case("max_sequence", "64"),
      key_case("dtype", R"("f16")"),
      key_case("backend", R"("xnnpack")"),
      key_case("max_seq_len", "64"),
      key_case("quantize.method", R"("int8")", quant_base(q4)),
      key_case("quantize.group_size", "64", quant_base(q4)),
      key_case("quantize.symmetric", "false", quant_base(q4)),
      key_case("quantize.activations", R"("int8")", quant_base(q4)),
      key_case("quantize.embedding", "true", quant_base(q4)),
      // XNNPACK's int4 kernel reads bf16 scales and its int8 one per-channel scales (hfx sets both): asking
      // for the other layout is what can change there.
      key_case("quantize.scales", R"("bf16")", quant_base(q4), "llama", {{"executorch", "f32"}}),
      key_case("quantize.per_channel", "true", quant_base(q8), "llama", {{"executorch", false}}),
  };
}

class ConfigKeys : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new test::TempDir("config_keys");
    for (const char* m : {"llama", "gpt2"})
      ASSERT_EQ(sh(std::string(HFX_CLI) + " create-tiny " + m + " -o " + (dir_->path / m).string()).rc, 0);
  }
  static void TearDownTestSuite() { delete dir_; }
  // `hfx export MODEL --format F --config C`; the config file is written beside.
  static testsupport::Proc run(const std::string& model, const std::string& format, const json& cfg,
                               const fs::path& out) {
    const fs::path file = out.string() + ".json";
    std::ofstream(file) << cfg.dump();
    return sh(std::string(HFX_CLI) + " --quiet export " + (dir_->path / model).string() + " --format " +
              format + " --config " + file.string() + " -o " + out.string());
  }
  // The keys hfx accepts, from its refusal of one it does not ("expected ... among [a, b, c], got ...").
  static std::set<std::string> accepted(const std::string& format, const json& cfg,
                                        const std::string& prefix) {
    auto p = run("llama", format, cfg, dir_->path / ("unknown-" + format + prefix));
    EXPECT_NE(p.rc, 0) << p.out;
    std::smatch m;
    std::set<std::string> keys;
    if (!std::regex_search(p.out, m, std::regex(R"(among \[([^\]]*)\])"))) {
      ADD_FAILURE() << format << ": expected the refusal to list the accepted keys, got " << p.out;
      return keys;
    }
    const std::string list = m[1];
    const std::regex item(R"([\w]+)");
    for (auto it = std::sregex_iterator(list.begin(), list.end(), item); it != std::sregex_iterator(); ++it)
      keys.insert(prefix + it->str());
    return keys;
  }
  static test::TempDir* dir_;
};
test::TempDir* ConfigKeys::dir_ = nullptr;

TEST_F(ConfigKeys, EveryKeyChangesTheArtifactOrIsRefused) {
  const std::vector<KeyCase> all = cases();
  std::map<std::string, const KeyCase*> by_key;
  for (const KeyCase& c : all) by_key[c.key] = &c;
  int changed = 0, refused = 0, n = 0;
  for (const std::string& format : kFormats) {
    std::set<std::string> keys = accepted(format, {{"no_such_key", 1}}, "");
    if (keys.count("quantize"))
      for (const auto& k : accepted(format, {{"quantize", {{"no_such_key", 1}}}}, "quantize."))
        keys.insert(k);
    ASSERT_GT(keys.size(), 5u) << format;
    for (const std::string& key : keys) {
      if (key == "format") continue;  // the format itself: --format must agree with it
      auto it = by_key.find(key);
      if (it == by_key.end()) {
        ADD_FAILURE() << format << " accepts config key '" << key
                      << "' but it has no case here: say what it does";
        continue;
      }
      const KeyCase& c = *it->second;
      const json base = c.base.is_object() && c.base.contains(format) ? c.base[format] : json::object();
      json with = base;
      const json& value = c.value_for.count(format) ? c.value_for.at(format) : c.value;
      if (key.rfind("quantize.", 0) == 0)
        with["quantize"][key.substr(9)] = value;
      else
        with[key] = value;
      const fs::path b = dir_->path / ("base" + std::to_string(n)),
                     out = dir_->path / ("case" + std::to_string(n));
      n++;
      const std::string what = format + " " + with.dump();
      auto p = run(c.model, format, with, out);
      if (p.rc != 0) {
        EXPECT_NE(p.out.find("] expected"), std::string::npos)
            << what << ": refused without saying why: " << p.out;
        EXPECT_FALSE(fs::exists(out)) << what << ": refused but wrote " << out;
        std::printf("  [config keys] %s refused: %s", what.c_str(),
                    p.out.substr(p.out.find("hfx: ")).c_str());
        refused++;
        continue;
      }
      auto pb = run(c.model, format, base, b);
      if (pb.rc != 0) {  // the key made a refused base succeed: that is a change
        changed++;
        continue;
      }
      EXPECT_NE(artifact_hashes(out), artifact_hashes(b)) << what << ": the artifact equals the base's";
      changed++;
    }
  }
  std::printf("  [config keys] %d exports: %d changed the artifact, %d refused\n", n, changed, refused);
}

}  // namespace
}  // namespace hfx
