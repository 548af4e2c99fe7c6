// Every registered pass has an IR-in / IR-out text test (issue 39, Deliver 4): each patch, node fix and
// program fix of the registries has a case file tests/passes/cases/<backend>.<name>.ir —
//
//   # pass: <backend> <kind> <name>        (kind: patch | node_fix | program_fix; a patch is named by its
//   path) # context: onnx_target=ort             (optional: the facts the program fix reads) graph(...) { ...
//   }                      the IR in
//   ---
//   graph(...) { ... }                      the IR the entry alone must leave
//
// The runner applies that one entry (a patch: each node of its path re-traced through the patched handler,
// as capture would record it; a node fix: over every node; a program fix: with the context), then
//  - compares Graph::dump with the expected IR, and
//  - runs the graph before and after on the same random inputs with the op table's kernels, which must agree
//    (1e-5 relative to the largest output): the rewrite is checked against the ops' own math, not only
//    against the text it printed once.
// A registry entry without a case fails EveryRegisteredPassHasACase, naming it. HFX_WRITE_PASS_CASES=1
// rewrites the expected IR of every case from what the entry does now (review the diff).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include "hfx/core/error.h"
#include "hfx/export/registry.h"
#include "hfx/ops/op_schema.h"
#include "hfx/passes/ir_text.h"
#include "hfx/passes/pass.h"

