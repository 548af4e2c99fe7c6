// Release manifest and releases: JSON round trip, hub snapshot identity, checksum mismatches, the
// verify gate of `release`, rollback, and crash consistency (a child process aborted after each step of
// `release`, and killed at random moments).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "hfx/artifact/manifest.h"
#include "hfx/core/error.h"
#include "hfx/io/safetensors.h"

namespace fs = std::filesystem;
namespace V = hfx::artifact;

namespace {

fs::path temp_root() { return fs::path(testing::TempDir()) / ("hfx_manifest_" + std::to_string(::getpid())); }
struct RemoveTempRoot : testing::Environment {
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(temp_root(), ec);
  }
};
[[maybe_unused]] testing::Environment* const kRemoveTempRoot =
    testing::AddGlobalTestEnvironment(new RemoveTempRoot);

fs::path temp_dir(const std::string& name) {
  fs::path p = temp_root() / name;
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

void write(const fs::path& p, const std::string& s) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << s;
}

// A fake export folder with a manifest; `tag` makes its content (and hash) distinct.
fs::path make_export(const fs::path& root, const std::string& tag, const std::string& status = "passed",
                     size_t weight_bytes = 1000) {
  fs::path out = root / ("out_" + tag);
  fs::remove_all(out);
  write(out / "config.json", R"({"model_type": "llama", "_name_or_path": "org/tiny-)" + tag + "\"}");
  write(out / "tokenizer.json", "{}");
  write(out / "onnx/model.onnx", "graph-" + tag);
  write(out / "onnx/model.onnx_data", std::string(weight_bytes, static_cast<char>('a' + tag.size())) + tag);
  hfx::ShapeContract c;
  c["input_ids"] = {{"batch_size", 1, 64}, {"sequence_length", 1, 4096}};
  V::Manifest m = V::build_manifest(out.string(), out.string(), "onnx", {{"format", "onnx"}, {"opset", 18}},
                                    {{"model", c}});
  m.write(out.string());
  if (status != "unverified")
    V::record_verify_result(out.string(), status == "passed", {{"summary", status}});
  return out;
}

// The invariant after any crash: `current` (if present) names a complete, passed, intact release; every
// visible release folder is complete; history.json parses.
void expect_consistent(const fs::path& rel) {
  if (auto cur = V::current_release(rel.string())) {
    fs::path d = rel / *cur;
    ASSERT_TRUE(fs::is_directory(d)) << *cur;
    V::Manifest m = V::Manifest::read(d.string());
    EXPECT_EQ(m.verify.status, "passed");
    EXPECT_FALSE(m.verify_checksums(d.string()).has_value()) << *cur;
  }
  for (const auto& e : fs::directory_iterator(rel)) {
    const std::string n = e.path().filename().string();
    if (n[0] == '.' || n == "current" || n == "current.tmp" || n == "history.json") continue;
    ASSERT_TRUE(e.is_directory()) << n;
    V::Manifest m = V::Manifest::read(e.path().string());
    EXPECT_FALSE(m.verify_checksums(e.path().string()).has_value()) << "half-copied release visible: " << n;
  }
  EXPECT_NO_THROW(V::read_history(rel.string()));
}

void expect_consistent_current_only(const fs::path& rel) {
  auto cur = V::current_release(rel.string());
  ASSERT_TRUE(cur.has_value());
  V::Manifest m = V::Manifest::read((rel / *cur).string());
  EXPECT_FALSE(m.verify_checksums((rel / *cur).string()).has_value());
}

}  // namespace

