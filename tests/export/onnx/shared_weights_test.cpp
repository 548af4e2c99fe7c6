// One copy of the weights per export folder: every program of a multi-program ONNX export (prefill, decode,
// merged; encoder and decoders; vision encoder, projector and language model) references one shared
// onnx/model.onnx_data, whatever the size, and no weight is written twice; a single-program export under the
// protobuf limit keeps its weights inline.
#include <gtest/gtest.h>

#include <onnx/onnx_pb.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <set>

#include "hfx/export/exporter.h"
#include "hfx/export/onnx.h"
#include "hfx/io/safetensors.h"
#include "hfx/models/model.h"
#include "hfx/models/quantize_model.h"
#include "hfx/models/tiny.h"
#include "models/model_test_util.h"

namespace hfx {
namespace {

namespace fs = std::filesystem;
using test::TempDir;

onnx::ModelProto read(const fs::path& p) {
  onnx::ModelProto m;
  std::ifstream f(p, std::ios::binary);
  EXPECT_TRUE(m.ParseFromIstream(&f)) << p;
  return m;
}

struct Extent {
  std::string location;
  uint64_t offset = 0, length = 0;
  bool operator<(const Extent& o) const {
    return std::tie(location, offset, length) < std::tie(o.location, o.offset, o.length);
  }
};

// What the folder's graphs reference: initializer name → the extents it is stored at, and the bytes of
// initializers kept inline (above 1 KiB: what counts as a weight, not a shape constant).
struct Refs {
  std::map<std::string, std::set<Extent>> external;
  uint64_t inline_weight_bytes = 0;
  int graphs = 0;
};
Refs references(const fs::path& onnx_dir) {
  Refs r;
  for (const auto& e : fs::directory_iterator(onnx_dir)) {
    if (e.path().extension() != ".onnx") continue;
    r.graphs++;
    const onnx::ModelProto m = read(e.path());
    for (const auto& t : m.graph().initializer()) {
      if (t.data_location() != onnx::TensorProto::EXTERNAL) {
        if (t.raw_data().size() > 1024) r.inline_weight_bytes += t.raw_data().size();
        continue;
      }
      Extent x;
      for (const auto& kv : t.external_data()) {
        if (kv.key() == "location") x.location = kv.value();
        if (kv.key() == "offset") x.offset = std::stoull(kv.value());
        if (kv.key() == "length") x.length = std::stoull(kv.value());
      }
      r.external[t.name()].insert(x);
    }
  }
  return r;
}

void expect_one_shared_copy(const fs::path& out) {
  const fs::path onnx = out / "onnx";
  std::vector<std::string> data_files;
  for (const auto& e : fs::directory_iterator(onnx))
    if (e.path().extension() == ".onnx_data") data_files.push_back(e.path().filename().string());
  ASSERT_EQ(data_files, std::vector<std::string>{"model.onnx_data"});
  const Refs r = references(onnx);
  ASSERT_GT(r.graphs, 1);
  EXPECT_EQ(r.inline_weight_bytes, 0u) << "a weight is embedded in a graph of a multi-program export";
  ASSERT_FALSE(r.external.empty());
  const uint64_t size = fs::file_size(onnx / "model.onnx_data");
  uint64_t distinct = 0;
  std::set<Extent> all;
  for (const auto& [name, extents] : r.external) {
    EXPECT_EQ(extents.size(), 1u) << name << " is stored " << extents.size() << " times";
    for (const Extent& x : extents) {
      EXPECT_EQ(x.location, "model.onnx_data") << name;
      EXPECT_LE(x.offset + x.length, size) << name;
      all.insert(x);
    }
  }
  // Nothing in the file that no graph references (a second copy under another name): the referenced
  // extents, each padded to the file's 4096-byte alignment, cover it.
  for (const Extent& x : all) distinct += (x.length + 4095) / 4096 * 4096;
  EXPECT_LE(size, distinct);
}

TEST(SharedWeights, ADecoderExportStoresEachWeightOnce) {
  auto model = test::tiny_in_memory("llama", 3);
  TempDir dir("shared_weights_llama");
  OnnxConfig f32;
  make_onnx_exporter()->export_for_generation(*model, CaptureOptions{}, {{"*", &f32}},
                                              (dir.path / "f32").string());
  expect_one_shared_copy(dir.path / "f32");
  // Quantized: the codes and scales the lowering lays out for MatMulNBits are shared too.
  OnnxConfig q4;
  q4.target = "ort";
  q4.quantize = quant::parse_options("int4", 32, false);
  make_onnx_exporter()->export_for_generation(*model, CaptureOptions{}, {{"*", &q4}},
                                              (dir.path / "int4").string());
  expect_one_shared_copy(dir.path / "int4");
  // Target standard: codes, scales and zero points the lowering computes for DequantizeLinear (opset 21).
  OnnxConfig q4s;
  q4s.opset = 21;
  q4s.quantize = quant::parse_options("int4", 32, false);
  make_onnx_exporter()->export_for_generation(*model, CaptureOptions{}, {{"*", &q4s}},
                                              (dir.path / "int4_standard").string());
  expect_one_shared_copy(dir.path / "int4_standard");
}

TEST(SharedWeights, EncoderDecoderAndVisionLanguageExportsShareOneFile) {
  for (const char* arch : {"t5", "llava"}) {
    SCOPED_TRACE(arch);
    TempDir dir(std::string("shared_weights_") + arch);
    create_tiny(arch, (dir.path / "ck").string(), TinyOptions{});
    std::unique_ptr<Model> m = load_model((dir.path / "ck").string());
    OnnxConfig oc;
    make_onnx_exporter()->export_for_generation(*m, CaptureOptions{}, {{"*", &oc}},
                                                (dir.path / "out").string());
    expect_one_shared_copy(dir.path / "out");
  }
}

// Linear weights are stored transposed; read from a checkpoint file they are transposed band by band (pread,
// tiled transpose, pwrite in place). Bands of 1000 bytes cross every weight's band boundaries; the bytes of
// each transposed initializer equal the checkpoint tensor transposed (and converted: a bf16 checkpoint
// exported as f32).
TEST(SharedWeights, WeightsTransposedFromTheCheckpointFileAreExact) {
  for (DType ck : {DType::F32, DType::BF16}) {
    SCOPED_TRACE(dtype_name(ck));
    TempDir dir("shared_weights_bands");
    TinyOptions to;
    to.dtype = ck;
    create_tiny("llama", (dir.path / "ck").string(), to);
    std::unique_ptr<Model> m = load_model((dir.path / "ck").string());
    OnnxConfig oc;
    oc.dtype = "f32";
    ::setenv("HFX_EXPORT_BAND_BYTES", "1000", 1);
    make_onnx_exporter()->export_for_generation(*m, CaptureOptions{}, {{"*", &oc}},
                                                (dir.path / "out").string());
    ::unsetenv("HFX_EXPORT_BAND_BYTES");
    auto file = io::SafetensorsFile::open((dir.path / "ck" / "model.safetensors").string());
    std::ifstream data(dir.path / "out" / "onnx" / "model.onnx_data", std::ios::binary);
    const onnx::ModelProto g = read(dir.path / "out" / "onnx" / "model.onnx");
    int transposed = 0;
    for (const auto& t : g.graph().initializer()) {
      if (t.dims_size() != 2 || t.data_location() != onnx::TensorProto::EXTERNAL) continue;
      if (!file->has(t.name())) continue;  // not a checkpoint tensor
      const Tensor src = file->get(t.name());
      if (src.size(0) != t.dims(1) || src.size(1) != t.dims(0) || src.size(0) == src.size(1)) continue;
      transposed++;
      uint64_t offset = 0;
      for (const auto& kv : t.external_data())
        if (kv.key() == "offset") offset = std::stoull(kv.value());
      const Tensor want = src.transpose(0, 1).to(DType::F32).contiguous();
      std::vector<char> got(want.nbytes());
      data.seekg(static_cast<std::streamoff>(offset));
      data.read(got.data(), static_cast<std::streamsize>(got.size()));
      EXPECT_EQ(std::memcmp(got.data(), want.raw(), got.size()), 0) << t.name();
    }
    EXPECT_GT(transposed, 4) << "no linear weight was stored transposed";
  }
}

// The negative control: one program, under the protobuf limit: weights inline, no data file.
TEST(SharedWeights, ASingleProgramExportKeepsItsWeightsInline) {
  auto model = test::tiny_in_memory("llama", 3);
  TempDir dir("shared_weights_single");
  OnnxConfig oc;
  make_onnx_exporter()->export_model(*model, CaptureOptions{}, oc, dir.path.string());
  const Refs r = references(dir.path / "onnx");
  EXPECT_EQ(r.graphs, 1);
  EXPECT_TRUE(r.external.empty());
  EXPECT_GT(r.inline_weight_bytes, 0u);
  for (const auto& e : fs::directory_iterator(dir.path / "onnx"))
    EXPECT_NE(e.path().extension(), ".onnx_data");
}

}  // namespace
}  // namespace hfx
