// Every architecture that is not decoder-only, each head it declares, end to end through the CLI:
// create-tiny → export to ONNX, ExecuTorch and .pt2 (a format on the export-skip list: refused), each twice
// (the same bytes every time, manifest timestamps aside) → `hfx verify` with the checkpoint as reference
// passes (the recorded generation calls replayed in ONNX Runtime and in the .pte executor, the .pt2 read
// back). Bad input: a head the architecture does not support, a checkpoint missing a component's weights — a
// `[model] expected …` error, non-zero exit, no output folder.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>

#include <nlohmann/json.hpp>

#include "hfx/export/registry.h"
#include "hfx/io/safetensors.h"
#include "hfx/models/model.h"
#include "support/shell.h"
#include "support/verdict.h"

namespace fs = std::filesystem;
using namespace hfx;

namespace {

struct Case {
  std::string arch, head;
};

std::vector<Case> cases() {
  std::vector<Case> out;
  for (const Architecture* a : all_architectures())
    for (const auto& [head, cls] : a->heads)
      if (head != "causal_lm") out.push_back({a->model_type, head});
  return out;
}

using hfx::testsupport::Proc;
using hfx::testsupport::sh;

std::string cli() { return HFX_CLI; }

std::map<std::string, std::string> files_of(const fs::path& dir) {
  std::map<std::string, std::string> m;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    std::string rel = fs::relative(e.path(), dir).generic_string();
    if (rel == "manifest.json") continue;  // holds the export time
    m[rel] = io::read_file(e.path().string());
  }
  return m;
}

class Structures : public testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    root_ = fs::path(testing::TempDir()) /
            ("hfx_struct_" + GetParam().arch + "_" + GetParam().head + "_" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_);
    Proc p = sh(cli() + " create-tiny " + GetParam().arch + " --head " + GetParam().head + " -o " +
                (root_ / "ckpt").string());
    ASSERT_EQ(p.rc, 0) << p.out;
  }
  void TearDown() override { fs::remove_all(root_); }
  fs::path root_;
};

}  // namespace

TEST_P(Structures, EveryFormatIsDeterministicAndVerifies) {
  for (const char* format : {"onnx", "executorch", "dynamo"}) {
    SCOPED_TRACE(format);
    fs::path a = root_ / (std::string(format) + "_a"), b = root_ / (std::string(format) + "_b");
    const auto& skips = export_skip_registry();
    if (std::any_of(skips.begin(), skips.end(), [&](const ExportSkipEntry& e) {
          return (e.backend == format || e.backend == "*") && e.model_type == GetParam().arch;
        })) {  // on the export-skip list (whisper: executorch, dynamo): refused, nothing written
      Proc p =
          sh(cli() + " export " + (root_ / "ckpt").string() + " --format " + format + " -o " + a.string());
      EXPECT_NE(p.rc, 0) << p.out;
      EXPECT_NE(p.out.find("export-skip list"), std::string::npos) << p.out;
      EXPECT_FALSE(fs::exists(a)) << a;
      continue;
    }
    for (const fs::path& out : {a, b}) {
      Proc p =
          sh(cli() + " export " + (root_ / "ckpt").string() + " --format " + format + " -o " + out.string());
      ASSERT_EQ(p.rc, 0) << p.out;
    }
    auto fa = files_of(a), fb = files_of(b);
    ASSERT_EQ(fa.size(), fb.size());
    for (const auto& [name, bytes] : fa)
      EXPECT_TRUE(fb.count(name) && fb[name] == bytes) << name << " differs between two exports";
    Proc v = sh(cli() + " verify " + a.string() + " --reference " + (root_ / "ckpt").string());
    EXPECT_TRUE(testsupport::verified_or_judge_off(v.rc, v.out)) << v.out;
  }
}

TEST_P(Structures, UnsupportedHeadAndMissingWeightsFailWithoutOutput) {
  const fs::path ckpt = root_ / "ckpt";
  // A class the architecture does not declare.
  auto cfg = nlohmann::json::parse(io::read_file((ckpt / "config.json").string()));
  cfg["architectures"] = {"SomethingForQuestionAnswering"};
  fs::create_directories(root_ / "badhead");
  for (const auto& e : fs::directory_iterator(ckpt))
    fs::copy(e.path(), root_ / "badhead" / e.path().filename(), fs::copy_options::recursive);
  io::write_file_atomic((root_ / "badhead" / "config.json").string(), cfg.dump(2));
  Proc p = sh(cli() + " export " + (root_ / "badhead").string() + " --format onnx -o " +
              (root_ / "out1").string());
  EXPECT_NE(p.rc, 0) << p.out;
  EXPECT_NE(p.out.find("[model] expected one of the classes"), std::string::npos) << p.out;
  EXPECT_NE(p.out.find("got 'SomethingForQuestionAnswering'"), std::string::npos) << p.out;
  EXPECT_FALSE(fs::exists(root_ / "out1"));

  // The checkpoint without the weights of a component: the decoder of an encoder-decoder; for an
  // encoder, its last weight (a head or last-layer tensor).
  auto w = io::WeightStore::open_dir(ckpt.string());
  std::vector<std::string> names = w->names();
  std::sort(names.begin(), names.end());
  auto is_decoder = [](const std::string& n) {
    return n.rfind("decoder.", 0) == 0 || n.find(".decoder.") != std::string::npos;
  };
  bool seq2seq = std::any_of(names.begin(), names.end(), is_decoder) &&
                 architecture(GetParam().arch).heads.front().first == "seq2seq_lm";
  std::vector<std::pair<std::string, Tensor>> kept;
  for (const auto& n : names)
    if (seq2seq ? !is_decoder(n) : n != names.back()) kept.emplace_back(n, w->get(n));
  fs::create_directories(root_ / "noweights");
  for (const auto& e : fs::directory_iterator(ckpt))
    if (e.path().extension() != ".safetensors")
      fs::copy(e.path(), root_ / "noweights" / e.path().filename(), fs::copy_options::recursive);
  io::write_safetensors((root_ / "noweights" / "model.safetensors").string(), kept);
  p = sh(cli() + " export " + (root_ / "noweights").string() + " --format onnx -o " +
         (root_ / "out2").string());
  EXPECT_NE(p.rc, 0) << p.out;
  EXPECT_NE(p.out.find("[model] expected tensor '"), std::string::npos) << p.out;
  EXPECT_FALSE(fs::exists(root_ / "out2"));
}

INSTANTIATE_TEST_SUITE_P(AllHeads, Structures, testing::ValuesIn(cases()),
                         [](const testing::TestParamInfo<Case>& i) {
                           std::string n = i.param.arch + "_" + i.param.head;
                           for (char& c : n)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return n;
                         });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(Structures);
