// Reproducible artifacts in one process: the same model exported twice by the library, in every format
// (ONNX, ExecuTorch .pte, dynamo .pt2; ONNX's lowering alone is also checked in onnx_lowering_test.cpp),
// gives byte-identical folders, and no artifact holds a path of the source tree: a shape guard's place
// is written relative to the source root (src/core/symbolic.cpp). The model is a Llama with dynamic NTK
// rope exported for sequences past its original context, so that its export records a guard whose place
// reaches the artifacts (ONNX metadata, the .pt2's runtime assertion). Across two build trees:
// scripts/repro_check.sh (a CI step of scripts/test.sh).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>

#include "hfx/export/exporter.h"
#include "hfx/io/safetensors.h"
#include "hfx/models/tiny.h"

namespace fs = std::filesystem;
using namespace hfx;

namespace {

std::unique_ptr<CausalLM> dynamic_rope_llama() {
  nlohmann::json cfg = tiny_model_config("llama", TinyOptions{});
  cfg["rope_scaling"] = {{"type", "dynamic"}, {"factor", 2.0}};
  cfg["max_position_embeddings"] = 64;
  ModelConfig mc = architecture("llama").parse_config(cfg);
  return make_causal_lm(cfg, io::WeightStore::from_tensors(tiny_weights(mc, DType::F32, 0)));
}

// Every file of an export folder by its relative path.
std::map<std::string, std::string> files_of(const fs::path& dir) {
  std::map<std::string, std::string> m;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file())
      m[fs::relative(e.path(), dir).generic_string()] = io::read_file(e.path().string());
  return m;
}

}  // namespace

TEST(Reproducible, EveryFormatWrittenTwiceInOneProcessIsByteIdenticalAndPathFree) {
  auto m = dynamic_rope_llama();
  const fs::path root = fs::temp_directory_path() / ("hfx_repro_" + std::to_string(::getpid()));
  const std::string source_dir = HFX_SOURCE_DIR;
  for (const std::string& format : exporter_formats()) {
    // GGUF captures no program (no guard to place) and refuses dynamic rope, which llama.cpp does not run;
    // scripts/repro_check.sh compares its files across runs and trees.
    if (format == "gguf") continue;
    SCOPED_TRACE(format);
    auto ex = make_exporter(format);
    auto cfg = make_config(format);
    CaptureOptions o;
    o.kind = CallKind::Prefill;
    o.sequence = Dim{"sequence_length", 1, 256};  // past the original 64 positions: a rope guard
    std::map<std::string, std::string> runs[2];
    std::string place;
    for (int i = 0; i < 2; i++) {
      const fs::path out = root / (format + std::to_string(i));
      fs::remove_all(out);
      fs::create_directories(out);
      ExportResult r = ex->export_model(*m, o, *cfg, out.string());
      ASSERT_FALSE(r.programs.empty());
      // ExecuTorch caps the tokens dim at its static cache length (64 here), so no question is left to
      // guard there; the other formats keep the 256 range and record the rope's guard.
      if (format == "executorch") {
        EXPECT_TRUE(r.programs[0].guards.empty());
      } else {
        ASSERT_FALSE(r.programs[0].guards.empty()) << "expected the dynamic rope to record a guard";
        place = r.programs[0].guards[0].where;
        EXPECT_EQ(place.rfind("src/models/", 0), 0u) << place;
      }
      runs[i] = files_of(out);
    }
    ASSERT_FALSE(runs[0].empty());
    ASSERT_EQ(runs[0].size(), runs[1].size());
    std::vector<std::string> with_place;
    for (const auto& [name, bytes] : runs[0]) {
      if (!place.empty() && bytes.find(place) != std::string::npos) with_place.push_back(name);
      EXPECT_TRUE(runs[1].count(name) && runs[1][name] == bytes)
          << name << " differs between two exports in one process";
      EXPECT_EQ(bytes.find(source_dir), std::string::npos) << name << " holds the source path " << source_dir;
    }
    // The place is written into ONNX metadata and the .pt2's runtime assertion, so the path check above
    // is not vacuous; the .pte's static cache fixes the length, and its program holds no guard.
    if (format != "executorch") {
      EXPECT_FALSE(with_place.empty()) << "expected the guard place " << place << " in an artifact";
    }
  }
  fs::remove_all(root);
}