namespace {

namespace fs = std::filesystem;
using namespace hfx;

fs::path cases_dir() { return fs::path(HFX_SOURCE_DIR) / "tests" / "passes" / "cases"; }

struct Case {
  fs::path file;
  std::string backend, kind, name, context, in, want;
  int stage = 0;            ///< for a patch: its stage, where a path has patches at two stages
  double tolerance = 1e-5;  ///< relative to the largest output; "# tolerance:" for a dtype pass
};

Case read_case(const fs::path& file) {
  std::ifstream f(file);
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string text = ss.str();
  Case c;
  c.file = file;
  std::istringstream lines(text);
  std::string line, *part = &c.in;
  while (std::getline(lines, line)) {
    if (line.rfind("# pass: ", 0) == 0) {
      std::istringstream h(line.substr(8));
      h >> c.backend >> c.kind >> c.name >> c.stage;
    } else if (line.rfind("# tolerance: ", 0) == 0) {
      c.tolerance = std::stod(line.substr(13));
    } else if (line.rfind("# context: ", 0) == 0) {
      c.context = line.substr(11);
    } else if (line.rfind("#", 0) == 0) {
      continue;
    } else if (line == "---") {
      part = &c.want;
    } else {
      *part += line + "\n";
    }
  }
  if (c.backend.empty() || c.want.empty())
    HFX_THROW("pass cases",
              "expected '# pass: BACKEND KIND NAME', the IR, '---' and the expected IR in {}, got "
              "no {}",
              file.string(), c.backend.empty() ? "header" : "expected IR");
  return c;
}

std::vector<Case> all_cases() {
  std::vector<Case> out;
  for (const auto& e : fs::directory_iterator(cases_dir()))
    if (e.path().extension() == ".ir") out.push_back(read_case(e.path()));
  std::sort(out.begin(), out.end(), [](const Case& a, const Case& b) { return a.file < b.file; });
  return out;
}

void set_context(ExportContext& ctx, const std::string& context) {
  std::istringstream in(context);
  std::string kv;
  while (in >> kv) {
    const auto eq = kv.find('=');
    const std::string k = kv.substr(0, eq), v = kv.substr(eq + 1);
    if (k == "onnx_target")
      ctx.onnx_target = v;
    else if (k == "weight_dtype")
      ctx.weight_dtype = dtype_from_name(v);
    else if (k == "constant_dtype")
      ctx.constant_dtype = dtype_from_name(v);
    else
      HFX_THROW("pass cases", "expected a context fact (onnx_target, weight_dtype, constant_dtype), got '{}'",
                k);
  }
}

// Applies the one registry entry the case names.
void apply(const Case& c, Graph& g) {
  ExportContext ctx;
  set_context(ctx, c.context);
  if (c.kind == "node_fix") {
    for (const NodeFixEntry& e : node_fix_registry()) {
      if (e.backend != c.backend || e.name != c.name) continue;
      std::vector<Node*> nodes;
      for (const auto& n : g.nodes()) nodes.push_back(n.get());
      for (Node* n : nodes) e.fix(g, *n);
      g.eliminate_dead_code();
      return;
    }
  } else if (c.kind == "program_fix") {
    for (const ProgramFixEntry& e : program_fix_registry()) {
      if (e.backend != c.backend || e.name != c.name) continue;
      std::vector<std::string> warnings;
      e.fix(g, ctx, warnings);
      return;
    }
  } else if (c.kind == "patch") {
    for (const PatchEntry& e : patch_registry()) {
      if (e.backend != c.backend || (c.stage && e.stage != c.stage) ||
          std::find(e.paths.begin(), e.paths.end(), c.name) == e.paths.end())
        continue;
      auto saved =
          ctx.patches.swap(c.name, std::make_unique<OpHandler>(e.factory(ctx.patches.active(c.name), ctx)));
      std::vector<Node*> todo;
      for (const auto& n : g.nodes())
        if (n->op == c.name) todo.push_back(n.get());
      for (Node* n : todo) {
        const Attrs attrs = n->attrs;
        const std::string op = n->op;
        rewrite_node(
            g, n, [&](TraceBuilder& tb, const std::vector<Var>& in) { return tb.call(op, in, attrs); },
            &ctx.patches);
      }
      ctx.patches.swap(c.name, std::move(saved));
      g.eliminate_dead_code();
      return;
    }
  }
  HFX_THROW("pass cases", "expected a registered {} '{}' of {}, got none ({})", c.kind, c.name, c.backend,
            c.file.filename().string());
}

// Runs `g` on `inputs` with the op table's kernels; returns its outputs by name.
std::map<std::string, Tensor> run(const Graph& g, const std::map<std::string, Tensor>& inputs) {
  std::map<const Value*, Tensor> v;
  for (const Value* in : g.inputs()) v[in] = inputs.at(in->name);
  for (const Value* p : g.params()) v[p] = p->data;
  for (const Value* p : g.consts()) v[p] = p->data;
  for (const auto& n : g.nodes()) {
    const OpSchema& s = op_schema(n->op);
    std::vector<Tensor> in;
    for (const Value* x : n->inputs) in.push_back(x ? v.at(x) : Tensor());
    std::vector<Tensor> out = s.kernel(in, normalize_attrs(s, n->attrs));
    for (size_t i = 0; i < n->outputs.size(); i++) v[n->outputs[i]] = out.at(i);
  }
  std::map<std::string, Tensor> out;
  for (const Value* o : g.outputs()) out[o->name] = v.at(o);
  return out;
}

// Random inputs of the graph's input types, each symbol of their shapes bound to 3 (within its range).
std::map<std::string, Tensor> random_inputs(const Graph& g) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::map<std::string, Tensor> out;
  for (const Value* in : g.inputs()) {
    std::vector<int64_t> shape;
    for (const Sym& d : in->type.shape) {
      std::map<std::string, int64_t> binding;
      for (const std::string& name : d.free_symbols()) {
        const SymRange r = g.env().range_of(name);
        binding[name] = std::max<int64_t>(r.min, r.bounded() ? std::min<int64_t>(3, r.max) : 3);
      }
      shape.push_back(d.eval(binding));
    }
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    std::vector<float> data(static_cast<size_t>(n));
    for (float& x : data) x = dtype_is_float(in->type.dtype) ? normal(rng) : static_cast<float>(rng() % 4);
    out[in->name] = Tensor::from_floats(shape, data).to(in->type.dtype);
  }
  return out;
}

TEST(PassCases, EveryRegisteredPassHasACase) {
  std::set<std::string> have;
  for (const Case& c : all_cases())
    have.insert(c.backend + " " + c.kind + " " + c.name +
                (c.kind == "patch" ? " " + std::to_string(c.stage) : ""));
  int checked = 0;
  auto need = [&](const std::string& backend, const char* kind, const std::string& name,
                  const std::string& at) {
    if (backend != "onnx" && backend != "executorch" && backend != "dynamo") return;  // unit tests' own
    checked++;
    EXPECT_TRUE(have.count(backend + " " + kind + " " + name + at))
        << "no IR case for " << backend << " " << kind << " '" << name << at << "': add tests/passes/cases/"
        << backend << "." << name << ".ir with '# pass: " << backend << " " << kind << " " << name << at
        << "'";
  };
  for (const PatchEntry& e : patch_registry())
    for (const std::string& p : e.paths) need(e.backend, "patch", p, " " + std::to_string(e.stage));
  for (const NodeFixEntry& e : node_fix_registry()) need(e.backend, "node_fix", e.name, "");
  for (const ProgramFixEntry& e : program_fix_registry()) need(e.backend, "program_fix", e.name, "");
  EXPECT_GT(checked, 15);
}

