// Model ids through the in-suite hub (tests/support/hub_fixture.h): what `hfx export ORG/NAME` downloads
// and how it lays the cache out, checked against the huggingface_hub layout rules by reading the files
// back here (refs/<rev> = commit hash, snapshots/<commit>/<file> = relative symlink to ../../blobs/<etag>,
// etag = sha256 for LFS files and git blob sha1 otherwise, both computed here with OpenSSL); resume after
// a dropped connection (a Range request), a wrong checksum (rejected, cache untouched), 401 and 404
// messages, revision pinning and parallel shard downloads. The server logs every request it answers.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>

#include <fmt/format.h>

#include "support/hub_fixture.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace hfx::test {
namespace {

class HubDownload : public HubFixture {
 protected:
  // The cache entry for `file` at `commit`: a relative symlink into blobs/ named by the expected etag,
  // whose bytes equal the fixture's.
  void expect_cached(const std::string& repo, const std::string& commit, const std::string& file) {
    const fs::path link = repo_dir(repo) / "snapshots" / commit / file;
    ASSERT_TRUE(fs::is_symlink(link)) << link;
    const fs::path src = commit_dir(commit) / file;
    const bool lfs = file.ends_with(".safetensors");
    const std::string etag = lfs ? file_sha256(src) : git_blob_sha1(src);
    fs::path expect = fs::path("../..");
    for (std::ptrdiff_t i = 0; i < std::count(file.begin(), file.end(), '/'); i++) expect /= "..";
    EXPECT_EQ(fs::read_symlink(link), expect / "blobs" / etag) << file;
    EXPECT_EQ(hub_slurp(repo_dir(repo) / "blobs" / etag), hub_slurp(src)) << file;
  }
  size_t count(const std::vector<json>& log, const std::string& method, const std::string& needle) {
    size_t n = 0;
    for (const auto& r : log)
      n += r["method"] == method && r["url"].get<std::string>().find(needle) != std::string::npos;
    return n;
  }
};

TEST_F(HubDownload, CleanDownloadThenExport) {
  HubProc p = hub_sh(hfx("export org/tiny-llama --format onnx -o " + (work_ / "out").string()));
  ASSERT_EQ(p.rc, 0) << p.out;
  EXPECT_NE(p.out.find("downloaded"), std::string::npos) << p.out;
  EXPECT_EQ(hub_slurp(repo_dir("org/tiny-llama") / "refs" / "main"), kMain);
  for (const char* f : {"config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json",
                        "model.safetensors"})
    if (fs::exists(commit_dir(kMain) / f)) expect_cached("org/tiny-llama", kMain, f);
  // Only what an export needs; the api call once, the revision pinned to the commit for every file.
  auto log = requests();
  EXPECT_EQ(count(log, "GET", "/api/models/org/tiny-llama/revision/main"), 1u);
  EXPECT_EQ(count(log, "HEAD", "/resolve/main/"), 0u);
  EXPECT_GE(count(log, "HEAD", std::string("/org/tiny-llama/resolve/") + kMain + "/config.json"), 1u);
  EXPECT_EQ(count(log, "GET", "/lfs-blobs/"), 1u);
  EXPECT_FALSE(fs::exists(repo_dir("org/tiny-llama") / "blobs" /
                          (file_sha256(commit_dir(kMain) / "model.safetensors") + ".incomplete")));
  json man = json::parse(hub_slurp(work_ / "out" / "manifest.json"));
  EXPECT_EQ(man["model"]["id"], "org/tiny-llama");
  EXPECT_EQ(man["model"]["revision"], kMain);
  EXPECT_TRUE(fs::exists(work_ / "out" / "onnx" / "model.onnx"));
  // A second export finds everything in the cache: one api call (main may have moved), no file request.
  clear_requests();
  p = hub_sh(hfx("export org/tiny-llama --format onnx -o " + (work_ / "out2").string()));
  ASSERT_EQ(p.rc, 0) << p.out;
  log = requests();
  EXPECT_EQ(log.size(), 1u) << log.size();
  EXPECT_EQ(count(log, "GET", "/api/models/"), 1u);
}

TEST_F(HubDownload, ResumesAfterTheConnectionDropsMidFile) {
  set_controls({{"drop_once", {"org/tiny-llama/model.safetensors"}}});
  HubProc p = hub_sh(hfx("export org/tiny-llama --format onnx -o " + (work_ / "out").string()));
  ASSERT_EQ(p.rc, 0) << p.out;
  const uint64_t size = fs::file_size(commit_dir(kMain) / "model.safetensors");
  std::vector<json> blob_gets;
  for (const auto& r : requests())
    if (r["method"] == "GET" && r["url"].get<std::string>().find("/lfs-blobs/") != std::string::npos)
      blob_gets.push_back(r);
  ASSERT_EQ(blob_gets.size(), 2u);
  EXPECT_EQ(blob_gets[0]["range"], "");
  // The second request asks for the rest: the half the server sent before it dropped the connection.
  EXPECT_EQ(blob_gets[1]["range"], fmt::format("bytes={}-", size / 2)) << blob_gets[1].dump();
  expect_cached("org/tiny-llama", kMain, "model.safetensors");
}

TEST_F(HubDownload, ResumesAnIncompleteFileLeftByAnEarlierRun) {
  const fs::path src = commit_dir(kMain) / "model.safetensors";
  const std::string sha = file_sha256(src), bytes = hub_slurp(src);
  const fs::path incomplete = repo_dir("org/tiny-llama") / "blobs" / (sha + ".incomplete");
  fs::create_directories(incomplete.parent_path());
  std::ofstream(incomplete, std::ios::binary) << bytes.substr(0, 1000);
  HubProc p = hub_sh(hfx("inspect org/tiny-llama --json"));
  ASSERT_EQ(p.rc, 0) << p.out;
  size_t ranged = 0;
  for (const auto& r : requests()) ranged += r["range"] == "bytes=1000-";
  EXPECT_EQ(ranged, 1u);
  expect_cached("org/tiny-llama", kMain, "model.safetensors");
  EXPECT_FALSE(fs::exists(incomplete));
}

TEST_F(HubDownload, WrongChecksumIsRejectedAndTheCacheUntouched) {
  set_controls({{"corrupt", {"org/tiny-llama/model.safetensors"}}});
  const fs::path out = work_ / "out";
  HubProc p = hub_sh(hfx("export org/tiny-llama --format onnx -o " + out.string()));
  EXPECT_EQ(p.rc, 1) << p.out;
  const std::string sha = file_sha256(commit_dir(kMain) / "model.safetensors");
  EXPECT_NE(p.out.find("[hub] expected sha256 " + sha + " for model.safetensors of org/tiny-llama@" + kMain),
            std::string::npos)
      << p.out;
  EXPECT_NE(p.out.find("run the command again"), std::string::npos) << p.out;
  const fs::path repo = repo_dir("org/tiny-llama");
  EXPECT_FALSE(fs::exists(repo / "blobs" / sha));
  EXPECT_FALSE(fs::exists(repo / "blobs" / (sha + ".incomplete")));
  EXPECT_FALSE(fs::exists(fs::symlink_status(repo / "snapshots" / kMain / "model.safetensors")));
  EXPECT_FALSE(fs::exists(repo / "refs" / "main"));  // refs are written last, after every file
  EXPECT_FALSE(fs::exists(out));
  // The next run (the server is fine again) completes the same cache.
  set_controls(json::object());
  p = hub_sh(hfx("export org/tiny-llama --format onnx -o " + out.string()));
  ASSERT_EQ(p.rc, 0) << p.out;
  expect_cached("org/tiny-llama", kMain, "model.safetensors");
}

TEST_F(HubDownload, GatedRepoWithoutTokenSays401AndHfToken) {
  const fs::path out = work_ / "out";
  HubProc p = hub_sh(hfx("export org/gated-llama --format onnx -o " + out.string()));
  EXPECT_EQ(p.rc, 1) << p.out;
  EXPECT_NE(p.out.find("[hub] expected access to org/gated-llama@main, got 401 Unauthorized"),
            std::string::npos)
      << p.out;
  EXPECT_NE(p.out.find("set HF_TOKEN"), std::string::npos) << p.out;
  EXPECT_FALSE(fs::exists(out));
  // With the token: the Authorization header reaches the Hub and the export works.
  p = hub_sh(
      hfx("export org/gated-llama --format onnx -o " + out.string(), std::string("HF_TOKEN=") + kToken));
  ASSERT_EQ(p.rc, 0) << p.out;
  size_t authed = 0;
  for (const auto& r : requests()) authed += r["auth"] == std::string("Bearer ") + kToken;
  EXPECT_GE(authed, 2u);
  // The token file huggingface-cli login writes works as well.
  fs::create_directories(home_);
  std::ofstream(home_ / "token") << kToken << "\n";
  p = hub_sh(hfx("inspect org/gated-llama --json", "HF_HUB_CACHE=" + (work_ / "cache2").string()));
  EXPECT_EQ(p.rc, 0) << p.out;
}

TEST_F(HubDownload, UnknownRepoAndRevisionSay404AndWhatToCheck) {
  const fs::path out = work_ / "out";
  HubProc p = hub_sh(hfx("export org/no-such-model --format onnx -o " + out.string()));
  EXPECT_EQ(p.rc, 1) << p.out;
  EXPECT_NE(p.out.find("[hub] expected a model repo org/no-such-model on http://127.0.0.1:"),
            std::string::npos)
      << p.out;
  EXPECT_NE(p.out.find("got 404 RepoNotFound"), std::string::npos) << p.out;
  EXPECT_NE(p.out.find("check the id"), std::string::npos) << p.out;
  p = hub_sh(hfx("export org/tiny-llama@no-such-branch --format onnx -o " + out.string()));
  EXPECT_EQ(p.rc, 1) << p.out;
  EXPECT_NE(p.out.find("[hub] expected revision 'no-such-branch' of org/tiny-llama"), std::string::npos)
      << p.out;
  EXPECT_NE(p.out.find("got 404 RevisionNotFound"), std::string::npos) << p.out;
  EXPECT_FALSE(fs::exists(out));
  EXPECT_FALSE(fs::exists(repo_dir("org/tiny-llama") / "refs"));
}

TEST_F(HubDownload, RevisionIsPinnedToItsCommit) {
  HubProc p = hub_sh(hfx("export org/tiny-llama@v1 --format onnx -o " + (work_ / "v1").string()));
  ASSERT_EQ(p.rc, 0) << p.out;
  EXPECT_EQ(hub_slurp(repo_dir("org/tiny-llama") / "refs" / "v1"), kV1);
  EXPECT_FALSE(fs::exists(repo_dir("org/tiny-llama") / "refs" / "main"));
  expect_cached("org/tiny-llama", kV1, "model.safetensors");
  for (const auto& r : requests())
    if (r["method"] == "HEAD") {
      EXPECT_NE(r["url"].get<std::string>().find(kV1), std::string::npos) << r.dump();
    }
  EXPECT_EQ(json::parse(hub_slurp(work_ / "v1" / "manifest.json"))["model"]["revision"], kV1);
  // The commit hash itself, with a complete snapshot, makes no request at all.
  clear_requests();
  p = hub_sh(hfx(std::string("inspect org/tiny-llama@") + kV1 + " --json"));
  ASSERT_EQ(p.rc, 0) << p.out;
  EXPECT_TRUE(requests().empty());
  json inv = json::parse(p.out);
  EXPECT_EQ(inv["id"], "org/tiny-llama");
  EXPECT_EQ(inv["revision"], kV1);
  // main is another commit with other weights.
  p = hub_sh(hfx("inspect org/tiny-llama --json"));
  ASSERT_EQ(p.rc, 0) << p.out;
  EXPECT_NE(file_sha256(commit_dir(kV1) / "model.safetensors"),
            file_sha256(commit_dir(kMain) / "model.safetensors"));
  expect_cached("org/tiny-llama", kMain, "model.safetensors");
}

TEST_F(HubDownload, ShardsFromTheIndexDownloadInParallel) {
  // Each blob answer is held 1.5 s: one download at a time would space the two shard requests by >= 1.5 s.
  set_controls({{"blob_delay_ms", 1500}});
  HubProc p = hub_sh(hfx("export org/tiny-llama-sharded --format onnx -o " + (work_ / "out").string()));
  ASSERT_EQ(p.rc, 0) << p.out;
  for (const char* f : {"model.safetensors.index.json", "model-00001-of-00002.safetensors",
                        "model-00002-of-00002.safetensors"})
    expect_cached("org/tiny-llama-sharded", kSharded, f);
  std::vector<int64_t> t;
  for (const auto& r : requests())
    if (r["method"] == "GET" && r["url"].get<std::string>().find("/lfs-blobs/") != std::string::npos)
      t.push_back(r["t"].get<int64_t>());
  ASSERT_EQ(t.size(), 2u);
  EXPECT_LT(std::abs(t[1] - t[0]), 1500) << "the second shard was requested after the first one finished";
}

}  // namespace
}  // namespace hfx::test
