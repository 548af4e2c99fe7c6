// ONNX artifacts in ONNX Runtime: the run-time shape contract, symbolic sizes at several sizes,
// external data, opsets 18 and 23.
#include <gtest/gtest.h>

#include <fstream>

#include "export/onnx/onnx_test_util.h"
#include "hfx/core/error.h"
#include "hfx/export/exporter.h"
#include "hfx/export/onnx.h"
#include "hfx/ops/functional.h"
#include "models/model_test_util.h"

namespace hfx::onnx_test {
namespace {

// ids [B, S] (S in [1, 16]), mask [B, P + S], past [B, 2, P, 4]:
//   y = view(emb(ids), [B, S, 2, 4]) permuted, cat with past, sliced to the last S positions, viewed [B, S,
//   8].
struct Built {
  std::unique_ptr<Graph> g;
  Tensor table;
};
Built chain() {
  Built b;
  b.g = std::make_unique<Graph>();
  Graph& g = *b.g;
  Sym B = g.env().create_symbol("batch_size", 1, 8, 2);
  Sym S = g.env().create_symbol("sequence_length", 1, 16, 3);
  Sym P = g.env().create_symbol("past_sequence_length", 0, 32, 4);
  TraceBuilder tb(g);
  Var ids = tb.input("input_ids", TensorType{DType::I64, {B, S}});
  tb.input("attention_mask", TensorType{DType::I64, {B, P + S}});
  Var past = tb.input("past_key_values.0.key", TensorType{DType::F32, {B, Sym(2), P, Sym(4)}});
  std::vector<float> tv(10 * 8);
  for (size_t i = 0; i < tv.size(); i++) tv[i] = 0.01f * static_cast<float>(i) - 0.3f;
  b.table = Tensor::from_floats({10, 8}, tv);
  Var e = F::embedding(tb.param("embed", b.table), ids);
  Var k = F::permute(F::reshape(e, {B, S, Sym(2), Sym(4)}), {0, 2, 1, 3});
  Var all = F::cat({past, k}, 2);
  Var last = F::slice(all, 2, P, P + S);
  Var y = F::reshape(F::permute(last, {0, 2, 1, 3}), {B, S, Sym(8)});
  Var pos = F::arange(tb, P, P + S);
  g.add_output("y", y.value());
  g.add_output("present.0.key", all.value());
  g.add_output("positions", pos.value());
  return b;
}

rt::NamedTensors feeds(int64_t B, int64_t S, int64_t P, int64_t mask_len = -1) {
  std::vector<int64_t> ids(B * S);
  for (size_t i = 0; i < ids.size(); i++) ids[i] = static_cast<int64_t>(i % 10);
  if (mask_len < 0) mask_len = P + S;
  std::vector<int64_t> mask(B * mask_len, 1);
  std::vector<float> past(B * 2 * P * 4, 0.5f);
  return {{"input_ids", rt::RtTensor::i64({B, S}, ids)},
          {"attention_mask", rt::RtTensor::i64({B, mask_len}, mask)},
          {"past_key_values.0.key", rt::RtTensor::f32({B, 2, P, 4}, past)}};
}

class OrtLowering : public ::testing::TestWithParam<int> {};

TEST_P(OrtLowering, SymbolicSizesHoldAtSeveralSizes) {
  auto b = chain();
  TempDir dir("chain");
  onnx_export::LowerOptions lo;
  lo.opset = GetParam();
  rt::OrtSession s(lower_and_write(*b.g, lo, dir.path));
  for (auto [B, S, P] :
       std::vector<std::tuple<int64_t, int64_t, int64_t>>{{1, 1, 0}, {2, 3, 4}, {3, 7, 9}, {1, 16, 32}}) {
    SCOPED_TRACE(::testing::Message() << "B=" << B << " S=" << S << " P=" << P);
    auto out = s.run(feeds(B, S, P));
    const auto& y = rt::find_tensor(out, "y");
    ASSERT_EQ(y.shape, (std::vector<int64_t>{B, S, 8}));
    auto yv = y.to_f32();
    for (int64_t i = 0; i < B * S; i++)
      for (int64_t j = 0; j < 8; j++) ASSERT_FLOAT_EQ(yv[i * 8 + j], b.table.data<float>()[(i % 10) * 8 + j]);
    EXPECT_EQ(rt::find_tensor(out, "present.0.key").shape, (std::vector<int64_t>{B, 2, P + S, 4}));
    auto pos = rt::find_tensor(out, "positions").to_i64();
    ASSERT_EQ(static_cast<int64_t>(pos.size()), S);
    for (int64_t i = 0; i < S; i++) EXPECT_EQ(pos[i], P + i);
  }
}

TEST_P(OrtLowering, OutOfRangeInputIsRejectedWithTheContract) {
  auto b = chain();
  TempDir dir("guard");
  onnx_export::LowerOptions lo;
  lo.opset = GetParam();
  rt::OrtSession s(lower_and_write(*b.g, lo, dir.path));
  try {
    s.run(feeds(1, 17, 0));  // sequence_length max is 16
    ADD_FAILURE() << "expected the artifact to reject sequence_length 17";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("hfx.contract: sequence_length in [1, 16]"), std::string::npos)
        << e.what();
  }
  try {
    s.run(feeds(1, 2, 3, /*mask_len=*/4));  // attention_mask must be past + sequence = 5
    ADD_FAILURE() << "expected the artifact to reject a mismatched attention_mask";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("attention_mask axis 1 == past_sequence_length + sequence_length"),
              std::string::npos)
        << e.what();
  }
  EXPECT_NO_THROW(s.run(feeds(8, 16, 32)));
}

