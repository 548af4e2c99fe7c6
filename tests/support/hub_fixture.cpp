// tests/support/hub_fixture.cpp — fixture repos made by the hfx binary itself (create-tiny; the sharded
// repo is split here with the safetensors writer), the Node hub started once per suite, and a fresh cache
// per test.
#include "support/hub_fixture.h"

#include <openssl/evp.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "hfx/io/safetensors.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace hfx::test {

fs::path HubFixture::root_;
int HubFixture::port_ = 0;
pid_t HubFixture::pid_ = -1;
int HubFixture::stdin_fd_ = -1;

HubProc hub_sh(const std::string& cmd) {
  HubProc r;
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  int st = ::pclose(p);
  r.rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

std::string hub_slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

namespace {

std::string digest_hex(const char* algo, const std::string& prefix, const std::string& data) {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  EVP_DigestInit_ex(ctx, EVP_get_digestbyname(algo), nullptr);
  EVP_DigestUpdate(ctx, prefix.data(), prefix.size());
  EVP_DigestUpdate(ctx, data.data(), data.size());
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned len = 0;
  EVP_DigestFinal_ex(ctx, md, &len);
  EVP_MD_CTX_free(ctx);
  std::string hex;
  for (unsigned i = 0; i < len; i++) hex += fmt::format("{:02x}", md[i]);
  return hex;
}

void make_tiny(const std::string& args, const fs::path& out) {
  // fmt, not operator+ on a temporary: g++ 12 -O2 warns (-Wstringop-overflow) on that chain here.
  HubProc p = hub_sh(fmt::format("{} create-tiny {} -o {}", HFX_CLI, args, out.string()));
  ASSERT_EQ(p.rc, 0) << p.out;
}

// The same checkpoint with its weights in two shards and an index, as transformers' save_pretrained writes.
void make_sharded(const fs::path& from, const fs::path& to) {
  fs::create_directories(to);
  for (const auto& e : fs::directory_iterator(from))
    if (e.path().filename() != "model.safetensors")
      fs::copy(e.path(), to / e.path().filename(), fs::copy_options::recursive);
  auto f = io::SafetensorsFile::open((from / "model.safetensors").string());
  std::vector<std::pair<std::string, Tensor>> shard[2];
  json index = {{"metadata", {{"total_size", 0}}}, {"weight_map", json::object()}};
  const auto& infos = f->tensors();
  uint64_t total = 0;
  for (size_t i = 0; i < infos.size(); i++) {
    const int s = i < infos.size() / 2 ? 0 : 1;
    shard[s].emplace_back(infos[i].name, f->get(infos[i].name));
    index["weight_map"][infos[i].name] = fmt::format("model-0000{}-of-00002.safetensors", s + 1);
    total += infos[i].end - infos[i].begin;
  }
  index["metadata"]["total_size"] = total;
  for (int s = 0; s < 2; s++)
    io::write_safetensors((to / fmt::format("model-0000{}-of-00002.safetensors", s + 1)).string(), shard[s]);
  io::write_file_atomic((to / "model.safetensors.index.json").string(), index.dump(2));
}

}  // namespace

std::string file_sha256(const fs::path& p) { return digest_hex("SHA256", "", hub_slurp(p)); }

std::string git_blob_sha1(const fs::path& p) {
  std::string data = hub_slurp(p);
  return digest_hex("SHA1", "blob " + std::to_string(data.size()) + std::string(1, '\0'), data);
}

fs::path HubFixture::commit_dir(const std::string& commit) { return root_ / "commits" / commit; }

void HubFixture::SetUpTestSuite() {
  root_ = fs::temp_directory_path() /
          fmt::format("hfx_hub_{}_{}", ::testing::UnitTest::GetInstance()->current_test_suite()->name(),
                      ::getpid());
  fs::remove_all(root_);
  fs::create_directories(root_ / "commits");
  make_tiny("llama --seed 0", commit_dir(kMain));
  make_tiny("llama --seed 1", commit_dir(kV1));
  make_sharded(commit_dir(kMain), commit_dir(kSharded));
  make_tiny("bert --sentence-transformers", commit_dir(kBert));
  auto repo = [](std::map<std::string, std::string> refs, std::vector<std::string> commits) {
    json j = {{"refs", refs}, {"commits", json::object()}};
    for (const auto& c : commits) j["commits"][c] = commit_dir(c).string();
    return j;
  };
  json repos = {{"org/tiny-llama", repo({{"main", kMain}, {"v1", kV1}}, {kMain, kV1})},
                {"org/tiny-llama-sharded", repo({{"main", kSharded}}, {kSharded})},
                {"org/tiny-bert", repo({{"main", kBert}}, {kBert})},
                {"org/gated-llama", repo({{"main", kMain}}, {kMain})}};
  repos["org/gated-llama"]["token"] = kToken;
  io::write_file_atomic((root_ / "repos.json").string(), repos.dump(2));

  int out[2], in[2];
  ASSERT_EQ(::pipe(out), 0);
  ASSERT_EQ(::pipe(in), 0);
  pid_ = ::fork();
  if (pid_ == 0) {
    ::dup2(in[0], 0);
    ::dup2(out[1], 1);
    ::close(in[1]);
    ::close(out[0]);
    const std::string script = std::string(HFX_SOURCE_DIR) + "/tests/integration/hub_server.mjs";
    ::execlp("node", "node", script.c_str(), root_.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(in[0]);
  ::close(out[1]);
  stdin_fd_ = in[1];
  std::string line;
  pollfd pfd{out[0], POLLIN, 0};
  char c;
  while (line.find('\n') == std::string::npos && ::poll(&pfd, 1, 60000) > 0 && ::read(out[0], &c, 1) == 1)
    line += c;
  ::close(out[0]);
  ASSERT_EQ(line.rfind("PORT ", 0), 0u)
      << "the in-suite hub (node tests/integration/hub_server.mjs) did not start: '" << line
      << "' (node is installed by scripts/setup.sh)";
  port_ = std::stoi(line.substr(5));
}

void HubFixture::TearDownTestSuite() {
  if (stdin_fd_ >= 0) ::close(stdin_fd_);
  if (pid_ > 0) {
    ::kill(pid_, SIGTERM);
    ::waitpid(pid_, nullptr, 0);
  }
  stdin_fd_ = pid_ = -1;
  fs::remove_all(root_);
}

void HubFixture::SetUp() {
  ASSERT_GT(port_, 0) << "no in-suite hub";
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  work_ = root_ / "work" / info->name();
  fs::remove_all(work_);
  cache_ = work_ / "hub-cache";
  home_ = work_ / "hf-home";
  fs::create_directories(work_);
  fs::remove(root_ / "controls.json");
  clear_requests();
}

void HubFixture::clear_requests() const { std::ofstream(root_ / "requests.log", std::ios::trunc); }

std::string HubFixture::hfx(const std::string& args, const std::string& extra) const {
  return fmt::format(
      "env -u HF_TOKEN -u HF_HUB_OFFLINE -u HF_TOKEN_PATH -u HUGGINGFACE_HUB_CACHE HF_HOME={} "
      "HF_HUB_CACHE={} "
      "HF_ENDPOINT=http://127.0.0.1:{} {} {} {}",
      home_.string(), cache_.string(), port_, extra, HFX_CLI, args);
}

std::vector<json> HubFixture::requests() const {
  std::vector<json> out;
  std::istringstream in(hub_slurp(root_ / "requests.log"));
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(json::parse(line));
  return out;
}

void HubFixture::set_controls(const json& controls) const {
  io::write_file_atomic((root_ / "controls.json").string(), controls.dump());
}

fs::path HubFixture::repo_dir(const std::string& repo) const {
  std::string folder = "models--" + repo;
  folder.replace(folder.find('/'), 1, "--");
  return cache_ / folder;
}

}  // namespace hfx::test
