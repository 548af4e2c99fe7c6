// Safe to embed: exports of different formats running at once on threads of one process write the
// same bytes as the same exports run one after the other. Every export's mutable state (its patch
// table, the ExecuTorch static-cache context) lives in its ExportContext, so nothing leaks between
// them. This binary (hfx_embed_tests) is small so that the `tsan` preset can build it alone:
//   cmake --preset tsan && cmake --build --preset tsan && ctest --preset tsan
#include <gtest/gtest.h>

#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "hfx/export/exporter.h"
#include "hfx/models/model.h"
#include "hfx/models/tiny.h"

namespace fs = std::filesystem;
using namespace hfx;

namespace {

struct Job {
  std::string name, format;
  bool external_data = false;
};

const std::vector<Job> kJobs = {{"onnx", "onnx", false},
                                {"onnx_external", "onnx", true},
                                {"executorch", "executorch", false},
                                {"dynamo", "dynamo", false}};

// Every file under `dir`, by relative path, with its bytes.
std::map<std::string, std::string> read_tree(const fs::path& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    std::ifstream f(e.path(), std::ios::binary);
    std::ostringstream ss;
    ss << f.rdbuf();
    out[fs::relative(e.path(), dir).generic_string()] = ss.str();
  }
  return out;
}

// One export as `hfx export` runs it (its own model object: the dynamo writer releases the mapped
// weights it has streamed, so a model is not shared between exports).
void run_job(const std::string& ckpt, const Job& job, const fs::path& out) {
  auto model = load_model(ckpt);
  std::unique_ptr<ExportConfig> cfg = make_config(job.format);
  nlohmann::json j = cfg->to_json();
  if (job.external_data) j["external_data"] = true;
  if (job.format == "executorch") j["max_seq_len"] = 32;
  j["max_sequence"] = 64;
  cfg->from_json(j);
  CaptureOptions opts = contract_options(*model, *cfg);
  make_exporter(job.format)->export_for_generation(*model, opts, {{"*", cfg.get()}}, out.string());
}

struct Dir {
  fs::path path = fs::temp_directory_path() / ("hfx_embed_" + std::to_string(::getpid()));
  Dir() {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~Dir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

}  // namespace

TEST(Embed, ConcurrentExportsOfThreeFormatsWriteTheSequentialBytes) {
  Dir dir;
  const std::string ckpt = (dir.path / "ckpt").string();
  create_tiny("llama", ckpt);

  std::map<std::string, std::map<std::string, std::string>> sequential;
  for (const Job& job : kJobs) {
    run_job(ckpt, job, dir.path / "seq" / job.name);
    sequential[job.name] = read_tree(dir.path / "seq" / job.name);
    ASSERT_FALSE(sequential[job.name].empty()) << job.name << ": expected files, got none";
  }
  // A decoder's programs always share onnx/model.onnx_data: external_data changes nothing for them
  // (ExportFlags shows the flag moving a single program's weights out).
  EXPECT_EQ(sequential["onnx"], sequential["onnx_external"]);

  // Two rounds, all four exports at once each time; an exception in a thread is reported, not lost.
  for (int round = 0; round < 2; round++) {
    std::vector<std::thread> threads;
    std::vector<std::string> errors(kJobs.size());
    const fs::path base = dir.path / ("concurrent" + std::to_string(round));
    for (size_t i = 0; i < kJobs.size(); i++) {
      threads.emplace_back([&, i] {
        try {
          run_job(ckpt, kJobs[i], base / kJobs[i].name);
        } catch (const std::exception& e) {
          errors[i] = e.what();
        }
      });
    }
    for (auto& t : threads) t.join();
    for (size_t i = 0; i < kJobs.size(); i++) {
      SCOPED_TRACE(kJobs[i].name + ", round " + std::to_string(round));
      ASSERT_EQ(errors[i], "");
      auto got = read_tree(base / kJobs[i].name);
      ASSERT_EQ(got.size(), sequential[kJobs[i].name].size());
      for (const auto& [path, bytes] : sequential[kJobs[i].name]) {
        ASSERT_TRUE(got.count(path)) << "expected " << path << " in the concurrent export, got none";
        EXPECT_TRUE(got[path] == bytes) << path << ": expected the sequential bytes (" << bytes.size()
                                        << " B), got different ones (" << got[path].size() << " B)";
      }
    }
  }
}
