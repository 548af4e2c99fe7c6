// Tokenizer parity with Hugging Face's Rust tokenizers (npm `tokenizers`, run by node as the
// oracle), the tiny fixture tokenizers, DecodeStream, and error cases.
#include "hfx/tokenizers/tokenizer.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "hfx/core/error.h"
#include "support/oracle.h"

namespace fs = std::filesystem;
using hfx::tok::Tokenizer;
using json = nlohmann::json;

namespace {

const fs::path kData = fs::path(HFX_TEST_DATA) / "tokenizers";

const std::vector<std::string> kFixtures = {
    "gpt2_bpe.json",
    "llama3_bpe.json",
    "qwen2_bpe.json",
    "mixed_bpe.json",
    "llama2_sp_bpe.json",
    "metaspace_bpe.json",
    "bert_wordpiece.json",
    "whitespace_wordpiece.json",
    "t5_unigram.json",
    "bytefallback_unigram.json",
    "tiny_bytelevel_bpe.json",
    "tiny_sentencepiece_bpe.json",
    // sentencepiece's compiled charsmap (`Precompiled`), converted by transformers
    // (tests/tokenizers/make_precompiled_fixtures.py): XLM-R's nmt_nfkc map and a small rule table.
    "xlmr_precompiled_unigram.json",
    "custom_charsmap_unigram.json",
};

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::vector<std::string> corpus() {
  std::vector<std::string> out;
  std::ifstream f(kData / "corpus.txt");
  std::string line;
  while (std::getline(f, line))
    if (!line.empty()) out.push_back(json::parse(line).get<std::string>());
  return out;
}

// Runs the node oracle once for all fixtures (callers check first that it is installed); empty json
// and the failed command when it did not run.
struct Oracle {
  json result;
  std::string error;
};

const Oracle& oracle() {
  static const Oracle o = [] {
    Oracle r;
    fs::path nm(HFX_NODE_MODULES);
    fs::path out = fs::temp_directory_path() / ("hfx_tok_oracle_" + std::to_string(::getpid()) + ".json");
    std::string cmd = "node '" + (fs::path(HFX_SOURCE_DIR) / "tests/tokenizers/oracle.js").string() + "' '" +
                      nm.string() + "' '" + (kData / "corpus.txt").string() + "'";
    for (auto& f : kFixtures) cmd += " '" + (kData / f).string() + "'";
    cmd += " > '" + out.string() + "'";
    if (std::system(cmd.c_str()) != 0) {
      r.error = "the node oracle failed: " + cmd;
      return r;
    }
    r.result = json::parse(slurp(out));
    fs::remove(out);
    return r;
  }();
  return o;
}

std::string show(const std::vector<int32_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "]";
}

class TokenizerParity : public ::testing::TestWithParam<std::string> {};

TEST_P(TokenizerParity, MatchesHuggingFace) {
  HFX_REQUIRE_ORACLE(hfx::test::kTokenizersJs);
  const Oracle& o = oracle();
  ASSERT_TRUE(o.error.empty()) << o.error;
  const fs::path path = kData / GetParam();
  const json& ref = o.result.at(path.string());
  Tokenizer tok = Tokenizer::from_files(path.string());
  EXPECT_EQ(tok.vocab_size(), ref.at("vocab_size").get<int32_t>());
  auto texts = corpus();
  const json& results = ref.at("results");
  ASSERT_EQ(results.size(), texts.size());
  int failures = 0;
  for (size_t i = 0; i < texts.size() && failures < 10; ++i) {
    const json& r = results[i];
    const std::string& s = texts[i];
    auto ids = tok.encode(s, true);
    auto plain = tok.encode(s, false);
    auto want_ids = r.at("ids").get<std::vector<int32_t>>();
    auto want_plain = r.at("ids_plain").get<std::vector<int32_t>>();
    bool ok = true;
    auto check = [&](bool cond, const std::string& what, const std::string& got, const std::string& want) {
      if (cond) return;
      ok = false;
      ADD_FAILURE() << GetParam() << " line " << i + 1 << " " << json(s).dump() << ": " << what << "\n  got  "
                    << got << "\n  want " << want;
    };
    check(ids == want_ids, "encode(add_special_tokens=true)", show(ids), show(want_ids));
    check(plain == want_plain, "encode(add_special_tokens=false)", show(plain), show(want_plain));
    // Decode the oracle's ids so that decode is checked even where encode differs.
    std::string t = tok.decode(want_ids, false), ts = tok.decode(want_ids, true),
                tp = tok.decode(want_plain, false);
    check(t == r.at("text").get<std::string>(), "decode(ids)", json(t).dump(), r.at("text").dump());
    check(ts == r.at("text_skip").get<std::string>(), "decode(ids, skip_special_tokens)", json(ts).dump(),
          r.at("text_skip").dump());
    check(tp == r.at("text_plain").get<std::string>(), "decode(ids_plain)", json(tp).dump(),
          r.at("text_plain").dump());
    if (!ok) ++failures;
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, TokenizerParity, ::testing::ValuesIn(kFixtures), [](const auto& info) {
  std::string n = info.param.substr(0, info.param.size() - 5);
  for (auto& c : n)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return n;
});

// Streaming: the concatenated steps equal the full decode for every corpus line.
class TokenizerStream : public ::testing::TestWithParam<std::string> {};
TEST_P(TokenizerStream, StepsConcatenateToDecode) {
  Tokenizer tok = Tokenizer::from_files((kData / GetParam()).string());
  for (const std::string& s : corpus()) {
    auto ids = tok.encode(s, false);
    std::string full = tok.decode(ids);
    hfx::tok::DecodeStream stream(tok);
    std::string acc;
    for (int32_t id : ids) acc += stream.step(id);
    if (full.size() >= 3 && full.compare(full.size() - 3, 3, "\xEF\xBF\xBD") == 0) continue;
    EXPECT_EQ(acc, full) << GetParam() << ": " << json(s).dump();
  }
}
INSTANTIATE_TEST_SUITE_P(Fixtures, TokenizerStream,
                         ::testing::Values("gpt2_bpe.json", "llama3_bpe.json", "llama2_sp_bpe.json",
                                           "bytefallback_unigram.json", "tiny_bytelevel_bpe.json",
                                           "tiny_sentencepiece_bpe.json"),
                         [](const auto& info) { return info.param.substr(0, info.param.size() - 5); });

TEST(TokenizerStream, HoldsBackIncompleteUtf8) {
  Tokenizer tok = Tokenizer::from_files((kData / "gpt2_bpe.json").string());
  auto ids = tok.encode("🦀", false);  // several byte-level tokens for one code point
  ASSERT_GT(ids.size(), 1u);
  hfx::tok::DecodeStream stream(tok);
  for (size_t i = 0; i + 1 < ids.size(); ++i) EXPECT_EQ(stream.step(ids[i]), "");
  EXPECT_EQ(stream.step(ids.back()), "🦀");
}

// ---- tiny tokenizers ----
struct TinyCase {
  hfx::tok::TinyTokenizerKind kind;
  const char* file;
};
const TinyCase kTiny[] = {{hfx::tok::TinyTokenizerKind::ByteLevelBPE, "tiny_bytelevel_bpe.json"},
                          {hfx::tok::TinyTokenizerKind::SentencePieceBPE, "tiny_sentencepiece_bpe.json"}};

TEST(TinyTokenizer, DeterministicAndCommitted) {
  for (const auto& c : kTiny) {
    std::string a = hfx::tok::make_tiny_tokenizer_json(c.kind, 512);
    EXPECT_EQ(a, hfx::tok::make_tiny_tokenizer_json(c.kind, 512));
    fs::path p = kData / c.file;
    if (std::getenv("HFX_UPDATE_FIXTURES")) std::ofstream(p, std::ios::binary) << a;
    EXPECT_EQ(a, slurp(p)) << c.file << " is stale; rerun with HFX_UPDATE_FIXTURES=1";
  }
}

TEST(TinyTokenizer, VocabSizesAndSpecials) {
  for (const auto& c : kTiny) {
    for (int n : {300, 512, 1024, 3000}) {
      Tokenizer tok = Tokenizer::from_json_string(hfx::tok::make_tiny_tokenizer_json(c.kind, n),
                                                  hfx::tok::make_tiny_tokenizer_config_json(c.kind));
      EXPECT_EQ(tok.vocab_size(), n) << c.file;
      for (int32_t id = 0; id < n; ++id) EXPECT_FALSE(tok.id_to_token(id).empty()) << c.file << " id " << id;
      ASSERT_TRUE(tok.bos_id() && tok.eos_id()) << c.file;
      auto ids = tok.encode("Hello world 123 你好 😀");
      ASSERT_FALSE(ids.empty());
      EXPECT_EQ(ids.front(), *tok.bos_id());
      for (int32_t id : ids) EXPECT_LT(id, n);
      EXPECT_EQ(tok.decode(ids, true), "Hello world 123 你好 😀");
      EXPECT_TRUE(tok.config().chat_template.has_value());
    }
    EXPECT_THROW(hfx::tok::make_tiny_tokenizer_json(c.kind, 100), hfx::Error);
  }
}

// ---- loading and errors ----
fs::path write_temp(const std::string& name, const std::string& text) {
  fs::path p = fs::temp_directory_path() / ("hfx_tok_" + std::to_string(::getpid()) + "_" + name);
  std::ofstream(p, std::ios::binary) << text;
  return p;
}

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const hfx::Error& e) {
    EXPECT_EQ(e.component(), "tokenizer");
    return e.what();
  }
  ADD_FAILURE() << "expected hfx::Error";
  return {};
}

