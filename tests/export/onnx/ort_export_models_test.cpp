// End to end: every architecture of the model library, exported for generation (prefill, decode and
// the merged model graph) with opset 18, opset 23 and target ort, loaded in ONNX Runtime and compared
// with the eager model: logits and present KV at ≤ 1e-4 (relative to max(1, |ref|)) for batch 1 and 4,
// prompts of 1, 7 and 64 tokens (64 crosses the tiny presets' sliding window of 8), and a decode step
// after a 64-token prefill.
#include <gtest/gtest.h>

#include <random>

#include "export/onnx/onnx_test_util.h"
#include "hfx/export/exporter.h"
#include "hfx/export/onnx.h"
#include "models/model_test_util.h"

namespace hfx::onnx_test {
namespace {

constexpr double kTol = 1e-4;

struct Cfg {
  int opset;
  std::string target;
  std::string tag;
};
const std::vector<Cfg> kCfgs = {{18, "standard", "opset18"}, {23, "standard", "opset23"}, {18, "ort", "ort"}};

struct P {
  std::string arch;
  size_t cfg;
};

class OrtExportModels : public ::testing::TestWithParam<P> {};

struct Step {
  Tensor ids, mask, pos;
};

Step make_step(int64_t B, int64_t past, int64_t S, int64_t vocab, std::mt19937& rng) {
  std::vector<int64_t> ids(B * S), mask(B * (past + S), 1), pos(B * S);
  for (auto& x : ids) x = static_cast<int64_t>(rng() % vocab);
  for (int64_t b = 0; b < B; b++)
    for (int64_t s = 0; s < S; s++) pos[b * S + s] = past + s;
  return {Tensor::from_ints({B, S}, ids), Tensor::from_ints({B, past + S}, mask),
          Tensor::from_ints({B, S}, pos)};
}

// Runs `sess` with the step's inputs and the given past (empty past = zero-length tensors) and checks
// logits and every present leaf against the eager reference.
void check_graph(const rt::OrtSession& sess, const std::string& what, const Step& st,
                 const std::vector<Tensor>& past_k, const std::vector<Tensor>& past_v, const CausalLM& m,
                 const Tensor& ref_logits, const std::vector<Tensor>& ref_k, const std::vector<Tensor>& ref_v,
                 double* worst) {
  SCOPED_TRACE(what);
  rt::NamedTensors feeds;
  auto layout = m.cache_layout();
  int64_t B = st.ids.size(0);
  for (const auto& in : sess.inputs()) {
    if (in.name == "input_ids")
      feeds.push_back({in.name, to_rt(st.ids)});
    else if (in.name == "attention_mask")
      feeds.push_back({in.name, to_rt(st.mask)});
    else if (in.name == "position_ids")
      feeds.push_back({in.name, to_rt(st.pos)});
    else if (in.name.rfind("past_key_values.", 0) == 0) {
      size_t dot = in.name.find('.', 16);
      int layer = std::stoi(in.name.substr(16, dot - 16));
      bool key = in.name.substr(dot + 1) == "key";
      const auto& src = key ? past_k : past_v;
      if (src.empty())
        feeds.push_back({in.name, rt::RtTensor::zeros("float32", {B, layout[layer].num_kv_heads, 0,
                                                                  layout[layer].head_dim})});
      else
        feeds.push_back({in.name, to_rt(src[layer])});
    } else {
      FAIL() << "unexpected input " << in.name;
    }
  }
  auto out = sess.run(feeds);
  double e = max_rel_err(rt::find_tensor(out, "logits"), ref_logits);
  EXPECT_GE(e, 0) << "logits shape";
  EXPECT_LE(e, kTol) << "logits";
  *worst = std::max(*worst, e);
  for (size_t i = 0; i < layout.size(); i++) {
    double ek = max_rel_err(rt::find_tensor(out, "present." + std::to_string(i) + ".key"), ref_k[i]);
    double ev = max_rel_err(rt::find_tensor(out, "present." + std::to_string(i) + ".value"), ref_v[i]);
    EXPECT_GE(ek, 0) << "present key shape, layer " << i;
    EXPECT_LE(ek, kTol) << "present key, layer " << i;
    EXPECT_LE(ev, kTol) << "present value, layer " << i;
    *worst = std::max({*worst, ek, ev});
  }
}

TEST_P(OrtExportModels, PrefillDecodeAndMergedMatchEager) {
  const auto& p = GetParam();
  const Cfg& c = kCfgs[p.cfg];
  auto model = test::tiny_in_memory(p.arch, 7);
  TempDir dir(p.arch + "_" + c.tag);
  OnnxConfig oc;
  oc.opset = c.opset;
  oc.target = c.target;
  CaptureOptions co;
  auto exp = make_onnx_exporter();
  ExportResult r = exp->export_for_generation(*model, co, {{"default", &oc}}, dir.path.string());
  for (const auto& w : r.warnings)
    std::printf("  [%s %s] warning: %s\n", p.arch.c_str(), c.tag.c_str(), w.c_str());
  rt::SessionOptions so;
  so.intra_op_threads = 2;
  rt::OrtSession prefill(dir.path / "onnx/prefill.onnx", so), decode(dir.path / "onnx/decode.onnx", so),
      merged(dir.path / "onnx/model.onnx", so);

  std::mt19937 rng(11);
  const int64_t V = model->config().vocab_size;
  const size_t L = model->cache_layout().size();
  double worst = 0;
  for (int64_t B : {1, 4})
    for (int64_t S : {1, 7, 64}) {
      Step st = make_step(B, 0, S, V, rng);
      EagerBuilder eb;
      DynamicCache cache(model->cache_layout());
      ForwardArgs a;
      a.input_ids = eb.wrap(st.ids);
      a.attention_mask = eb.wrap(st.mask);
      a.position_ids = eb.wrap(st.pos);
      a.cache = &cache;
      Tensor logits = model->forward(eb, a).logits.tensor();
      std::vector<Tensor> k, v;
      for (size_t i = 0; i < L; i++) k.push_back(cache.key(i).tensor()), v.push_back(cache.value(i).tensor());
      std::string tag = "B=" + std::to_string(B) + " S=" + std::to_string(S);
      check_graph(prefill, "prefill " + tag, st, {}, {}, *model, logits, k, v, &worst);
      check_graph(merged, "merged (empty past) " + tag, st, {}, {}, *model, logits, k, v, &worst);
      if (S != 64) continue;
      // One decode step after the long prefill (past 64 > the sliding window).
      Step d = make_step(B, S, 1, V, rng);
      DynamicCache cache2(model->cache_layout());
      for (size_t i = 0; i < L; i++) cache2.set_past(static_cast<int>(i), eb.wrap(k[i]), eb.wrap(v[i]));
      ForwardArgs a2;
      a2.input_ids = eb.wrap(d.ids);
      a2.attention_mask = eb.wrap(d.mask);
      a2.position_ids = eb.wrap(d.pos);
      a2.cache = &cache2;
      Tensor logits2 = model->forward(eb, a2).logits.tensor();
      std::vector<Tensor> k2, v2;
      for (size_t i = 0; i < L; i++)
        k2.push_back(cache2.key(i).tensor()), v2.push_back(cache2.value(i).tensor());
      check_graph(decode, "decode after 64 " + tag, d, k, v, *model, logits2, k2, v2, &worst);
      check_graph(merged, "merged decode after 64 " + tag, d, k, v, *model, logits2, k2, v2, &worst);
    }
  std::printf("  [%s %s] worst relative error %.3g\n", p.arch.c_str(), c.tag.c_str(), worst);
}

std::vector<P> params() {
  std::vector<P> v;
  for (const auto& a : test::all_model_types())
    for (size_t c = 0; c < kCfgs.size(); c++) v.push_back({a, c});
  return v;
}

INSTANTIATE_TEST_SUITE_P(Archs, OrtExportModels, ::testing::ValuesIn(params()),
                         [](const auto& info) { return info.param.arch + "_" + kCfgs[info.param.cfg].tag; });

}  // namespace
}  // namespace hfx::onnx_test
