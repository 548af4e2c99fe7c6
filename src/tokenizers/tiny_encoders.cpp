// Tiny fixture tokenizers of the encoder families: BERT's WordPiece, RoBERTa's and ModernBERT's
// byte-level BPE, each in the tokenizer.json layout of the real checkpoints (see TinyTokenizerKind).
#include <algorithm>

#include "hfx/tokenizers/tokenizer.h"
#include "tokenizers/tiny_internal.h"

namespace hfx::tok::detail::tiny {
namespace {

// Byte-level BPE: words from `pre_tokenizer` (after `normalizer`), base symbols the 256 GPT-2 byte
// characters, `want` new tokens at most.
void train_byte_level(const ojson& normalizer, const ojson& pre_tokenizer, size_t want,
                      std::vector<std::string>& base,
                      std::vector<std::pair<std::string, std::string>>& merges,
                      std::vector<std::string>& fresh) {
  base = byte_level_alphabet();
  Trainer tr;
  for (auto& s : base) tr.intern(s);
  std::set<std::string> known(base.begin(), base.end());
  for (auto& [w, c] : corpus_words(normalizer, pre_tokenizer)) {
    std::vector<int32_t> syms;
    for (char32_t ch : to_cps(w)) syms.push_back(tr.sym_id.at(utf8(ch)));
    tr.words.emplace_back(std::move(syms), c);
  }
  tr.train(want, merges, fresh, known);
}

// HF's WordPieceTrainer: BPE whose non-initial symbols carry "##", over the most frequent symbols.
void train_wordpiece(const ojson& normalizer, const ojson& pre_tokenizer, size_t budget,
                     std::vector<std::string>& alphabet, std::vector<std::string>& fresh) {
  auto words = corpus_words(normalizer, pre_tokenizer);
  std::map<std::string, int64_t> sym_counts;
  for (auto& [w, c] : words) {
    auto cps = to_cps(w);
    for (size_t i = 0; i < cps.size(); ++i) sym_counts[(i ? "##" : "") + utf8(cps[i])] += c;
  }
  std::vector<std::pair<int64_t, std::string>> by_freq;
  for (auto& [s, n] : sym_counts) by_freq.emplace_back(-n, s);
  std::sort(by_freq.begin(), by_freq.end());
  size_t n_alpha = std::min(by_freq.size(), std::max<size_t>(1, budget / 2));
  Trainer tr;
  tr.continuing_prefix = "##";
  for (size_t i = 0; i < n_alpha; ++i) {
    alphabet.push_back(by_freq[i].second);
    tr.intern(alphabet.back());
  }
  std::set<std::string> known(alphabet.begin(), alphabet.end());
  for (auto& [w, c] : words) {
    auto cps = to_cps(w);
    std::vector<int32_t> syms;
    for (size_t i = 0; i < cps.size(); ++i) {
      auto it = tr.sym_id.find((i ? "##" : "") + utf8(cps[i]));
      syms.push_back(it == tr.sym_id.end() ? -1 : it->second);
    }
    tr.words.emplace_back(std::move(syms), c);
  }
  std::vector<std::pair<std::string, std::string>> merges;
  tr.train(budget - alphabet.size(), merges, fresh, known);
}

ojson bpe_model(bool roberta_style, ojson vocab,
                const std::vector<std::pair<std::string, std::string>>& merges) {
  ojson merges_j = ojson::array();
  for (auto& [a, b] : merges) merges_j.push_back(roberta_style ? ojson(a + " " + b) : ojson::array({a, b}));
  // roberta-base predates ignore_merges and spells the unset prefix/suffix as "".
  ojson affix = roberta_style ? ojson("") : ojson(nullptr);
  ojson m{{"type", "BPE"},
          {"dropout", nullptr},
          {"unk_token", nullptr},
          {"continuing_subword_prefix", affix},
          {"end_of_word_suffix", affix},
          {"fuse_unk", false},
          {"byte_fallback", false}};
  if (!roberta_style) m["ignore_merges"] = false;
  m["vocab"] = std::move(vocab);
  m["merges"] = std::move(merges_j);
  return m;
}

// Every token of these kinds is in the model vocabulary: a duplicate string would silently shrink it.
void check_size(const char* kind, const ojson& vocab, int vocab_size) {
  if (static_cast<int>(vocab.size()) != vocab_size)
    HFX_THROW(kComp, "expected {} distinct {} tokens, got {} (a trained token repeats a special one)",
              vocab_size, kind, vocab.size());
}

}  // namespace

std::string wordpiece_json(int vocab_size) {
  if (vocab_size < 64) HFX_THROW(kComp, "expected a WordPiece tiny vocab_size >= 64, got {}", vocab_size);
  // bert-base-uncased: [PAD]=0, [unused0..98], [UNK]=100 [CLS] [SEP] [MASK], then the pieces.
  const int n_front = std::min(99, vocab_size / 16);
  const char* specials[] = {"[UNK]", "[CLS]", "[SEP]", "[MASK]"};
  ojson normalizer{{"type", "BertNormalizer"},
                   {"clean_text", true},
                   {"handle_chinese_chars", true},
                   {"strip_accents", nullptr},
                   {"lowercase", true}};
  ojson pre{{"type", "BertPreTokenizer"}};
  std::vector<std::string> alphabet, fresh;
  train_wordpiece(normalizer, pre, static_cast<size_t>(vocab_size - 5 - n_front), alphabet, fresh);

  ojson vocab = ojson::object();
  std::map<std::string, int32_t> ids;
  int32_t next = 0;
  ojson added = ojson::array({added_token(next, "[PAD]")});
  vocab["[PAD]"] = next++;
  int k = 0;
  for (; k < n_front; ++k) vocab[fmt::format("[unused{}]", k)] = next++;
  for (const char* s : specials) {
    ids[s] = next;
    added.push_back(added_token(next, s));
    vocab[s] = next++;
  }
  for (auto* list : {&alphabet, &fresh})
    for (auto& s : *list) vocab[s] = next++;
  for (; next < vocab_size; ++k) vocab[fmt::format("[unused{}]", k)] = next++;
  check_size("WordPiece", vocab, vocab_size);

  ojson model{{"type", "WordPiece"},
              {"unk_token", "[UNK]"},
              {"continuing_subword_prefix", "##"},
              {"max_input_chars_per_word", 100},
              {"vocab", vocab}};
  return tokenizer_json_text(
      added, normalizer, pre,
      template_processing("[CLS]:0 $A:0 [SEP]:0", "[CLS]:0 $A:0 [SEP]:0 $B:1 [SEP]:1", ids),
      ojson{{"type", "WordPiece"}, {"prefix", "##"}, {"cleanup", true}}, model);
}

std::string roberta_bpe_json(int vocab_size) {
  const int n_fixed = 4 + 256 + 1;  // <s> <pad> </s> <unk>, the bytes, <mask>
  if (vocab_size < n_fixed + 1)
    HFX_THROW(
        kComp,
        "expected a RobertaBPE tiny vocab_size >= {} (4 specials + 256 bytes + <mask> + 1 merge), got {}",
        n_fixed + 1, vocab_size);
  std::vector<std::string> base, fresh;
  std::vector<std::pair<std::string, std::string>> merges;
  train_byte_level(nullptr, byte_level_block(false), static_cast<size_t>(vocab_size - n_fixed), base, merges,
                   fresh);

  ojson vocab = ojson::object();
  ojson added = ojson::array();
  int32_t next = 0;
  for (const char* s : {"<s>", "<pad>", "</s>", "<unk>"}) {
    added.push_back(added_token(next, s, true, true));
    vocab[s] = next++;
  }
  for (auto* list : {&base, &fresh})
    for (auto& s : *list) vocab[s] = next++;
  for (int k = 0; next < vocab_size - 1; ++k) vocab[fmt::format("madeupword{:04d}", k)] = next++;
  added.push_back(added_token(next, "<mask>", true, false, true));
  vocab["<mask>"] = next++;
  check_size("RobertaBPE", vocab, vocab_size);

  ojson post{{"type", "RobertaProcessing"},
             {"sep", {"</s>", 2}},
             {"cls", {"<s>", 0}},
             {"trim_offsets", true},
             {"add_prefix_space", false}};
  return tokenizer_json_text(added, nullptr, byte_level_block(false), post, byte_level_block(true),
                             bpe_model(true, vocab, merges));
}

std::string modernbert_bpe_json(int vocab_size) {
  // ModernBERT-base (OLMo / GPT-NeoX vocabulary): 0 |||IP_ADDRESS|||, 1 <|padding|>, bytes and merges, then
  // runs of 24..2 spaces, |||EMAIL_ADDRESS||| |||PHONE_NUMBER||| <|endoftext|>, [UNK] [CLS] [SEP] [PAD]
  // [MASK], [unused*]. Every added token is also in the model vocabulary.
  const int n_runs = 23, n_tail = n_runs + 3 + 5, n_fixed = 2 + 256 + n_tail;
  if (vocab_size < n_fixed + 1)
    HFX_THROW(
        kComp,
        "expected a ModernBertBPE tiny vocab_size >= {} (2 + 256 bytes + {} added tokens + 1 merge), got {}",
        n_fixed + 1, n_tail, vocab_size);
  ojson normalizer{{"type", "NFC"}};
  std::vector<std::string> base, fresh;
  std::vector<std::pair<std::string, std::string>> merges;
  train_byte_level(normalizer, byte_level_block(false), static_cast<size_t>(vocab_size - n_fixed), base,
                   merges, fresh);

  ojson vocab = ojson::object();
  ojson added = ojson::array();
  std::map<std::string, int32_t> ids;
  int32_t next = 0;
  auto add = [&](const std::string& s, bool special, bool lstrip = false) {
    added.push_back(added_token(next, s, special, !special, lstrip));
    ids[s] = next;
    vocab[s] = next++;
  };
  add("|||IP_ADDRESS|||", false);
  add("<|padding|>", true);
  for (auto* list : {&base, &fresh})
    for (auto& s : *list) vocab[s] = next++;
  for (int n = n_runs + 1; n >= 2; --n) add(std::string(static_cast<size_t>(n), ' '), false);
  for (const char* s : {"|||EMAIL_ADDRESS|||", "|||PHONE_NUMBER|||"}) add(s, false);
  for (const char* s : {"<|endoftext|>", "[UNK]", "[CLS]", "[SEP]", "[PAD]"}) add(s, true);
  add("[MASK]", true, true);
  int unused = 0;  // add() advances `next`
  while (next < vocab_size) add(fmt::format("[unused{}]", unused++), true);
  check_size("ModernBertBPE", vocab, vocab_size);

  return tokenizer_json_text(
      added, normalizer, byte_level_block(false),
      template_processing("[CLS]:0 $A:0 [SEP]:0", "[CLS]:0 $A:0 [SEP]:0 $B:1 [SEP]:1", ids),
      byte_level_block(true), bpe_model(false, vocab, merges));
}

}  // namespace hfx::tok::detail::tiny

