// Model-id parsing and the environment huggingface_hub reads (hfx/io/hub.h), without a network: the
// repo-id rules of huggingface_hub's validate_repo_id (namespace required), revisions with '/', and the
// cache-root precedence HF_HUB_CACHE > HUGGINGFACE_HUB_CACHE > HF_HOME/hub > XDG_CACHE_HOME/huggingface/hub.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <optional>
#include <string>

#include "hfx/io/hub.h"

namespace {

using hfx::hub::HubOptions;
using hfx::hub::parse_model_id;

TEST(HubModelId, ParsesRepoAndRevision) {
  auto id = parse_model_id("HuggingFaceTB/SmolLM2-135M");
  ASSERT_TRUE(id);
  EXPECT_EQ(id->repo, "HuggingFaceTB/SmolLM2-135M");
  EXPECT_EQ(id->revision, "main");
  id = parse_model_id("org/name.v2_x@refs/pr/1");
  ASSERT_TRUE(id);
  EXPECT_EQ(id->repo, "org/name.v2_x");
  EXPECT_EQ(id->revision, "refs/pr/1");
  EXPECT_EQ(hfx::hub::repo_cache_dir("/c", "org/name"), "/c/models--org--name");
}

TEST(HubModelId, RejectsMalformedIdsWithTheReason) {
  const std::map<std::string, std::string> bad = {{"a/b/c", "more than one '/'"},
                                                  {"name", "no '/'"},
                                                  {"/name", "an empty ORG or NAME"},
                                                  {"org/", "an empty ORG or NAME"},
                                                  {"org/na me", "characters other"},
                                                  {"org/a--b", "'--' or '..'"},
                                                  {"org/a..b", "'--' or '..'"},
                                                  {"org/-a", "starts or ends"},
                                                  {"org/name@", "an empty revision"},
                                                  {"org/name@a b", "whitespace"},
                                                  {"org/" + std::string(100, 'x'), "more than 96"}};
  for (const auto& [text, why] : bad) {
    std::string got;
    EXPECT_FALSE(parse_model_id(text, &got)) << text;
    EXPECT_NE(got.find(why), std::string::npos) << text << ": " << got;
  }
  EXPECT_TRUE(hfx::hub::looks_like_model_id("a/b/c"));
  EXPECT_FALSE(hfx::hub::looks_like_model_id("./a/b"));
  EXPECT_FALSE(hfx::hub::looks_like_model_id("/abs/path"));
  EXPECT_FALSE(hfx::hub::looks_like_model_id("folder"));
}

// Sets environment variables for one scope and restores them after.
class Env {
 public:
  explicit Env(std::map<std::string, std::optional<std::string>> vars) {
    for (const auto& [k, v] : vars) {
      const char* old = std::getenv(k.c_str());
      saved_[k] = old ? std::optional<std::string>(old) : std::nullopt;
      if (v)
        ::setenv(k.c_str(), v->c_str(), 1);
      else
        ::unsetenv(k.c_str());
    }
  }
  ~Env() {
    for (const auto& [k, v] : saved_) {
      if (v)
        ::setenv(k.c_str(), v->c_str(), 1);
      else
        ::unsetenv(k.c_str());
    }
  }

 private:
  std::map<std::string, std::optional<std::string>> saved_;
};

TEST(HubModelId, EnvironmentAsHuggingfaceHubReadsIt) {
  const std::optional<std::string> unset;
  {
    Env e({{"HF_HUB_CACHE", unset},
           {"HUGGINGFACE_HUB_CACHE", unset},
           {"HF_HOME", unset},
           {"XDG_CACHE_HOME", unset},
           {"HOME", "/home/u"},
           {"HF_ENDPOINT", unset},
           {"HF_TOKEN", unset},
           {"HF_TOKEN_PATH", "/nonexistent"},
           {"HF_HUB_OFFLINE", unset}});
    HubOptions o = HubOptions::from_env();
    EXPECT_EQ(o.cache_dir, "/home/u/.cache/huggingface/hub");
    EXPECT_EQ(o.endpoint, "https://huggingface.co");
    EXPECT_EQ(o.token, "");
    EXPECT_FALSE(o.offline);
  }
  {
    Env e({{"HF_HUB_CACHE", unset},
           {"HUGGINGFACE_HUB_CACHE", unset},
           {"HF_HOME", unset},
           {"XDG_CACHE_HOME", "/x"},
           {"HF_ENDPOINT", "http://127.0.0.1:1/"},
           {"HF_TOKEN", " hf_abc\n"},
           {"HF_HUB_OFFLINE", "yes"}});
    HubOptions o = HubOptions::from_env();
    EXPECT_EQ(o.cache_dir, "/x/huggingface/hub");
    EXPECT_EQ(o.endpoint, "http://127.0.0.1:1");
    EXPECT_EQ(o.token, "hf_abc");
    EXPECT_TRUE(o.offline);
  }
  {
    Env e({{"HF_HUB_CACHE", unset},
           {"HUGGINGFACE_HUB_CACHE", "/legacy"},
           {"HF_HOME", "/h"},
           {"HF_HUB_OFFLINE", "0"}});
    HubOptions o = HubOptions::from_env();
    EXPECT_EQ(o.cache_dir, "/legacy");
    EXPECT_FALSE(o.offline);
  }
  {
    Env e({{"HF_HUB_CACHE", "/new"}, {"HUGGINGFACE_HUB_CACHE", "/legacy"}, {"HF_HOME", "/h"}});
    EXPECT_EQ(HubOptions::from_env().cache_dir, "/new");
  }
  {
    Env e({{"HF_HUB_CACHE", unset}, {"HUGGINGFACE_HUB_CACHE", unset}, {"HF_HOME", "/h"}});
    EXPECT_EQ(HubOptions::from_env().cache_dir, "/h/hub");
  }
}

TEST(HubModelId, SideFilesAreWhatAnExportReads) {
  const std::vector<std::string> siblings = {".gitattributes",    "README.md",
                                             "config.json",       "generation_config.json",
                                             "tokenizer.json",    "merges.txt",
                                             "vocab.json",        "pytorch_model.bin",
                                             "model.safetensors", "1_Pooling/config.json",
                                             "onnx/model.onnx",   "chat_template.jinja",
                                             "tokenizer.model"};
  EXPECT_EQ(hfx::hub::select_side_files(siblings),
            (std::vector<std::string>{"config.json", "generation_config.json", "tokenizer.json", "merges.txt",
                                      "vocab.json", "1_Pooling/config.json", "chat_template.jinja",
                                      "tokenizer.model"}));
}

}  // namespace