TEST(PassCases, EachPassLeavesItsExpectedIrAndKeepsTheNumbers) {
  const bool write = std::getenv("HFX_WRITE_PASS_CASES") != nullptr;
  int ran = 0;
  for (const Case& c : all_cases()) {
    SCOPED_TRACE(c.file.filename().string());
    std::unique_ptr<Graph> before = parse_graph(c.in), after = parse_graph(c.in);
    apply(c, *after);
    verify_graph(*after);
    const std::string got = after->dump();
    if (write) {
      std::ifstream f(c.file);
      std::stringstream ss;
      ss << f.rdbuf();
      std::string text = ss.str();
      text = text.substr(0, text.find("\n---\n") + 5) + got;
      std::ofstream(c.file) << text;
    } else {
      EXPECT_EQ(got, parse_graph(c.want)->dump())
          << "the IR the pass left (HFX_WRITE_PASS_CASES=1 rewrites it)";
    }
    const auto inputs = random_inputs(*before);
    const auto want = run(*before, inputs), have = run(*after, inputs);
    for (const auto& [name, t] : want) {
      ASSERT_TRUE(have.count(name)) << name;
      ASSERT_EQ(t.shape(), have.at(name).shape()) << name;
      const std::vector<float> a = t.to_floats(), b = have.at(name).to_floats();
      double scale = 0, diff = 0;
      for (size_t i = 0; i < a.size(); i++) {
        scale = std::max(scale, std::abs(static_cast<double>(a[i])));
        diff = std::max(diff, std::abs(static_cast<double>(a[i]) - static_cast<double>(b[i])));
      }
      EXPECT_LE(diff, c.tolerance * std::max(1.0, scale)) << name << ": the rewrite changed the numbers";
    }
    ran++;
  }
  EXPECT_GT(ran, 15);
}

// The record the skip_rms_norm_fusion case leaves (its graph is unchanged): what it fused and absorbed.
TEST(PassCases, SkipRmsNormFusionRecordsWhatItFuses) {
  for (const Case& c : all_cases()) {
    if (c.name != "skip_rms_norm_fusion") continue;
    std::unique_ptr<Graph> g = parse_graph(c.in);
    for (const char* target : {"ort", "standard"}) {
      ExportContext ctx;
      ctx.onnx_target = target;
      std::vector<std::string> warnings;
      for (const ProgramFixEntry& e : program_fix_registry())
        if (e.name == c.name) e.fix(*g, ctx, warnings);
      if (std::string(target) == "standard") {
        EXPECT_TRUE(ctx.skip_rms_norm.fused.empty() && ctx.skip_rms_norm.absorbed.empty());
        continue;
      }
      EXPECT_EQ(ctx.skip_rms_norm.fused, (std::set<std::string>{"n1", "n2"}));
      EXPECT_EQ(ctx.skip_rms_norm.absorbed, (std::set<std::string>{"h"}));
    }
    return;
  }
  FAIL() << "no skip_rms_norm_fusion case";
}

// Negative controls: the runner's comparisons can fail — an expected IR that differs is caught, and so is a
// rewrite that changes the numbers (neg(x) in place of relu(x)).
TEST(PassCases, AWrongExpectationOrAWrongRewriteIsCaught) {
  const std::string in = "graph(%x: f32[2, 3]) {\n  %y: f32[2, 3] = aten.relu(%x)\n  return (%y)\n}\n";
  std::unique_ptr<Graph> a = parse_graph(in);
  std::unique_ptr<Graph> b =
      parse_graph("graph(%x: f32[2, 3]) {\n  %y: f32[2, 3] = aten.neg(%x)\n  return (%y)\n}\n");
  EXPECT_NE(a->dump(), b->dump());
  const auto inputs = random_inputs(*a);
  const std::vector<float> ra = run(*a, inputs).at("y").to_floats(), rb = run(*b, inputs).at("y").to_floats();
  double diff = 0;
  for (size_t i = 0; i < ra.size(); i++) diff = std::max(diff, std::abs(double(ra[i]) - double(rb[i])));
  EXPECT_GT(diff, 1e-3);
}

}  // namespace
