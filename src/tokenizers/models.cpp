// Models of tokenizer.json: BPE (word.rs merge order), WordPiece, WordLevel, Unigram (Viterbi of
// HF's encode_optimized), all id-exact with HF tokenizers/src/models.
#include <queue>

#include "tokenizers/internal.h"

namespace hfx::tok::detail {
namespace {

struct StrHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using Vocab = std::unordered_map<std::string, int32_t, StrHash, std::equal_to<>>;

std::optional<int32_t> lookup(const Vocab& v, std::string_view t) {
  auto it = v.find(t);
  if (it == v.end()) return std::nullopt;
  return it->second;
}

Vocab parse_vocab_object(const json& j, const std::string& where) {
  if (!j.is_object())
    HFX_THROW(kComp, "expected '{}' to be an object of token -> id, got {}", where, j.type_name());
  Vocab v;
  v.reserve(j.size());
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (!it.value().is_number_integer())
      HFX_THROW(kComp, "expected '{}[\"{}\"]' to be an integer id, got {}", where, it.key(),
                it.value().dump());
    v[it.key()] = it.value().get<int32_t>();
  }
  return v;
}

struct VocabModel : Model {
  Vocab vocab;
  std::unordered_map<int32_t, std::string> vocab_r;
  void build_reverse() {
    for (auto& [k, v] : vocab) vocab_r[v] = k;
  }
  std::optional<int32_t> token_to_id(std::string_view t) const override { return lookup(vocab, t); }
  std::optional<std::string> id_to_token(int32_t id) const override {
    auto it = vocab_r.find(id);
    if (it == vocab_r.end()) return std::nullopt;
    return it->second;
  }
  size_t vocab_size() const override { return vocab.size(); }
  void for_each_token(const std::function<void(const std::string&, int32_t)>& fn) const override {
    for (auto& [k, v] : vocab) fn(k, v);
  }
};

// ---------------- BPE ----------------
struct BPE : VocabModel {
  std::unordered_map<uint64_t, std::pair<uint32_t, int32_t>> merges;  // (a,b) -> (rank, new id)
  std::optional<std::string> unk_token, prefix, suffix;
  bool fuse_unk = false, byte_fallback = false, ignore_merges = false;
  std::array<std::optional<int32_t>, 256> byte_ids;

  static uint64_t key(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }

  struct Sym {
    int32_t c;
    int64_t prev, next;
    size_t len;
  };

  int32_t unk_id() const {
    auto id = lookup(vocab, *unk_token);
    if (!id) HFX_THROW(kComp, "expected model.unk_token '{}' to be in the vocabulary, got none", *unk_token);
    return *id;
  }

  void tokenize(std::string_view w, std::vector<int32_t>& out) const override {
    if (w.empty()) return;
    if (ignore_merges)
      if (auto id = lookup(vocab, w)) {
        out.push_back(*id);
        return;
      }
    std::vector<Sym> syms;
    auto add = [&](int32_t id, size_t len) {
      int64_t n = static_cast<int64_t>(syms.size());
      syms.push_back({id, n - 1, n + 1, len});
    };
    // A pending unknown piece (id, bytes), fused with the next one when fuse_unk. Two plain fields rather
    // than an optional<pair>: GCC 12 -O2 reports the optional's members as maybe-uninitialized.
    struct PendingUnk {
      bool set = false;
      int32_t id = 0;
      size_t len = 0;
      explicit operator bool() const { return set; }
      void reset() { set = false; }
    } unk;
    std::string s;
    for (size_t i = 0; i < w.size();) {
      size_t b = i;
      next_cp(w, i);
      bool first = b == 0, last = i == w.size();
      size_t byte_len = i - b;
      s.assign(w.substr(b, byte_len));
      if (!first && prefix) s = *prefix + s;
      if (last && suffix) s += *suffix;
      if (auto id = lookup(vocab, s)) {
        if (unk) {
          add(unk.id, unk.len);
          unk.reset();
        }
        add(*id, byte_len);
        continue;
      }
      if (byte_fallback) {
        bool all = true;
        for (unsigned char c : s) all = all && byte_ids[c].has_value();
        if (all) {
          for (unsigned char c : s) add(*byte_ids[c], 1);
          continue;
        }
      }
      if (unk_token) {
        if (unk && fuse_unk) {
          unk.len += byte_len;
        } else {
          if (unk) add(unk.id, unk.len);
          unk = {true, unk_id(), byte_len};
        }
      }
    }
    if (unk) add(unk.id, unk.len);
    if (!syms.empty()) syms.back().next = -1;
    merge_all(syms);
    for (auto& sy : syms)
      if (sy.len != 0) out.push_back(sy.c);
  }

