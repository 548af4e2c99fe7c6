// hfx's chat templates (llama.cpp's Jinja engine) against two independent references, byte for byte, on the
// corpus in tests/data/chat_templates: real templates of popular models × the conversations of
// conversations.json that each template takes.
//  - Python's Jinja2 set up as transformers' apply_chat_template sets it up (chat_template_jinja2.py, run by
//    /usr/bin/python3 with Debian's python3-jinja2): hfx must equal it on EVERY case.
//  - @huggingface/jinja (npm; the engine of Transformers.js' apply_chat_template): hfx must equal it on
//    every case but those where the test finds @huggingface/jinja itself departing from Jinja2; those
//    are printed, one line each, with both renderings' first difference.
// All engines get the same variables (ChatTemplate::variables). A case matches when both render the same
// text, or both stop at the template's raise_exception with the same message (e.g. gemma on a system
// message). A missing reference (node, the npm module, /usr/bin/python3 or its jinja2) is a FAILURE.
#include <gtest/gtest.h>

#include <unistd.h>
#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <set>

#include <nlohmann/json.hpp>

#include "hfx/core/error.h"
#include "hfx/io/safetensors.h"
#include "hfx/tokenizers/chat_template.h"

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

namespace {

const fs::path kData = fs::path(HFX_TEST_DATA) / "chat_templates";
// Debian's interpreter: python3-jinja2 installs Jinja2 for it (a pyenv or venv python may lack it).
constexpr const char* kPython = "/usr/bin/python3";

std::string run(const std::string& cmd, int& rc) {
  std::array<char, 4096> buf;
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) {
    rc = -1;
    return out;
  }
  while (size_t n = fread(buf.data(), 1, buf.size(), p)) out.append(buf.data(), n);
  rc = pclose(p);
  return out;
}

struct Case {
  std::string name;  // template/conversation
  ojson variables;
  std::string source;
  bool ok = false;   // hfx rendered (else it raised)
  std::string text;  // hfx's text or error
};

// What an engine made of a case: text, the template's raise_exception (its message), or another error.
struct Outcome {
  enum Kind { kText, kRaised, kError } kind = kError;
  std::string s;
  bool same(const Outcome& o) const { return kind == o.kind && kind != kError && s == o.s; }
  std::string show() const {
    return (kind == kText ? "text:\n" : kind == kRaised ? "raise_exception: " : "error: ") + s;
  }
};

// hfx reports a raise_exception as "... raised an exception: MESSAGE" (ChatTemplate::render).
Outcome hfx_outcome(const Case& k) {
  if (k.ok) return {Outcome::kText, k.text};
  const std::string tag = "raised an exception: ";
  const size_t p = k.text.find(tag);
  if (p == std::string::npos) return {Outcome::kError, k.text};
  return {Outcome::kRaised, k.text.substr(p + tag.size())};
}

// @huggingface/jinja's error is the raise_exception's message itself, so an error counts as raised (an
// engine error never equals a template's message).
Outcome hf_outcome(const ojson& r) {
  if (r.contains("text")) return {Outcome::kText, r["text"].get<std::string>()};
  return {Outcome::kRaised, r["error"].get<std::string>()};
}

Outcome jinja2_outcome(const ojson& r) {
  if (r.contains("text")) return {Outcome::kText, r["text"].get<std::string>()};
  if (r.contains("raised")) return {Outcome::kRaised, r["raised"].get<std::string>()};
  return {Outcome::kError, r["error"].get<std::string>()};
}

// Where two renderings part: "line N: 'a' vs 'b'", for the one-line report of an engine departure.
std::string first_difference(const Outcome& a, const Outcome& b) {
  auto brief = [](const Outcome& o) {
    return (o.kind == Outcome::kText ? "renders " : "stops with ") + ojson(o.s.substr(0, 60)).dump();
  };
  if (a.kind != b.kind) return brief(a) + " vs " + brief(b);
  size_t i = std::mismatch(a.s.begin(), a.s.begin() + std::min(a.s.size(), b.s.size()), b.s.begin()).first -
             a.s.begin();
  const size_t line = std::count(a.s.begin(), a.s.begin() + i, '\n') + 1;
  const size_t from = i < 20 ? 0 : i - 20;
  return "line " + std::to_string(line) + ": " + ojson(a.s.substr(from, 50)).dump() + " vs " +
         ojson(b.s.substr(from, 50)).dump();
}

std::string write_cases(const std::vector<Case>& cases) {
  ojson input = ojson::array();
  for (const auto& k : cases) input.push_back({{"template", k.source}, {"variables", k.variables}});
  const fs::path in_path =
      fs::temp_directory_path() / ("hfx_chat_parity_" + std::to_string(::getpid()) + ".json");
  hfx::io::write_file_atomic(in_path.string(), input.dump());
  return in_path.string();
}