TEST(Manifest, RoundTripAndChecksums) {
  fs::path root = temp_dir("roundtrip");
  fs::path out = make_export(root, "a", "unverified");
  V::Manifest m = V::Manifest::read(out.string());
  EXPECT_EQ(m.model_id, "org/tiny-a");
  EXPECT_EQ(m.verify.status, "unverified");
  EXPECT_EQ(m.format, "onnx");
  EXPECT_EQ(m.files.size(), 4u);
  ASSERT_NE(m.find("onnx/model.onnx_data"), nullptr);
  EXPECT_EQ(m.find("onnx/model.onnx_data")->role, "weights");
  EXPECT_EQ(m.find("tokenizer.json")->role, "tokenizer");
  EXPECT_EQ(m.find("onnx/model.onnx")->sha256, hfx::io::sha256_file((out / "onnx/model.onnx").string()));
  EXPECT_EQ(m.contracts.at("model").at("input_ids").at(1).max, 4096);
  EXPECT_TRUE(m.dependencies.count("protobuf"));
  EXPECT_TRUE(m.dependencies.count("nlohmann_json"));
#ifdef HFX_HAVE_ORT
  EXPECT_TRUE(m.dependencies.count("onnxruntime"));
#endif
  EXPECT_EQ(V::Manifest::from_json(m.to_json()).to_json(), m.to_json());
  EXPECT_FALSE(m.verify_checksums(out.string()).has_value());

  // one byte changed, same size
  std::string w = hfx::io::read_file((out / "onnx/model.onnx_data").string());
  w[10] ^= 1;
  write(out / "onnx/model.onnx_data", w);
  auto mm = m.verify_checksums(out.string());
  ASSERT_TRUE(mm.has_value());
  EXPECT_EQ(mm->path, "onnx/model.onnx_data");
  EXPECT_EQ(mm->reason, "sha256");
  EXPECT_EQ(mm->expected_sha256, m.find("onnx/model.onnx_data")->sha256);
  EXPECT_NE(mm->actual_sha256, mm->expected_sha256);
  EXPECT_NE(mm->message().find("onnx/model.onnx_data"), std::string::npos);
  // truncated
  write(out / "onnx/model.onnx_data", w.substr(0, 10));
  EXPECT_EQ(m.verify_checksums(out.string())->reason, "size");
  // removed: reported once the files before it (manifest order) are intact again
  fs::remove(out / "tokenizer.json");
  EXPECT_EQ(m.verify_checksums(out.string())->path, "onnx/model.onnx_data");
  w[10] ^= 1;
  write(out / "onnx/model.onnx_data", w);
  EXPECT_EQ(m.verify_checksums(out.string())->reason, "missing");
  EXPECT_EQ(m.verify_checksums(out.string())->path, "tokenizer.json");
}

TEST(Manifest, HubSnapshotIdentity) {
  fs::path root = temp_dir("hub");
  fs::path snap =
      root / "hub/models--meta-llama--Llama-3.2-1B/snapshots/4e20de362430cd3b72f300e6b0f18e50e7166e08";
  fs::create_directories(snap);
  auto [id, rev] = V::model_identity(snap.string());
  EXPECT_EQ(id, "meta-llama/Llama-3.2-1B");
  EXPECT_EQ(rev, "4e20de362430cd3b72f300e6b0f18e50e7166e08");
  auto [id2, rev2] = V::model_identity((root / "hub").string());
  EXPECT_EQ(id2, "hub");
  EXPECT_EQ(rev2, "");
}

TEST(Manifest, OnnxHeaderIsReadWithoutTheGraph) {
  // ModelProto: ir_version = 8 (field 1), producer_name "hfx" (2), graph (7) skipped, opset_import (8) {"" :
  // 18}
  std::string b;
  b += '\x08';
  b += '\x08';
  b += '\x12';
  b += '\x03';
  b += "hfx";
  b += '\x3a';
  b += '\x02';
  b += "zz";
  b += '\x42';
  b += '\x04';
  b += '\x0a';
  b += '\x00';
  b += '\x10';
  b += '\x12';
  fs::path p = temp_dir("onnx") / "m.onnx";
  write(p, b);
  auto j = V::onnx_model_info(p.string());
  EXPECT_EQ(j["ir_version"], 8);
  EXPECT_EQ(j["producer_name"], "hfx");
  EXPECT_EQ(j["opsets"][""], 18);
}

TEST(Manifest, MalformedIsRejectedWithTheField) {
  fs::path root = temp_dir("bad");
  write(
      root / "manifest.json",
      R"({"schema_version": 1, "model": {"id": "x"}, "files": [{"path": "a", "size": 1, "sha256": "zz"}]})");
  try {
    V::Manifest::read(root.string());
    FAIL();
  } catch (const hfx::Error& e) {
    EXPECT_NE(std::string(e.what()).find("sha256"), std::string::npos) << e.what();
  }
  write(root / "manifest.json", R"({"schema_version": 99, "model": {"id": "x"}, "files": []})");
  EXPECT_THROW(V::Manifest::read(root.string()), hfx::Error);
  EXPECT_THROW(V::Manifest::read((root / "missing").string()), hfx::Error);
}

