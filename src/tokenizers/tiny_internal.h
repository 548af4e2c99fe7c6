// Private pieces of the tiny fixture tokenizers (tiny.cpp, tiny_encoders.cpp, tiny_unigram.cpp):
// the built-in corpus, the BPE merge trainer, and JSON helpers shared by every kind.
#pragma once
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "tokenizers/internal.h"

namespace hfx::tok::detail::tiny {

using ojson = nlohmann::ordered_json;

inline constexpr const char* kSpace = "\xE2\x96\x81";  // ▁ (sentencepiece's meta space)
/// T5's sentinel tokens <extra_id_0..99>, as in every T5 checkpoint (tokenizer_config.json names them).
inline constexpr int kT5ExtraIds = 100;

/// The built-in training corpus (English, code, a dozen other scripts, emoji).
const std::vector<std::string_view>& corpus();

/// Word -> count over the corpus, each line run through `normalizer` and `pre_tokenizer` (tokenizer.json
/// fragments, either may be null) by this library's own implementation, so training sees exactly the
/// words that encoding will see.
std::map<std::string, int64_t> corpus_words(const ojson& normalizer, const ojson& pre_tokenizer);

/// The 256 GPT-2 byte symbols, printable bytes first (the order of GPT-2's vocab.json).
std::vector<std::string> byte_level_alphabet();

/// Words as symbol sequences (symbol -1 is a barrier that never merges) with their counts; learns BPE
/// merges, most frequent pair first (ties: smallest pair of strings). A merged symbol is a + b, with
/// b's `continuing_prefix` removed when b starts with it (WordPiece's "##").
struct Trainer {
  std::vector<std::string> symbols;  // symbol id -> string
  std::map<std::string, int32_t> sym_id;
  std::vector<std::pair<std::vector<int32_t>, int64_t>> words;
  std::string continuing_prefix;

  int32_t intern(const std::string& s);
  /// Learns merges until `want_new` new token strings exist (strings not yet in `known`) or no pair is
  /// left. Appends the merges (in rank order) and the new token strings (in creation order).
  void train(size_t want_new, std::vector<std::pair<std::string, std::string>>& merges,
             std::vector<std::string>& new_tokens, std::set<std::string>& known);
};

/// An added_tokens entry in the field order HF serializes.
ojson added_token(int32_t id, const std::string& content, bool special = true, bool normalized = false,
                  bool lstrip = false);

/// A TemplateProcessing post-processor from HF's template strings ("[CLS]:0 $A:0 [SEP]:0"); `ids` gives
/// the id of every special token the templates name.
ojson template_processing(const std::string& single, const std::string& pair,
                          const std::map<std::string, int32_t>& ids);

/// ByteLevel pre-tokenizer / decoder blocks as HF serializes them.
ojson byte_level_block(bool add_prefix_space);
/// Metaspace pre-tokenizer / decoder block (prepend_scheme "always", split true).
ojson metaspace_block();

/// tokenizer.json text from its parts, in HF's top-level field order.
std::string tokenizer_json_text(const ojson& added, const ojson& normalizer, const ojson& pre_tokenizer,
                                const ojson& post_processor, const ojson& decoder, const ojson& model);

// The kinds of tiny_encoders.cpp and tiny_unigram.cpp.
std::string wordpiece_json(int vocab_size);
std::string roberta_bpe_json(int vocab_size);
std::string modernbert_bpe_json(int vocab_size);
std::string t5_unigram_json(int vocab_size);
std::string xlmr_unigram_json(int vocab_size);
std::string marian_unigram_json(int vocab_size);
std::string whisper_bpe_json(int vocab_size);

}  // namespace hfx::tok::detail::tiny
