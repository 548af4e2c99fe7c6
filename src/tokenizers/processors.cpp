// Post-processors (HF tokenizers/src/processors) and decoders (tokenizers/src/decoders).
#include <cctype>

#include "tokenizers/internal.h"

namespace hfx::tok::detail {

int metaspace_prepend_scheme(const json& j);  // pre_tokenizers.cpp: 0 always, 1 first, 2 never

namespace {

// ---------------- post-processors ----------------
struct TemplateP : PostProcessor {
  struct Item {
    bool is_seq;
    std::string id;  // "A"/"B" or special token name
  };
  std::vector<Item> single;
  std::map<std::string, std::vector<int32_t>> specials;
  void process(std::vector<int32_t>& ids, bool add) const override {
    std::vector<int32_t> out;
    for (auto& it : single) {
      if (it.is_seq) {
        if (it.id == "A") out.insert(out.end(), ids.begin(), ids.end());
      } else if (add) {
        auto s = specials.find(it.id);
        if (s == specials.end())
          HFX_THROW(kComp, "expected post_processor.special_tokens to define '{}', got none", it.id);
        out.insert(out.end(), s->second.begin(), s->second.end());
      }
    }
    ids = std::move(out);
  }
};

std::vector<TemplateP::Item> parse_template(const json& j, const std::string& where) {
  std::vector<TemplateP::Item> out;
  auto from_str = [&](std::string piece) {
    auto colon = piece.rfind(':');
    if (colon != std::string::npos && colon + 1 < piece.size() &&
        piece.find_first_not_of("0123456789", colon + 1) == std::string::npos)
      piece = piece.substr(0, colon);
    if (!piece.empty() && piece[0] == '$') {
      std::string r = piece.substr(1);
      bool b = r == "B" || r == "1";
      out.push_back({true, b ? "B" : "A"});
    } else {
      out.push_back({false, piece});
    }
  };
  if (j.is_string()) {
    std::string s = j.get<std::string>();
    size_t i = 0;
    while (i < s.size()) {
      size_t e = s.find(' ', i);
      if (e == std::string::npos) e = s.size();
      if (e > i) from_str(s.substr(i, e - i));
      i = e + 1;
    }
    return out;
  }
  if (!j.is_array())
    HFX_THROW(kComp, "expected '{}' to be a template array or string, got {}", where, j.dump());
  for (auto& p : j) {
    if (p.contains("Sequence"))
      out.push_back({true, field_as<std::string>(p["Sequence"], "id", where + ".Sequence")});
    else if (p.contains("SpecialToken"))
      out.push_back({false, field_as<std::string>(p["SpecialToken"], "id", where + ".SpecialToken")});
    else if (p.is_string())
      from_str(p.get<std::string>());
    else
      HFX_THROW(kComp, "expected '{}' items to be Sequence or SpecialToken, got {}", where, p.dump());
  }
  return out;
}

struct WrapP : PostProcessor {  // BertProcessing / RobertaProcessing: cls A sep
  int32_t cls, sep;
  void process(std::vector<int32_t>& ids, bool add) const override {
    if (!add) return;
    ids.insert(ids.begin(), cls);
    ids.push_back(sep);
  }
};

struct NoopP : PostProcessor {
  void process(std::vector<int32_t>&, bool) const override {}
};

struct SequenceP : PostProcessor {
  std::vector<std::unique_ptr<PostProcessor>> items;
  void process(std::vector<int32_t>& ids, bool add) const override {
    for (auto& p : items) p->process(ids, add);
  }
};

// ---------------- decoders ----------------
struct ByteLevelD : Decoder {
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    std::string bytes;
    const auto& cb = char_to_byte();
    for (auto& t : tokens) {
      std::string mapped;
      bool ok = true;
      for (size_t i = 0; i < t.size() && ok;) {
        auto it = cb.find(next_cp(t, i));
        if (it == cb.end())
          ok = false;
        else
          mapped += static_cast<char>(it->second);
      }
      bytes += ok ? mapped : t;
    }
    return {utf8_lossy(bytes)};
  }
};

struct MetaspaceD : Decoder {
  char32_t replacement = 0x2581;
  bool prepend = true;
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      std::string o;
      for (size_t k = 0; k < tokens[i].size();) {
        char32_t c = next_cp(tokens[i], k);
        if (c == replacement) {
          if (!(i == 0 && prepend)) o += ' ';
        } else {
          append_utf8(o, c);
        }
      }
      tokens[i] = std::move(o);
    }
    return tokens;
  }
};

