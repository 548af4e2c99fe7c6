// hfx/tokenizers/tokenizer.h — Hugging Face tokenizers (tokenizer.json), natively.
//
// Loads a `tokenizer.json` exactly as the Rust `tokenizers` library defines it and reproduces its
// `encode` / `decode` results id for id and byte for byte:
//   models          BPE (byte-level and sentencepiece-style with byte_fallback / fuse_unk /
//                   ignore_merges, merges as "a b" strings or [a, b] pairs), WordPiece, Unigram
//                   (Viterbi, byte_fallback), WordLevel;
//   normalizers     Sequence, NFC/NFD/NFKC/NFKD, Lowercase, Strip, StripAccents, Replace, Prepend,
//                   BertNormalizer, ByteLevel, Precompiled (sentencepiece's compiled charsmap, applied per
//                   grapheme cluster exactly as HF's spm_precompiled does);
//   pre-tokenizers  ByteLevel, Split (Regex/String, all five behaviors, invert), Metaspace,
//                   Whitespace, WhitespaceSplit, BertPreTokenizer, Digits, Punctuation,
//                   CharDelimiterSplit, Sequence (regexes run on PCRE2 with UTF + UCP);
//   post-processors TemplateProcessing, ByteLevel, BertProcessing, RobertaProcessing, Sequence;
//   decoders        ByteLevel, Metaspace, ByteFallback, Fuse, Strip, Replace, WordPiece, BPEDecoder,
//                   CTC, Sequence;
//   added tokens    special or not, single_word / lstrip / rstrip / normalized, split out before the
//                   model runs (leftmost-longest), as HF's AddedVocabulary does.
// `tokenizer_config.json` is read for the special tokens, add_bos/add_eos flags and chat template.
// Every failure throws hfx::Error with component "tokenizer", naming the file and JSON field.
//
// Not supported (throws): BPE dropout > 0
// (non-deterministic), truncation/padding blocks in tokenizer.json are ignored.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace hfx::tok {

/// What `tokenizer_config.json` says (all optional). Token fields accept either a plain string or
/// an AddedToken object `{"content": ...}`.
struct TokenizerConfig {
  std::optional<bool> add_bos_token;
  std::optional<bool> add_eos_token;
  std::optional<std::string> bos_token, eos_token, pad_token, unk_token;
  std::optional<std::string> chat_template;  ///< kept verbatim (a Jinja string)
  std::optional<std::string> tokenizer_class;
  std::optional<int64_t> model_max_length;
};

class Tokenizer {
 public:
  /// Loads `tokenizer.json` and, when the path is non-empty, `tokenizer_config.json`.
  static Tokenizer from_files(const std::string& tokenizer_json_path,
                              const std::string& tokenizer_config_path = "");
  /// Loads `dir/tokenizer.json` (as resolved_tokenizer_json gives it) and `dir/tokenizer_config.json` (the
  /// latter only if present).
  static Tokenizer from_dir(const std::string& dir);
  /// Parses tokenizer.json text (and optional tokenizer_config.json text; empty = none).
  static Tokenizer from_json_string(std::string_view tokenizer_json, std::string_view config_json = "");
  /// Parses tokenizer_config.json text as the loaders above do; bad input throws `[tokenizer] expected …`.
  static TokenizerConfig parse_config_json(std::string_view config_json);
  /// Replaces the tokenizer_config.json settings (special tokens, chat template, limits) of this tokenizer,
  /// e.g. to try several configs over one tokenizer.json without parsing it again (the fuzz target does).
  void set_config(TokenizerConfig config);

  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

  /// Token ids for `text` (must be valid UTF-8). With `add_special_tokens`, the post-processor of
  /// tokenizer.json adds its special tokens (e.g. BOS), as HF's `encode(text)` does.
  std::vector<int32_t> encode(std::string_view text, bool add_special_tokens = true) const;
  /// Text for `ids` through the decoder (ids unknown to the vocabulary are dropped, as in HF).
  /// `skip_special_tokens` drops added tokens marked special.
  std::string decode(std::span<const int32_t> ids, bool skip_special_tokens = false) const;

