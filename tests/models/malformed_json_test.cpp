// Checked JSON reads (hfx/core/json.h): every reader of a file hfx did not write turns a wrong type or a
// missing key into "[component] expected ..., got ..." — config.json → ModelConfig for every architecture,
// generation settings, the export config, manifest.json. Each test walks every value of a valid document,
// replaced by each other JSON type (tests/support/json_mutations.h). The tokenizer files are covered in
// tests/tokenizers/tokenizer_malformed_test.cpp.
#include <gtest/gtest.h>

#include "hfx/artifact/manifest.h"
#include "hfx/core/error.h"
#include "hfx/export/exporter.h"
#include "hfx/models/model.h"
#include "hfx/runtime/text2text.h"
#include "support/json_mutations.h"

using namespace hfx;
using nlohmann::json;

TEST(MalformedJson, ModelConfigOfEveryArchitecture) {
  int documents = 0;
  for (const Architecture* a : all_architectures()) {
    json cfg = a->tiny_config("tiny");
    ASSERT_NO_THROW(parse_model_config(cfg)) << a->model_type;
    // layer_types is not in every tiny config; add it so that its malformed forms are tried everywhere.
    if (!cfg.contains("layer_types")) cfg["layer_types"] = json::array({"full_attention"});
    jsontest::for_each_mutation(cfg, 3, 4, [&](const std::string& what, const json& doc) {
      documents++;
      jsontest::expect_clear_refusal(a->model_type + " " + what, "model",
                                     [&] { (void)parse_model_config(doc); });
    });
  }
  EXPECT_GT(documents, 1000);
}

// The message names the file, the key and both types (the shape the issue asks for).
TEST(MalformedJson, ModelConfigMessageNamesKeyAndTypes) {
  json cfg = find_architecture("llama")->tiny_config("tiny");
  cfg["hidden_size"] = "64";
  try {
    parse_model_config(cfg);
    FAIL() << "expected a refusal";
  } catch (const Error& e) {
    EXPECT_STREQ(
        e.what(),
        "[model] expected config.json.hidden_size to be an integer, got a string \"64\" (fix that value in "
        "the file)");
  }
  cfg = find_architecture("qwen2")->tiny_config("tiny");
  cfg["layer_types"] = {"full_attention", 3};
  try {
    parse_model_config(cfg);
    FAIL() << "expected a refusal";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[model] expected a layer type string at layer 1, got 3"),
              std::string::npos)
        << e.what();
  }
}

TEST(MalformedJson, GenerationSettings) {
  const json cfg = {{"model_type", "t5"}, {"is_encoder_decoder", true},  {"eos_token_id", 1},
                    {"pad_token_id", 0},  {"decoder_start_token_id", 0}, {"bad_words_ids", {{3}, {4, 5}}}};
  const json gen = {{"eos_token_id", {1, 2}}, {"forced_bos_token_id", 2}, {"bos_token_id", 0}};
  ASSERT_NO_THROW(text2text_settings(cfg, gen));
  jsontest::for_each_mutation(cfg, 3, 4, [&](const std::string& what, const json& doc) {
    jsontest::expect_clear_refusal("config.json " + what, "generate", [&] {
      (void)is_text2text_config(doc);
      (void)text2text_settings(doc, gen);
    });
  });
  jsontest::for_each_mutation(gen, 3, 4, [&](const std::string& what, const json& doc) {
    jsontest::expect_clear_refusal("generation_config.json " + what, "generate",
                                   [&] { (void)text2text_settings(cfg, doc); });
  });
}

TEST(MalformedJson, ExportConfigOfEveryFormat) {
  for (const std::string& format : exporter_formats()) {
    json j = make_config(format)->to_json();
    j["dynamic_shapes"] = {{"input_ids", {{"1", {{"name", "seq"}, {"min", 1}, {"max", 64}}}}}};
    ASSERT_NO_THROW(make_config(format)->from_json(j)) << format;
    jsontest::for_each_mutation(j, 4, 4, [&](const std::string& what, const json& doc) {
      jsontest::expect_clear_refusal(format + " " + what, "config|export|executorch",
                                     [&] { (void)config_from_json(doc); });
    });
  }
  // An axis key that is not an index was a raw std::invalid_argument (std::stoi).
  json j = make_config("onnx")->to_json();
  j["dynamic_shapes"] = {{"input_ids", {{"seq", {{"name", "s"}, {"min", 1}, {"max", 8}}}}}};
  jsontest::expect_clear_refusal("axis key 'seq'", "config", [&] { (void)config_from_json(j); });
  EXPECT_THROW(config_from_json(j), Error);
}

TEST(MalformedJson, Manifest) {
  const json m = {
      {"schema_version", 1},
      {"model", {{"id", "org/tiny"}, {"revision", "main"}, {"source_path", "/x"}}},
      {"format", "onnx"},
      {"created_at", "2026-01-01T00:00:00Z"},
      {"hfx_version", "0.1.0"},
      {"dependencies", {{"onnx", "1.14"}}},
      {"export_config", {{"format", "onnx"}}},
      {"contracts", {{"model", {{"input_ids", {{{"symbol", "batch"}, {"min", 1}, {"max", 4}}}}}}}},
      {"files",
       {{{"path", "onnx/model.onnx"}, {"role", "graph"}, {"size", 3}, {"sha256", std::string(64, 'a')}}}},
      {"warnings", {"w"}},
      {"verify", {{"status", "passed"}, {"checked_at", ""}, {"report", json::object()}}}};
  ASSERT_NO_THROW(artifact::Manifest::from_json(m));
  jsontest::for_each_mutation(m, 5, 4, [&](const std::string& what, const json& doc) {
    jsontest::expect_clear_refusal("manifest.json " + what, "manifest",
                                   [&] { (void)artifact::Manifest::from_json(doc); });
  });
}
