// Model ids for every command, offline mode and caches laid out by hand: HF_HUB_OFFLINE=1 with a cache
// filled by an earlier run (no request reaches the in-suite hub, which counts them) or built here file by
// file as huggingface_hub lays it out; the same ORG/NAME for export, generate, verify --reference, verify
// OUT (the manifest's source), inspect and embed, each compared with the same command on the fixture
// folder; malformed ids (exit 2); the progress bar on a terminal and --quiet.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>

#include <fmt/format.h>

#include "support/hub_fixture.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace hfx::test {
namespace {

class HubCommands : public HubFixture {};

// Runs hfx twice: with the model id and with the fixture folder; returns both outputs (rc 0 asserted).
std::pair<std::string, std::string> same_output(
    const HubFixture* f, const std::string& with_id, const std::string& with_dir,
    const std::function<std::string(const std::string&, const std::string&)>& hfx) {
  HubProc a = hub_sh("(" + hfx(with_id, "HF_HUB_OFFLINE=1") + " 2>/dev/null)");  // stdout only
  HubProc b = hub_sh("(" + hfx(with_dir, "") + " 2>/dev/null)");
  EXPECT_EQ(a.rc, 0) << with_id << "\n" << a.out;
  EXPECT_EQ(b.rc, 0) << with_dir << "\n" << b.out;
  return {a.out, b.out};
}

TEST_F(HubCommands, OfflineExportFromAFilledCacheMakesNoRequest) {
  // Offline with nothing cached: a clear error naming the repo, the revision and what to do.
  HubProc p =
      hub_sh(hfx("export org/tiny-llama --format onnx -o " + (work_ / "none").string(), "HF_HUB_OFFLINE=1"));
  EXPECT_EQ(p.rc, 1) << p.out;
  EXPECT_NE(p.out.find("[hub] expected org/tiny-llama@main in the Hugging Face cache"), std::string::npos)
      << p.out;
  EXPECT_NE(p.out.find("without HF_HUB_OFFLINE=1"), std::string::npos) << p.out;
  EXPECT_FALSE(fs::exists(work_ / "none"));
  EXPECT_TRUE(requests().empty());
  p = hub_sh(hfx("inspect org/tiny-llama --json"));  // fills the cache
  ASSERT_EQ(p.rc, 0) << p.out;
  clear_requests();
  p = hub_sh(hfx("export org/tiny-llama --format onnx -o " + (work_ / "out").string(), "HF_HUB_OFFLINE=1"));
  ASSERT_EQ(p.rc, 0) << p.out;
  EXPECT_TRUE(requests().empty()) << requests().size() << " requests";
  EXPECT_EQ(json::parse(hub_slurp(work_ / "out" / "manifest.json"))["model"]["revision"], kMain);
}

// A cache written file by file as huggingface_hub writes it (blobs named by sha256 / git sha1, relative
// symlinks, refs/main), under HF_HOME only (HF_HUB_CACHE unset: $HF_HOME/hub), read back offline.
TEST_F(HubCommands, HandMadeCacheUnderHfHomeIsReadByLayoutAlone) {
  const std::string commit = "c0ffeec0ffeec0ffeec0ffeec0ffeec0ffeec0ff";
  const fs::path repo = home_ / "hub" / "models--handmade--tiny-llama";
  fs::create_directories(repo / "blobs");
  fs::create_directories(repo / "refs");
  for (const auto& e : fs::directory_iterator(commit_dir(kMain))) {
    if (!e.is_regular_file()) continue;
    const std::string name = e.path().filename().string();
    const std::string etag = name.ends_with(".safetensors") ? file_sha256(e.path()) : git_blob_sha1(e.path());
    fs::copy_file(e.path(), repo / "blobs" / etag);
    fs::create_directories(repo / "snapshots" / commit);
    fs::create_symlink(fs::path("../../blobs") / etag, repo / "snapshots" / commit / name);
  }
  std::ofstream(repo / "refs" / "main") << commit;
  const std::string env = fmt::format(
      "env -u HF_TOKEN -u HF_HUB_CACHE -u HUGGINGFACE_HUB_CACHE HF_HOME={} HF_HUB_OFFLINE=1 "
      "HF_ENDPOINT=http://127.0.0.1:{} {}",
      home_.string(), port_, HFX_CLI);
  HubProc p = hub_sh(env + " export handmade/tiny-llama --format onnx -o " + (work_ / "out").string());
  ASSERT_EQ(p.rc, 0) << p.out;
  json man = json::parse(hub_slurp(work_ / "out" / "manifest.json"));
  EXPECT_EQ(man["model"]["id"], "handmade/tiny-llama");
  EXPECT_EQ(man["model"]["revision"], commit);
  p = hub_sh(env + " inspect handmade/tiny-llama@" + commit + " --json");
  EXPECT_EQ(p.rc, 0) << p.out;
  EXPECT_TRUE(requests().empty());
}

TEST_F(HubCommands, TheSameIdWorksForEveryCommand) {
  const fs::path llama = commit_dir(kMain), bert = commit_dir(kBert);
  ASSERT_EQ(hub_sh(hfx("inspect org/tiny-llama --json")).rc, 0);
  ASSERT_EQ(hub_sh(hfx("inspect org/tiny-bert --json")).rc, 0);
  clear_requests();  // the cache is filled: from here on every command with an id runs offline
  auto run = [this](const std::string& args, const std::string& extra) { return hfx(args, extra); };
  // inspect: the same inventory but for the path it was read from.
  auto [ia, ib] =
      same_output(this, "inspect org/tiny-llama --json", "inspect " + llama.string() + " --json", run);
  json ja = json::parse(ia), jb = json::parse(ib);
  EXPECT_EQ(ja["id"], "org/tiny-llama");
  EXPECT_EQ(ja["revision"], kMain);
  for (const char* k : {"path", "id", "revision"}) ja.erase(k), jb.erase(k);
  EXPECT_EQ(ja, jb);
  auto gen = same_output(
      this, "generate org/tiny-llama --prompt 'hello world' --max-new-tokens 6 --greedy --json",
      "generate " + llama.string() + " --prompt 'hello world' --max-new-tokens 6 --greedy --json", run);
  EXPECT_EQ(json::parse(gen.first)["rows"], json::parse(gen.second)["rows"]);
  auto emb = same_output(this, "embed org/tiny-bert --text 'hello world' --json",
                         "embed " + bert.string() + " --text 'hello world' --json", run);
  json ea = json::parse(emb.first), eb = json::parse(emb.second);
  EXPECT_EQ(ea["embeddings"], eb["embeddings"]);
  EXPECT_EQ(ea["settings_from"], eb["settings_from"]);
  // A file in a subfolder links two levels further up, as huggingface_hub's relative symlinks do.
  const fs::path pooling = repo_dir("org/tiny-bert") / "snapshots" / kBert / "1_Pooling" / "config.json";
  EXPECT_EQ(fs::read_symlink(pooling),
            fs::path("../../../blobs") / git_blob_sha1(bert / "1_Pooling" / "config.json"));
  // export then verify --reference with the id, offline.
  const std::string out = (work_ / "out").string();
  HubProc p = hub_sh(hfx("export org/tiny-llama --format onnx -o " + out, "HF_HUB_OFFLINE=1"));
  ASSERT_EQ(p.rc, 0) << p.out;
  p = hub_sh(
      hfx("verify " + out + " --reference org/tiny-llama --tokens 4 --warm-runs 1", "HF_HUB_OFFLINE=1"));
  EXPECT_EQ(p.rc, 0) << p.out;
  EXPECT_NE(p.out.find(fmt::format("snapshots/{}", kMain)), std::string::npos) << p.out;
  // manifest --source with the id records the id and the commit.
  p = hub_sh(hfx("manifest " + out + " --source org/tiny-llama", "HF_HUB_OFFLINE=1"));
  ASSERT_EQ(p.rc, 0) << p.out;
  json man = json::parse(hub_slurp(work_ / "out" / "manifest.json"));
  EXPECT_EQ(man["model"]["id"], "org/tiny-llama");
  EXPECT_EQ(man["model"]["revision"], kMain);
  EXPECT_TRUE(requests().empty());
}

// `hfx verify OUT` without --reference: the manifest's source is a snapshot; when that folder is gone, the
// id and commit the manifest records are resolved again (here: downloaded again from the hub).
TEST_F(HubCommands, VerifyOutResolvesTheManifestSourceAgain) {
  const std::string out = (work_ / "out").string();
  HubProc p = hub_sh(hfx("export org/tiny-llama --format onnx -o " + out));
  ASSERT_EQ(p.rc, 0) << p.out;
  fs::remove_all(cache_);
  clear_requests();
  p = hub_sh(hfx("verify " + out + " --tokens 4 --warm-runs 1"));
  EXPECT_EQ(p.rc, 0) << p.out;
  EXPECT_TRUE(fs::is_symlink(repo_dir("org/tiny-llama") / "snapshots" / kMain / "model.safetensors"));
  // The commit was asked for, not main: no api call needed to learn it.
  bool by_commit = false;
  for (const auto& r : requests())
    by_commit |= r["url"].get<std::string>().find(std::string("/revision/") + kMain) != std::string::npos;
  EXPECT_TRUE(by_commit);
}

TEST_F(HubCommands, MalformedIdsAreUsageErrors) {
  const fs::path out = work_ / "out";
  struct Case {
    std::string arg, message;
  } cases[] = {
      {"a/b/c",
       "[hub] expected a model id ORG/NAME[@REVISION] or an existing folder, got 'a/b/c' (more than one '/'"},
      {"''", "[hub] expected an existing folder or a model id ORG/NAME[@REVISION], got ''"},
      {"org/name@", "got 'org/name@' (an empty revision after '@')"},
      {"org/bad--name", "got 'org/bad--name' ('--' or '..' in the id)"},
      {"no-such-folder", "got 'no-such-folder' (no such folder)"}};
  for (const auto& c : cases) {
    HubProc p = hub_sh(hfx("export " + c.arg + " --format onnx -o " + out.string()));
    EXPECT_EQ(p.rc, 2) << c.arg << "\n" << p.out;
    EXPECT_NE(p.out.find(c.message), std::string::npos) << c.arg << "\n" << p.out;
    EXPECT_FALSE(fs::exists(out));
  }
  EXPECT_TRUE(requests().empty());
  // A folder that exists wins over an id of the same spelling.
  fs::create_directories(work_ / "org");
  fs::create_symlink(commit_dir(kMain), work_ / "org" / "tiny-llama");
  HubProc p = hub_sh("cd " + work_.string() + " && " + hfx("inspect org/tiny-llama --json"));
  EXPECT_EQ(p.rc, 0) << p.out;
  EXPECT_TRUE(requests().empty());
}

// The progress bar draws on a terminal (script(1) gives hfx one) and not with --quiet or into a pipe.
TEST_F(HubCommands, ProgressBarOnATerminalOnly) {
  auto tty = [&](const std::string& cmd) { return hub_sh("script -qec \"" + cmd + "\" /dev/null"); };
  HubProc p = tty(hfx("export org/tiny-llama --format onnx -o " + (work_ / "a").string()));
  ASSERT_EQ(p.rc, 0) << p.out;
  EXPECT_NE(p.out.find("download org/tiny-llama ["), std::string::npos) << p.out;
  EXPECT_NE(p.out.find("export a ["), std::string::npos) << p.out;
  // The last frame: load, 4 stages (capture, fixes, lower, write) of each of the 3 ONNX components, side
  // files, manifest (which stages draw between depends on the 10 redraws a second).
  EXPECT_NE(p.out.find("] 100% 15/15 steps  done"), std::string::npos) << p.out;
  p = tty(hfx("verify " + (work_ / "a").string() + " --tokens 4 --warm-runs 1"));
  EXPECT_NE(p.out.find("verify a ["), std::string::npos) << p.out;
  fs::remove_all(cache_);
  p = tty(hfx("--quiet export org/tiny-llama --format onnx -o " + (work_ / "b").string()));
  ASSERT_EQ(p.rc, 0) << p.out;
  EXPECT_EQ(p.out.find(" ["), std::string::npos) << p.out;
  fs::remove_all(cache_);
  p = tty(hfx("export org/tiny-llama --format onnx -o " + (work_ / "c").string() + " --quiet"));
  ASSERT_EQ(p.rc, 0) << p.out;
  EXPECT_EQ(p.out.find(" ["), std::string::npos) << p.out;
  fs::remove_all(cache_);
  p = hub_sh(hfx("export org/tiny-llama --format onnx -o " + (work_ / "d").string()));
  ASSERT_EQ(p.rc, 0) << p.out;
  EXPECT_EQ(p.out.find(" ["), std::string::npos) << p.out;
  // Generation: a token bar on stderr, stdout holding only the JSON.
  p = tty(hfx("generate org/tiny-llama --prompt a --prompt b --max-new-tokens 20 --ignore-eos --json"));
  ASSERT_EQ(p.rc, 0) << p.out;
  EXPECT_NE(p.out.find("generate [########################] 100% 40/40 tokens"), std::string::npos) << p.out;
}

}  // namespace
}  // namespace hfx::test
