// The artifact layer as a library call: export_folder writes the folder `hfx export` writes, byte for byte
// (the CLI is a thin shell over it), and one export's contract is the same in every format: a
// --max-sequence bound (or the model's max positions, whichever is smaller) reaches the ONNX graphs, the
// .pt2 programs and the .pte's static cache alike, as each format's manifest records it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "hfx/artifact/export_folder.h"
#include "hfx/artifact/manifest.h"
#include "hfx/export/exporter.h"
#include "hfx/models/model.h"
#include "support/shell.h"

namespace fs = std::filesystem;

namespace hfx {
namespace {

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// Every file under `dir`, relative path → bytes.
std::map<std::string, std::string> folder_bytes(const fs::path& dir) {
  std::map<std::string, std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) files[fs::relative(e.path(), dir).generic_string()] = slurp(e.path());
  return files;
}

struct ExportFolder : ::testing::Test {
  static inline fs::path dir;
  static void SetUpTestSuite() {
    dir = fs::temp_directory_path() / ("hfx_export_folder_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    auto r = testsupport::sh(std::string(HFX_CLI) + " create-tiny llama -o " + (dir / "ckpt").string());
    ASSERT_EQ(r.rc, 0) << r.out;
    // A second llama whose position table (40) is shorter than the --max-sequence bound used below.
    r = testsupport::sh(std::string(HFX_CLI) + " create-tiny llama -o " + (dir / "ckpt40").string());
    ASSERT_EQ(r.rc, 0) << r.out;
    nlohmann::json c = nlohmann::json::parse(slurp(dir / "ckpt40" / "config.json"));
    c["max_position_embeddings"] = 40;
    std::ofstream(dir / "ckpt40" / "config.json") << c.dump(2);
  }
  static void TearDownTestSuite() { fs::remove_all(dir); }

  // `hfx export CKPT --format FORMAT FLAGS -o OUT` with the manifest's time pinned.
  static void cli_export(const fs::path& ckpt, const std::string& format, const std::string& flags,
                         const fs::path& out) {
    auto r = testsupport::sh("SOURCE_DATE_EPOCH=1700000000 " + std::string(HFX_CLI) + " --quiet export " +
                             ckpt.string() + " --format " + format + " " + flags + " -o " + out.string());
    ASSERT_EQ(r.rc, 0) << r.out;
  }
};

TEST_F(ExportFolder, LibraryCallWritesTheCliFolderByteForByte) {
  ::setenv("SOURCE_DATE_EPOCH", "1700000000", 1);
  for (const std::string format : {"onnx", "executorch", "dynamo"}) {
    SCOPED_TRACE(format);
    const fs::path cli = dir / ("cli-" + format), lib = dir / ("lib-" + format);
    cli_export(dir / "ckpt", format, "", cli);
    auto model = load_model((dir / "ckpt").string());
    std::unique_ptr<ExportConfig> cfg = make_config(format);
    std::vector<std::string> stages;
    artifact::ExportFolderResult r =
        artifact::export_folder(*model, (dir / "ckpt").string(), lib.string(), *cfg,
                                [&](const std::string& s, const ExportStep* step) {
                                  if (!step) stages.push_back(s);
                                });
    EXPECT_EQ(stages, (std::vector<std::string>{"plan", "side files", "manifest"}));
    EXPECT_EQ(r.out_dir, fs::absolute(lib).string());
    const auto a = folder_bytes(cli), b = folder_bytes(lib);
    ASSERT_FALSE(a.empty());
    std::vector<std::string> names_a, names_b;
    for (const auto& [k, v] : a) names_a.push_back(k);
    for (const auto& [k, v] : b) names_b.push_back(k);
    ASSERT_EQ(names_a, names_b);
    for (const auto& [name, bytes] : a) EXPECT_TRUE(bytes == b.at(name)) << name << " differs";
    EXPECT_TRUE(a.count("manifest.json") && a.count("export_config.json") && a.count("tokenizer.json"));
    // What the call returns is what it wrote.
    EXPECT_EQ(r.manifest.to_json(), artifact::Manifest::read(lib.string()).to_json());
    EXPECT_FALSE(artifact::Manifest::read(lib.string()).verify_checksums(lib.string()).has_value());
  }
  ::unsetenv("SOURCE_DATE_EPOCH");
}

// The sequence axis of `input` in `component`'s contract: its [min, max].
std::pair<int64_t, int64_t> seq_range(const artifact::Manifest& m, const std::string& component,
                                      const std::string& input) {
  const auto& axes = m.contracts.at(component).at(input);
  return {axes.at(1).min, axes.at(1).max};
}

// input → [[symbol, min, max] per axis], for a readable comparison.
nlohmann::json contract_json(const ShapeContract& c) {
  nlohmann::json j;
  for (const auto& [input, axes] : c)
    for (const AxisContract& a : axes) j[input].push_back({a.symbol, a.min, a.max});
  return j;
}

void expect_one_contract(const fs::path& onnx, const fs::path& pte, const fs::path& pt2, int64_t bound) {
  const artifact::Manifest mo = artifact::Manifest::read(onnx.string()),
                           me = artifact::Manifest::read(pte.string()),
                           md = artifact::Manifest::read(pt2.string());
  // ONNX and .pt2 write the same programs: their contracts are equal, component by component.
  for (const char* c : {"prefill", "decode"}) {
    ASSERT_TRUE(mo.contracts.count(c) && md.contracts.count(c)) << c;
    EXPECT_EQ(contract_json(mo.contracts.at(c)), contract_json(md.contracts.at(c))) << c;
  }
  EXPECT_EQ(seq_range(mo, "prefill", "input_ids"), (std::pair<int64_t, int64_t>{1, bound}));
  EXPECT_EQ(mo.contracts.at("decode").at("past_key_values.0.key").at(2).max, bound - 1);
  // The .pte: new tokens up to the same bound, and a static cache of exactly that length.
  EXPECT_EQ(seq_range(me, "forward", "tokens"), (std::pair<int64_t, int64_t>{1, bound}));
  EXPECT_EQ(me.contracts.at("forward").at("kv_cache.0.k_cache").at(2).max, bound);
}

TEST_F(ExportFolder, OneExportGivesTheSameContractInEveryFormat) {
  // Before the contract was resolved once, the .pte ignored --max-sequence and kept 128 positions.
  for (const std::string format : {"onnx", "executorch", "dynamo"})
    cli_export(dir / "ckpt", format, "--max-sequence 48", dir / ("seq48-" + format));
  expect_one_contract(dir / "seq48-onnx", dir / "seq48-executorch", dir / "seq48-dynamo", 48);
  // The model's max positions (40) bind before the flag (48), in every format.
  for (const std::string format : {"onnx", "executorch", "dynamo"})
    cli_export(dir / "ckpt40", format, "--max-sequence 48", dir / ("pos40-" + format));
  expect_one_contract(dir / "pos40-onnx", dir / "pos40-executorch", dir / "pos40-dynamo", 40);
}

TEST_F(ExportFolder, MaxSeqLenIsRefusedOutsideExecutorch) {
  auto r = testsupport::sh(std::string(HFX_CLI) + " --quiet export " + (dir / "ckpt").string() +
                           " --format onnx --max-seq-len 40 -o " + (dir / "refused").string());
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.out.find("expected --max-seq-len with --format executorch"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(dir / "refused"));
}

}  // namespace
}  // namespace hfx