  /// Number of distinct tokens, added tokens included (HF `get_vocab_size(true)`).
  int32_t vocab_size() const;
  /// Id of a token string (added tokens first, then the model vocabulary).
  std::optional<int32_t> token_to_id(std::string_view token) const;
  /// Token string of an id; empty string if the id is unknown.
  std::string id_to_token(int32_t id) const;
  /// Whether `id` is an added token marked special.
  bool is_special(int32_t id) const;

  /// Special token ids, from tokenizer_config.json when it names them, else guessed from the
  /// added tokens (`<s>`, `<|begin_of_text|>`, `[CLS]`, ... / `</s>`, `<|end_of_text|>`, ...).
  std::optional<int32_t> bos_id() const;
  std::optional<int32_t> eos_id() const;
  std::optional<int32_t> pad_id() const;
  std::optional<int32_t> unk_id() const;

  const TokenizerConfig& config() const;
  /// `text` through the tokenizer.json normalizer alone (HF's `normalizer.normalize_str`); unchanged without
  /// one.
  std::string normalize(std::string_view text) const;
  /// The raw sentencepiece charsmap (`normalizer_spec.precompiled_charsmap`) of the tokenizer's `Precompiled`
  /// normalizer, when it has one: what GGUF's `tokenizer.ggml.precompiled_charsmap` carries.
  std::optional<std::string> precompiled_charsmap() const;

  struct Impl;

 private:
  explicit Tokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// Incremental detokenizer for streaming generation, the algorithm of HF's `DecodeStream`:
/// each `step` returns the newly completed text (possibly empty while a UTF-8 sequence or a
/// byte-fallback run is incomplete). Concatenating all steps gives `decode(all ids)` whenever the
/// latter does not end in an incomplete character. The tokenizer must outlive the stream.
class DecodeStream {
 public:
  explicit DecodeStream(const Tokenizer& tokenizer, bool skip_special_tokens = false);
  std::string step(int32_t id);

