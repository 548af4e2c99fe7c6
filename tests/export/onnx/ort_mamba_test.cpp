// mamba, mamba2 and granitemoehybrid exported to ONNX (prefill, decode, merged model) with opset 18, opset
// 23 and target ort, run in ONNX Runtime against the eager model: logits (at unpadded positions) and every
// present_conv.N / present_ssm.N (and the hybrid's present.N.key/value) at ≤ 1e-4 absolute
// for batch 1 and a left-padded batch of 3, prompts of 1, 7 and 64 tokens, and a decode step after the
// 64-token prefill (decode.onnx and the merged graph fed the eager states). The merged graph's first call
// gets the zero state (the empty past). Then greedy generation over 32 tokens: the ORT engine of `hfx
// generate --engine ort` (prefill.onnx, then decode.onnx, states moved between steps) against the eager
// engine, and the CLI's text over both engines.
#include <gtest/gtest.h>

#include <cstdio>
#include <random>

#include "export/onnx/onnx_test_util.h"
#include "hfx/export/exporter.h"
#include "hfx/export/onnx.h"
#include "hfx/runtime/generator.h"
#include "models/model_test_util.h"

namespace hfx::onnx_test {
namespace {

constexpr double kTol = 1e-4;

double max_abs_err(const rt::RtTensor& got, const Tensor& ref) {
  if (got.shape != ref.shape()) return 1e30;
  auto a = got.to_f32();
  auto b = ref.to_floats();
  double e = 0;
  for (size_t i = 0; i < a.size(); i++) e = std::max(e, std::fabs(static_cast<double>(a[i]) - b[i]));
  return e;
}

struct Case {
  Tensor ids, mask;
};

// logits [B, S, V] at the positions the mask's last S columns keep. A left-padded position has no
// reference: in granitemoehybrid's attention its query row is fully masked, which eager (additive finfo.min:
// a uniform softmax) and opset 23's Attention op resolve differently, and nothing reads those logits (the
// padded inputs are zeroed before every mamba mixer and masked out of every later query).
double max_abs_err_kept(const rt::RtTensor& got, const Tensor& ref, const Tensor& mask) {
  if (got.shape != ref.shape()) return 1e30;
  auto a = got.to_f32();
  auto b = ref.to_floats();
  std::vector<int64_t> m = mask.to_ints();
  const int64_t B = ref.size(0), S = ref.size(1), V = ref.size(2), T = mask.size(1);
  double e = 0;
  for (int64_t r = 0; r < B; r++)
    for (int64_t t = 0; t < S; t++)
      if (m[static_cast<size_t>(r * T + T - S + t)])
        for (int64_t v = 0; v < V; v++) {
          const size_t i = static_cast<size_t>((r * S + t) * V + v);
          e = std::max(e, std::fabs(static_cast<double>(a[i]) - b[i]));
        }
  return e;
}

// B rows of S random tokens; row r > 0 of a batch of 3 is left-padded by 2r positions (mask 0, pad id 0).
Case make_case(int64_t B, int64_t past, int64_t S, int64_t vocab, std::mt19937& rng, bool pad) {
  std::vector<int64_t> ids(B * S), mask(B * (past + S), 1);
  for (auto& x : ids) x = static_cast<int64_t>(rng() % vocab);
  if (pad)
    for (int64_t b = 1; b < B; b++)
      for (int64_t j = 0; j < std::min<int64_t>(2 * b, S - 1); j++)
        ids[b * S + j] = 0, mask[b * (past + S) + past + j] = 0;
  return {Tensor::from_ints({B, S}, ids), Tensor::from_ints({B, past + S}, mask)};
}

// The eager reference: component `model` on the case and the given past leaves.
NamedVars eager(const Model& m, EagerBuilder& b, const Case& c, const NamedVars& past) {
  NamedVars in{{"input_ids", b.wrap(c.ids)}, {"attention_mask", b.wrap(c.mask)}};
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
    else if (Var v = get(past, in.name))
      feeds.push_back({in.name, to_rt(v.tensor())});
    else {
      // the empty past of the merged graph: the zero state
      std::vector<int64_t> shape;  // a KV leaf's past axis is empty
      for (const auto& d : in.shape) shape.push_back(std::max<int64_t>(d.value, 0));
      shape[0] = B;
      feeds.push_back({in.name, rt::RtTensor::zeros("float32", shape)});
    }
  }
  auto out = s.run(feeds);
  double worst = 0;
  for (const auto& [name, v] : ref) {
    double e = name == "logits" ? max_abs_err_kept(rt::find_tensor(out, name), v.tensor(), c.mask)
                                : max_abs_err(rt::find_tensor(out, name), v.tensor());
    EXPECT_LE(e, kTol) << name;
    worst = std::max(worst, e);
  }
  return worst;
}

NamedVars as_past(const NamedVars& present) {
  NamedVars r;
  for (const auto& [n, v] : present)
    if (n.rfind("present_", 0) == 0)
      r.emplace_back("past_" + n.substr(8), v);
    else if (n.rfind("present.", 0) == 0)
      r.emplace_back("past_key_values." + n.substr(8), v);
  return r;
}

struct Cfg {
  std::string arch;
  int opset;
  std::string target, tag;
};

class OrtMamba : public ::testing::TestWithParam<Cfg> {};

TEST_P(OrtMamba, PrefillDecodeAndMergedMatchEager) {
  const Cfg& c = GetParam();
  auto model = test::tiny_in_memory(c.arch, 7);
  TempDir dir(c.arch + "_" + c.tag);
  OnnxConfig oc;
  oc.opset = c.opset;
  oc.target = c.target;
  auto exp = make_onnx_exporter();
  ExportResult r =
      exp->export_for_generation(*model, CaptureOptions{}, {{"default", &oc}}, dir.path.string());
  for (const auto& w : r.warnings)
    std::printf("  [%s %s] warning: %s\n", c.arch.c_str(), c.tag.c_str(), w.c_str());
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
      worst = std::max(worst, check_graph(merged, "merged (zero state) " + tag, pc, {}, ref));
      if (S != 64) continue;
      NamedVars past = as_past(ref);
      Case dc = make_case(B, S, 1, V, rng, false);
      std::vector<int64_t> m2 = dc.mask.to_ints(), m1 = pc.mask.to_ints();
      for (int64_t b = 0; b < B; b++)  // the prompt's padded columns stay padded in the decode mask
        for (int64_t j = 0; j < S; j++) m2[b * (S + 1) + j] = m1[b * S + j];
      dc.mask = Tensor::from_ints({B, S + 1}, m2);
      NamedVars ref2 = eager(*model, eb, dc, past);
      worst = std::max(worst, check_graph(decode, "decode after 64 " + tag, dc, past, ref2));
      worst = std::max(worst, check_graph(merged, "merged decode after 64 " + tag, dc, past, ref2));
    }
  std::printf("  [%s %s] worst |ORT - eager| %.3g\n", c.arch.c_str(), c.tag.c_str(), worst);
}

