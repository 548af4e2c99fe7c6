// The ONNX exporter: capture → patches and fixes → translations → IR fixes → files, in five numbered
// stages (docs/ describe each). Every component (prefill, decode, the merged `model`) runs the same
// stages on its own capture and is written to OUT/onnx/<component>.onnx, with its weights embedded or
// streamed to external data: export_for_generation writes the weights once, to OUT/onnx/model.onnx_data,
// which prefill.onnx, decode.onnx and model.onnx all reference (locations are relative to the graph
// file); export_model streams one component's weights to <component>.onnx_data.
//
// HFX_EXPORT_TRACE=1 prints, per component and phase, the wall time and the process's peak resident
// memory (VmHWM) to stderr.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>

#include "export/onnx/lowering.h"
#include "export/onnx/moe_fusion.h"
#include "hfx/core/error.h"
#include "hfx/export/exporter.h"
#include "hfx/export/registry.h"
#include "hfx/ops/op_schema.h"
#include "hfx/passes/pass.h"

namespace hfx {

namespace {

namespace fs = std::filesystem;
using namespace onnx_export;

const OnnxConfig& as_onnx(const ExportConfig& c) {
  auto* o = dynamic_cast<const OnnxConfig*>(&c);
  if (!o) HFX_THROW("export", "expected an onnx config for the onnx exporter, got format '{}'", c.format);
  return *o;
}

// HFX_EXPORT_TRACE=1: per-phase wall time and peak RSS.
class Trace {
 public:
  explicit Trace(std::string comp) : comp_(std::move(comp)), on_(enabled()), t0_(Clock::now()) {}
  static bool enabled() {
    static const bool on = [] {
      const char* v = std::getenv("HFX_EXPORT_TRACE");
      return v && *v && std::string(v) != "0";
    }();
    return on;
  }
  void phase(const char* what) {
    if (!on_) return;
    auto now = Clock::now();
    std::fprintf(stderr, "hfx: trace: %-8s %-12s %8.3f s  VmRSS %7.1f MiB  VmHWM %7.1f MiB\n", comp_.c_str(), what,
                 std::chrono::duration<double>(now - t0_).count(), status_kib("VmRSS:") / 1024.0,
                 status_kib("VmHWM:") / 1024.0);
    t0_ = now;
  }

 private:
  using Clock = std::chrono::steady_clock;
  static long status_kib(const char* key) {
    std::ifstream f("/proc/self/status");
    std::string line;
    while (std::getline(f, line))
      if (line.rfind(key, 0) == 0) return std::atol(line.c_str() + std::strlen(key));
    return 0;
  }
  std::string comp_;
  bool on_;
  Clock::time_point t0_;
};

std::string describe_inputs(const Graph& g) {
  std::string s;
  for (const Value* v : g.inputs()) s += (s.empty() ? "" : ", ") + v->name + ": " + v->type.str();
  return s;
}

class OnnxExporter : public Exporter {
 public:
  std::string format() const override { return "onnx"; }

  ExportResult export_model(const Model& model, const CaptureOptions& opts, const ExportConfig& config,
                            const std::string& out_dir) override {
    ExportResult r;
    r.out_dir = out_dir;
    const OnnxConfig& oc = as_onnx(config);
    for (const ProgramSpec& p : export_programs(model, merge_config(opts, oc), false))
      export_component(model, p, oc, out_dir, r, nullptr);
    return r;
  }

  ExportResult export_for_generation(const Model& model, const CaptureOptions& opts,
                                     const std::map<std::string, const ExportConfig*>& configs,
                                     const std::string& out_dir) override {
    if (configs.empty()) HFX_THROW("export", "expected at least one onnx config for export_for_generation, got none");
    ExportResult r;
    r.out_dir = out_dir;
    // One external data file for every component that uses external data: the weights are written once.
    std::unique_ptr<ExternalDataFile> data;
    for (const auto& [spec, c] : generation_plan(model, opts, configs)) {
      const OnnxConfig& oc = as_onnx(*c);
      if (oc.external_data && !data)
        data = std::make_unique<ExternalDataFile>((fs::path(out_dir) / "onnx" / "model.onnx_data").string(), &model.weights());
      export_component(model, spec, oc, out_dir, r, oc.external_data ? data.get() : nullptr);
    }
    if (data) {
      Trace trace("model");
      data->finish();
      r.files.push_back({"model", "onnx/model.onnx_data", "weights"});
      trace.phase("data-fsync");
    }
    return r;
  }