 private:
  const Tokenizer* tok_;
  bool skip_special_;
  std::vector<int32_t> ids_;
  std::string prefix_;
  size_t prefix_index_ = 0;
};

/// Fixture tokenizers for the random tiny models of `hfx create-tiny`. Each kind writes tokenizer.json in
/// the layout of the Hugging Face checkpoints it is named after (normalizer, pre-tokenizer, model type,
/// post-processor, decoder, added tokens and their flags, special-token ids), trained deterministically
/// on a built-in English + code + multilingual corpus.
enum class TinyTokenizerKind {
  ByteLevelBPE,  ///< "byte_level": GPT-2 / Llama-3-like: Llama-3 split regex + ByteLevel, <|begin_of_text|>
                 ///< added as BOS
  SentencePieceBPE,  ///< "sentencepiece": Llama-2 / Gemma-like: Prepend+Replace "▁", byte_fallback, <unk> <s>
                     ///< </s>, <0x00>..<0xFF>
  WordPiece,  ///< "wordpiece": bert-base-uncased / distilbert: BertNormalizer (lowercase), BertPreTokenizer,
              ///< WordPiece "##", [PAD]=0, [unused*], [UNK] [CLS] [SEP] [MASK], "[CLS] $A [SEP]" (pair B type
              ///< 1)
  RobertaBPE,     ///< "roberta_bpe": roberta-base / bart-base: ByteLevel (no prefix space) BPE,
                  ///< RobertaProcessing, <s>=0 <pad>=1 </s>=2 <unk>=3, <mask> last (lstrip)
  ModernBertBPE,  ///< "modernbert_bpe": ModernBERT-base: NFC + ByteLevel BPE (GPT-NeoX added tokens), "[CLS]
                  ///< $A [SEP]", [UNK] [CLS] [SEP] [PAD] [MASK] after the merges
  T5Unigram,      ///< "t5_unigram": t5-small: NFKC (for sentencepiece's Precompiled), WhitespaceSplit +
                  ///< Metaspace, Unigram, <pad>=0 </s>=1 <unk>=2, "$A </s>", <extra_id_99>..<extra_id_0> last
  XlmrUnigram,    ///< "xlmr_unigram": xlm-roberta-base: NFKC + Replace(" {2,}"), Metaspace, Unigram,
                  ///< <s>=0 <pad>=1 </s>=2 <unk>=3, "<s> $A </s>", <mask> last (lstrip)
  MarianUnigram,  ///< "marian_unigram": Helsinki-NLP/opus-mt-en-de as converted to tokenizer.json: NFKC,
                  ///< Metaspace, Unigram, </s>=0 <unk>=1, <pad> last, "$A </s>"
  WhisperBPE,  ///< "whisper_bpe": openai/whisper-*: ByteLevel BPE, then <|endoftext|> <|startoftranscript|>,
               ///< language tokens, <|translate|> <|transcribe|> <|startoflm|> <|startofprev|> <|nocaptions|>
               ///< <|notimestamps|>, timestamps <|0.00|>..<|30.00|>; "<|startoftranscript|> <|notimestamps|>
               ///< $A
               ///< <|endoftext|>"
};

/// A tokenizer.json with exactly `vocab_size` tokens (added tokens included). BPE kinds learn merges
/// with a simple most-frequent-pair trainer, WordPiece with HF's WordPiece trainer (BPE over "##"
/// continuation symbols), Unigram kinds score pieces by log-probability (counts re-estimated with
/// Viterbi segmentation of the corpus). Deterministic: the same arguments give the same bytes.
/// Minimum sizes: ByteLevelBPE 260, SentencePieceBPE 262, WordPiece 64, RobertaBPE 262,
/// ModernBertBPE 290, T5Unigram 160, XlmrUnigram 64, MarianUnigram 64, WhisperBPE 1782; throws hfx::Error
/// below. Vocabularies larger than the corpus supports are filled with reserved / unused tokens.
std::string make_tiny_tokenizer_json(TinyTokenizerKind kind, int vocab_size);
/// The matching tokenizer_config.json text: tokenizer_class (PreTrainedTokenizerFast, BertTokenizer,
/// RobertaTokenizer, T5Tokenizer, XLMRobertaTokenizer, MarianTokenizer, WhisperTokenizer), model_max_length
/// and the special tokens; the decoder-only kinds add add_bos_token and a small chat template, WordPiece
/// do_lower_case.
std::string make_tiny_tokenizer_config_json(TinyTokenizerKind kind);

/// Whether transformers 5's AutoTokenizer loads `dir` as Qwen2Tokenizer: config.json's model_type qwen2 (for
/// which transformers overrides the Hub's tokenizer_class), else tokenizer_config.json's tokenizer_class
/// Qwen2Tokenizer(Fast), else, without a class, a model_type transformers maps to it (qwen2_moe, qwen3, ...).
bool loads_as_qwen2_tokenizer(const std::string& dir);
/// The transformers 5 tokenizer class AutoTokenizer builds for `dir` when that class rebuilds the pipeline
/// whatever tokenizer.json says: "Qwen2Tokenizer", "XLMRobertaTokenizer", "CamembertTokenizer"; else empty.
std::string rebuilding_tokenizer_class(const std::string& dir);
/// `dir/tokenizer.json`'s text as transformers 5 builds the tokenizer: for Qwen2Tokenizer its own normalizer
/// (NFC), pre-tokenizer (Qwen2's split regex, digits one at a time, then ByteLevel) and decoder replace the
/// file's; for XLMRobertaTokenizer / CamembertTokenizer the file's sentencepiece charsmap alone,
/// WhitespaceSplit
/// + Metaspace, a Metaspace decoder and `<s> $A </s>`; otherwise the file as it is. Tokenizer::from_dir and
/// the GGUF vocabulary read this.
std::string resolved_tokenizer_json(const std::string& dir);

/// The kind's name as listed in the enum ("byte_level", "sentencepiece", "wordpiece", "roberta_bpe",
/// "modernbert_bpe", "t5_unigram", "xlmr_unigram", "marian_unigram", "whisper_bpe").
const char* tiny_tokenizer_kind_name(TinyTokenizerKind kind);
/// The kind with that name; throws hfx::Error("tokenizer", "expected one of [...], got NAME").
TinyTokenizerKind tiny_tokenizer_kind_from_name(const std::string& name);

}  // namespace hfx::tok