TEST_P(OrtLowering, ExternalDataRoundTrip) {
  auto b = chain();
  TempDir dir("extdata");
  onnx_export::LowerOptions lo;
  lo.opset = GetParam();
  std::string embedded = lower_and_write(*b.g, lo, dir.path, "embedded.onnx", false);
  std::string external = lower_and_write(*b.g, lo, dir.path, "model.onnx", true);
  EXPECT_TRUE(fs::exists(dir.path / "model.onnx_data"));
  EXPECT_LT(fs::file_size(external), fs::file_size(embedded));
  rt::OrtSession a(embedded), c(external);
  auto ya = rt::find_tensor(a.run(feeds(2, 5, 3)), "y").to_f32();
  auto yc = rt::find_tensor(c.run(feeds(2, 5, 3)), "y").to_f32();
  EXPECT_EQ(ya, yc);
}

// export_for_generation with external data on a bf16 checkpoint read from disk: prefill, decode and the
// merged model reference one model.onnx_data (each weight at the same extent in all three), the weights
// stay bf16 behind one Cast each (the data file is about the checkpoint's size, not twice it), and the
// graphs still match eager, which casts the same bf16 weights to f32 at use.
TEST_P(OrtLowering, GenerationExportSharesOneBf16DataFile) {
  TempDir dir("bf16gen");
  TinyOptions o;
  o.dtype = DType::BF16;
  create_tiny("llama", (dir.path / "ckpt").string(), o);
  auto model = load_causal_lm((dir.path / "ckpt").string());
  OnnxConfig oc;
  oc.opset = GetParam();
  oc.external_data = true;
  oc.dtype = "bf16";  // the checkpoint's own bytes (--dtype auto is f32, what ONNX Runtime CPU computes in)
  CaptureOptions co;
  ExportResult r = make_onnx_exporter()->export_for_generation(*model, co, {{"default", &oc}},
                                                               (dir.path / "out").string());
  const fs::path onnx_dir = dir.path / "out" / "onnx";
  std::vector<std::string> data_files;
  for (const auto& e : fs::directory_iterator(onnx_dir))
    if (e.path().extension() != ".onnx" && e.path().filename() != "session_options.json")
      data_files.push_back(e.path().filename().string());
  EXPECT_EQ(data_files, std::vector<std::string>{"model.onnx_data"});
  int weights_listed = 0;
  for (const auto& f : r.files) weights_listed += f.role == "weights";
  EXPECT_EQ(weights_listed, 1);

  uint64_t ckpt_bytes = 0;
  for (const auto& f : fs::directory_iterator(dir.path / "ckpt"))
    if (f.path().extension() == ".safetensors") ckpt_bytes += fs::file_size(f.path());
  const uint64_t data_bytes = fs::file_size(onnx_dir / "model.onnx_data");
  EXPECT_LT(data_bytes, ckpt_bytes + 4096 * 64)
      << "expected about the checkpoint's size (bf16 kept), got more";

  std::map<std::string, std::string> extent;  // initializer → "offset/length", the same in every graph
  for (const char* f : {"prefill.onnx", "decode.onnx", "model.onnx"}) {
    SCOPED_TRACE(f);
    onnx::ModelProto m;
    std::ifstream in(onnx_dir / f, std::ios::binary);
    ASSERT_TRUE(m.ParseFromIstream(&in));
    EXPECT_LT(fs::file_size(onnx_dir / f), 1u << 20) << "expected external refs only in the graph file";
    int bf16 = 0, external = 0;
    for (const auto& t : m.graph().initializer()) {
      if (t.data_location() != onnx::TensorProto::EXTERNAL) continue;
      external++;
      bf16 += t.data_type() == onnx::TensorProto::BFLOAT16;
      std::map<std::string, std::string> kv;
      for (const auto& e : t.external_data()) kv[e.key()] = e.value();
      EXPECT_EQ(kv["location"], "model.onnx_data") << t.name();
      std::string x = kv["offset"] + "/" + kv["length"];
      auto [it, fresh] = extent.emplace(t.name(), x);
      EXPECT_EQ(it->second, x) << t.name();
    }
    EXPECT_GT(external, 0);
    EXPECT_EQ(bf16, external) << "every weight of the llama is cast to f32 at use, so every one stays bf16";
  }

  // Numerics: prefill (B=2, S=5) and merged with an empty past against eager.
  rt::SessionOptions so;
  so.intra_op_threads = 2;
  rt::OrtSession prefill(onnx_dir / "prefill.onnx", so), merged(onnx_dir / "model.onnx", so),
      decode(onnx_dir / "decode.onnx", so);
  const int64_t B = 2, S = 5, V = model->config().vocab_size;
  std::vector<int64_t> ids(B * S), mask(B * S, 1), pos(B * S);
  for (int64_t i = 0; i < B * S; i++) ids[i] = (i * 37 + 11) % V, pos[i] = i % S;
  EagerBuilder eb;
  DynamicCache cache(model->cache_layout());
  ForwardArgs a;
  a.input_ids = eb.wrap(Tensor::from_ints({B, S}, ids));
  a.attention_mask = eb.wrap(Tensor::from_ints({B, S}, mask));
  a.position_ids = eb.wrap(Tensor::from_ints({B, S}, pos));
  a.cache = &cache;
  Tensor ref = model->forward(eb, a).logits.tensor();
  auto layout = model->cache_layout();
  for (rt::OrtSession* s : {&prefill, &merged}) {
    rt::NamedTensors feeds;
    for (const auto& in : s->inputs()) {
      if (in.name == "input_ids")
        feeds.push_back({in.name, to_rt(Tensor::from_ints({B, S}, ids))});
      else if (in.name == "attention_mask")
        feeds.push_back({in.name, to_rt(Tensor::from_ints({B, S}, mask))});
      else if (in.name == "position_ids")
        feeds.push_back({in.name, to_rt(Tensor::from_ints({B, S}, pos))});
      else {
        size_t dot = in.name.find('.', 16);
        int layer = std::stoi(in.name.substr(16, dot - 16));
        feeds.push_back({in.name, rt::RtTensor::zeros("float32", {B, layout[layer].num_kv_heads, 0,
                                                                  layout[layer].head_dim})});
      }
    }
    double e = max_rel_err(rt::find_tensor(s->run(feeds), "logits"), ref);
    EXPECT_GE(e, 0) << "logits shape";
    EXPECT_LE(e, 1e-4);
  }
  EXPECT_FALSE(decode.inputs().empty());
}

INSTANTIATE_TEST_SUITE_P(Opsets, OrtLowering, ::testing::Values(18, 23),
                         [](const auto& i) { return "opset" + std::to_string(i.param); });

}  // namespace
}  // namespace hfx::onnx_test
