// Checked JSON reads of tokenizer.json and tokenizer_config.json: every value of real fixtures replaced by
// each other JSON type gives a tokenizer or "[tokenizer] expected ..., got ..."
// (tests/support/json_mutations.h), never a raw nlohmann exception or its text.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "hfx/tokenizers/tokenizer.h"
#include "support/json_mutations.h"

using nlohmann::json;
namespace fs = std::filesystem;

namespace {
json fixture(const std::string& name) {
  std::ifstream f(fs::path(HFX_TEST_DATA) / "tokenizers" / name);
  return json::parse(f);
}
}  // namespace

// One fixture per model kind (WordPiece, Unigram, byte-level BPE, SentencePiece BPE with byte fallback).
TEST(TokenizerMalformed, TokenizerJsonFieldsOfEveryKind) {
  for (const char* name :
       {"bert_wordpiece.json", "t5_unigram.json", "tiny_bytelevel_bpe.json", "llama2_sp_bpe.json"}) {
    const json doc = fixture(name);
    ASSERT_NO_THROW(hfx::tok::Tokenizer::from_json_string(doc.dump())) << name;
    int n = 0;
    hfx::jsontest::for_each_mutation(doc, 4, 5, [&](const std::string& what, const json& m) {
      n++;
      hfx::jsontest::expect_clear_refusal(std::string(name) + " " + what, "tokenizer",
                                          [&] { (void)hfx::tok::Tokenizer::from_json_string(m.dump()); });
    });
    EXPECT_GT(n, 100) << name;
  }
}

// A corrupt sentencepiece charsmap (bad base64, a trie size past the blob, a trie walk out of bounds) is a
// clear refusal at load or at encode, never a read past the buffer (the ASan suite runs this too).
TEST(TokenizerMalformed, PrecompiledCharsmap) {
  json doc = fixture("custom_charsmap_unigram.json");
  auto refused = [&](const std::string& charsmap, const char* needle) {
    json d = doc;
    d["normalizer"]["precompiled_charsmap"] = charsmap;
    try {
      auto t = hfx::tok::Tokenizer::from_json_string(d.dump());
      (void)t.encode("Ao o\u0308 e\u0301 \xef\xac\x81x \xe2\x91\xa0");
      FAIL() << "expected a refusal for " << needle;
    } catch (const hfx::Error& e) {
      EXPECT_NE(std::string(e.what()).find("[tokenizer] expected"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  refused("not*base64", "standard base64");
  refused("", "4-byte trie size");
  refused("/////w==", "trie size");  // 0xFFFFFFFF bytes of trie in a 4-byte blob
  // One unit whose offset (1024) sends the first step of every lookup out of the 1-unit trie.
  refused("BAAAAAAAEAA=", "stay within");
  ASSERT_NO_THROW((void)hfx::tok::Tokenizer::from_json_string(doc.dump()).encode("Ao o\u0308"));
}

TEST(TokenizerMalformed, TokenizerConfigFields) {
  const std::string tj = fixture("tiny_bytelevel_bpe.json").dump();
  const json cfg = {{"add_bos_token", true},
                    {"add_eos_token", false},
                    {"bos_token", {{"content", "<s>"}}},
                    {"eos_token", "</s>"},
                    {"chat_template", {{{"name", "default"}, {"template", "{{ messages }}"}}}},
                    {"model_max_length", 128},
                    {"tokenizer_class", "PreTrainedTokenizerFast"}};
  ASSERT_NO_THROW(hfx::tok::Tokenizer::from_json_string(tj, cfg.dump()));
  hfx::jsontest::for_each_mutation(cfg, 4, 4, [&](const std::string& what, const json& m) {
    hfx::jsontest::expect_clear_refusal("tokenizer_config.json " + what, "tokenizer",
                                        [&] { (void)hfx::tok::Tokenizer::from_json_string(tj, m.dump()); });
  });
}

TEST(TokenizerMalformed, MessageNamesTheField) {
  json doc = fixture("tiny_bytelevel_bpe.json");
  doc["added_tokens"][0]["special"] = "yes";
  try {
    (void)hfx::tok::Tokenizer::from_json_string(doc.dump());
    FAIL() << "expected a refusal";
  } catch (const hfx::Error& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "expected tokenizer.json added_tokens[0].special to be a boolean, got a string \"yes\""),
              std::string::npos)
        << e.what();
  }
}
