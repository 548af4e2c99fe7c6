// Pass tests written as IR in → IR out (hfx/passes/ir_text.h), as MLIR tests its passes: the input graph is
// text, the pass runs, and the graph it leaves is compared with the expected text. Also: the text reads back
// what Graph::dump writes, and a wrong line is an error that quotes it.
#include <gtest/gtest.h>

#include "hfx/core/error.h"
#include "hfx/export/registry.h"
#include "hfx/ops/op_schema.h"
#include "hfx/passes/ir_text.h"
#include "hfx/passes/pass.h"

using namespace hfx;

namespace {

// The text without its indentation, for comparing with Graph::dump.
std::string dedent(const std::string& s) {
  std::string out;
  size_t at = 0;
  while (at < s.size()) {
    size_t nl = s.find('\n', at);
    std::string line = s.substr(at, nl == std::string::npos ? std::string::npos : nl - at);
    const size_t first = line.find_first_not_of(' ');
    line = first == std::string::npos ? "" : line.substr(first);
    if (!line.empty()) out += (line == "}" || line.rfind("graph(", 0) == 0 ? "" : "  ") + line + "\n";
    if (nl == std::string::npos) break;
    at = nl + 1;
  }
  return out;
}

std::string run(const std::string& in, const std::function<void(Graph&)>& pass) {
  std::unique_ptr<Graph> g = parse_graph(in);
  pass(*g);
  verify_graph(*g);
  return g->dump();
}

}  // namespace

TEST(IrText, ReadsBackWhatDumpWrites) {
  const std::string text = R"(
    graph(%x: f32[s0, 8], %ids: i64[2, s0]) {
      sym s0 in [1, 64]
      param %w: f32[8, 8]
      param %g: f32[8]
      param %one: f32[1, 8]
      %y: f32[s0, 8] = aten.linear(%x, %w)
      %n: f32[s0, 8] = hfx.rms_norm(%y, %g) {eps=1e-06, weight_offset=1}
      %s: f32[s0, 8] = aten._softmax(%n) {dim=-1}
      %t: f32[8, s0] = aten.permute(%s) {dims=[1, 0]}
      %v: f32[2*s0 + 1, 8] = aten.cat(%s, %s, %one) {dim=0}
      return (%t, %v)
    }
  )";
  const std::unique_ptr<Graph> g = parse_graph(text);
  verify_graph(*g);
  EXPECT_EQ(g->dump(), dedent(text));
  EXPECT_EQ(g->env().range_of("s0").max, 64);
  EXPECT_EQ(parse_graph(g->dump())->dump(), g->dump());  // a fixed point
}

// decompose_pass: hfx.rms_norm becomes the op table's reference decomposition,
// x · rsqrt(mean(x², -1) + eps) · (w + offset), under the node's name.
TEST(IrText, DecomposeRmsNorm) {
  const std::string out = run(R"(
    graph(%x: f32[s0, 8]) {
      sym s0 in [1, 64]
      param %g: f32[8]
      %n: f32[s0, 8] = hfx.rms_norm(%x, %g) {eps=1e-06, weight_offset=0}
      return (%n)
    }
  )",
                              [](Graph& g) { run_pass(g, decompose_pass({"hfx.rms_norm"})); });
  EXPECT_EQ(out, dedent(R"(
    graph(%x: f32[s0, 8]) {
      sym s0 in [1, 64]
      param %g: f32[8]
      %n/pow_1: f32[s0, 8] = aten.pow.Tensor_Scalar(%x) {exponent=2}
      %n/mean_1: f32[s0, 1] = aten.mean.dim(%n/pow_1) {dim=[-1], keepdim=true}
      %n/add_1: f32[s0, 1] = aten.add.Scalar(%n/mean_1) {other=1e-06}
      %n/rsqrt_1: f32[s0, 1] = aten.rsqrt(%n/add_1)
      %n/mul_1: f32[s0, 8] = aten.mul.Tensor(%x, %n/rsqrt_1)
      %n: f32[s0, 8] = aten.mul.Tensor(%n/mul_1, %g)
      return (%n)
    }
  )"));
  EXPECT_EQ(parse_graph(out)->dump(), out);  // the pass's output is valid text IR too
}