  void merge_all(std::vector<Sym>& syms) const {
    struct M {
      size_t pos;
      uint32_t rank;
      int32_t new_id;
      bool operator>(const M& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
    };
    std::priority_queue<M, std::vector<M>, std::greater<M>> q;
    for (size_t i = 0; i + 1 < syms.size(); ++i) {
      auto it = merges.find(key(syms[i].c, syms[i + 1].c));
      if (it != merges.end()) q.push({i, it->second.first, it->second.second});
    }
    while (!q.empty()) {
      M top = q.top();
      q.pop();
      Sym& cur = syms[top.pos];
      if (cur.len == 0 || cur.next == -1) continue;
      size_t next_pos = static_cast<size_t>(cur.next);
      Sym right = syms[next_pos];
      auto it = merges.find(key(cur.c, right.c));
      if (it == merges.end() || it->second.second != top.new_id) continue;
      cur.c = top.new_id;
      cur.len += right.len;
      cur.next = right.next;
      syms[next_pos].len = 0;
      if (right.next > -1 && static_cast<size_t>(right.next) < syms.size())
        syms[static_cast<size_t>(right.next)].prev = static_cast<int64_t>(top.pos);
      if (cur.prev >= 0) {
        auto pit = merges.find(key(syms[static_cast<size_t>(cur.prev)].c, cur.c));
        if (pit != merges.end())
          q.push({static_cast<size_t>(cur.prev), pit->second.first, pit->second.second});
      }
      if (cur.next >= 0 && static_cast<size_t>(cur.next) < syms.size()) {
        auto nit = merges.find(key(cur.c, syms[static_cast<size_t>(cur.next)].c));
        if (nit != merges.end()) q.push({top.pos, nit->second.first, nit->second.second});
      }
    }
  }
};

std::unique_ptr<Model> make_bpe(const json& j) {
  const std::string w = "model(BPE)";
  auto m = std::make_unique<BPE>();
  m->vocab = parse_vocab_object(field(j, "vocab", w), "model.vocab");
  m->build_reverse();
  auto opt_str = [&](const char* k) -> std::optional<std::string> {
    auto it = j.find(k);
    if (it == j.end() || it->is_null()) return std::nullopt;
    return jsonc::as<std::string>(*it, kComp, std::string("tokenizer.json model.") + k);
  };
  m->unk_token = opt_str("unk_token");
  m->prefix = opt_str("continuing_subword_prefix");
  m->suffix = opt_str("end_of_word_suffix");
  m->fuse_unk = get_or<bool>(j, "fuse_unk", false, "tokenizer.json model");
  m->byte_fallback = get_or<bool>(j, "byte_fallback", false, "tokenizer.json model");
  m->ignore_merges = get_or<bool>(j, "ignore_merges", false, "tokenizer.json model");
  if (auto d = get_or<double>(j, "dropout", 0.0, "tokenizer.json model"); d > 0.0)
    HFX_THROW(kComp, "expected model.dropout to be null or 0 (deterministic encoding), got {}", d);
  for (int b = 0; b < 256; ++b) m->byte_ids[b] = lookup(m->vocab, fmt::format("<0x{:02X}>", b));
  const json& merges = field(j, "merges", w);
  if (!merges.is_array())
    HFX_THROW(kComp, "expected model.merges to be an array, got {}", merges.type_name());
  size_t prefix_len = m->prefix ? m->prefix->size() : 0;
  uint32_t rank = 0;
  for (const json& mj : merges) {
    std::string a, b;
    if (mj.is_string()) {
      std::string line = mj.get<std::string>();
      if (line.rfind("#version", 0) == 0) continue;
      size_t sp = line.find(' ');
      if (sp == std::string::npos || line.find(' ', sp + 1) != std::string::npos)
        HFX_THROW(kComp, "expected model.merges[{}] to be \"a b\", got \"{}\"", rank, line);
      a = line.substr(0, sp);
      b = line.substr(sp + 1);
    } else if (mj.is_array() && mj.size() == 2) {
      a = jsonc::as<std::string>(mj[0], kComp, fmt::format("model.merges[{}][0]", rank));
      b = jsonc::as<std::string>(mj[1], kComp, fmt::format("model.merges[{}][1]", rank));
    } else {
      HFX_THROW(kComp, "expected model.merges[{}] to be \"a b\" or [a, b], got {}", rank, mj.dump());
    }
    auto ia = lookup(m->vocab, a), ib = lookup(m->vocab, b);
    if (!ia)
      HFX_THROW(kComp, "expected merge token '{}' (model.merges[{}]) in the vocabulary, got none", a, rank);
    if (!ib)
      HFX_THROW(kComp, "expected merge token '{}' (model.merges[{}]) in the vocabulary, got none", b, rank);
    std::string merged = a + b.substr(std::min(prefix_len, b.size()));
    auto in = lookup(m->vocab, merged);
    if (!in)
      HFX_THROW(kComp, "expected merged token '{}' (model.merges[{}]) in the vocabulary, got none", merged,
                rank);
    m->merges[BPE::key(*ia, *ib)] = {rank, *in};
    ++rank;
  }
  return m;
}

// ---------------- WordPiece / WordLevel ----------------
struct WordPiece : VocabModel {
  std::string unk_token = "[UNK]", prefix = "##";
  size_t max_chars = 100;
  int32_t unk() const {
    auto id = lookup(vocab, unk_token);
    if (!id) HFX_THROW(kComp, "expected model.unk_token '{}' to be in the vocabulary, got none", unk_token);
    return *id;
  }
  void tokenize(std::string_view s, std::vector<int32_t>& out) const override {
    if (to_cps(s).size() > max_chars) {
      out.push_back(unk());
      return;
    }
    std::vector<int32_t> sub;
    size_t start = 0;
    std::string buf;
    while (start < s.size()) {
      size_t end = s.size();
      std::optional<int32_t> cur;
      while (start < end) {
        buf.clear();
        if (start > 0) buf = prefix;
        buf.append(s.substr(start, end - start));
        if ((cur = lookup(vocab, buf))) break;
        // step back one UTF-8 char
        --end;
        while (end > start && (static_cast<unsigned char>(s[end]) & 0xC0) == 0x80) --end;
      }
      if (!cur) {
        out.push_back(unk());
        return;
      }
      sub.push_back(*cur);
      start = end;
    }
    out.insert(out.end(), sub.begin(), sub.end());
  }
};

struct WordLevel : VocabModel {
  std::string unk_token;
  void tokenize(std::string_view s, std::vector<int32_t>& out) const override {
    if (auto id = lookup(vocab, s)) {
      out.push_back(*id);
    } else if (auto u = lookup(vocab, unk_token)) {
      out.push_back(*u);
    } else {
      HFX_THROW(kComp, "expected model.unk_token '{}' to be in the vocabulary, got none", unk_token);
    }
  }
};

// ---------------- Unigram ----------------
struct Unigram : Model {
  std::vector<std::pair<std::string, double>> pieces;
  Vocab token_to_ids;
  std::optional<int32_t> unk_id;
  bool byte_fallback = false;
  double min_score = 0;
  // Byte trie of the pieces: node -> id of the piece ending there (-1: none); edges keyed by (node, byte).
  std::vector<int32_t> node_piece{-1};
  std::unordered_map<uint64_t, int32_t> edges;
  static uint64_t edge(int32_t n, unsigned char c) { return (static_cast<uint64_t>(n) << 8) | c; }
  int32_t child(int32_t n, unsigned char c) const {
    auto it = edges.find(edge(n, c));
    return it == edges.end() ? -1 : it->second;
  }