struct ByteFallbackD : Decoder {
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    std::vector<std::string> out;
    std::string pending;
    auto flush = [&] {
      if (pending.empty()) return;
      if (find_invalid_utf8(pending) == std::string::npos)
        out.push_back(pending);
      else
        for (size_t i = 0; i < pending.size(); ++i) out.emplace_back("\xEF\xBF\xBD");
      pending.clear();
    };
    for (auto& t : tokens) {
      if (t.size() == 6 && t.compare(0, 3, "<0x") == 0 && t[5] == '>' &&
          std::isxdigit(static_cast<unsigned char>(t[3])) &&
          std::isxdigit(static_cast<unsigned char>(t[4]))) {
        pending += static_cast<char>(std::stoi(t.substr(3, 2), nullptr, 16));
      } else {
        flush();
        out.push_back(t);
      }
    }
    flush();
    return out;
  }
};

struct FuseD : Decoder {
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    std::string all;
    for (auto& t : tokens) all += t;
    return {all};
  }
};

struct StripD : Decoder {
  char32_t content;
  size_t start, stop;
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    for (auto& t : tokens) {
      auto cps = to_cps(t);
      size_t a = 0;
      for (size_t i = 0; i < start && i < cps.size(); ++i) {
        if (cps[i] == content)
          a = i + 1;
        else
          break;
      }
      size_t b = cps.size();
      for (size_t i = 0; i < stop && i < cps.size(); ++i) {
        size_t idx = cps.size() - i - 1;
        if (cps[idx] == content)
          b = idx;
        else
          break;
      }
      std::string o;
      for (size_t i = a; i < b; ++i) append_utf8(o, cps[i]);
      t = std::move(o);
    }
    return tokens;
  }
};

struct ReplaceD : Decoder {
  Regex re;
  std::string content;
  ReplaceD(const PatternSpec& p, std::string c)
      : re(p.is_regex ? p.text : Regex::escape(p.text)), content(std::move(c)) {}
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    for (auto& t : tokens) {
      std::string o;
      for (auto& m : find_matches_regex(re, t))
        o += m.is_match ? content : t.substr(m.start, m.end - m.start);
      t = std::move(o);
    }
    return tokens;
  }
};

std::string replace_all(std::string s, std::string_view from, std::string_view to) {
  size_t pos = 0;
  while ((pos = s.find(from, pos)) != std::string::npos) {
    s.replace(pos, from.size(), to);
    pos += to.size();
  }
  return s;
}

std::string wordpiece_cleanup(std::string s) {
  static const std::pair<const char*, const char*> rules[] = {
      {" .", "."},   {" ?", "?"},           {" !", "!"},   {" ,", ","},     {" ' ", "'"},   {" n't", "n't"},
      {" 'm", "'m"}, {" do not", " don't"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
  for (auto& [a, b] : rules) s = replace_all(std::move(s), a, b);
  return s;
}

struct WordPieceD : Decoder {
  std::string prefix = "##";
  bool cleanup = true;
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      auto& t = tokens[i];
      if (i != 0) {
        if (t.compare(0, prefix.size(), prefix) == 0)
          t = t.substr(prefix.size());
        else
          t = " " + t;
      }
      if (cleanup) t = wordpiece_cleanup(std::move(t));
    }
    return tokens;
  }
};

struct BPED : Decoder {
  std::string suffix = "</w>";
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i)
      tokens[i] = replace_all(tokens[i], suffix, i + 1 == tokens.size() ? "" : " ");
    return tokens;
  }
};

struct CTCD : Decoder {
  std::string pad = "<pad>", delim = "|";
  bool cleanup = true;
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    std::vector<std::string> out;
    for (size_t i = 0; i < tokens.size(); ++i) {
      if (i > 0 && tokens[i] == tokens[i - 1]) continue;
      std::string t = replace_all(tokens[i], pad, "");
      if (cleanup) t = replace_all(wordpiece_cleanup(std::move(t)), delim, " ");
      if (!t.empty()) out.push_back(std::move(t));
    }
    return out;
  }
};

struct SequenceD : Decoder {
  std::vector<std::unique_ptr<Decoder>> items;
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    for (auto& d : items) tokens = d->decode_chain(std::move(tokens));
    return tokens;
  }
};

std::pair<std::string, int32_t> token_pair(const json& j, const char* key, const std::string& where) {
  const json& p = field(j, key, where);
  if (!p.is_array() || p.size() != 2 || !p[0].is_string() || !p[1].is_number_integer())
    HFX_THROW(kComp, "expected '{}.{}' to be [token, id], got {}", where, key, p.dump());
  return {p[0].get<std::string>(), p[1].get<int32_t>()};
}

}  // namespace

