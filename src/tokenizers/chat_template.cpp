// Chat templates (see include/hfx/tokenizers/chat_template.h): finding the template and special tokens in
// a model folder, and rendering through llama.cpp's Jinja engine. The engine's headers are visible to
// this file only (CMakeLists.txt), so nothing else depends on its generic names (json.h, unicode.h).
#include "hfx/tokenizers/chat_template.h"

#include <filesystem>

#include "hfx/core/error.h"
#include "hfx/io/safetensors.h"
#include "jinja/lexer.h"
#include "jinja/parser.h"
#include "jinja/runtime.h"
#include "jinja/value.h"
#include "json.h"

namespace hfx::tok {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

namespace {

constexpr const char* kComp = "chat";

// transformers' SPECIAL_TOKENS_ATTRIBUTES, in its order.
constexpr const char* kSpecialTokens[] = {
    "bos_token", "eos_token", "unk_token",  "sep_token",
    "pad_token", "cls_token", "mask_token", "additional_special_tokens"};

ojson read_json(const fs::path& p) {
  try {
    return ojson::parse(io::read_file(p.string()));
  } catch (const ojson::exception& e) {
    HFX_THROW(kComp, "expected valid JSON in {}, got: {}", p.string(), e.what());
  }
}

// A token as tokenizer_config.json writes it: "text" or an AddedToken {"content": "text", ...}.
std::string token_text(const ojson& v, const std::string& key) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string())
    return v["content"].get<std::string>();
  HFX_THROW(kComp, "expected {} to be a string or {{\"content\": ...}}, got {}", key, v.dump());
}

// special_tokens_map as transformers builds it: the attributes that are set and non-empty.
void add_special_tokens(ojson& out, const ojson& config) {
  if (!config.is_object()) return;
  for (const char* key : kSpecialTokens) {
    if (out.contains(key) || !config.contains(key) || config[key].is_null()) continue;
    const ojson& v = config[key];
    if (std::string(key) == "additional_special_tokens") {
      HFX_CHECK(v.is_array(), kComp, "expected additional_special_tokens to be a list, got {}", v.dump());
      ojson list = ojson::array();
      for (const auto& t : v) list.push_back(token_text(t, key));
      if (!list.empty()) out[key] = std::move(list);
    } else if (std::string s = token_text(v, key); !s.empty()) {
      out[key] = s;
    }
  }
}

// The engine reports a raise_exception as "...Error: Jinja Exception: MESSAGE" under its source excerpt;
// the template author's message is what the user needs.
std::string describe(const std::string& what) {
  const std::string tag = "Jinja Exception: ";
  size_t p = what.rfind(tag);
  if (p != std::string::npos) return "the chat template raised an exception: " + what.substr(p + tag.size());
  return "expected a chat template that renders, got an error from the Jinja engine: " + what;
}

}  // namespace

ChatTemplate ChatTemplate::from_json(const ojson& chat_template, const ojson& tokenizer_config) {
  ChatTemplate t;
  if (chat_template.is_string()) {
    t.templates_.emplace_back("default", chat_template.get<std::string>());
  } else if (chat_template.is_array()) {
    for (const auto& e : chat_template) {
      HFX_CHECK(e.is_object() && e.contains("name") && e["name"].is_string() && e.contains("template") &&
                    e["template"].is_string(),
                kComp, "expected chat_template entries {{\"name\": ..., \"template\": ...}}, got {}",
                e.dump());
      t.templates_.emplace_back(e["name"].get<std::string>(), e["template"].get<std::string>());
    }
  }
  HFX_CHECK(!t.templates_.empty(), kComp,
            "expected chat_template to be a string or a non-empty list of named templates, got {}",
            chat_template.dump());
  add_special_tokens(t.special_tokens_, tokenizer_config);
  return t;
}

ChatTemplate ChatTemplate::from_dir(const std::string& dir, const std::string& model) {
  const fs::path d(dir);
  ojson config =
      fs::exists(d / "tokenizer_config.json") ? read_json(d / "tokenizer_config.json") : ojson::object();
  ojson tmpl;
  if (fs::exists(d / "chat_template.jinja")) {
    tmpl = io::read_file((d / "chat_template.jinja").string());
  } else if (fs::exists(d / "chat_template.json")) {
    ojson j = read_json(d / "chat_template.json");
    if (j.is_object() && j.contains("chat_template")) tmpl = j["chat_template"];
  }
  if (tmpl.is_null() && config.is_object() && config.contains("chat_template"))
    tmpl = config["chat_template"];
  HFX_CHECK(!tmpl.is_null(), kComp,
            "expected a chat_template in tokenizer_config.json or chat_template.json, got none — pass "
            "--prompt without --chat "
            "({} '{}')",
            model.empty() ? "folder" : model + " in", dir);
  ChatTemplate t = from_json(tmpl, config);
  if (fs::exists(d / "special_tokens_map.json"))
    add_special_tokens(t.special_tokens_, read_json(d / "special_tokens_map.json"));
  return t;
}

const std::string& ChatTemplate::source(bool with_tools) const {
  auto find = [&](const char* name) -> const std::string* {
    for (const auto& [n, s] : templates_)
      if (n == name) return &s;
    return nullptr;
  };
  if (with_tools)
    if (const std::string* s = find("tool_use")) return *s;
  if (const std::string* s = find("default")) return *s;
  HFX_THROW(kComp, "expected a chat template named 'default'{} among [{}], got none",
            with_tools ? " or 'tool_use'" : "", fmt::join(names(), ", "));
}

std::vector<std::string> ChatTemplate::names() const {
  std::vector<std::string> r;
  for (const auto& [n, s] : templates_) r.push_back(n);
  return r;
}

ojson ChatTemplate::variables(const ChatInputs& in) const {
  HFX_CHECK(in.messages.is_array(), kComp, "expected messages to be a list, got {}", in.messages.type_name());
  HFX_CHECK(in.extra.is_object(), kComp, "expected extra template variables as an object, got {}",
            in.extra.type_name());
  HFX_CHECK(in.tools.is_null() || in.tools.is_array(), kComp,
            "expected tools to be a list of JSON schemas, got {}", in.tools.type_name());
  // The variables of transformers' compiled_template.render(messages=, tools=, documents=,
  // add_generation_prompt=, **special_tokens_map, **kwargs).
  ojson vars = special_tokens_;
  vars["messages"] = in.messages;
  vars["tools"] = in.tools;
  vars["documents"] = nullptr;
  vars["add_generation_prompt"] = in.add_generation_prompt;
  for (const auto& [k, v] : in.extra.items()) vars[k] = v;
  return vars;
}

std::string ChatTemplate::render(const ChatInputs& in) const {
  const std::string& src = source(!in.tools.is_null());
  const ojson vars = variables(in);
  std::string text;
  try {
    text = vars.dump();
  } catch (const ojson::exception& e) {
    HFX_THROW(kComp, "expected chat messages in valid UTF-8, got: {}", e.what());
  }
  try {
    // Parsed on every call: the engine may move AST nodes while executing a filter block that throws.
    jinja::lexer_result tokens = jinja::lexer().tokenize(src);
    jinja::program program = jinja::parse_from_tokens(tokens);
    jinja::context ctx(src);
    jinja::global_from_json(ctx, common_json::parse(text), /*mark_input=*/false);
    jinja::runtime runtime(ctx);
    jinja::value results = runtime.execute(program);
    return jinja::runtime::gather_string_parts(results)->as_string().str();
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    HFX_THROW(kComp, "{}", describe(e.what()));
  }
}

}  // namespace hfx::tok
