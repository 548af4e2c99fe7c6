// hfx's chat templates (llama.cpp's Jinja engine) against @huggingface/jinja (npm; the engine of
// Transformers.js' apply_chat_template), byte for byte, on the corpus in tests/data/chat_templates: real
// templates of popular models × the conversations of conversations.json that each template takes.
// Both engines get the same variables (ChatTemplate::variables). A case matches when both render the
// same text, or both stop at the template's raise_exception with the same message (e.g. gemma on a system
// message).
// corpus.json's known_differences lists cases where the engines disagree, with the reason; the test
// checks that they still disagree, so a fixed engine shows up. node or the npm module missing = FAIL.
#include <gtest/gtest.h>

#include <unistd.h>
#include <array>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "hfx/core/error.h"
#include "hfx/io/safetensors.h"
#include "hfx/tokenizers/chat_template.h"

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

namespace {

const fs::path kData = fs::path(HFX_TEST_DATA) / "chat_templates";

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

TEST(ChatTemplateParity, CorpusMatchesHuggingFaceJinja) {
  int rc = 0;
  run("node --version > /dev/null 2>&1", rc);
  ASSERT_EQ(rc, 0) << "node is required for the @huggingface/jinja reference (scripts/setup.sh installs it)";
  ASSERT_TRUE(fs::exists(fs::path(HFX_NODE_MODULES) / "@huggingface/jinja/dist/index.js"))
      << "deps/npm/node_modules lacks @huggingface/jinja (run scripts/setup.sh)";
  const ojson corpus = ojson::parse(hfx::io::read_file((kData / "corpus.json").string()));
  const ojson convs = ojson::parse(hfx::io::read_file((kData / "conversations.json").string()));
  std::vector<Case> cases = build_cases(corpus, convs);

  ojson input = ojson::array();
  for (const auto& k : cases) input.push_back({{"template", k.source}, {"variables", k.variables}});
  const fs::path in_path =
      fs::temp_directory_path() / ("hfx_chat_parity_" + std::to_string(::getpid()) + ".json");
  hfx::io::write_file_atomic(in_path.string(), input.dump());
  std::string out =
      run("node " + std::string(HFX_SOURCE_DIR) + "/tests/tokenizers/chat_template_render.mjs " +
              HFX_NODE_MODULES + " " + in_path.string() + " 2>&1",
          rc);
  fs::remove(in_path);
  ASSERT_EQ(rc, 0) << out;
  const ojson ref = ojson::parse(out);
  ASSERT_EQ(ref.size(), cases.size());

  std::map<std::string, std::string> known;
  for (const auto& d : corpus.value("known_differences", ojson::array()))
    known[d["case"].get<std::string>()] = d["reason"].get<std::string>();
  std::set<std::string> templates;
  size_t matched = 0, rendered = 0, refused = 0;
  for (size_t i = 0; i < cases.size(); i++) {
    const Case& k = cases[i];
    templates.insert(k.name.substr(0, k.name.find('/')));
    const bool ref_ok = ref[i].contains("text");
    // A raise_exception must carry the same message in both (hfx: "... raised an exception: MESSAGE").
    const std::string tag = "raised an exception: ";
    const size_t raised = k.ok ? std::string::npos : k.text.find(tag);
    const bool same = ref_ok == k.ok &&
                      (k.ok ? ref[i]["text"].get<std::string>() == k.text
                            : raised != std::string::npos &&
                                  k.text.substr(raised + tag.size()) == ref[i]["error"].get<std::string>());
    if (same) {
      matched++;
      (k.ok ? rendered : refused)++;
    }
    if (known.count(k.name)) {
      EXPECT_FALSE(same) << k.name << " now matches: remove it from known_differences in corpus.json";
      continue;
    }
    EXPECT_TRUE(same) << k.name << "\n--- hfx (" << (k.ok ? "text" : "error") << "):\n"
                      << k.text << "\n--- @huggingface/jinja:\n"
                      << (ref_ok ? ref[i]["text"].get<std::string>() : ref[i]["error"].get<std::string>());
  }
  std::printf(
      "[chat parity] %zu templates, %zu cases: %zu match @huggingface/jinja (%zu rendered the same text, %zu "
      "refused by "
      "both), %zu known differences\n",
      templates.size(), cases.size(), matched, rendered, refused, known.size());
  EXPECT_GE(templates.size(), 20u);
  // Most cases must render: a corpus where every case raises would compare nothing.
  EXPECT_GT(rendered, cases.size() * 3 / 4);
}