std::unique_ptr<PostProcessor> make_post_processor(const json& j) {
  if (j.is_null()) return nullptr;
  std::string t = type_of(j, "post_processor");
  if (t == "TemplateProcessing") {
    auto p = std::make_unique<TemplateP>();
    p->single =
        parse_template(field(j, "single", "post_processor(TemplateProcessing)"), "post_processor.single");
    if (j.contains("special_tokens")) {
      for (auto& [name, spec] : j["special_tokens"].items()) {
        p->specials[name] =
            field_as<std::vector<int32_t>>(spec, "ids", "post_processor.special_tokens." + name);
      }
    }
    return p;
  }
  if (t == "BertProcessing" || t == "RobertaProcessing") {
    auto p = std::make_unique<WrapP>();
    p->cls = token_pair(j, "cls", "post_processor").second;
    p->sep = token_pair(j, "sep", "post_processor").second;
    return p;
  }
  if (t == "ByteLevel") return std::make_unique<NoopP>();
  if (t == "Sequence") {
    auto s = std::make_unique<SequenceP>();
    for (auto& x : field(j, "processors", "post_processor(Sequence)"))
      if (auto p = make_post_processor(x)) s->items.push_back(std::move(p));
    return s;
  }
  HFX_THROW(
      kComp,
      "expected post_processor.type to be one of TemplateProcessing, BertProcessing, RobertaProcessing, "
      "ByteLevel, Sequence, got '{}'",
      t);
}

std::unique_ptr<Decoder> make_decoder(const json& j) {
  if (j.is_null()) return nullptr;
  std::string t = type_of(j, "decoder");
  if (t == "ByteLevel") return std::make_unique<ByteLevelD>();
  if (t == "Metaspace") {
    auto d = std::make_unique<MetaspaceD>();
    auto cps = to_cps(field_as<std::string>(j, "replacement", "decoder(Metaspace)"));
    if (cps.size() != 1)
      HFX_THROW(kComp, "expected decoder.replacement to be one character, got {}", j["replacement"].dump());
    d->replacement = cps[0];
    d->prepend = metaspace_prepend_scheme(j) != 2;
    return d;
  }
  if (t == "ByteFallback") return std::make_unique<ByteFallbackD>();
  if (t == "Fuse") return std::make_unique<FuseD>();
  if (t == "Strip") {
    auto d = std::make_unique<StripD>();
    auto cps = to_cps(field_as<std::string>(j, "content", "decoder(Strip)"));
    if (cps.size() != 1)
      HFX_THROW(kComp, "expected decoder.content to be one character, got {}", j["content"].dump());
    d->content = cps[0];
    d->start = get_or<size_t>(j, "start", 0, "tokenizer.json decoder");
    d->stop = get_or<size_t>(j, "stop", 0, "tokenizer.json decoder");
    return d;
  }
  if (t == "Replace")
    return std::make_unique<ReplaceD>(
        parse_pattern(field(j, "pattern", "decoder(Replace)"), "decoder(Replace)"),
        field_as<std::string>(j, "content", "decoder(Replace)"));
  if (t == "WordPiece") {
    auto d = std::make_unique<WordPieceD>();
    d->prefix = get_or<std::string>(j, "prefix", "##", "tokenizer.json decoder");
    d->cleanup = get_or<bool>(j, "cleanup", true, "tokenizer.json decoder");
    return d;
  }
  if (t == "BPEDecoder") {
    auto d = std::make_unique<BPED>();
    d->suffix = get_or<std::string>(j, "suffix", "</w>", "tokenizer.json decoder");
    return d;
  }
  if (t == "CTC") {
    auto d = std::make_unique<CTCD>();
    d->pad = get_or<std::string>(j, "pad_token", "<pad>", "tokenizer.json decoder");
    d->delim = get_or<std::string>(j, "word_delimiter_token", "|", "tokenizer.json decoder");
    d->cleanup = get_or<bool>(j, "cleanup", true, "tokenizer.json decoder");
    return d;
  }
  if (t == "Sequence") {
    auto s = std::make_unique<SequenceD>();
    for (auto& x : field(j, "decoders", "decoder(Sequence)"))
      if (auto d = make_decoder(x)) s->items.push_back(std::move(d));
    return s;
  }
  HFX_THROW(kComp,
            "expected decoder.type to be one of ByteLevel, Metaspace, ByteFallback, Fuse, Strip, Replace, "
            "WordPiece, BPEDecoder, CTC, Sequence, got '{}'",
            t);
}

}  // namespace hfx::tok::detail
