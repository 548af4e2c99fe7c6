// lfm2 exported to ONNX (prefill, decode, merged model) with opset 18, opset 23 and target ort, run in
// ONNX Runtime against the eager model: logits and every present leaf (present_conv.N of the conv layers,
// present.N.key/value of the attention layers) at ≤ 1e-4 absolute for batch 1 and a left-padded batch of 3,
// prompts of 1, 7 and 64 tokens, and a decode step after the 64-token prefill (decode.onnx and the merged
// graph fed the eager leaves). The merged graph's first call gets the empty past: zero conv states and
// zero-length keys/values. Then greedy generation over 32 tokens: the ORT engine of `hfx generate --engine
// ort` against the eager engine, batch 3 left-padded, and the CLI's text over both engines.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>

#include "export/onnx/onnx_test_util.h"
#include "hfx/export/exporter.h"
#include "hfx/export/onnx.h"
#include "hfx/runtime/generator.h"
#include "models/model_test_util.h"

namespace hfx::onnx_test {
namespace {

constexpr double kTol = 1e-4;  // the f32 bound; measured worst is printed

// Max |got - ref| over the positions real tokens hold. Padded positions (mask 0) hold garbage by
// definition — transformers computes it too, and a backend's attention may treat a fully masked query row
// differently (ONNX opset 23's Attention does) — so logits [B, S, V] and keys/values [B, Hkv, T, D] are
// compared where the mask [B, T] is 1; conv states are compared whole (conv layers zero padded inputs, so
// they must match everywhere). A NaN among the compared values fails.
double max_abs_err(const rt::RtTensor& got, const Tensor& ref, const std::string& name,
                   const std::vector<int64_t>& mask) {
  if (got.shape != ref.shape()) return 1e30;
  const auto a = got.to_f32(), b = ref.to_floats();
  const auto& sh = got.shape;
  const int64_t T = static_cast<int64_t>(mask.size()) / sh[0];
  const bool logits = name == "logits", kv = name.rfind("present.", 0) == 0;
  double e = 0;
  for (size_t i = 0; i < a.size(); i++) {
    const int64_t k = static_cast<int64_t>(i);
    if (logits && !mask[k / (sh[1] * sh[2]) * T + T - sh[1] + k / sh[2] % sh[1]]) continue;
    if (kv && !mask[k / (sh[1] * sh[2] * sh[3]) * T + k / sh[3] % sh[2]]) continue;
    const double d = std::fabs(static_cast<double>(a[i]) - b[i]);
    if (std::isnan(d)) return 1e30;
    e = std::max(e, d);
  }
  return e;
}

struct Case {
  Tensor ids, mask, pos;
};

// B rows of S random tokens after `past` ones; row r > 0 of a batch of 3 is left-padded by 2r positions
// (mask 0, pad id 0) and its positions count real tokens only (HF: cumsum(mask) - 1, 1 where masked).
Case make_case(int64_t B, int64_t past, int64_t S, int64_t vocab, std::mt19937& rng, bool pad,
               const std::vector<int64_t>& past_mask = {}) {
  std::vector<int64_t> ids(B * S), mask(B * (past + S), 1), pos(B * S);
  for (auto& x : ids) x = static_cast<int64_t>(rng() % vocab);
  for (int64_t b = 0; b < B; b++)
    for (int64_t j = 0; j < past; j++)
      mask[b * (past + S) + j] = past_mask.empty() ? 1 : past_mask[b * past + j];
  if (pad)
    for (int64_t b = 1; b < B; b++)
      for (int64_t j = 0; j < std::min<int64_t>(2 * b, S - 1); j++)
        ids[b * S + j] = 0, mask[b * (past + S) + past + j] = 0;
  for (int64_t b = 0; b < B; b++) {
    int64_t seen = 0;
    for (int64_t j = 0; j < past + S; j++) {
      const bool real = mask[b * (past + S) + j] != 0;
      if (j >= past) pos[b * S + j - past] = real ? seen : 1;
      seen += real;
    }
  }
  return {Tensor::from_ints({B, S}, ids), Tensor::from_ints({B, past + S}, mask),
          Tensor::from_ints({B, S}, pos)};
}

NamedVars eager(const Model& m, EagerBuilder& b, const Case& c, const NamedVars& past) {
  NamedVars in{
      {"input_ids", b.wrap(c.ids)}, {"attention_mask", b.wrap(c.mask)}, {"position_ids", b.wrap(c.pos)}};
  in.insert(in.end(), past.begin(), past.end());
  return m.call("model", b, in, CallOptions{0, true});
}

double check_graph(const rt::OrtSession& s, const std::string& what, const Case& c, const NamedVars& past,
                   const NamedVars& ref) {
  SCOPED_TRACE(what);
  rt::NamedTensors feeds;
  const int64_t B = c.ids.size(0);
  for (const auto& in : s.inputs()) {
    if (in.name == "input_ids")
      feeds.push_back({in.name, to_rt(c.ids)});
    else if (in.name == "attention_mask")
      feeds.push_back({in.name, to_rt(c.mask)});
    else if (in.name == "position_ids")
      feeds.push_back({in.name, to_rt(c.pos)});
    else if (Var v = get(past, in.name))
      feeds.push_back({in.name, to_rt(v.tensor())});
    else {
      // the empty past of the merged graph: zero conv states, zero-length keys/values
      std::vector<int64_t> shape;
      for (const auto& d : in.shape) shape.push_back(d.fixed() ? d.value : 0);
      shape[0] = B;
      feeds.push_back({in.name, rt::RtTensor::zeros("float32", shape)});
    }
  }
  auto out = s.run(feeds);
  double worst = 0;
  for (const auto& [name, v] : ref) {
    double e = max_abs_err(rt::find_tensor(out, name), v.tensor(), name, c.mask.to_ints());
    EXPECT_LE(e, kTol) << name;
    worst = std::max(worst, e);
  }
  return worst;
}

NamedVars as_past(const Model& m, const NamedVars& present) {
  NamedVars r;
  for (const CacheLeafDecl& l : m.component("model").cache)
    r.emplace_back(l.past_input, get(present, l.present_output));
  return r;
}

struct Cfg {
  int opset;
  std::string target, tag;
};

class OrtLfm2 : public ::testing::TestWithParam<Cfg> {};

TEST_P(OrtLfm2, PrefillDecodeAndMergedMatchEager) {
  const Cfg& c = GetParam();
  auto model = test::tiny_in_memory("lfm2", 7);
  TempDir dir("lfm2_" + c.tag);
  OnnxConfig oc;
  oc.opset = c.opset;
  oc.target = c.target;
  auto exp = make_onnx_exporter();
  ExportResult r =
      exp->export_for_generation(*model, CaptureOptions{}, {{"default", &oc}}, dir.path.string());
  for (const auto& w : r.warnings) std::printf("  [lfm2 %s] warning: %s\n", c.tag.c_str(), w.c_str());
  rt::SessionOptions so;
  so.intra_op_threads = 2;
  rt::OrtSession prefill(dir.path / "onnx/prefill.onnx", so), decode(dir.path / "onnx/decode.onnx", so),
      merged(dir.path / "onnx/model.onnx", so);
  std::mt19937 rng(5);
  const int64_t V = model->config().vocab_size;
  double worst = 0;
  for (int64_t B : {1, 3})
    for (int64_t S : {1, 7, 64}) {
      const bool pad = B == 3 && S > 1;
      Case pc = make_case(B, 0, S, V, rng, pad);
      EagerBuilder eb;
      NamedVars ref = eager(*model, eb, pc, {});
      std::string tag = "B=" + std::to_string(B) + " S=" + std::to_string(S) + (pad ? " left-padded" : "");
      worst = std::max(worst, check_graph(prefill, "prefill " + tag, pc, {}, ref));
      worst = std::max(worst, check_graph(merged, "merged (empty past) " + tag, pc, {}, ref));
      if (S != 64) continue;
      NamedVars past = as_past(*model, ref);
      // the prompt's padded columns stay padded in the decode mask
      Case dc = make_case(B, S, 1, V, rng, false, pc.mask.to_ints());
      NamedVars ref2 = eager(*model, eb, dc, past);
      worst = std::max(worst, check_graph(decode, "decode after 64 " + tag, dc, past, ref2));
      worst = std::max(worst, check_graph(merged, "merged decode after 64 " + tag, dc, past, ref2));
    }
  std::printf("  [lfm2 %s] worst |ORT - eager| %.3g\n", c.tag.c_str(), worst);
}

INSTANTIATE_TEST_SUITE_P(Cfgs, OrtLfm2,
                         ::testing::Values(Cfg{18, "standard", "opset18"}, Cfg{23, "standard", "opset23"},
                                           Cfg{18, "ort", "ort"}),
                         [](const auto& info) { return info.param.tag; });

TEST(OrtLfm2Generate, GreedyTokensOverOrtEqualEager) {
  TempDir dir("lfm2_generate");
  create_tiny("lfm2", (dir.path / "ckpt").string());
  std::shared_ptr<const CausalLM> model(load_causal_lm((dir.path / "ckpt").string()));
  OnnxConfig oc;
  auto exp = make_onnx_exporter();
  exp->export_for_generation(*model, CaptureOptions{}, {{"default", &oc}}, (dir.path / "out").string());
  for (const char* f : {"config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json"})
    std::filesystem::copy_file(dir.path / "ckpt" / f, dir.path / "out" / f,
                               std::filesystem::copy_options::overwrite_existing);
  const std::vector<std::vector<int64_t>> prompts = {{5, 17, 29, 41, 53, 65}, {7}, {3, 9, 27, 81}};
  test::Batch bt = test::left_pad(prompts);
  auto ort = make_ort_engine((dir.path / "out").string(), 2);
  EagerEngine eager_engine(model);
  std::vector<int64_t> mask = bt.mask;
  std::vector<float> lo, le;
  ort->step(bt.ids, mask, bt.pos, bt.B, bt.T, lo);
  eager_engine.step(bt.ids, mask, bt.pos, bt.B, bt.T, le);
  const int64_t V = model->config().vocab_size;
  std::vector<int64_t> next_pos;
  for (int64_t b = 0; b < bt.B; b++) next_pos.push_back(bt.pos[b * bt.T + bt.T - 1] + 1);
  double worst = 0;
  int64_t T = bt.T;
  for (int step = 0; step < 32; step++) {
    std::vector<int64_t> tok_o, tok_e;
    for (int64_t b = 0; b < bt.B; b++) {
      tok_o.push_back(std::max_element(lo.begin() + b * V, lo.begin() + (b + 1) * V) - (lo.begin() + b * V));
      tok_e.push_back(std::max_element(le.begin() + b * V, le.begin() + (b + 1) * V) - (le.begin() + b * V));
    }
    for (size_t i = 0; i < lo.size(); i++)
      worst = std::max(worst, std::fabs(static_cast<double>(lo[i]) - le[i]));
    ASSERT_EQ(tok_o, tok_e) << "step " << step;
    std::vector<int64_t> grown;
    for (int64_t b = 0; b < bt.B; b++) {
      grown.insert(grown.end(), mask.begin() + b * T, mask.begin() + (b + 1) * T);
      grown.push_back(1);
    }
    mask = grown;
    T += 1;
    ort->step(tok_o, mask, next_pos, bt.B, 1, lo);
    eager_engine.step(tok_e, mask, next_pos, bt.B, 1, le);
    for (auto& p : next_pos) p += 1;
  }
  std::printf("  [lfm2 generate] 32 greedy tokens, batch 3 left-padded: worst |ORT - eager| logit %.3g\n",
              worst);
  EXPECT_LE(worst, kTol);
#ifdef HFX_CLI
  auto run = [&](const std::string& args) {
    std::string cmd = std::string(HFX_CLI) + " generate " + args +
                      " --prompt 'short convolutions' --max-new-tokens 32 --greedy 2>/dev/null";
    std::string out;
    FILE* p = popen(cmd.c_str(), "r");
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    EXPECT_EQ(pclose(p), 0) << cmd;
    return out;
  };
  std::string e = run((dir.path / "ckpt").string() + " --engine eager");
  std::string o = run((dir.path / "out").string() + " --engine ort");
  EXPECT_FALSE(e.empty());
  EXPECT_EQ(o, e);
#endif
}

}  // namespace
}  // namespace hfx::onnx_test