  void insert(const std::string& t, int32_t id) {
    int32_t n = 0;
    for (unsigned char c : t) {
      int32_t ch = child(n, c);
      if (ch < 0) {
        ch = static_cast<int32_t>(node_piece.size());
        edges[edge(n, c)] = ch;
        node_piece.push_back(-1);
      }
      n = ch;
    }
    node_piece[static_cast<size_t>(n)] = id;  // later duplicates win, as in HF's token_to_ids
  }

  void tokenize(std::string_view s, std::vector<int32_t>& out) const override {
    if (s.empty()) return;
    for (std::string_view piece : best_pieces(s, lattice(s))) emit_piece(piece, out);
  }

 private:
  // The best segmentation ending at each byte: the id of its last piece, its score and where it starts.
  struct Best {
    int32_t id = 0;
    double score = 0;
    std::optional<size_t> starts_at;
  };

  // Viterbi over the vocabulary's trie (HF's Unigram encode_optimized): every piece starting at each
  // character boundary, and a character no piece covers as unk at min_score − 10.
  std::vector<Best> lattice(std::string_view s) const {
    const double unk_score = min_score - 10.0;
    size_t size = s.size();
    std::vector<Best> best(size + 1);
    size_t starts_at = 0;
    while (starts_at < size) {
      double here = best[starts_at].score;
      bool has_single = false;
      size_t j = starts_at;
      next_cp(s, j);
      size_t mblen = j - starts_at;
      int32_t n = 0;
      for (size_t k = starts_at; k < size; ++k) {
        int32_t ch = child(n, static_cast<unsigned char>(s[k]));
        if (ch < 0) break;
        n = ch;
        int32_t pid = node_piece[static_cast<size_t>(n)];
        if (pid < 0) continue;
        size_t key_pos = k + 1;
        double cand = pieces[static_cast<size_t>(pid)].second + here;
        Best& t = best[key_pos];
        if (!t.starts_at || cand > t.score) {
          t.score = cand;
          t.starts_at = starts_at;
          t.id = pid;
        }
        if (!has_single && key_pos - starts_at == mblen) has_single = true;
      }
      if (!has_single) {
        Best& t = best[starts_at + mblen];
        double cand = unk_score + here;
        if (!t.starts_at || cand > t.score) {
          if (!unk_id)
            HFX_THROW(kComp, "expected model.unk_id for a character the Unigram vocabulary lacks, got null");
          t.score = cand;
          t.starts_at = starts_at;
          t.id = *unk_id;
        }
      }
      starts_at += mblen;
    }
    return best;
  }

