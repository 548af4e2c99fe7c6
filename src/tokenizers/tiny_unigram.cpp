// Tiny fixture tokenizers of the sentencepiece Unigram families (T5, XLM-RoBERTa, Marian): pieces chosen
// from the corpus (the most frequent characters, then the substrings with the largest count x length)
// and scored by log-probability, re-estimated from Viterbi segmentations of the corpus (hard EM), so
// that segmentation prefers frequent pieces as a trained sentencepiece model does.
#include <algorithm>
#include <cmath>
#include <limits>

#include "hfx/tokenizers/tokenizer.h"
#include "tokenizers/tiny_internal.h"

namespace hfx::tok::detail::tiny {
namespace {

using Scored = std::vector<std::pair<std::string, double>>;
constexpr size_t kMaxPieceChars = 12;
constexpr int kEmRounds = 3;
constexpr size_t kSeedFactor = 4;

// Seed pieces: the most frequent characters (at most half the budget; they are always kept), then up to
// kSeedFactor x budget substrings of 2..kMaxPieceChars of those characters seen at least twice, by count x
// length. Returns piece -> corpus count.
std::map<std::string, double> seed_pieces(const std::map<std::string, int64_t>& words, size_t budget,
                                          const std::set<std::string>& reserved,
                                          std::set<std::string>& chars_out) {
  std::map<char32_t, int64_t> char_counts;
  for (auto& [w, c] : words)
    for (char32_t ch : to_cps(w)) char_counts[ch] += c;
  std::vector<std::pair<int64_t, char32_t>> by_freq;
  for (auto& [ch, n] : char_counts) by_freq.emplace_back(-n, ch);
  std::sort(by_freq.begin(), by_freq.end());
  size_t n_chars = std::min(by_freq.size(), std::max<size_t>(1, budget / 2));
  std::set<char32_t> chars;
  std::map<std::string, double> pieces;
  for (size_t i = 0; i < n_chars; ++i) {
    chars.insert(by_freq[i].second);
    chars_out.insert(utf8(by_freq[i].second));
    pieces[utf8(by_freq[i].second)] = static_cast<double>(-by_freq[i].first);
  }
  std::map<std::string, int64_t> sub_counts;
  for (auto& [w, c] : words) {
    auto cps = to_cps(w);
    for (size_t a = 0; a < cps.size(); ++a) {
      if (!chars.count(cps[a])) continue;
      std::string s = utf8(cps[a]);
      for (size_t b = a + 1; b < cps.size() && b - a < kMaxPieceChars && chars.count(cps[b]); ++b) {
        append_utf8(s, cps[b]);
        sub_counts[s] += c;
      }
    }
  }
  std::vector<std::tuple<int64_t, std::string, int64_t>> ranked;  // (-count*len, piece, count)
  for (auto& [s, n] : sub_counts)
    if (n >= 2 && !reserved.count(s)) ranked.emplace_back(-n * static_cast<int64_t>(to_cps(s).size()), s, n);
  std::sort(ranked.begin(), ranked.end());
  for (size_t i = 0; i < ranked.size() && pieces.size() < budget * kSeedFactor; ++i)
    pieces[std::get<1>(ranked[i])] = static_cast<double>(std::get<2>(ranked[i]));
  return pieces;
}

// Best segmentation of `w` (code points) under `logp`; characters without a piece cost `unk`.
std::vector<std::string> viterbi(const std::vector<char32_t>& cps, const std::map<std::string, double>& logp,
                                 double unk) {
  size_t n = cps.size();
  std::vector<double> best(n + 1, -std::numeric_limits<double>::infinity());
  std::vector<size_t> from(n + 1, 0);
  best[0] = 0;
  for (size_t a = 0; a < n; ++a) {
    std::string s;
    for (size_t b = a + 1; b <= n && b - a <= kMaxPieceChars; ++b) {
      append_utf8(s, cps[b - 1]);
      auto it = logp.find(s);
      double sc =
          it != logp.end() ? it->second : (b == a + 1 ? unk : -std::numeric_limits<double>::infinity());
      if (best[a] + sc > best[b]) {
        best[b] = best[a] + sc;
        from[b] = a;
      }
    }
  }
  std::vector<std::string> out;
  for (size_t b = n; b > 0; b = from[b]) {
    std::string s;
    for (size_t k = from[b]; k < b; ++k) append_utf8(s, cps[k]);
    out.push_back(std::move(s));
  }
  std::reverse(out.begin(), out.end());
  return out;
}

// log((count + 0.1) / total), rounded to 6 decimals (add-0.1 smoothing keeps unused pieces finite).
std::map<std::string, double> log_probs(const std::map<std::string, double>& counts) {
  double total = 0;
  for (auto& [p, c] : counts) total += c + 0.1;
  std::map<std::string, double> logp;
  for (auto& [p, c] : counts) logp[p] = std::round(std::log((c + 0.1) / total) * 1e6) / 1e6;
  return logp;
}

// One hard-EM step: piece -> how often the Viterbi segmentation of the corpus under `counts` uses it.
std::map<std::string, double> usage(const std::map<std::string, int64_t>& words,
                                    const std::map<std::string, double>& counts) {
  std::map<std::string, double> logp = log_probs(counts), used;
  double unk = 0;
  for (auto& [p, l] : logp) unk = std::min(unk, l - 10.0);
  for (auto& [p, c] : counts) used[p] = 0;
  for (auto& [w, c] : words)
    for (const std::string& p : viterbi(to_cps(w), logp, unk))
      if (auto it = used.find(p); it != used.end()) it->second += static_cast<double>(c);
  return used;
}

// sentencepiece's training loop, simplified: EM over the seed pieces, dropping the least used
// multi-character pieces (a quarter of the excess per round) until `budget` remain. Returns the
// pieces with their log-probabilities, best first (ties by piece).
Scored train_unigram(const std::map<std::string, int64_t>& words, size_t budget,
                     const std::set<std::string>& reserved) {
  std::set<std::string> chars;
  std::map<std::string, double> counts = seed_pieces(words, budget, reserved, chars);
  for (int round = 0; round < kEmRounds || counts.size() > budget; ++round) {
    counts = usage(words, counts);
    if (counts.size() <= budget) continue;
    // (usage, -length, piece): the least used first, the longest first among equals.
    std::vector<std::tuple<double, size_t, std::string>> drop;
    for (auto& [p, c] : counts)
      if (!chars.count(p)) drop.emplace_back(c, SIZE_MAX - p.size(), p);
    if (drop.empty()) break;
    std::sort(drop.begin(), drop.end());
    size_t excess = counts.size() - budget,
           n_drop = std::min(drop.size(), std::max<size_t>(1, (excess + 3) / 4));
    for (size_t i = 0; i < n_drop; ++i) counts.erase(std::get<2>(drop[i]));
  }
  // Scores as sentencepiece stores them (f32), each moved down by a deterministic jitter below 0.01 (a hash
  // of the piece) so that no two segmentations tie: implementations break Viterbi ties differently.
  Scored out;
  for (auto& [p, l] : log_probs(counts)) {
    uint32_t h = 2166136261u;  // FNV-1a
    for (unsigned char ch : p) h = (h ^ ch) * 16777619u;
    out.emplace_back(p, static_cast<double>(static_cast<float>(l - 1e-2 * (h & 0xFFFFFF) / double(1 << 24))));
  }
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  return out;
}

struct UnigramLayout {
  const char* kind;
  ojson normalizer, pre_tokenizer;
  std::vector<std::string> head, tail;  // special pieces (score 0) before / after the trained pieces
  std::string unk, single, pair;        // the unknown piece, TemplateProcessing templates
  std::set<std::string> lstrip;         // added tokens with lstrip and normalized (xlm-roberta-base's <mask>)
};

std::string unigram_json(const UnigramLayout& l, int vocab_size, int min_size) {
  if (vocab_size < min_size)
    HFX_THROW(kComp, "expected a {} tiny vocab_size >= {}, got {}", l.kind, min_size, vocab_size);
  std::set<std::string> reserved(l.head.begin(), l.head.end());
  reserved.insert(l.tail.begin(), l.tail.end());
  size_t budget = static_cast<size_t>(vocab_size) - l.head.size() - l.tail.size();
  Scored pieces = train_unigram(corpus_words(l.normalizer, l.pre_tokenizer), budget, reserved);
  double filler_score = (pieces.empty() ? 0.0 : pieces.back().second) - 1.0;
  for (int k = 0; pieces.size() < budget; ++k)
    pieces.emplace_back(fmt::format("<unused{}>", k),
                        static_cast<double>(static_cast<float>(filler_score - 1e-3 * k)));

  ojson vocab = ojson::array();
  ojson added = ojson::array();
  std::map<std::string, int32_t> ids;
  int32_t next = 0;
  auto special = [&](const std::string& s) {
    bool ls = l.lstrip.count(s) > 0;
    added.push_back(added_token(next, s, true, ls, ls));
    ids[s] = next++;
    vocab.push_back(ojson::array({s, 0.0}));
  };
  for (auto& s : l.head) special(s);
  for (auto& [p, sc] : pieces) {
    vocab.push_back(ojson::array({p, sc}));
    ++next;
  }
  for (auto& s : l.tail) special(s);
  if (next != vocab_size)
    HFX_THROW(kComp, "expected {} {} tokens, got {} (duplicate pieces)", vocab_size, l.kind, next);
  ojson model{{"type", "Unigram"}, {"unk_id", ids.at(l.unk)}, {"vocab", vocab}, {"byte_fallback", false}};
  return tokenizer_json_text(added, l.normalizer, l.pre_tokenizer, template_processing(l.single, l.pair, ids),
                             metaspace_block(), model);
}

}  // namespace

std::string t5_unigram_json(int vocab_size) {
  UnigramLayout l{
      "T5Unigram",
      ojson{{"type", "NFKC"}},
      ojson{{"type", "Sequence"}, {"pretokenizers", {ojson{{"type", "WhitespaceSplit"}}, metaspace_block()}}},
      {"<pad>", "</s>", "<unk>"},
      {},
      "<unk>",
      "$A:0 </s>:0",
      "$A:0 </s>:0 $B:0 </s>:0",
      {}};
  for (int k = kT5ExtraIds - 1; k >= 0; --k) l.tail.push_back(fmt::format("<extra_id_{}>", k));
  return unigram_json(l, vocab_size, 3 + kT5ExtraIds + 57);
}

std::string xlmr_unigram_json(int vocab_size) {
  ojson normalizer{{"type", "Sequence"},
                   {"normalizers",
                    {ojson{{"type", "NFKC"}},
                     ojson{{"type", "Replace"}, {"pattern", {{"Regex", " {2,}"}}}, {"content", " "}}}}};
  UnigramLayout l{"XlmrUnigram", normalizer, metaspace_block(),   {"<s>", "<pad>", "</s>", "<unk>"},
                  {"<mask>"},    "<unk>",    "<s>:0 $A:0 </s>:0", "<s>:0 $A:0 </s>:0 </s>:0 $B:0 </s>:0",
                  {"<mask>"}};
  return unigram_json(l, vocab_size, 64);
}

std::string marian_unigram_json(int vocab_size) {
  UnigramLayout l{"MarianUnigram",
                  ojson{{"type", "NFKC"}},
                  metaspace_block(),
                  {"</s>", "<unk>"},
                  {"<pad>"},
                  "<unk>",
                  "$A:0 </s>:0",
                  "$A:0 $B:0 </s>:0",
                  {}};
  return unigram_json(l, vocab_size, 64);
}

}  // namespace hfx::tok::detail::tiny
