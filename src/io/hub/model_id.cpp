// src/io/hub/model_id.cpp — `ORG/NAME[@REVISION]` parsing and the environment huggingface_hub reads
// (HF_HOME, HF_HUB_CACHE, HF_ENDPOINT, HF_TOKEN, HF_HUB_OFFLINE), with huggingface_hub's defaults and
// precedence so that both tools find the same cache.
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>

#include "hfx/io/hub.h"

namespace fs = std::filesystem;

namespace hfx::hub {

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

std::string expand_user(const std::string& p) {
  if (p.rfind("~", 0) == 0) return env("HOME") + p.substr(1);
  return p;
}

bool truthy(std::string v) {
  for (auto& c : v) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return v == "1" || v == "ON" || v == "YES" || v == "TRUE";
}

std::string trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) i++;
  return s.substr(i);
}

}  // namespace

bool looks_like_model_id(const std::string& text) {
  if (text.empty() || text.find('/') == std::string::npos) return false;
  return text[0] != '/' && text[0] != '.' && text[0] != '~';
}

std::optional<ModelId> parse_model_id(const std::string& text, std::string* why) {
  auto fail = [&](const std::string& w) -> std::optional<ModelId> {
    if (why) *why = w;
    return std::nullopt;
  };
  ModelId id;
  const size_t at = text.find('@');
  id.repo = text.substr(0, at);
  id.revision = at == std::string::npos ? "main" : text.substr(at + 1);
  if (at != std::string::npos && id.revision.empty()) return fail("an empty revision after '@'");
  for (unsigned char c : id.revision)
    if (std::isspace(c) || std::iscntrl(c)) return fail("a revision with whitespace or control characters");
  // huggingface_hub's validate_repo_id, with the namespace required (hfx takes no legacy bare names).
  static const std::regex kPart(R"([A-Za-z0-9_.\-]+)");
  const size_t slash = id.repo.find('/');
  if (slash == std::string::npos) return fail("no '/' between ORG and NAME");
  const std::string org = id.repo.substr(0, slash), name = id.repo.substr(slash + 1);
  if (org.empty() || name.empty()) return fail("an empty ORG or NAME");
  if (name.find('/') != std::string::npos) return fail("more than one '/' (a model id is ORG/NAME)");
  if (!std::regex_match(org, kPart) || !std::regex_match(name, kPart))
    return fail("characters other than letters, digits, '-', '_' and '.'");
  if (id.repo.find("--") != std::string::npos || id.repo.find("..") != std::string::npos)
    return fail("'--' or '..' in the id");
  for (const std::string& p : {org, name})
    if (p.front() == '-' || p.front() == '.' || p.back() == '-' || p.back() == '.')
      return fail("a part that starts or ends with '-' or '.'");
  if (id.repo.size() > 96) return fail("more than 96 characters");
  return id;
}

HubOptions HubOptions::from_env() {
  HubOptions o;
  std::string home = env("HF_HOME");
  if (home.empty()) {
    std::string xdg = env("XDG_CACHE_HOME");
    home = (xdg.empty() ? expand_user("~/.cache") : xdg) + "/huggingface";
  }
  home = expand_user(home);
  o.cache_dir = env("HF_HUB_CACHE");
  if (o.cache_dir.empty()) o.cache_dir = env("HUGGINGFACE_HUB_CACHE");
  if (o.cache_dir.empty()) o.cache_dir = home + "/hub";
  o.cache_dir = expand_user(o.cache_dir);
  o.endpoint = env("HF_ENDPOINT");
  if (o.endpoint.empty()) o.endpoint = "https://huggingface.co";
  while (!o.endpoint.empty() && o.endpoint.back() == '/') o.endpoint.pop_back();
  o.token = trim(env("HF_TOKEN"));
  if (o.token.empty()) {
    // `huggingface-cli login` stores the token here; huggingface_hub reads it when HF_TOKEN is unset.
    std::string path = env("HF_TOKEN_PATH");
    if (path.empty()) path = home + "/token";
    std::ifstream f(expand_user(path));
    if (f) o.token = trim(std::string(std::istreambuf_iterator<char>(f), {}));
  }
  o.offline = truthy(env("HF_HUB_OFFLINE"));
  return o;
}

std::string repo_cache_dir(const std::string& cache_dir, const std::string& repo) {
  std::string folder = "models--" + repo;
  for (size_t i; (i = folder.find('/')) != std::string::npos;) folder.replace(i, 1, "--");
  return (fs::path(cache_dir) / folder).string();
}

}  // namespace hfx::hub
