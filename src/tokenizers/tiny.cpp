// Tiny fixture tokenizers for `hfx create-tiny`: the built-in corpus, a deterministic BPE merge
// trainer, the Llama-3-like (byte-level) and Llama-2/Gemma-like (sentencepiece-style, byte fallback)
// kinds, the kind names and every kind's tokenizer_config.json. The encoder-family kinds live in
// tiny_encoders.cpp (WordPiece, RoBERTa / ModernBERT byte-level BPE) and tiny_unigram.cpp (T5, XLM-R,
// Marian Unigram).
#include <algorithm>
#include <map>
#include <set>

#include "hfx/tokenizers/tokenizer.h"
#include "tokenizers/tiny_internal.h"

namespace hfx::tok {
using namespace detail;
using namespace detail::tiny;

namespace detail::tiny {
namespace {
const char* kTinyCorpus[] = {
    "The quick brown fox jumps over the lazy dog. A tokenizer turns text into numbers, and a model turns "
    "numbers back into text.",
    "Once upon a time there was a little model that wanted to learn. It read many books, and every day it "
    "learned a new word.",
    "Hello world! How are you today? I am fine, thank you. What is your name? My name is Tiny, and I am a "
    "test model.",
    "In the beginning the vocabulary was small: only bytes and a few merges. Then the trainer found the most "
    "frequent pairs.",
    "Numbers like 0, 1, 2, 3, 42, 100, 2024 and 3.14159 appear in text, as do dates such as 2024-07-03 and "
    "times like 12:30.",
    "The weather is nice today. The sun is shining and the birds are singing in the trees near the river.",
    "She said: \"This is the best day of the year!\" He answered, 'Yes, it is.' They're happy, we're happy, "
    "and I'm happy too.",
    "def forward(self, input_ids, attention_mask=None):\n    hidden = self.embed(input_ids)\n    for layer "
    "in self.layers:\n        hidden = layer(hidden)\n    return self.norm(hidden)\n",
    "import torch\nfrom transformers import AutoModelForCausalLM, AutoTokenizer\nmodel = "
    "AutoModelForCausalLM.from_pretrained(\"tiny\")\n",
    "int main(int argc, char** argv) {\n  std::vector<float> x(16, 0.0f);\n  for (int i = 0; i < 16; ++i) "
    "x[i] = i * 0.5f;\n  return 0;\n}\n",
    "function add(a, b) { return a + b; }\nconst result = add(1, 2);\nconsole.log(`result: ${result}`);\n",
    "SELECT name, count(*) FROM users WHERE active = 1 GROUP BY name ORDER BY 2 DESC;",
    "{\"name\": \"tiny\", \"layers\": 2, \"hidden_size\": 64, \"vocab_size\": 512, \"tie_word_embeddings\": "
    "true}",
    "Bonjour le monde ! Comment allez-vous aujourd'hui ? Je vais très bien, merci. Où est la gare ?",
    "Hallo Welt! Wie geht es dir? Mir geht es gut. Die Straße ist lang und schön, und das Wetter ist "
    "großartig.",
    "Hola mundo. ¿Cómo estás? Estoy bien, gracias. El niño come una manzana en la mañana.",
    "Olá mundo! A língua portuguesa tem acentos: ação, coração, você, está.",
    "Привет, мир! Как дела? Всё хорошо, спасибо. Москва — столица России.",
    "Γειά σου κόσμε! Η γλώσσα είναι ελληνική.",
    "你好，世界！今天天气很好。我们一起学习自然语言处理。",
    "こんにちは世界。今日はいい天気ですね。日本語のテキストです。",
    "안녕하세요 세계! 오늘 날씨가 좋네요.",
    "مرحبا بالعالم. كيف حالك؟",
    "नमस्ते दुनिया। आप कैसे हैं?",
    "Emoji: 😀 😃 🎉 👍 ❤️ 🚀 and a family 👨‍👩‍👧 with a flag 🇺🇸.",
    "Tabs\tand\tnewlines\nare whitespace too.\n\nTwo blank lines above.   Three spaces before this.",
    "the the the of of of and and and to to to in in in is is is it it it that that that for for for",
    "learning learned learns learner reading reader readers writing writer written running runner",
    "tokenization tokenizer tokenizers token tokens merge merges merged vocabulary vocabularies",
};

}  // namespace

const std::vector<std::string_view>& corpus() {
  static const std::vector<std::string_view> lines(std::begin(kTinyCorpus), std::end(kTinyCorpus));
  return lines;
}

std::map<std::string, int64_t> corpus_words(const ojson& normalizer, const ojson& pre_tokenizer) {
  auto norm = make_normalizer(json::parse(normalizer.dump()));
  auto pre = make_pre_tokenizer(json::parse(pre_tokenizer.dump()));
  std::map<std::string, int64_t> words;
  for (std::string_view line : corpus()) {
    NormalizedString n(line);
    if (norm) norm->normalize(n);
    PreTokenized pt;
    pt.push_back({std::move(n), std::nullopt});
    if (pre) pre->pre_tokenize(pt);
    for (auto& sp : pt)
      if (!sp.n.empty()) words[sp.n.get()]++;
  }
  return words;
}

std::vector<std::string> byte_level_alphabet() {
  std::vector<std::string> base;
  std::vector<bool> direct(256, false);
  for (int b = '!'; b <= '~'; ++b) direct[b] = true;
  for (int b = 0xA1; b <= 0xAC; ++b) direct[b] = true;
  for (int b = 0xAE; b <= 0xFF; ++b) direct[b] = true;
  for (int b = 0; b < 256; ++b)
    if (direct[b]) base.push_back(utf8(byte_to_char()[b]));
  for (int b = 0; b < 256; ++b)
    if (!direct[b]) base.push_back(utf8(byte_to_char()[b]));
  return base;
}

int32_t Trainer::intern(const std::string& s) {
  auto it = sym_id.find(s);
  if (it != sym_id.end()) return it->second;
  int32_t id = static_cast<int32_t>(symbols.size());
  symbols.push_back(s);
  sym_id[s] = id;
  return id;
}

void Trainer::train(size_t want_new, std::vector<std::pair<std::string, std::string>>& merges,
                    std::vector<std::string>& new_tokens, std::set<std::string>& known) {
  while (new_tokens.size() < want_new) {
    std::map<std::pair<int32_t, int32_t>, int64_t> counts;
    for (auto& [w, c] : words)
      for (size_t i = 0; i + 1 < w.size(); ++i)
        if (w[i] >= 0 && w[i + 1] >= 0) counts[{w[i], w[i + 1]}] += c;
    if (counts.empty()) return;
    std::pair<int32_t, int32_t> best{-1, -1};
    int64_t best_count = -1;
    for (auto& [p, c] : counts) {
      if (c > best_count || (c == best_count && std::tie(symbols[p.first], symbols[p.second]) <
                                                    std::tie(symbols[best.first], symbols[best.second]))) {
        best = p;
        best_count = c;
      }
    }
    const std::string& right = symbols[best.second];
    bool continues =
        !continuing_prefix.empty() && right.compare(0, continuing_prefix.size(), continuing_prefix) == 0;
    std::string merged = symbols[best.first] + (continues ? right.substr(continuing_prefix.size()) : right);
    merges.emplace_back(symbols[best.first], right);
    if (known.insert(merged).second) new_tokens.push_back(merged);
    int32_t m = intern(merged);
    for (auto& [w, c] : words) {
      std::vector<int32_t> out;
      out.reserve(w.size());
      for (size_t i = 0; i < w.size(); ++i) {
        if (i + 1 < w.size() && w[i] == best.first && w[i + 1] == best.second) {
          out.push_back(m);
          ++i;
        } else {
          out.push_back(w[i]);
        }
      }
      w = std::move(out);
    }
  }
}

ojson added_token(int32_t id, const std::string& content, bool special, bool normalized, bool lstrip) {
  return ojson{{"id", id},        {"content", content},       {"single_word", false}, {"lstrip", lstrip},
               {"rstrip", false}, {"normalized", normalized}, {"special", special}};
}

ojson template_processing(const std::string& single, const std::string& pair,
                          const std::map<std::string, int32_t>& ids) {
  std::map<std::string, int32_t> used;
  auto parse = [&](const std::string& t) {
    ojson out = ojson::array();
    size_t i = 0;
    while (i < t.size()) {
      size_t e = std::min(t.find(' ', i), t.size());
      std::string piece = t.substr(i, e - i);
      i = e + 1;
      size_t colon = piece.rfind(':');
      int type_id = std::stoi(piece.substr(colon + 1));
      std::string name = piece.substr(0, colon);
      if (name == "$A" || name == "$B") {
        out.push_back(ojson{{"Sequence", {{"id", name.substr(1)}, {"type_id", type_id}}}});
      } else {
        out.push_back(ojson{{"SpecialToken", {{"id", name}, {"type_id", type_id}}}});
        used[name] = ids.at(name);
      }
    }
    return out;
  };
  ojson j{{"type", "TemplateProcessing"}, {"single", parse(single)}, {"pair", parse(pair)}};
  ojson specials = ojson::object();
  for (auto& [name, id] : used) specials[name] = ojson{{"id", name}, {"ids", {id}}, {"tokens", {name}}};
  j["special_tokens"] = specials;
  return j;
}

ojson byte_level_block(bool add_prefix_space) {
  return ojson{{"type", "ByteLevel"},
               {"add_prefix_space", add_prefix_space},
               {"trim_offsets", true},
               {"use_regex", true}};
}

ojson metaspace_block() {
  return ojson{{"type", "Metaspace"}, {"replacement", kSpace}, {"prepend_scheme", "always"}, {"split", true}};
}

std::string tokenizer_json_text(const ojson& added, const ojson& normalizer, const ojson& pre_tokenizer,
                                const ojson& post_processor, const ojson& decoder, const ojson& model) {
  ojson j;
  j["version"] = "1.0";
  j["truncation"] = nullptr;
  j["padding"] = nullptr;
  j["added_tokens"] = added;
  j["normalizer"] = normalizer;
  j["pre_tokenizer"] = pre_tokenizer;
  j["post_processor"] = post_processor;
  j["decoder"] = decoder;
  j["model"] = model;
  return j.dump(1) + "\n";
}

}  // namespace detail::tiny

namespace {

const char* kLlama3Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

ojson template_bos(const std::string& bos, int32_t bos_id) {
  return template_processing(bos + ":0 $A:0", bos + ":0 $A:0 " + bos + ":1 $B:1", {{bos, bos_id}});
}

std::string byte_level_json(int vocab_size) {
  const int n_special = 2;
  if (vocab_size < 256 + n_special + 2)
    HFX_THROW(kComp,
              "expected a ByteLevelBPE tiny vocab_size >= {} (256 bytes + 2 specials + 2 merges), got {}",
              256 + n_special + 2, vocab_size);
  // Base vocabulary: the 256 byte symbols in GPT-2 order (printable bytes first).
  std::vector<std::string> base = byte_level_alphabet();
  Trainer tr;
  for (auto& s : base) tr.intern(s);
  std::set<std::string> known(base.begin(), base.end());
  Regex re(kLlama3Pattern);
  std::map<std::string, int64_t> word_counts;
  for (std::string_view s : corpus()) {
    for (auto [a, b] : re.find_all(s)) word_counts[std::string(s.substr(a, b - a))]++;
  }
  for (auto& [w, c] : word_counts) {
    std::vector<int32_t> syms;
    for (unsigned char ch : w) syms.push_back(tr.sym_id.at(utf8(byte_to_char()[ch])));
    tr.words.emplace_back(std::move(syms), c);
  }
  std::vector<std::pair<std::string, std::string>> merges;
  std::vector<std::string> fresh;
  tr.train(static_cast<size_t>(vocab_size - 256 - n_special), merges, fresh, known);

  ojson vocab = ojson::object();
  int32_t next = 0;
  for (auto& s : base) vocab[s] = next++;
  for (auto& s : fresh) vocab[s] = next++;
  ojson added = ojson::array();
  const int32_t bos = next++, eos = next++;
  added.push_back(added_token(bos, "<|begin_of_text|>"));
  added.push_back(added_token(eos, "<|end_of_text|>"));
  for (int k = 0; next < vocab_size; ++k)
    added.push_back(added_token(next++, fmt::format("<|reserved_special_token_{}|>", k)));

  ojson merges_j = ojson::array();
  for (auto& [a, b] : merges) merges_j.push_back(ojson::array({a, b}));
  ojson pre{
      {"type", "Sequence"},
      {"pretokenizers",
       {{{"type", "Split"},
         {"pattern", {{"Regex", kLlama3Pattern}}},
         {"behavior", "Isolated"},
         {"invert", false}},
        {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", false}}}}};
  ojson post{
      {"type", "Sequence"},
      {"processors",
       {{{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", false}, {"use_regex", true}},
        template_bos("<|begin_of_text|>", bos)}}};
  ojson model{{"type", "BPE"},
              {"dropout", nullptr},
              {"unk_token", nullptr},
              {"continuing_subword_prefix", nullptr},
              {"end_of_word_suffix", nullptr},
              {"fuse_unk", false},
              {"byte_fallback", false},
              {"ignore_merges", true},
              {"vocab", vocab},
              {"merges", merges_j}};
  return tokenizer_json_text(added, nullptr, pre, post, byte_level_block(true), model);
}

// The corpus under Llama-2's normalization ("▁" + text with spaces replaced; words split before each
// "▁"): counts of words and of characters.
void sentencepiece_counts(std::map<std::string, int64_t>& word_counts,
                          std::map<char32_t, int64_t>& char_counts) {
  for (std::string_view line : corpus()) {
    std::string s = kSpace;
    for (char c : line) s += c == ' ' ? std::string(kSpace) : std::string(1, c);
    size_t start = 0;
    for (size_t i = 3; i <= s.size(); ++i) {
      if (i == s.size() || s.compare(i, 3, kSpace) == 0) {
        word_counts[s.substr(start, i - start)]++;
        start = i;
      }
    }
    for (char32_t c : to_cps(s)) char_counts[c]++;
  }
}

std::string sentencepiece_json(int vocab_size) {
  const int n_fixed = 3 + 256;  // <unk> <s> </s> + byte tokens
  if (vocab_size < n_fixed + 3)
    HFX_THROW(
        kComp,
        "expected a SentencePieceBPE tiny vocab_size >= {} (3 specials + 256 byte tokens + 3 pieces), got {}",
        n_fixed + 3, vocab_size);
  std::map<std::string, int64_t> word_counts;
  std::map<char32_t, int64_t> char_counts;
  sentencepiece_counts(word_counts, char_counts);
  // Alphabet: the most frequent characters, up to half of the free slots (ties by code point).
  std::vector<std::pair<int64_t, char32_t>> by_freq;
  for (auto& [c, n] : char_counts) by_freq.emplace_back(-n, c);
  std::sort(by_freq.begin(), by_freq.end());
  size_t free_slots = static_cast<size_t>(vocab_size - n_fixed);
  size_t n_alpha = std::min(by_freq.size(), std::max<size_t>(1, free_slots / 2));
  Trainer tr;
  std::vector<std::string> alphabet;
  for (size_t i = 0; i < n_alpha; ++i) {
    alphabet.push_back(utf8(by_freq[i].second));
    tr.intern(alphabet.back());
  }
  std::set<std::string> known(alphabet.begin(), alphabet.end());
  for (auto& [w, c] : word_counts) {
    std::vector<int32_t> syms;
    for (char32_t ch : to_cps(w)) {
      auto it = tr.sym_id.find(utf8(ch));
      syms.push_back(it == tr.sym_id.end() ? -1 : it->second);
    }
    tr.words.emplace_back(std::move(syms), c);
  }
  std::vector<std::pair<std::string, std::string>> merges;
  std::vector<std::string> fresh;
  tr.train(free_slots - alphabet.size(), merges, fresh, known);

  ojson vocab = ojson::object();
  vocab["<unk>"] = 0;
  vocab["<s>"] = 1;
  vocab["</s>"] = 2;
  for (int b = 0; b < 256; ++b) vocab[fmt::format("<0x{:02X}>", b)] = 3 + b;
  int32_t next = n_fixed;
  // Merged pieces first (as sentencepiece orders by score), then the single characters.
  for (auto& s : fresh) vocab[s] = next++;
  for (auto& s : alphabet) vocab[s] = next++;
  ojson added = ojson::array({added_token(0, "<unk>"), added_token(1, "<s>"), added_token(2, "</s>")});
  for (int k = 0; next < vocab_size; ++k) {
    std::string t = fmt::format("<unused{}>", k);
    vocab[t] = next;
    added.push_back(added_token(next++, t));
  }
  ojson merges_j = ojson::array();
  for (auto& [a, b] : merges) merges_j.push_back(a + " " + b);
  ojson normalizer{{"type", "Sequence"},
                   {"normalizers",
                    {{{"type", "Prepend"}, {"prepend", kSpace}},
                     {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", kSpace}}}}};
  ojson decoder{{"type", "Sequence"},
                {"decoders",
                 {{{"type", "Replace"}, {"pattern", {{"String", kSpace}}}, {"content", " "}},
                  {{"type", "ByteFallback"}},
                  {{"type", "Fuse"}},
                  {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}}}};
  ojson model{{"type", "BPE"},
              {"dropout", nullptr},
              {"unk_token", "<unk>"},
              {"continuing_subword_prefix", nullptr},
              {"end_of_word_suffix", nullptr},
              {"fuse_unk", true},
              {"byte_fallback", true},
              {"ignore_merges", false},
              {"vocab", vocab},
              {"merges", merges_j}};
  return tokenizer_json_text(added, normalizer, nullptr, template_bos("<s>", 1), decoder, model);
}

}  // namespace

namespace {

struct KindName {
  TinyTokenizerKind kind;
  const char* name;
};
constexpr KindName kKindNames[] = {
    {TinyTokenizerKind::ByteLevelBPE, "byte_level"},
    {TinyTokenizerKind::SentencePieceBPE, "sentencepiece"},
    {TinyTokenizerKind::WordPiece, "wordpiece"},
    {TinyTokenizerKind::RobertaBPE, "roberta_bpe"},
    {TinyTokenizerKind::ModernBertBPE, "modernbert_bpe"},
    {TinyTokenizerKind::T5Unigram, "t5_unigram"},
    {TinyTokenizerKind::XlmrUnigram, "xlmr_unigram"},
    {TinyTokenizerKind::MarianUnigram, "marian_unigram"},
    {TinyTokenizerKind::WhisperBPE, "whisper_bpe"},
};

// The decoder-only kinds: BOS added by the post-processor, a small chat template.
void decoder_config(TinyTokenizerKind kind, ojson& c) {
  bool byte_level = kind == TinyTokenizerKind::ByteLevelBPE;
  c["add_bos_token"] = true;
  c["add_eos_token"] = false;
  c["bos_token"] = byte_level ? "<|begin_of_text|>" : "<s>";
  c["eos_token"] = byte_level ? "<|end_of_text|>" : "</s>";
  if (!byte_level) c["unk_token"] = "<unk>";
  c["pad_token"] = nullptr;
  c["chat_template"] = byte_level
                           ? "{{ bos_token }}{% for message in messages %}{{ message['role'] + ': ' + "
                             "message['content'] + '\\n' }}{% endfor %}{% if add_generation_prompt %}{{ "
                             "'assistant: ' }}{% endif %}"
                           : "{{ bos_token }}{% for message in messages %}{% if message['role'] == 'user' "
                             "%}{{ '[INST] ' + message['content'] + ' [/INST]' }}"
                             "{% else %}{{ ' ' + message['content'] + eos_token }}{% endif %}{% endfor %}";
  c["clean_up_tokenization_spaces"] = false;
  c["model_max_length"] = 2048;
  c["tokenizer_class"] = "PreTrainedTokenizerFast";
}

// Encoder / encoder-decoder kinds: the fields (and key order) of the checkpoints they imitate.
void encoder_config(TinyTokenizerKind kind, ojson& c) {
  using K = TinyTokenizerKind;
  auto specials = [&](const char* bos, const char* cls, const char* eos, const char* mask, const char* pad,
                      const char* sep, const char* unk) {
    if (bos) c["bos_token"] = bos;
    c["clean_up_tokenization_spaces"] = true;
    if (cls) c["cls_token"] = cls;
    if (kind == K::WordPiece) c["do_lower_case"] = true;
    if (eos) c["eos_token"] = eos;
    if (mask) c["mask_token"] = mask;
    if (kind == K::ModernBertBPE) c["model_input_names"] = {"input_ids", "attention_mask"};
    c["model_max_length"] = kind == K::ModernBertBPE ? 8192 : 512;
    if (pad) c["pad_token"] = pad;
    if (sep) c["sep_token"] = sep;
    if (unk) c["unk_token"] = unk;
  };
  switch (kind) {
    case K::WordPiece:
      specials(nullptr, "[CLS]", nullptr, "[MASK]", "[PAD]", "[SEP]", "[UNK]");
      c["strip_accents"] = nullptr;
      c["tokenize_chinese_chars"] = true;
      c["tokenizer_class"] = "BertTokenizer";
      break;
    case K::RobertaBPE:
      c["add_prefix_space"] = false;
      specials("<s>", "<s>", "</s>", "<mask>", "<pad>", "</s>", "<unk>");
      c["errors"] = "replace";
      c["tokenizer_class"] = "RobertaTokenizer";
      c["trim_offsets"] = true;
      break;
    case K::ModernBertBPE:
      specials(nullptr, "[CLS]", nullptr, "[MASK]", "[PAD]", "[SEP]", "[UNK]");
      c["tokenizer_class"] = "PreTrainedTokenizerFast";
      break;
    case K::T5Unigram: {
      ojson extra = ojson::array();
      for (int k = 0; k < kT5ExtraIds; ++k) extra.push_back(fmt::format("<extra_id_{}>", k));
      c["additional_special_tokens"] = extra;
      specials(nullptr, nullptr, "</s>", nullptr, "<pad>", nullptr, "<unk>");
      c["extra_ids"] = kT5ExtraIds;
      c["tokenizer_class"] = "T5Tokenizer";
      break;
    }
    case K::XlmrUnigram:
      specials("<s>", "<s>", "</s>", "<mask>", "<pad>", "</s>", "<unk>");
      c["tokenizer_class"] = "XLMRobertaTokenizer";
      break;
    case K::MarianUnigram:
      specials(nullptr, nullptr, "</s>", nullptr, "<pad>", nullptr, "<unk>");
      c["separate_vocabs"] = false;
      c["source_lang"] = "en";
      c["sp_model_kwargs"] = ojson::object();
      c["target_lang"] = "de";
      c["tokenizer_class"] = "MarianTokenizer";
      break;
    case K::WhisperBPE:  // openai/whisper-*: every special is <|endoftext|>
      c["add_prefix_space"] = false;
      specials("<|endoftext|>", nullptr, "<|endoftext|>", nullptr, "<|endoftext|>", nullptr, "<|endoftext|>");
      c["errors"] = "replace";
      c["model_max_length"] = 1024;
      c["tokenizer_class"] = "WhisperTokenizer";
      break;
    default:
      HFX_THROW(kComp, "expected an encoder TinyTokenizerKind, got {}", static_cast<int>(kind));
  }
}

}  // namespace

std::string make_tiny_tokenizer_json(TinyTokenizerKind kind, int vocab_size) {
  switch (kind) {
    case TinyTokenizerKind::ByteLevelBPE:
      return byte_level_json(vocab_size);
    case TinyTokenizerKind::SentencePieceBPE:
      return sentencepiece_json(vocab_size);
    case TinyTokenizerKind::WordPiece:
      return wordpiece_json(vocab_size);
    case TinyTokenizerKind::RobertaBPE:
      return roberta_bpe_json(vocab_size);
    case TinyTokenizerKind::ModernBertBPE:
      return modernbert_bpe_json(vocab_size);
    case TinyTokenizerKind::T5Unigram:
      return t5_unigram_json(vocab_size);
    case TinyTokenizerKind::XlmrUnigram:
      return xlmr_unigram_json(vocab_size);
    case TinyTokenizerKind::MarianUnigram:
      return marian_unigram_json(vocab_size);
    case TinyTokenizerKind::WhisperBPE:
      return whisper_bpe_json(vocab_size);
  }
  HFX_THROW(kComp, "expected a TinyTokenizerKind, got {}", static_cast<int>(kind));
}

std::string make_tiny_tokenizer_config_json(TinyTokenizerKind kind) {
  ojson c;
  if (kind == TinyTokenizerKind::ByteLevelBPE || kind == TinyTokenizerKind::SentencePieceBPE)
    decoder_config(kind, c);
  else
    encoder_config(kind, c);
  return c.dump(2) + "\n";
}

const char* tiny_tokenizer_kind_name(TinyTokenizerKind kind) {
  for (const KindName& k : kKindNames)
    if (k.kind == kind) return k.name;
  HFX_THROW(kComp, "expected a TinyTokenizerKind, got {}", static_cast<int>(kind));
}

TinyTokenizerKind tiny_tokenizer_kind_from_name(const std::string& name) {
  std::string all;
  for (const KindName& k : kKindNames) {
    if (name == k.name) return k.kind;
    all += std::string(all.empty() ? "" : ", ") + k.name;
  }
  HFX_THROW(kComp, "expected one of [{}], got {}", all, name);
}

}  // namespace hfx::tok