std::vector<Case> build_cases(const ojson& corpus, const ojson& convs) {
  std::vector<Case> cases;
  for (const auto& t : corpus["templates"]) {
    std::set<std::string> features;
    for (const auto& f : t["features"]) features.insert(f.get<std::string>());
    const std::string text = hfx::io::read_file((kData / t["template"].get<std::string>()).string());
    auto tmpl = hfx::tok::ChatTemplate::from_json(text, t["tokenizer_config"]);
    for (const auto& c : convs["conversations"]) {
      const std::string needs = c.value("needs", "");
      if (!needs.empty() && !features.count(needs)) continue;
      // "only": templates that take nothing else (tool-use-only templates, Llama-3.2-Vision's list content).
      if (t.contains("only")) {
        bool listed = false;
        for (const auto& o : t["only"]) listed = listed || o.get<std::string>() == needs;
        if (!listed) continue;
      }
      hfx::tok::ChatInputs in;
      in.messages = c["messages"];
      in.add_generation_prompt = c["add_generation_prompt"].get<bool>();
      if (c.value("with_tools", false)) in.tools = convs["tools"];
      if (c.contains("extra")) in.extra = c["extra"];
      Case k;
      k.name = t["name"].get<std::string>() + "/" + c["name"].get<std::string>();
      k.variables = tmpl.variables(in);
      k.source = tmpl.source(!in.tools.is_null());
      try {
        k.text = tmpl.render(in);
        k.ok = true;
      } catch (const hfx::Error& e) {
        k.text = e.what();
      }
      cases.push_back(std::move(k));
    }
  }
  return cases;
}

}  // namespace

TEST(ChatTemplateParity, CorpusMatchesJinja2AndHuggingFaceJinja) {
  int rc = 0;
  run("node --version > /dev/null 2>&1", rc);
  ASSERT_EQ(rc, 0) << "node is required for the @huggingface/jinja reference (scripts/setup.sh installs it)";
  ASSERT_TRUE(fs::exists(fs::path(HFX_NODE_MODULES) / "@huggingface/jinja/dist/index.js"))
      << "deps/npm/node_modules lacks @huggingface/jinja (run scripts/setup.sh)";
  std::string out = run(std::string(kPython) + " -c 'import jinja2' 2>&1", rc);
  ASSERT_EQ(rc, 0) << "Python's Jinja2 reference needs " << kPython
                   << " with Debian's python3-jinja2 (scripts/setup.sh installs it): " << out;
  const ojson corpus = ojson::parse(hfx::io::read_file((kData / "corpus.json").string()));
  const ojson convs = ojson::parse(hfx::io::read_file((kData / "conversations.json").string()));
  const std::vector<Case> cases = build_cases(corpus, convs);
  const std::string in_path = write_cases(cases);
  const std::string tests = std::string(HFX_SOURCE_DIR) + "/tests/tokenizers/";
  out = run("node " + tests + "chat_template_render.mjs " + HFX_NODE_MODULES + " " + in_path + " 2>&1", rc);
  const int hf_rc = rc;
  std::string j2_out = run(std::string(kPython) + " " + tests + "chat_template_jinja2.py " + in_path, rc);
  fs::remove(in_path);
  ASSERT_EQ(hf_rc, 0) << out;
  ASSERT_EQ(rc, 0) << j2_out;
  const ojson hf = ojson::parse(out);
  const ojson j2 = ojson::parse(j2_out);
  ASSERT_EQ(hf.size(), cases.size());
  ASSERT_EQ(j2["results"].size(), cases.size());

  std::set<std::string> templates;
  size_t rendered = 0, refused = 0, hf_matched = 0;
  std::vector<std::string> hf_departures;
  for (size_t i = 0; i < cases.size(); i++) {
    const Case& k = cases[i];
    templates.insert(k.name.substr(0, k.name.find('/')));
    const Outcome mine = hfx_outcome(k), ref_hf = hf_outcome(hf[i]),
                  ref_j2 = jinja2_outcome(j2["results"][i]);
    EXPECT_TRUE(mine.same(ref_j2)) << k.name << "\n--- hfx " << mine.show() << "\n--- Jinja2 "
                                   << ref_j2.show();
    if (mine.same(ref_j2)) (mine.kind == Outcome::kText ? rendered : refused)++;
    if (mine.same(ref_hf)) {
      hf_matched++;
    } else if (!ref_hf.same(ref_j2)) {
      hf_departures.push_back(k.name + ": @huggingface/jinja vs Jinja2, " + first_difference(ref_hf, ref_j2));
    } else {
      ADD_FAILURE() << k.name << "\n--- hfx " << mine.show() << "\n--- @huggingface/jinja (= Jinja2) "
                    << ref_hf.show();
    }
  }
  std::printf(
      "[chat parity] %zu templates, %zu cases: %zu equal Jinja2 %s (%zu rendered the same text, "
      "%zu stopped at the same raise_exception); %zu equal @huggingface/jinja, %zu where "
      "@huggingface/jinja departs from Jinja2:\n",
      templates.size(), cases.size(), rendered + refused, j2["jinja2"].get<std::string>().c_str(), rendered,
      refused, hf_matched, hf_departures.size());
  for (const auto& d : hf_departures) std::printf("  %s\n", d.c_str());
  EXPECT_GE(templates.size(), 20u);
  // Most cases must render: a corpus where every case raises would compare nothing.
  EXPECT_GT(rendered, cases.size() * 3 / 4);
}
