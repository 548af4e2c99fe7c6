// One copy of the weights per loading unit: the programs that share weights and load together (prefill,
// decode and the merged decoder; the three decoder graphs of a seq2seq or vision-language export) reference
// one external data file, named after the graph Transformers.js loads, whatever the size, and no weight is
// written twice in it; a single-program export under the protobuf limit keeps its weights inline.
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

// What the folder's graphs reference: per data file, initializer name → the extents it is stored at; and
// per graph, the bytes of initializers kept inline (above 1 KiB: what counts as a weight, not a shape
// constant).
struct Refs {
  std::map<std::string, std::map<std::string, std::set<Extent>>> external;  // file → name → extents
  std::map<std::string, uint64_t> inline_weight_bytes;                      // graph → bytes
};
Refs references(const fs::path& onnx_dir) {
  Refs r;
  for (const auto& e : fs::directory_iterator(onnx_dir)) {
    if (e.path().extension() != ".onnx") continue;
    const std::string graph = e.path().stem().string();
    uint64_t& inl = r.inline_weight_bytes[graph];
    const onnx::ModelProto m = read(e.path());
    for (const auto& t : m.graph().initializer()) {
      if (t.data_location() != onnx::TensorProto::EXTERNAL) {
        if (t.raw_data().size() > 1024) inl += t.raw_data().size();
        continue;
      }
      Extent x;
      for (const auto& kv : t.external_data()) {
        if (kv.key() == "location") x.location = kv.value();
        if (kv.key() == "offset") x.offset = std::stoull(kv.value());
        if (kv.key() == "length") x.length = std::stoull(kv.value());
      }
      r.external[x.location][t.name()].insert(x);
    }
  }
  return r;
}

// The folder's external data files are exactly `files`; the graphs `sharing` (programs that share a file)
// embed no weight; within a file no weight is stored twice, and nothing is unreferenced.
void expect_shared(const fs::path& out, const std::set<std::string>& files,
                   const std::set<std::string>& sharing) {
  const fs::path onnx = out / "onnx";
  std::set<std::string> data_files;
  for (const auto& e : fs::directory_iterator(onnx))
    if (e.path().extension() == ".onnx_data") data_files.insert(e.path().filename().string());
  ASSERT_EQ(data_files, files);
  const Refs r = references(onnx);
  for (const std::string& g : sharing) {
    ASSERT_TRUE(r.inline_weight_bytes.count(g)) << "no graph " << g;
    EXPECT_EQ(r.inline_weight_bytes.at(g), 0u) << g << " embeds a weight its data file should hold";
  }
  EXPECT_EQ(r.external.size(), files.size());
  for (const auto& [file, names] : r.external) {
    SCOPED_TRACE(file);
    ASSERT_TRUE(files.count(file)) << "a graph references " << file;
    const uint64_t size = fs::file_size(onnx / file);
    std::set<Extent> all;
    for (const auto& [name, extents] : names) {
      EXPECT_EQ(extents.size(), 1u) << name << " is stored " << extents.size() << " times";
      for (const Extent& x : extents) {
        EXPECT_LE(x.offset + x.length, size) << name;
        all.insert(x);
      }
    }
    // Nothing in the file that no graph references (a second copy under another name): the referenced
    // extents, each padded to the file's 4096-byte alignment, cover it.
    uint64_t covered = 0;
    for (const Extent& x : all) covered += (x.length + 4095) / 4096 * 4096;
    EXPECT_LE(size, covered);
  }
}
const std::set<std::string> kDecoder = {"prefill", "decode", "model"};

TEST(SharedWeights, ADecoderExportStoresEachWeightOnce) {
  auto model = test::tiny_in_memory("llama", 3);
  TempDir dir("shared_weights_llama");
  OnnxConfig f32;
  const ExportResult r = make_onnx_exporter()->export_for_generation(*model, CaptureOptions{}, {{"*", &f32}},
                                                                     (dir.path / "f32").string());
  expect_shared(dir.path / "f32", {"model.onnx_data"}, kDecoder);
  // The data file's SHA-256, computed while it was written (the manifest takes it), is the file's.
  int hashed = 0;
  for (const auto& f : r.files) {
    if (f.sha256.empty()) continue;
    hashed++;
    EXPECT_EQ(f.sha256, io::sha256_file((dir.path / "f32" / f.path).string())) << f.path;
    EXPECT_EQ(f.size, fs::file_size(dir.path / "f32" / f.path)) << f.path;
  }
  EXPECT_EQ(hashed, 1);
  // Quantized: the codes and scales the lowering lays out for MatMulNBits are shared too.
  OnnxConfig q4;
  q4.target = "ort";
  q4.quantize = quant::parse_options("int4", 32, false);
  make_onnx_exporter()->export_for_generation(*model, CaptureOptions{}, {{"*", &q4}},
                                              (dir.path / "int4").string());
  expect_shared(dir.path / "int4", {"model.onnx_data"}, kDecoder);
  // Target standard: codes, scales and zero points the lowering computes for DequantizeLinear (opset 21).
  OnnxConfig q4s;
  q4s.opset = 21;
  q4s.quantize = quant::parse_options("int4", 32, false);
  make_onnx_exporter()->export_for_generation(*model, CaptureOptions{}, {{"*", &q4s}},
                                              (dir.path / "int4_standard").string());
  expect_shared(dir.path / "int4_standard", {"model.onnx_data"}, kDecoder);
}

// Encoder-decoder and vision-language folders: the decoder programs share decoder_model_merged.onnx_data
// (the file Transformers.js fetches for the merged graph, config.json says which graphs have one); encoders,
// embed_tokens and vision_encoder are single programs and keep their weights inline.
TEST(SharedWeights, EncoderDecoderAndVisionLanguageDecodersShareTheMergedGraphsFile) {
  const std::set<std::string> decoders = {"decoder_model", "decoder_with_past_model", "decoder_model_merged"};
  for (const char* arch : {"t5", "llava"}) {
    SCOPED_TRACE(arch);
    TempDir dir(std::string("shared_weights_") + arch);
    create_tiny(arch, (dir.path / "ck").string(), TinyOptions{});
    std::unique_ptr<Model> m = load_model((dir.path / "ck").string());
    OnnxConfig oc;
    make_onnx_exporter()->export_for_generation(*m, CaptureOptions{}, {{"*", &oc}},
                                                (dir.path / "out").string());
    expect_shared(dir.path / "out", {"decoder_model_merged.onnx_data"}, decoders);
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
  ASSERT_EQ(r.inline_weight_bytes.size(), 1u);
  EXPECT_TRUE(r.external.empty());
  EXPECT_GT(r.inline_weight_bytes.begin()->second, 0u);
  for (const auto& e : fs::directory_iterator(dir.path / "onnx"))
    EXPECT_NE(e.path().extension(), ".onnx_data");
}

}  // namespace
}  // namespace hfx