TEST(Release, OnlyVerifiedReleasesBecomeCurrentAndRollbackReturns) {
  fs::path root = temp_dir("release");
  fs::path rel = root / "releases";
  std::string a = V::release(make_export(root, "a").string(), rel.string());
  EXPECT_EQ(V::current_release(rel.string()), a);
  EXPECT_EQ(a.rfind("org--tiny-a-", 0), 0u) << a;
  std::string b = V::release(make_export(root, "b").string(), rel.string());
  EXPECT_NE(a, b);
  EXPECT_EQ(V::current_release(rel.string()), b);

  // failed verify, unverified, and a checksum mismatch: refused, current stays on b
  for (const std::string status : {"failed", "unverified"}) {
    try {
      V::release(make_export(root, "c", status).string(), rel.string());
      ADD_FAILURE() << status;
    } catch (const hfx::Error& e) {
      EXPECT_NE(std::string(e.what()).find("expected verify status 'passed'"), std::string::npos) << e.what();
    }
    EXPECT_EQ(V::current_release(rel.string()), b);
  }
  fs::path d = make_export(root, "d");
  write(d / "onnx/model.onnx", "tampered");
  try {
    V::release(d.string(), rel.string());
    ADD_FAILURE();
  } catch (const hfx::Error& e) {
    EXPECT_NE(std::string(e.what()).find("onnx/model.onnx"), std::string::npos) << e.what();
  }
  EXPECT_EQ(V::current_release(rel.string()), b);
  expect_consistent(rel);

  auto h = V::read_history(rel.string());
  ASSERT_EQ(h.size(), 2u);
  EXPECT_EQ(h[1].previous, a);

  EXPECT_EQ(V::rollback(rel.string()), a);
  EXPECT_EQ(V::current_release(rel.string()), a);
  EXPECT_THROW(V::rollback(rel.string()), hfx::Error);  // nothing verified before a
  EXPECT_EQ(V::current_release(rel.string()), a);

  // rollback skips releases that were rolled back from (b, e) and a damaged one (f)
  std::string e = V::release(make_export(root, "e").string(), rel.string());
  EXPECT_EQ(V::current_release(rel.string()), e);
  EXPECT_EQ(V::rollback(rel.string()), a);
  std::string f = V::release(make_export(root, "f").string(), rel.string());
  std::string g = V::release(make_export(root, "g").string(), rel.string());
  EXPECT_EQ(V::current_release(rel.string()), g);
  write(rel / f / "tokenizer.json", "damaged");
  EXPECT_EQ(V::rollback(rel.string()), a);
  write(rel / a / "tokenizer.json", "damaged");
  V::release(make_export(root, "h").string(), rel.string());
  try {
    V::rollback(rel.string());
    ADD_FAILURE();
  } catch (const hfx::Error& err) {
    EXPECT_NE(std::string(err.what()).find(f), std::string::npos) << err.what();  // names what it skipped
  }
  expect_consistent_current_only(rel);
}

TEST(Release, CrashAfterEveryStepLeavesAConsistentFolder) {
  fs::path root = temp_dir("crash");
  fs::path rel = root / "releases";
  std::string first = V::release(make_export(root, "first").string(), rel.string());
  const char* steps[] = {"checked", "copied", "renamed", "linked", "switched", "history"};
  int i = 0;
  for (const char* step : steps) {
    fs::path out = make_export(root, "s" + std::to_string(i++));
    const auto before = V::current_release(rel.string());
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      rlimit no_core{0, 0};
      setrlimit(RLIMIT_CORE, &no_core);
      setenv("HFX_TEST_CRASH_AFTER", step, 1);
      try {
        V::release(out.string(), rel.string());
      } catch (...) {
      }
      _exit(0);  // not reached: the hook aborts
    }
    int st = 0;
    waitpid(pid, &st, 0);
    ASSERT_TRUE(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT) << step;
    expect_consistent(rel);
    const auto after = V::current_release(rel.string());
    const bool switched = std::string(step) == "switched" || std::string(step) == "history";
    if (!switched)
      EXPECT_EQ(after, before) << step;
    else
      EXPECT_NE(after, before) << step;
  }
  // the next release cleans up leftovers and works; rollback goes back
  std::string last = V::release(make_export(root, "last").string(), rel.string());
  EXPECT_EQ(V::current_release(rel.string()), last);
  for (const auto& e : fs::directory_iterator(rel)) {
    const std::string n = e.path().filename().string();
    EXPECT_TRUE(n.rfind(".tmp-", 0) != 0 && n != "current.tmp") << n;
  }
  std::string back = V::rollback(rel.string());
  EXPECT_NE(back, last);
  expect_consistent(rel);
  (void)first;
}

TEST(Release, KilledAtRandomMomentsLeavesAConsistentFolder) {
  fs::path root = temp_dir("kill");
  fs::path rel = root / "releases";
  V::release(make_export(root, "base").string(), rel.string());
  std::mt19937 rng(1234);
  for (int i = 0; i < 12; i++) {
    fs::path out =
        make_export(root, "k" + std::to_string(i), "passed", 4 << 20);  // big enough to be caught mid-copy
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      try {
        V::release(out.string(), rel.string());
      } catch (...) {
        _exit(1);
      }
      _exit(0);
    }
    usleep(std::uniform_int_distribution<int>(0, 40000)(rng));
    kill(pid, SIGKILL);
    int st = 0;
    waitpid(pid, &st, 0);
    expect_consistent(rel);
    ASSERT_TRUE(V::current_release(rel.string()).has_value());
  }
}