  // The pieces of the best path, in order, with runs of unk pieces fused into one.
  std::vector<std::string_view> best_pieces(std::string_view s, const std::vector<Best>& best) const {
    std::vector<std::string_view> results;
    std::optional<std::pair<size_t, size_t>> unk_span;  // fused unk run [start, end)
    size_t ends_at = s.size();
    while (ends_at > 0) {
      const Best& node = best[ends_at];
      size_t st = *node.starts_at;
      if (unk_id && node.id == *unk_id) {
        unk_span = unk_span ? std::make_pair(st, unk_span->second) : std::make_pair(st, ends_at);
      } else {
        if (unk_span) {
          results.push_back(s.substr(unk_span->first, unk_span->second - unk_span->first));
          unk_span.reset();
        }
        results.push_back(s.substr(st, ends_at - st));
      }
      ends_at = st;
    }
    if (unk_span) results.push_back(s.substr(unk_span->first, unk_span->second - unk_span->first));
    std::reverse(results.begin(), results.end());
    return results;
  }
  // A piece's id; else its bytes as <0xXX> pieces (byte_fallback); else unk.
  void emit_piece(std::string_view piece, std::vector<int32_t>& out) const {
    if (auto id = lookup(token_to_ids, piece)) {
      out.push_back(*id);
      return;
    }
    if (byte_fallback) {
      std::vector<int32_t> bytes;
      bool ok = true;
      for (unsigned char c : piece) {
        auto id = lookup(token_to_ids, fmt::format("<0x{:02X}>", c));
        if (!id) {
          ok = false;
          break;
        }
        bytes.push_back(*id);
      }
      if (ok) {
        out.insert(out.end(), bytes.begin(), bytes.end());
        return;
      }
    }
    if (!unk_id) HFX_THROW(kComp, "expected model.unk_id for an unknown Unigram piece, got null");
    out.push_back(*unk_id);
  }