namespace hfx::tok::detail::tiny {

std::string whisper_bpe_json(int vocab_size) {
  // openai/whisper-*: the byte-level BPE vocabulary ends with <|endoftext|>; the added tokens follow in
  // the checkpoints' order (start of transcript, languages in Whisper's order, tasks, the other markers,
  // then one timestamp per 20 ms up to 30 s).
  static const char* kLanguages[] = {"en", "zh", "de", "es", "ru", "ko", "fr", "ja"};
  std::vector<std::string> tail = {"<|startoftranscript|>"};
  for (const char* l : kLanguages) tail.push_back(fmt::format("<|{}|>", l));
  for (const char* s : {"<|translate|>", "<|transcribe|>", "<|startoflm|>", "<|startofprev|>",
                        "<|nocaptions|>", "<|notimestamps|>"})
    tail.push_back(s);
  for (int t = 0; t <= 1500; ++t) tail.push_back(fmt::format("<|{:.2f}|>", t * 0.02));
  const int n_fixed = 256 + 1 + static_cast<int>(tail.size());
  if (vocab_size < n_fixed + 1)
    HFX_THROW(kComp,
              "expected a WhisperBPE tiny vocab_size >= {} (256 bytes + <|endoftext|> + {} added tokens + 1 "
              "merge), got {}",
              n_fixed + 1, tail.size(), vocab_size);
  std::vector<std::string> base, fresh;
  std::vector<std::pair<std::string, std::string>> merges;
  train_byte_level(nullptr, byte_level_block(false), static_cast<size_t>(vocab_size - n_fixed), base, merges,
                   fresh);
  ojson vocab = ojson::object();
  int32_t next = 0;
  for (auto* list : {&base, &fresh})
    for (auto& s : *list) vocab[s] = next++;
  ojson added = ojson::array();
  std::map<std::string, int32_t> ids;
  added.push_back(added_token(next, "<|endoftext|>", true, true));
  ids["<|endoftext|>"] = next;
  vocab["<|endoftext|>"] = next++;
  check_size("WhisperBPE", vocab, next);
  for (const auto& s : tail) {
    ids[s] = next;
    added.push_back(added_token(next++, s, true, false));
  }
  if (next != vocab_size)
    HFX_THROW(kComp, "expected {} WhisperBPE tokens, got {} (the corpus has too few merges)", vocab_size,
              next);
  ojson post = template_processing("<|startoftranscript|>:0 <|notimestamps|>:0 $A:0 <|endoftext|>:0",
                                   "<|startoftranscript|>:0 <|notimestamps|>:0 $A:0 $B:1 <|endoftext|>:1",
                                   {{"<|startoftranscript|>", ids["<|startoftranscript|>"]},
                                    {"<|notimestamps|>", ids["<|notimestamps|>"]},
                                    {"<|endoftext|>", ids["<|endoftext|>"]}});
  return tokenizer_json_text(added, nullptr, byte_level_block(false), post, byte_level_block(true),
                             bpe_model(true, vocab, merges));
}

}  // namespace hfx::tok::detail::tiny
