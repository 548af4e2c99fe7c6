// tests/support/hub_fixture.h — the in-suite Hugging Face Hub (tests/integration/hub_server.mjs, Node's http
// module on 127.0.0.1, port 0) with fixture repos made by `hfx create-tiny`, and the environment every hub
// test runs hfx under: HF_ENDPOINT at that server, a fresh HF_HOME / HF_HUB_CACHE per test, HF_TOKEN and
// HF_HUB_OFFLINE unset unless a test sets them. No hub test reaches beyond 127.0.0.1.
#pragma once
#include <gtest/gtest.h>
#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace hfx::test {

struct HubProc {
  int rc = -1;
  std::string out;  ///< stdout and stderr together
};
/// Runs a shell command, stderr merged into stdout.
HubProc hub_sh(const std::string& cmd);
std::string hub_slurp(const std::filesystem::path& p);
/// sha256 / git-blob sha1 of a file's bytes, computed here with OpenSSL (independently of hfx).
std::string file_sha256(const std::filesystem::path& p);
std::string git_blob_sha1(const std::filesystem::path& p);

/// Fixture repos: org/tiny-llama (main = kMain, v1 = kV1: two seeds), org/tiny-llama-sharded (two
/// shards and an index), org/tiny-bert (sentence-transformers), org/gated-llama (token kToken).
class HubFixture : public ::testing::Test {
 public:
  static constexpr const char* kMain = "b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0";
  static constexpr const char* kV1 = "a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1";
  static constexpr const char* kSharded = "5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a";
  static constexpr const char* kBert = "e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0";
  static constexpr const char* kToken = "hf_in_suite_test_token";

 protected:
  static void SetUpTestSuite();
  static void TearDownTestSuite();
  void SetUp() override;

  /// `env ... hfx ARGS` with this test's cache; `extra` is prepended to the environment (e.g.
  /// "HF_HUB_OFFLINE=1 HF_TOKEN=...").
  std::string hfx(const std::string& args, const std::string& extra = "") const;
  /// The requests the server has answered since this test started (one JSON object each).
  std::vector<nlohmann::json> requests() const;
  void clear_requests() const;
  void set_controls(const nlohmann::json& controls) const;
  /// <cache>/models--org--NAME
  std::filesystem::path repo_dir(const std::string& repo) const;
  /// The fixture folder a commit serves.
  static std::filesystem::path commit_dir(const std::string& commit);

  static std::filesystem::path root_;
  static int port_;
  static pid_t pid_;
  static int stdin_fd_;
  std::filesystem::path work_, cache_, home_;
};

}  // namespace hfx::test