 private:
  void export_component(const Model& model, const ProgramSpec& spec, const OnnxConfig& cfg, const std::string& out_dir,
                        ExportResult& r, ExternalDataFile* shared_data) {
    const std::string& arch = model.config().model_type;
    const std::string comp = spec.name;
    check_export_skip("onnx", arch);
    ExportContext ctx;  // this component's patch table: nothing shared with other exports
    std::vector<std::string> warnings;
    CapturedProgram prog;
    Trace trace(comp);

    // ── Stage 1: Torch patches ──
    // Patches of stage 1 swap op handlers while the model's own code runs on symbolic inputs.
    {
      PatchScope patches(ctx, "onnx", 1);
      prog = capture_program(model, spec, cfg.prefer_deferred_runtime_asserts_over_guards, &ctx.patches);
    }
    trace.phase("capture");
    prog.component = comp;
    Graph& g = *prog.graph;
    try {
      // ── Stage 2: ONNX patches ──
      // Composite ops without a translation are decomposed through the op table; stage-2 patches are
      // active meanwhile (a decomposition runs through a TraceBuilder), and stage-2 node fixes re-run
      // over the nodes the decompositions produced.
      {
        PatchScope patches(ctx, "onnx", 2);
        std::vector<std::string> decompose;
        const auto& table = onnx_translation_table();
        for (const auto& n : g.nodes())
          if (n->schema().composite() && !table.count(n->op)) decompose.push_back(n->op);
        if (!decompose.empty()) run_pass(g, decompose_pass(decompose, &ctx.patches));
        apply_node_fixes("onnx", 2, g);
      }

      // ── Stage 3: FX node fixes ──
      g.metadata()[kOnnxTargetKey] = cfg.target;  // fixes that depend on the target read it here
      apply_node_fixes("onnx", 3, g);
      apply_program_fixes("onnx", 3, g, warnings);
      std::string why;
      if (cfg.optimize && !optimize_disabled("onnx", arch, &why)) run_pass(g, dead_code_elimination_pass());
      else if (!why.empty()) warnings.push_back("optimization disabled for " + arch + ": " + why);
      trace.phase("fixes");

      // ── Stage 4: ONNX translations ──
      LowerOptions lo;
      lo.opset = cfg.opset;
      lo.target = cfg.target;
      lo.graph_name = arch + "_" + comp;
      lo.contract = prog.contract;
      lo.guards = prog.guards;
      lo.metadata = {{"hfx.component", comp}, {"hfx.model_type", arch}, {"hfx.opset", std::to_string(cfg.opset)}};
      LoweredModel lm = lower_graph(g, lo);
      trace.phase("lower");

      // ── Stage 5: ONNX IR fixes ──
      apply_onnx_ir_fixes(lm.model, lm.warnings);
      trace.phase("ir-fixes");

      std::string rel = "onnx/" + comp + ".onnx";
      fs::path path = fs::path(out_dir) / rel;
      if (shared_data) {
        write_onnx_model(lm, path.string(), shared_data);
      } else {
        write_onnx_model(lm, path.string(), cfg.external_data, &model.weights());
        if (cfg.external_data) r.files.push_back({comp, rel + "_data", "weights"});
      }
      r.files.push_back({comp, rel, "graph"});
      trace.phase("write");
      for (auto& w : lm.warnings) warnings.push_back(std::move(w));
    } catch (const Error& e) {
      HFX_THROW("export", "onnx export of component '{}' of architecture '{}' with inputs ({}) failed: {}", comp, arch,
                describe_inputs(g), e.what());
    }
    for (auto& w : warnings) r.warnings.push_back(comp + ": " + w);
    r.programs.push_back(std::move(prog));
  }
};

}  // namespace

std::unique_ptr<Exporter> make_onnx_exporter() { return std::make_unique<OnnxExporter>(); }

/// Registry lines of the ONNX backend's own tables (translations at stage 4, IR fixes at stage 5).
std::vector<RegistryLine> onnx_registry_lines() {
  std::vector<RegistryLine> out;
  for (const auto& [op, e] : onnx_translation_table()) out.push_back({"onnx-translation", "onnx", 4, op, e.emits});
  for (const auto& f : onnx_ir_fixes()) out.push_back({"onnx-ir-fix", "onnx", 5, f.name, f.reason});
  return out;
}

/// The ONNX backend's patches and fixes (stages 1–3). None are needed today: the translations handle
/// every op of the table directly. Add entries here with their stage and reason.
void register_onnx_entries() {
  auto& pf = program_fix_registry();
  pf.push_back({"onnx", 3, "moe_pack_for_ort", fix_moe_pack_for_ort,
                "target=ort: com.microsoft.MoE (ONNX Runtime 1.30 CPU) computes hfx.moe with act silu "
                "exactly (softmax → "
                "top-k → optional renormalization; SwiGLU with alpha 1, beta 0 = silu(gate)·up) but wants "
                "the experts as one "
                "fc1 [E, 2I, H] with gate and up rows interleaved (swiglu_fusion=1; FC3 is not implemented "
                "on CPU) and fc2 "
                "[E, H, I]: the weights are packed into those two parameters. Other activations are left to "
                "moe_dense_experts."});
  pf.push_back({"onnx", 3, "moe_dense_experts", fix_moe_dense_experts,
                "ai.onnx has no mixture-of-experts op and no grouped matmul: hfx.moe becomes the op table's "
                "dense form (top-k "
                "by repeated ArgMax into a dense routing matrix, every expert on every token, weighted sum), "
                "no data-dependent "
                "shapes. Applies to every hfx.moe not packed by moe_pack_for_ort (target standard; ort with "
                "an activation "
                "other than silu). Remove for a target with a fused MoE."});
}

}  // namespace hfx