// Dead-code elimination drops the node nothing reads, and only it.
TEST(IrText, DeadCodeElimination) {
  const std::string out = run(R"(
    graph(%x: f32[4, 8]) {
      %a: f32[4, 8] = aten.relu(%x)
      %dead: f32[4, 8] = aten.exp(%x)
      %b: f32[4, 8] = aten.neg(%a)
      return (%b)
    }
  )",
                              [](Graph& g) { run_pass(g, dead_code_elimination_pass()); });
  EXPECT_EQ(out, dedent(R"(
    graph(%x: f32[4, 8]) {
      %a: f32[4, 8] = aten.relu(%x)
      %b: f32[4, 8] = aten.neg(%a)
      return (%b)
    }
  )"));
}

// The ExecuTorch stage-5 node fixes, as an export applies them: pow with exponent 2 becomes a multiply.
TEST(IrText, ExecutorchPowFix) {
  const std::string out = run(R"(
    graph(%x: f32[4, 8]) {
      %p: f32[4, 8] = aten.pow.Tensor_Scalar(%x) {exponent=2}
      return (%p)
    }
  )",
                              [](Graph& g) { apply_node_fixes("executorch", 5, g); });
  EXPECT_EQ(out.find("aten.pow"), std::string::npos) << out;
  EXPECT_NE(out.find("aten.mul.Tensor(%x, %x)"), std::string::npos) << out;
}

TEST(IrText, AWrongLineIsAnErrorThatQuotesIt) {
  auto fails = [](const std::string& text, const char* want) {
    try {
      parse_graph(text);
      ADD_FAILURE() << "expected an error containing '" << want << "'";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
    }
  };
  fails("graph(%x: f32[4]) {\n  %y: f32[5] = aten.relu(%x)\n  return (%y)\n}\n",
        "%y: f32[4] as the op table infers, got f32[5] at line 2");
  fails("graph(%x: f32[4]) {\n  %y: f32[4] = aten.relux(%x)\n}\n", "an op of the op table, got 'aten.relux'");
  fails("graph(%x: f32[4]) {\n  %y: f32[4] = aten.relu(%z)\n}\n", "got '%z'");
  fails("graph(%x: f32[n, 4]) {\n}\n", "declared symbols");
  fails("graph(%x: f32[4]) {\n  return (%x)\n", "closing '}' line");
}

// The ONNX stage-3 pass gqa_fusion (target ort) decides per attention and records it for the translations:
// the causal one over cat(past input, new) is fused and owns both concats; the non-causal one is not, with
// the reason the export will warn with. The graph's nodes are unchanged; target standard records nothing.
TEST(IrText, OnnxGqaFusionPassDecidesPerAttention) {
  const std::string text = R"(
    graph(%q: f32[1, 4, s0, 8], %k: f32[1, 2, s0, 8], %v: f32[1, 2, s0, 8], %pk: f32[1, 2, s1, 8], %pv: f32[1, 2, s1, 8]) {
      sym s0 in [1, 64]
      sym s1 in [0, 64]
      %k_all: f32[1, 2, s0 + s1, 8] = aten.cat(%pk, %k) {dim=2}
      %v_all: f32[1, 2, s0 + s1, 8] = aten.cat(%pv, %v) {dim=2}
      %o: f32[1, 4, s0, 8] = hfx.sdpa(%q, %k_all, %v_all) {causal=true, scale=0.35, softcap=0, window=0}
      %e: f32[1, 4, s0, 8] = hfx.sdpa(%q, %k, %v) {causal=false, scale=0.35, softcap=0, window=0}
      return (%o, %e, %k_all, %v_all)
    }
  )";
  for (const char* target : {"ort", "standard"}) {
    std::unique_ptr<Graph> g = parse_graph(text);
    const std::string before = g->dump();
    ExportContext ctx;
    ctx.onnx_target = target;
    std::vector<std::string> warnings;
    apply_program_fixes("onnx", 3, *g, ctx, warnings);
    EXPECT_EQ(g->dump(), before);
    const auto& m = ctx.gqa.decision;
    if (std::string(target) == "standard") {
      EXPECT_TRUE(m.empty() && ctx.gqa.cat_owner.empty());
      continue;
    }
    ASSERT_TRUE(m.count("o") && m.count("e"));
    EXPECT_EQ(m.at("o"), "");  // fused
    EXPECT_EQ(ctx.gqa.cat_owner.at("k_all"), "o");
    EXPECT_EQ(ctx.gqa.cat_owner.at("v_all"), "o");
    EXPECT_NE(m.at("e").find("non-causal"), std::string::npos) << m.at("e");
  }
}
