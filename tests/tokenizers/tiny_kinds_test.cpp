// The tiny tokenizer kinds of the encoder / encoder-decoder families (WordPiece, RoBERTa and ModernBERT
// byte-level BPE, T5 / XLM-R / Marian Unigram): each generated tokenizer.json is checked against two
// independent implementations on every line of tests/data/tokenizers/corpus.txt —
//   * Hugging Face's Rust tokenizers (npm `tokenizers`, tests/tokenizers/oracle.js): ids with and
//     without special tokens, the three decodes, the vocabulary size;
//   * Transformers.js AutoTokenizer loading the folder (tokenizer.json + tokenizer_config.json,
//     tests/tokenizers/tjs_oracle.mjs): the tokenizer class, ids with and without special tokens, decode.
// A missing oracle (node, the npm packages) is a failure, not a skip.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "hfx/core/error.h"
#include "hfx/tokenizers/tokenizer.h"

namespace fs = std::filesystem;
using hfx::tok::TinyTokenizerKind;
using hfx::tok::Tokenizer;
using json = nlohmann::json;

namespace {

const fs::path kData = fs::path(HFX_TEST_DATA) / "tokenizers";
const fs::path kNodeModules = HFX_NODE_MODULES;

struct Case {
  TinyTokenizerKind kind;
  int vocab_size;
  const char* tjs_class;  // the Transformers.js class tokenizer_config.json selects
};
const Case kCases[] = {
    {TinyTokenizerKind::WordPiece, 256, "BertTokenizer"},
    {TinyTokenizerKind::WordPiece, 1000, "BertTokenizer"},
    {TinyTokenizerKind::RobertaBPE, 300, "RobertaTokenizer"},
    {TinyTokenizerKind::RobertaBPE, 1000, "RobertaTokenizer"},
    {TinyTokenizerKind::ModernBertBPE, 300, "PreTrainedTokenizer"},
    {TinyTokenizerKind::ModernBertBPE, 1000, "PreTrainedTokenizer"},
    {TinyTokenizerKind::T5Unigram, 256, "T5Tokenizer"},
    {TinyTokenizerKind::T5Unigram, 1000, "T5Tokenizer"},
    {TinyTokenizerKind::XlmrUnigram, 256, "XLMRobertaTokenizer"},
    {TinyTokenizerKind::XlmrUnigram, 1000, "XLMRobertaTokenizer"},
    {TinyTokenizerKind::MarianUnigram, 256, "MarianTokenizer"},
    {TinyTokenizerKind::MarianUnigram, 1000, "MarianTokenizer"},
    {TinyTokenizerKind::WhisperBPE, 2000, "WhisperTokenizer"},
};

std::string case_name(const Case& c) {
  return std::string(hfx::tok::tiny_tokenizer_kind_name(c.kind)) + "_" + std::to_string(c.vocab_size);
}

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

std::string quote(const fs::path& p) { return "'" + p.string() + "'"; }

// Every case written to a temp folder once, and both oracles run once over all of them.
struct Oracles {
  fs::path root;
  json rust, tjs;  // per tokenizer.json path / per folder
  std::string rust_error, tjs_error;
  fs::path dir(const Case& c) const { return root / case_name(c); }
};

// The folder the cases are written to, removed at exit.
struct TempDir {
  fs::path path = fs::temp_directory_path() / ("hfx_tiny_kinds_" + std::to_string(::getpid()));
  TempDir() { fs::create_directories(path); }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

const Oracles& oracles() {
  static const TempDir temp;
  static const Oracles o = [] {
    Oracles r;
    r.root = temp.path;
    std::string files, dirs;
    for (const Case& c : kCases) {
      fs::create_directories(r.dir(c));
      std::ofstream(r.dir(c) / "tokenizer.json", std::ios::binary)
          << hfx::tok::make_tiny_tokenizer_json(c.kind, c.vocab_size);
      std::ofstream(r.dir(c) / "tokenizer_config.json", std::ios::binary)
          << hfx::tok::make_tiny_tokenizer_config_json(c.kind);
      files += " " + quote(r.dir(c) / "tokenizer.json");
      dirs += " " + quote(r.dir(c));
    }
    const fs::path src = fs::path(HFX_SOURCE_DIR) / "tests/tokenizers";
    const fs::path rust_out = r.root / "rust.json", tjs_out = r.root / "tjs.json";
    std::string cmd = "node " + quote(src / "oracle.js") + " " + quote(kNodeModules) + " " +
                      quote(kData / "corpus.txt") + files + " > " + quote(rust_out);
    if (std::system(cmd.c_str()) != 0)
      r.rust_error = "the npm `tokenizers` oracle failed (is node on PATH, deps/npm installed?): " + cmd;
    else
      r.rust = json::parse(slurp(rust_out));
    cmd = "node " + quote(src / "tjs_oracle.mjs") + " " + quote(kNodeModules) + " " +
          quote(kData / "corpus.txt") + " " + quote(tjs_out) + dirs + " 2> " + quote(r.root / "tjs.log");
    if (std::system(cmd.c_str()) != 0)
      r.tjs_error = "the Transformers.js oracle failed: " + cmd + "\n" + slurp(r.root / "tjs.log");
    else
      r.tjs = json::parse(slurp(tjs_out));
    return r;
  }();
  return o;
}

// Lines where Transformers.js (its @huggingface/tokenizers 0.2.0) is known to differ from Hugging Face's
// Rust tokenizers, which the MatchesHuggingFaceTokenizers test holds hfx to on every line:
//   * BertNormalizer handle_chinese_chars walks UTF-16 code units, so CJK characters outside the BMP
//     (U+20000...) are not split apart as Rust does;
//   * WhitespaceSplit splits on JavaScript's \s, which counts U+FEFF (BOM) as whitespace, and not
//     U+0085, where Rust's char::is_whitespace says the opposite.
const char* known_tjs_difference(TinyTokenizerKind kind, const std::string& text) {
  for (size_t i = 0; i < text.size();) {
    unsigned char b = static_cast<unsigned char>(text[i]);
    size_t len = b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
    char32_t cp = len == 1 ? b : b & (0xFF >> (len + 1));
    for (size_t k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(text[i + k]) & 0x3F);
    i += len;
    if (kind == TinyTokenizerKind::WordPiece && cp >= 0x20000 && cp <= 0x2FA1F)
      return "BertNormalizer: CJK outside the BMP";
    if (kind == TinyTokenizerKind::T5Unigram && (cp == 0xFEFF || cp == 0x85))
      return "WhitespaceSplit: U+FEFF / U+0085";
  }
  return nullptr;
}

std::string show(const std::vector<int32_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "]";
}

class TinyTokenizerKinds : public ::testing::TestWithParam<Case> {
 protected:
  Tokenizer load() const {
    fs::path d = oracles().dir(GetParam());
    return Tokenizer::from_files((d / "tokenizer.json").string(), (d / "tokenizer_config.json").string());
  }
};

// Ids with and without the post-processor, the three decodes and the vocabulary size, every corpus line.
TEST_P(TinyTokenizerKinds, MatchesHuggingFaceTokenizers) {
  const Oracles& o = oracles();
  ASSERT_TRUE(o.rust_error.empty()) << o.rust_error;
  const Case& c = GetParam();
  const json& ref = o.rust.at((o.dir(c) / "tokenizer.json").string());
  Tokenizer tok = load();
  EXPECT_EQ(tok.vocab_size(), c.vocab_size);
  EXPECT_EQ(ref.at("vocab_size").get<int32_t>(), c.vocab_size);
  for (int32_t id = 0; id < c.vocab_size; ++id) EXPECT_FALSE(tok.id_to_token(id).empty()) << "id " << id;
  auto texts = corpus();
  const json& results = ref.at("results");
  ASSERT_EQ(results.size(), texts.size());
  int failures = 0;
  size_t tokens = 0;
  for (size_t i = 0; i < texts.size() && failures < 10; ++i) {
    const json& r = results[i];
    const std::string& s = texts[i];
    auto ids = tok.encode(s, true), plain = tok.encode(s, false);
    auto want_ids = r.at("ids").get<std::vector<int32_t>>(),
         want_plain = r.at("ids_plain").get<std::vector<int32_t>>();
    tokens += want_ids.size();
    bool ok = true;
    auto check = [&](bool cond, const char* what, const std::string& got, const std::string& want) {
      if (cond) return;
      ok = false;
      ADD_FAILURE() << case_name(c) << " line " << i + 1 << " " << json(s).dump() << ": " << what
                    << "\n  got  " << got << "\n  want " << want;
    };
    check(ids == want_ids, "encode(add_special_tokens=true)", show(ids), show(want_ids));
    check(plain == want_plain, "encode(add_special_tokens=false)", show(plain), show(want_plain));
    std::string t = tok.decode(want_ids, false), ts = tok.decode(want_ids, true),
                tp = tok.decode(want_plain, false);
    check(t == r.at("text").get<std::string>(), "decode(ids)", json(t).dump(), r.at("text").dump());
    check(ts == r.at("text_skip").get<std::string>(), "decode(ids, skip_special_tokens)", json(ts).dump(),
          r.at("text_skip").dump());
    check(tp == r.at("text_plain").get<std::string>(), "decode(ids_plain)", json(tp).dump(),
          r.at("text_plain").dump());
    if (!ok) ++failures;
  }
  std::cout << "[ tiny    ] " << case_name(c) << ": " << texts.size() << " lines, " << tokens
            << " ids compared with npm tokenizers\n";
}

// Transformers.js picks the class tokenizer_config.json names and encodes every line to the same ids.
TEST_P(TinyTokenizerKinds, MatchesTransformersJs) {
  const Oracles& o = oracles();
  ASSERT_TRUE(o.tjs_error.empty()) << o.tjs_error;
  const Case& c = GetParam();
  const json& ref = o.tjs.at(o.dir(c).string());
  EXPECT_EQ(ref.at("class").get<std::string>(), c.tjs_class);
  EXPECT_EQ(ref.at("vocab_size").get<int32_t>(), c.vocab_size);
  Tokenizer tok = load();
  auto texts = corpus();
  ASSERT_EQ(ref.at("ids").size(), texts.size());
  int failures = 0;
  size_t compared = 0, known = 0;
  for (size_t i = 0; i < texts.size() && failures < 10; ++i) {
    if (known_tjs_difference(c.kind, texts[i])) {
      ++known;
      continue;
    }
    ++compared;
    auto want = ref.at("ids")[i].get<std::vector<int32_t>>(),
         want_plain = ref.at("ids_plain")[i].get<std::vector<int32_t>>();
    auto got = tok.encode(texts[i], true), got_plain = tok.encode(texts[i], false);
    std::string text = want.empty() ? "" : tok.decode(want, false);
    bool ok = got == want && got_plain == want_plain && text == ref.at("text")[i].get<std::string>();
    if (!ok) {
      ++failures;
      ADD_FAILURE() << case_name(c) << " line " << i + 1 << " " << json(texts[i]).dump() << "\n  got  "
                    << show(got) << " " << show(got_plain) << " " << json(text).dump() << "\n  want "
                    << show(want) << " " << show(want_plain) << " " << ref.at("text")[i].dump();
    }
  }
  EXPECT_LE(known, 3u) << "lines left out as known Transformers.js differences";
  std::cout << "[ tiny    ] " << case_name(c) << ": " << compared << " lines compared with Transformers.js "
            << c.tjs_class << " (" << known << " left out: known Transformers.js differences)\n";
}

INSTANTIATE_TEST_SUITE_P(Kinds, TinyTokenizerKinds, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return case_name(info.param); });

// The special-token ids, post-processor and tokenizer_config.json of the checkpoints each kind imitates.
TEST(TinyTokenizerKindLayout, SpecialTokensAndTemplates) {
  using K = TinyTokenizerKind;
  const int n = 1000;
  struct Expect {
    K kind;
    std::vector<std::pair<const char*, int32_t>> ids;  // negative: counted from the end (-1 = last id)
    const char* first;                                 // the token encode() starts with, or nullptr
    const char* last;                                  // the token encode() ends with
    const char* tokenizer_class;
  };
  const Expect cases[] = {
      {K::WordPiece,
       {{"[PAD]", 0}, {"[UNK]", 63}, {"[CLS]", 64}, {"[SEP]", 65}, {"[MASK]", 66}},
       "[CLS]",
       "[SEP]",
       "BertTokenizer"},
      {K::RobertaBPE,
       {{"<s>", 0}, {"<pad>", 1}, {"</s>", 2}, {"<unk>", 3}, {"<mask>", -1}},
       "<s>",
       "</s>",
       "RobertaTokenizer"},
      {K::ModernBertBPE,
       {{"|||IP_ADDRESS|||", 0}, {"<|padding|>", 1}},
       "[CLS]",
       "[SEP]",
       "PreTrainedTokenizerFast"},
      {K::T5Unigram,
       {{"<pad>", 0}, {"</s>", 1}, {"<unk>", 2}, {"<extra_id_0>", -1}, {"<extra_id_99>", -100}},
       nullptr,
       "</s>",
       "T5Tokenizer"},
      {K::XlmrUnigram,
       {{"<s>", 0}, {"<pad>", 1}, {"</s>", 2}, {"<unk>", 3}, {"<mask>", -1}},
       "<s>",
       "</s>",
       "XLMRobertaTokenizer"},
      {K::MarianUnigram, {{"</s>", 0}, {"<unk>", 1}, {"<pad>", -1}}, nullptr, "</s>", "MarianTokenizer"},
  };
  for (const Expect& e : cases) {
    const char* name = hfx::tok::tiny_tokenizer_kind_name(e.kind);
    std::string tj = hfx::tok::make_tiny_tokenizer_json(e.kind, n),
                cj = hfx::tok::make_tiny_tokenizer_config_json(e.kind);
    Tokenizer tok = Tokenizer::from_json_string(tj, cj);
    for (auto [t, id] : e.ids) {
      EXPECT_EQ(tok.token_to_id(t), std::optional<int32_t>(id < 0 ? n + id : id)) << name << " " << t;
      EXPECT_TRUE(tok.is_special(*tok.token_to_id(t)) || std::string(t) == "|||IP_ADDRESS|||")
          << name << " " << t;
    }
    auto ids = tok.encode("Hello world, this is a test.");
    ASSERT_GE(ids.size(), 3u) << name;
    if (e.first)
      EXPECT_EQ(tok.id_to_token(ids.front()), e.first) << name;
    else
      EXPECT_FALSE(tok.is_special(ids.front())) << name;
    EXPECT_EQ(tok.id_to_token(ids.back()), e.last) << name;
    json config = json::parse(cj);
    EXPECT_EQ(config.at("tokenizer_class"), e.tokenizer_class) << name;
    EXPECT_TRUE(config.contains("model_max_length")) << name;
    json j = json::parse(tj);
    EXPECT_TRUE(j.at("model").contains("vocab")) << name;
  }
  json bert = json::parse(hfx::tok::make_tiny_tokenizer_config_json(K::WordPiece));
  EXPECT_EQ(bert.at("do_lower_case"), true);
  json t5 = json::parse(hfx::tok::make_tiny_tokenizer_json(K::T5Unigram, n));
  EXPECT_EQ(t5.at("model").at("type"), "Unigram");
  EXPECT_EQ(t5.at("pre_tokenizer").at("pretokenizers")[1].at("type"), "Metaspace");
  json bert_j = json::parse(hfx::tok::make_tiny_tokenizer_json(K::WordPiece, n));
  EXPECT_EQ(bert_j.at("normalizer").at("type"), "BertNormalizer");
  EXPECT_EQ(bert_j.at("post_processor").at("pair")[3].at("Sequence").at("type_id"), 1);
  EXPECT_EQ(bert_j.at("decoder").at("type"), "WordPiece");
}

// Unigram scores are log-probabilities learned from the corpus: frequent words are one piece, pieces
// are ordered by score, and every score is a log-probability (< 0).
TEST(TinyTokenizerKindLayout, UnigramScoresSegmentMeaningfully) {
  for (TinyTokenizerKind k :
       {TinyTokenizerKind::T5Unigram, TinyTokenizerKind::XlmrUnigram, TinyTokenizerKind::MarianUnigram}) {
    const char* name = hfx::tok::tiny_tokenizer_kind_name(k);
    json j = json::parse(hfx::tok::make_tiny_tokenizer_json(k, 1000));
    const json& vocab = j.at("model").at("vocab");
    double prev = 0;
    int pieces = 0;
    for (const json& e : vocab) {
      double s = e[1].get<double>();
      if (s == 0.0) continue;  // the special tokens
      EXPECT_LT(s, 0.0) << name;
      EXPECT_LE(s, prev) << name << " " << e.dump();
      prev = s;
      ++pieces;
    }
    EXPECT_GT(pieces, 800) << name;
    Tokenizer tok = Tokenizer::from_json_string(j.dump());
    for (const char* word : {"the", "and", "model", "tokenizer"})
      EXPECT_EQ(tok.encode(word, false).size(), 1u) << name << " " << word;
    // 71 characters, 13 words: far fewer pieces than characters.
    EXPECT_LE(
        tok.encode("the model learned a new word, and the tokenizer turns text into numbers", false).size(),
        20u)
        << name;
  }
}

TEST(TinyTokenizerKindLayout, DeterministicNamesAndLimits) {
  using K = TinyTokenizerKind;
  for (K k : {K::ByteLevelBPE, K::SentencePieceBPE, K::WordPiece, K::RobertaBPE, K::ModernBertBPE,
              K::T5Unigram, K::XlmrUnigram, K::MarianUnigram}) {
    std::string name = hfx::tok::tiny_tokenizer_kind_name(k);
    EXPECT_EQ(hfx::tok::tiny_tokenizer_kind_from_name(name), k) << name;
    EXPECT_EQ(hfx::tok::make_tiny_tokenizer_json(k, 700), hfx::tok::make_tiny_tokenizer_json(k, 700)) << name;
    EXPECT_THROW(hfx::tok::make_tiny_tokenizer_json(k, 40), hfx::Error) << name;
    for (int size : {300, 4096})
      EXPECT_EQ(Tokenizer::from_json_string(hfx::tok::make_tiny_tokenizer_json(k, size)).vocab_size(), size)
          << name << " " << size;
  }
  try {
    hfx::tok::tiny_tokenizer_kind_from_name("bert");
    ADD_FAILURE() << "expected hfx::Error";
  } catch (const hfx::Error& e) {
    EXPECT_EQ(e.component(), "tokenizer");
    EXPECT_EQ(std::string(e.what()),
              "[tokenizer] expected one of [byte_level, sentencepiece, wordpiece, roberta_bpe, "
              "modernbert_bpe, t5_unigram, "
              "xlmr_unigram, marian_unigram, whisper_bpe], got bert");
  }
}

}  // namespace