INSTANTIATE_TEST_SUITE_P(
    Cfgs, OrtMamba,
    ::testing::Values(Cfg{"mamba", 18, "standard", "opset18"}, Cfg{"mamba", 23, "standard", "opset23"},
                      Cfg{"mamba", 18, "ort", "ort"}, Cfg{"mamba2", 18, "standard", "opset18"},
                      Cfg{"mamba2", 23, "standard", "opset23"}, Cfg{"mamba2", 18, "ort", "ort"},
                      Cfg{"granitemoehybrid", 18, "standard", "opset18"},
                      Cfg{"granitemoehybrid", 23, "standard", "opset23"},
                      Cfg{"granitemoehybrid", 18, "ort", "ort"}),
    [](const auto& info) { return info.param.arch + "_" + info.param.tag; });

class OrtMambaGenerate : public ::testing::TestWithParam<std::string> {};

TEST_P(OrtMambaGenerate, GreedyTokensOverOrtEqualEager) {
  const std::string arch = GetParam();
  TempDir dir(arch + "_generate");
  create_tiny(arch, (dir.path / "ckpt").string());
  std::shared_ptr<const CausalLM> model(load_causal_lm((dir.path / "ckpt").string()));
  OnnxConfig oc;
  auto exp = make_onnx_exporter();
  exp->export_for_generation(*model, CaptureOptions{}, {{"default", &oc}}, (dir.path / "out").string());
  for (const char* f : {"config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json"})
    std::filesystem::copy_file(dir.path / "ckpt" / f, dir.path / "out" / f,
                               std::filesystem::copy_options::overwrite_existing);
  // Batch 3, left-padded, 32 greedy tokens: prefill.onnx then decode.onnx in the ORT engine.
  const std::vector<std::vector<int64_t>> prompts = {{5, 17, 29, 41, 53, 65}, {7}, {3, 9, 27, 81}};
  test::Batch bt = test::left_pad(prompts);
  auto ort = make_ort_engine((dir.path / "out").string(), 2);
  EagerEngine eager_engine(model);
  std::vector<int64_t> mask = bt.mask;
  std::vector<float> lo, le;
  ort->step(bt.ids, mask, bt.pos, bt.B, bt.T, lo);
  eager_engine.step(bt.ids, mask, bt.pos, bt.B, bt.T, le);
  const int64_t V = model->config().vocab_size;
  double worst = 0;
  int64_t T = bt.T;
  for (int step = 0; step < 32; step++) {
    std::vector<int64_t> tok_o, tok_e, pos;
    for (int64_t b = 0; b < bt.B; b++) {
      tok_o.push_back(std::max_element(lo.begin() + b * V, lo.begin() + (b + 1) * V) - (lo.begin() + b * V));
      tok_e.push_back(std::max_element(le.begin() + b * V, le.begin() + (b + 1) * V) - (le.begin() + b * V));
      pos.push_back(T);
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
    ort->step(tok_o, mask, pos, bt.B, 1, lo);
    eager_engine.step(tok_e, mask, pos, bt.B, 1, le);
  }
  std::printf("  [%s generate] 32 greedy tokens, batch 3 left-padded: worst |ORT - eager| logit %.3g\n",
              arch.c_str(), worst);
  EXPECT_LE(worst, kTol);
#ifdef HFX_CLI
  // The CLI over both engines gives the same text.
  auto run = [&](const std::string& args) {
    std::string cmd = std::string(HFX_CLI) + " generate " + args +
                      " --prompt 'state space' --max-new-tokens 32 --greedy 2>/dev/null";
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

INSTANTIATE_TEST_SUITE_P(Archs, OrtMambaGenerate, ::testing::Values("mamba", "mamba2", "granitemoehybrid"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace hfx::onnx_test