TEST(TokenizerErrors, MissingFile) {
  std::string m = error_of([] { Tokenizer::from_files("/nonexistent/tokenizer.json"); });
  EXPECT_NE(m.find("/nonexistent/tokenizer.json"), std::string::npos) << m;
  EXPECT_NE(m.find("[tokenizer] expected"), std::string::npos) << m;
  m = error_of([] { Tokenizer::from_dir("/nonexistent_dir"); });
  EXPECT_NE(m.find("tokenizer.json"), std::string::npos) << m;
}

TEST(TokenizerErrors, MalformedJson) {
  fs::path p = write_temp("bad.json", "{\"model\": {");
  std::string m = error_of([&] { Tokenizer::from_files(p.string()); });
  EXPECT_NE(m.find("valid JSON"), std::string::npos) << m;
  EXPECT_NE(m.find(p.string()), std::string::npos) << m;
  fs::remove(p);
}

TEST(TokenizerErrors, UnknownModelType) {
  std::string m = error_of([] { Tokenizer::from_json_string(R"({"model": {"type": "Foo", "vocab": {}}})"); });
  EXPECT_NE(m.find("model.type"), std::string::npos) << m;
  EXPECT_NE(m.find("Foo"), std::string::npos) << m;
}

TEST(TokenizerErrors, NamesTheField) {
  EXPECT_NE(
      error_of([] { Tokenizer::from_json_string(R"({"normalizer": null})"); }).find("'tokenizer.json.model'"),
      std::string::npos);
  EXPECT_NE(error_of([] {
              Tokenizer::from_json_string(R"({"model": {"type": "BPE", "vocab": {"a": 0}}})");
            }).find("merges"),
            std::string::npos);
  EXPECT_NE(
      error_of([] {
        Tokenizer::from_json_string(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["a b"]}})");
      }).find("merge token 'b'"),
      std::string::npos);
  EXPECT_NE(error_of([] {
              Tokenizer::from_json_string(
                  R"({"normalizer": {"type": "Nope"}, "model": {"type": "WordLevel", "vocab": {}}})");
            }).find("normalizer.type"),
            std::string::npos);
  EXPECT_NE(
      error_of([] {
        Tokenizer::from_json_string(
            R"({"pre_tokenizer": {"type": "Split", "pattern": {"Regex": "("}, "behavior": "Isolated", "invert": false},
                      "model": {"type": "WordLevel", "vocab": {}}})");
      }).find("regex"),
      std::string::npos);
  EXPECT_NE(
      error_of([] {
        Tokenizer::from_json_string(R"({"model": {"type": "WordPiece", "vocab": {"a": 0}}})").encode("b");
      }).find("[UNK]"),
      std::string::npos);
}