 public:
  std::optional<int32_t> token_to_id(std::string_view t) const override { return lookup(token_to_ids, t); }
  std::optional<std::string> id_to_token(int32_t id) const override {
    if (id < 0 || static_cast<size_t>(id) >= pieces.size()) return std::nullopt;
    return pieces[static_cast<size_t>(id)].first;
  }
  size_t vocab_size() const override { return pieces.size(); }
  void for_each_token(const std::function<void(const std::string&, int32_t)>& fn) const override {
    for (size_t i = 0; i < pieces.size(); ++i) fn(pieces[i].first, static_cast<int32_t>(i));
  }
};

std::unique_ptr<Model> make_unigram(const json& j) {
  auto m = std::make_unique<Unigram>();
  const json& v = field(j, "vocab", "model(Unigram)");
  if (!v.is_array())
    HFX_THROW(kComp, "expected model.vocab to be an array of [piece, score], got {}", v.type_name());
  m->min_score = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < v.size(); ++i) {
    const json& e = v[i];
    if (!e.is_array() || e.size() != 2 || !e[0].is_string() || !e[1].is_number())
      HFX_THROW(kComp, "expected model.vocab[{}] to be [piece, score], got {}", i, e.dump());
    std::string p = e[0].get<std::string>();
    double sc = e[1].get<double>();
    m->pieces.emplace_back(p, sc);
    m->token_to_ids[p] = static_cast<int32_t>(i);
    if (sc < m->min_score) m->min_score = sc;
  }
  for (size_t i = 0; i < m->pieces.size(); ++i) m->insert(m->pieces[i].first, static_cast<int32_t>(i));
  if (j.contains("unk_id") && !j["unk_id"].is_null()) {
    int64_t u = jsonc::as<int64_t>(j["unk_id"], kComp, "model.unk_id");
    if (u < 0 || static_cast<size_t>(u) >= m->pieces.size())
      HFX_THROW(kComp, "expected model.unk_id < {} (vocabulary size), got {}", m->pieces.size(), u);
    m->unk_id = static_cast<int32_t>(u);
  }
  m->byte_fallback = get_or<bool>(j, "byte_fallback", false, "tokenizer.json model");
  return m;
}

}  // namespace

std::unique_ptr<Model> make_model(const json& j) {
  if (j.is_null()) HFX_THROW(kComp, "expected field 'model' to be an object, got null");
  std::string t;
  if (j.is_object() && !j.contains("type")) {
    // Old files omit model.type; infer it as HF's untagged deserializer does.
    if (j.contains("merges"))
      t = "BPE";
    else if (j.contains("vocab") && j["vocab"].is_array())
      t = "Unigram";
    else if (j.contains("continuing_subword_prefix"))
      t = "WordPiece";
    else
      t = "WordLevel";
  } else {
    t = type_of(j, "model");
  }
  if (t == "BPE") return make_bpe(j);
  if (t == "Unigram") return make_unigram(j);
  if (t == "WordPiece") {
    auto m = std::make_unique<WordPiece>();
    m->vocab = parse_vocab_object(field(j, "vocab", "model(WordPiece)"), "model.vocab");
    m->build_reverse();
    m->unk_token = get_or<std::string>(j, "unk_token", "[UNK]", "tokenizer.json model");
    m->prefix = get_or<std::string>(j, "continuing_subword_prefix", "##", "tokenizer.json model");
    m->max_chars = get_or<size_t>(j, "max_input_chars_per_word", 100, "tokenizer.json model");
    return m;
  }
  if (t == "WordLevel") {
    auto m = std::make_unique<WordLevel>();
    m->vocab = parse_vocab_object(field(j, "vocab", "model(WordLevel)"), "model.vocab");
    m->build_reverse();
    m->unk_token = get_or<std::string>(j, "unk_token", "<unk>", "tokenizer.json model");
    return m;
  }
  HFX_THROW(kComp, "expected model.type to be one of BPE, WordPiece, WordLevel, Unigram, got '{}'", t);
}

}  // namespace hfx::tok::detail