TEST(TokenizerErrors, InvalidUtf8Input) {
  Tokenizer tok = Tokenizer::from_files((kData / "gpt2_bpe.json").string());
  std::string m = error_of([&] { tok.encode("ab\xC3(", false); });
  EXPECT_NE(m.find("offset 2"), std::string::npos) << m;
}

TEST(TokenizerConfig, FromDirReadsConfig) {
  fs::path dir = fs::temp_directory_path() / ("hfx_tok_dir_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "tokenizer.json")
      << hfx::tok::make_tiny_tokenizer_json(hfx::tok::TinyTokenizerKind::SentencePieceBPE, 400);
  std::ofstream(dir / "tokenizer_config.json") << R"({"add_bos_token": true, "add_eos_token": false,
      "bos_token": {"content": "<s>", "special": true}, "eos_token": "</s>", "pad_token": null, "unk_token": "<unk>",
      "chat_template": "{{ bos_token }}{% for m in messages %}{{ m['content'] }}{% endfor %}", "model_max_length": 1e30})";
  Tokenizer tok = Tokenizer::from_dir(dir.string());
  EXPECT_EQ(tok.bos_id(), tok.token_to_id("<s>"));
  EXPECT_EQ(tok.eos_id(), tok.token_to_id("</s>"));
  EXPECT_EQ(tok.unk_id(), std::optional<int32_t>(0));
  EXPECT_EQ(tok.config().add_bos_token, std::optional<bool>(true));
  EXPECT_EQ(tok.config().add_eos_token, std::optional<bool>(false));
  EXPECT_EQ(tok.config().chat_template.value_or(""),
            "{{ bos_token }}{% for m in messages %}{{ m['content'] }}{% endfor %}");
  EXPECT_FALSE(tok.config().model_max_length.has_value());
  EXPECT_TRUE(tok.is_special(*tok.bos_id()));
  EXPECT_EQ(tok.id_to_token(*tok.bos_id()), "<s>");
  fs::remove_all(dir);
}

TEST(TokenizerApi, EmptyAndUnknownIds) {
  Tokenizer tok = Tokenizer::from_files((kData / "llama3_bpe.json").string());
  EXPECT_EQ(tok.encode("", false), std::vector<int32_t>{});
  EXPECT_EQ(tok.encode("", true), std::vector<int32_t>{*tok.token_to_id("<|begin_of_text|>")});
  EXPECT_EQ(tok.decode(std::vector<int32_t>{}), "");
  EXPECT_EQ(tok.decode(std::vector<int32_t>{999999}), "");
  EXPECT_EQ(tok.id_to_token(-1), "");
  EXPECT_FALSE(tok.token_to_id("no such token").has_value());
}

}  // namespace
