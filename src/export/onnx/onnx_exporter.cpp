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
#include <utility>

#include "export/onnx/gqa_fusion.h"
#include "export/onnx/lowering.h"
#include "export/onnx/moe_fusion.h"
#include "export/onnx/norm_fusion.h"
#include "export/onnx/weight_layout.h"
#include "hfx/core/error.h"
#include "hfx/export/exporter.h"
#include "hfx/export/onnx.h"
#include "hfx/export/registry.h"
#include "hfx/io/safetensors.h"
#include "hfx/models/quantize_model.h"
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
    std::fprintf(stderr, "hfx: trace: %-8s %-12s %8.3f s  VmRSS %7.1f MiB  VmHWM %7.1f MiB\n", comp_.c_str(),
                 what, std::chrono::duration<double>(now - t0_).count(), status_kib("VmRSS:") / 1024.0,
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

// Bytes of the floating weights as the export stores them (others as they are).
uint64_t stored_weight_bytes(const Model& model, const OnnxConfig& c) {
  const size_t wide = dtype_size(c.weight_dtype(model.config().dtype));
  uint64_t total = 0;
  const io::WeightStore& ws = model.weights();
  for (const std::string& name : ws.names()) {
    const io::TensorInfo& ti = ws.info(name);
    uint64_t numel = 1;
    for (int64_t d : ti.shape) numel *= static_cast<uint64_t>(d);
    total += numel * (dtype_is_float(ti.dtype) ? wide : dtype_size(ti.dtype));
  }
  return total;
}

// A protobuf message cannot exceed 2 GiB; graphs and attributes take some of it, hence the headroom.
constexpr uint64_t kEmbeddedLimit = (uint64_t{2} << 30) - (uint64_t{128} << 20);

bool needs_external_data(const Model& model, const OnnxConfig& c) {
  return stored_weight_bytes(model, c) > kEmbeddedLimit;
}

std::string auto_external_data_note(const Model& model, const OnnxConfig& c) {
  return fmt::format(
      "weights in onnx/*.onnx_data (external data chosen automatically): {:.2f} GB of {} weights exceed "
      "the 2 GB protobuf limit",
      static_cast<double>(stored_weight_bytes(model, c)) / 1e9,
      export_dtype_name(c.weight_dtype(model.config().dtype)));
}

std::string describe_inputs(const Graph& g) {
  std::string s;
  for (const Value* v : g.inputs()) s += (s.empty() ? "" : ", ") + v->name + ": " + v->type.str();
  return s;
}

// Stages onnx_patches and fx_fixes: composite ops without a translation decomposed through the op table
// (the stage's patches active meanwhile: a decomposition runs through a TraceBuilder), its node fixes re-run
// over the nodes the decompositions produced; then the fx_fixes node and program fixes, and dead-code
// elimination unless disabled for the architecture. The driver verifies the graph after each stage.
void fix_stages(ExportContext& ctx, Graph& g, const OnnxConfig& cfg, const std::string& arch,
                std::vector<std::string>& warnings) {
  // ── Stage 2: ONNX patches ──
  run_stage("onnx", "onnx_patches", &g, [&](int stage) {
    PatchScope patches(ctx, "onnx", stage);
    std::vector<std::string> decompose;
    const auto& table = onnx_translation_table();
    for (const auto& n : g.nodes())
      if (op_schema(n->op).composite() && !table.count(n->op)) decompose.push_back(n->op);
    if (!decompose.empty()) run_pass(g, decompose_pass(decompose, &ctx.patches));
    apply_node_fixes("onnx", stage, g);
  });

  // ── Stage 3: FX node fixes ──
  run_stage("onnx", "fx_fixes", &g, [&](int stage) {
    ctx.onnx_target = cfg.target;  // the fact this stage declares it sets (declared_stages)
    apply_node_fixes("onnx", stage, g);
    apply_program_fixes("onnx", stage, g, ctx, warnings);
    std::string why;
    if (cfg.optimize && !optimize_disabled("onnx", arch, &why))
      run_pass(g, dead_code_elimination_pass());
    else if (!why.empty())
      warnings.push_back("optimization disabled for " + arch + ": " + why);
  });
}

// Stage 4's options for one captured program: opset, target, activations (refused for MoE), contract,
// guards, weight dtype, zero-default inputs and metadata.
LowerOptions lower_options(const Model& model, const ProgramSpec& spec, const OnnxConfig& cfg,
                           const CapturedProgram& prog, const ExportContext& ctx) {
  const std::string& arch = model.config().model_type;
  const Graph& g = *prog.graph;
  LowerOptions lo;
  lo.opset = cfg.opset;
  lo.target = cfg.target;
  lo.gqa = ctx.onnx_target == "ort" ? &ctx.gqa : nullptr;
  lo.skip_rms_norm = ctx.onnx_target == "ort" ? &ctx.skip_rms_norm : nullptr;
  lo.int8_activations = cfg.quantize.int8_activations;
  if (lo.int8_activations)
    for (const auto& n : g.nodes())
      if (n->op == "hfx.moe")
        HFX_THROW("export",
                  "expected a dense decoder for --activations int8, got {} with a mixture-of-experts block "
                  "('{}'): int8 activations can switch a router's expert choice (the tiny mixtral, int4: "
                  "logits off "
                  "by 0.98, outside verify's 'int8-activations' bounds); export it with --activations f32",
                  arch, n->name);
  lo.graph_name = arch + "_" + prog.component;
  lo.contract = prog.contract;
  lo.weight_dtype = cfg.weight_dtype(model.config().dtype);
  lo.guards = prog.guards;
  for (const InputDecl& d : model.component(spec.component).inputs)
    if (d.zero_default && g.find_input(d.name)) lo.zero_default_inputs.push_back(d.name);
  lo.metadata_props = {
      {"hfx.component", prog.component}, {"hfx.model_type", arch}, {"hfx.opset", std::to_string(cfg.opset)}};
  return lo;
}

class OnnxExporter : public Exporter {
 public:
  std::string format() const override { return "onnx"; }

  ExportResult export_model(const Model& model0, const CaptureOptions& opts, const ExportConfig& config,
                            const std::string& out_dir) override {
    ExportResult r;
    r.out_dir = out_dir;
    OnnxConfig oc = as_onnx(config);
    std::unique_ptr<Model> quantized = quant::quantize_for_export(model0, oc.quantize);
    const Model& model = quantized ? *quantized : model0;
    if (!oc.external_data && needs_external_data(model, oc)) {
      oc.external_data = true;
      r.warnings.push_back(auto_external_data_note(model, oc));
    }
    const std::vector<ProgramSpec> programs = export_programs(model, merge_config(opts, oc), false);
    written_ = 0;
    contrib_nodes_ = 0;
    advice_.clear();
    data_.clear();
    for (size_t i = 0; i < programs.size(); i++) {
      const Slot at{i, programs.size()};
      Prepared p = prepare_component(model, programs[i], oc);
      finish_component(model, programs[i], oc, out_dir, r, nullptr, at, p, nullptr);
    }
    check_target_applied(model, oc.target == "ort");
    write_advice(out_dir, r);
    return r;
  }

  ExportResult export_for_generation(const Model& model0, const CaptureOptions& opts,
                                     const std::map<std::string, const ExportConfig*>& configs,
                                     const std::string& out_dir) override {
    if (configs.empty())
      HFX_THROW("export", "expected at least one onnx config for export_for_generation, got none");
    // One model for every program: the components must agree on quantization.
    std::unique_ptr<Model> quantized = quant::quantize_for_export(model0, common_quantize(configs));
    const Model& model = quantized ? *quantized : model0;
    ExportResult r;
    r.out_dir = out_dir;
    bool noted = false;
    const auto plan = generation_plan(model, opts, configs);
    written_ = 0;
    contrib_nodes_ = 0;
    advice_.clear();
    data_.clear();
    bool ort = false;
    std::map<std::string, int> group_size;  // data file → programs that write to it
    for (const auto& [spec, cfg] : plan) group_size[data_group(spec.name)]++;
    std::vector<OnnxConfig> ocs;
    std::vector<Prepared> prepared;
    for (size_t i = 0; i < plan.size(); i++) {
      OnnxConfig oc = as_onnx(*plan[i].second);
      ort |= oc.target == "ort";
      if (!oc.external_data && needs_external_data(model, oc)) {
        oc.external_data = true;
        if (!std::exchange(noted, true)) r.warnings.push_back(auto_external_data_note(model, oc));
      }
      // Programs that read the same weights: one copy of them, in their group's file, whatever their size
      // (embedded, each graph would carry its own).
      if (group_size[data_group(plan[i].first.name)] > 1) oc.external_data = true;
      prepared.push_back(prepare_component(model, plan[i].first, oc));
      ocs.push_back(std::move(oc));
    }
    // The layouts of the weights the programs share, decided over all of them: one layout, one copy.
    std::vector<const Graph*> graphs;
    for (const Prepared& p : prepared) graphs.push_back(p.prog.graph.get());
    const std::set<std::string> transpose = params_to_transpose(graphs);
    for (size_t i = 0; i < plan.size(); i++) {
      ExternalDataFile* data = nullptr;
      if (ocs[i].external_data) {
        const std::string group = data_group(plan[i].first.name);
        auto& f = data_[group];
        if (!f)
          f = std::make_unique<ExternalDataFile>(
              (fs::path(out_dir) / "onnx" / (group + ".onnx_data")).string(), &model.weights());
        data = f.get();
      }
      finish_component(model, plan[i].first, ocs[i], out_dir, r, data, {i, plan.size()}, prepared[i],
                       plan.size() > 1 ? &transpose : nullptr);
    }
    check_target_applied(model, ort);
    for (auto& [group, f] : data_) {
      Trace trace(group);
      f->finish();
      r.files.push_back({group, "onnx/" + group + ".onnx_data", "weights", f->sha256(), f->size()});
      trace.phase("data-fsync");
    }
    write_advice(out_dir, r);
    data_.clear();
    return r;
  }

 private:
  // target ort means ONNX Runtime's fused com.microsoft operators; where none applies to any program (an
  // encoder-only model: bidirectional attention, LayerNorm, no quantization) the graphs equal target
  // standard's, and accepting the flag would label an artifact with something it does not have. The
  // export folder is staged, so throwing here leaves nothing behind.
  void check_target_applied(const Model& model, bool ort) const {
    if (ort && contrib_nodes_ == 0)
      HFX_THROW("export",
                "expected --target ort to use ONNX Runtime's fused operators (com.microsoft: "
                "GroupQueryAttention, SkipSimplifiedLayerNormalization, MatMulNBits, MoE), got none in any "
                "program of {} ({}): its graphs would equal --target standard's; use --target standard (or "
                "--quantize, which ort computes with MatMulNBits)",
                model.config().model_type, structure_name(model.structure()));
  }

  // The progress bar (report()): which component of how many, and its step k of 4 (capture, fixes, lower,
  // write) — steps of the bar, not the declared stages (declared_stages) the driver runs.
  struct Slot {
    size_t index = 0, count = 1;
  };
  void progress(const std::string& comp, Slot at, int k, const char* name, uint64_t bytes) const {
    report({comp, name, at.index, at.count, k, 4, bytes});
  }
  static uint64_t file_bytes(const fs::path& p) {
    std::error_code ec;
    const auto n = fs::file_size(p, ec);
    return ec ? 0 : static_cast<uint64_t>(n);
  }

  // One program captured and fixed (stages 1-3), waiting to be lowered and written: an export folder's
  // programs are all prepared before any is lowered, so that the layouts they share are decided over all of
  // them (LowerOptions::transpose_params). Capture and fixes take milliseconds (HFX_EXPORT_TRACE): the
  // progress bar reports them with the program's lowering, so it moves through the programs in order.
  struct Prepared {
    std::unique_ptr<ExportContext> ctx = std::make_unique<ExportContext>();  // this program's patch table
    CapturedProgram prog;
    std::vector<std::string> warnings;
  };

  static std::string failure(const Model& model, const std::string& comp, const Graph& g, const Error& e) {
    return fmt::format("onnx export of component '{}' of architecture '{}' with inputs ({}) failed: {}", comp,
                       model.config().model_type, describe_inputs(g), e.what());
  }

  Prepared prepare_component(const Model& model, const ProgramSpec& spec, const OnnxConfig& cfg) {
    const std::string& arch = model.config().model_type;
    check_export_skip("onnx", arch);
    Prepared p;
    Trace trace(spec.name);
    // ── Stage 1: Torch patches ──
    // Patches of stage 1 swap op handlers while the model's own code runs on symbolic inputs.
    run_stage("onnx", "torch_patches", nullptr, [&](int stage) {
      PatchScope patches(*p.ctx, "onnx", stage);
      p.prog = capture_program(model, spec, cfg.prefer_deferred_runtime_asserts_over_guards, &p.ctx->patches);
    });
    trace.phase("capture");
    p.prog.component = spec.name;
    try {
      fix_stages(*p.ctx, *p.prog.graph, cfg, arch, p.warnings);
      trace.phase("fixes");
    } catch (const Error& e) {
      HFX_THROW("export", "{}", failure(model, spec.name, *p.prog.graph, e));
    }
    return p;
  }

  void finish_component(const Model& model, const ProgramSpec& spec, const OnnxConfig& cfg,
                        const std::string& out_dir, ExportResult& r, ExternalDataFile* shared_data, Slot at,
                        Prepared& p, const std::set<std::string>* transpose_params) {
    const std::string comp = spec.name;
    Trace trace(comp);
    const uint64_t shared_before = data_bytes();
    Graph& g = *p.prog.graph;
    progress(comp, at, 0, "capture", written_ + shared_before);
    progress(comp, at, 1, "fixes", written_ + shared_before);
    try {
      progress(comp, at, 2, "lower", written_ + shared_before);
      // ── Stage 4: ONNX translations ──
      LoweredModel lm;
      LowerOptions lo = lower_options(model, spec, cfg, p.prog, *p.ctx);
      lo.transpose_params = transpose_params;
      run_stage("onnx", "translations", nullptr, [&](int) { lm = lower_graph(g, lo); });
      trace.phase("lower");

      // ── Stage 5: ONNX IR fixes ──
      run_stage("onnx", "ir_fixes", nullptr, [&](int) { apply_onnx_ir_fixes(lm.model, lm.warnings); });
      trace.phase("ir-fixes");
      std::map<std::string, int64_t> op_counts;
      for (const auto& n : lm.model.graph().node()) {
        contrib_nodes_ += n.domain() == kContribDomain ? 1 : 0;
        op_counts[n.op_type()]++;
      }
      advice_[comp] = advise_ort_session(op_counts);

      progress(comp, at, 3, "write", written_ + shared_before);
      // ── Stage 6: write (the emitter) ──
      run_stage("onnx", "write", nullptr,
                [&](int) { write_component(model, comp, cfg, out_dir, lm, r, shared_data, at); });
      trace.phase("write");
      for (auto& w : lm.warnings) p.warnings.push_back(std::move(w));
    } catch (const Error& e) {
      HFX_THROW("export", "{}", failure(model, comp, g, e));
    }
    for (auto& w : p.warnings) r.warnings.push_back(comp + ": " + w);
    r.programs.push_back(std::move(p.prog));
  }

  // OUT/onnx/<comp>.onnx, with its weights embedded, in its own external data or in the shared file.
  void write_component(const Model& model, const std::string& comp, const OnnxConfig& cfg,
                       const std::string& out_dir, LoweredModel& lm, ExportResult& r,
                       ExternalDataFile* shared_data, Slot at) {
    std::string rel = "onnx/" + comp + ".onnx";
    fs::path path = fs::path(out_dir) / rel;
    if (shared_data) {
      // The shared weights stream tensor by tensor: the bar follows the bytes.
      const uint64_t others = data_bytes() - shared_data->size();  // the other groups' files
      shared_data->on_written = [&, others](uint64_t n) {
        progress(comp, at, 3, "write", written_ + others + n);
      };
      write_onnx_model(lm, path.string(), shared_data);
      shared_data->on_written = nullptr;
    } else {
      write_onnx_model(lm, path.string(), cfg.external_data, &model.weights());
      if (cfg.external_data) r.files.push_back({comp, rel + "_data", "weights"});
      written_ += file_bytes(fs::path(out_dir) / (rel + "_data"));
    }
    written_ += file_bytes(path);
    last_at_ = at;
    last_shared_ = data_bytes();
    progress(comp, at, 4, "write", written_ + last_shared_);
    r.files.push_back({comp, rel, "graph"});
  }

  // onnx/session_options.json: the session settings each program's graph wants (hfx/export/onnx.h).
  // The external data file a program writes to: the one of the graph Transformers.js loads for it, which it
  // fetches as <graph>.onnx_data and passes to ONNX Runtime alone. hfx's own prefill/decode graphs share the
  // merged decoder's file (Transformers.js loads model.onnx); decoder_model/decoder_with_past_model share
  // decoder_model_merged's; every other program (encoders, embed_tokens, vision_encoder) has its own. A
  // weight two of these loading units read (a tied embedding in encoder and decoder) is stored in each.
  static std::string data_group(const std::string& program) {
    if (program == "prefill" || program == "decode") return "model";
    if (program == "decoder_model" || program == "decoder_with_past_model") return "decoder_model_merged";
    return program;
  }
  // Bytes in the export's external data files so far.
  uint64_t data_bytes() const {
    uint64_t n = 0;
    for (const auto& [group, f] : data_) n += f ? f->size() : 0;
    return n;
  }

  // Written once every program is, so the bar's last step (the last program's) counts its bytes too.
  void write_advice(const std::string& out_dir, ExportResult& r) {
    write_ort_session_advice(out_dir, advice_);
    r.files.push_back({"", "onnx/session_options.json", "config"});
    written_ += file_bytes(fs::path(out_dir) / "onnx" / "session_options.json");
    if (!r.programs.empty())
      progress(r.programs.back().component, last_at_, 4, "write", written_ + last_shared_);
  }
  Slot last_at_;              // the slot of the last program written
  uint64_t last_shared_ = 0;  // the external data files' bytes after it

  std::map<std::string, OrtSessionAdvice> advice_;                 // per program exported so far
  std::map<std::string, std::unique_ptr<ExternalDataFile>> data_;  // data_group → its file
  uint64_t written_ = 0;       // bytes of graphs (and own external data) written by this export so far
  int64_t contrib_nodes_ = 0;  // com.microsoft nodes in the programs exported so far
};

}  // namespace

std::unique_ptr<Exporter> make_onnx_exporter() { return std::make_unique<OnnxExporter>(); }

/// Registry lines of the ONNX backend's own tables (the translations and IR fixes stages).
std::vector<RegistryLine> onnx_registry_lines() {
  std::vector<RegistryLine> out;
  const int translations = stage_of("onnx", "translations"), ir_fixes = stage_of("onnx", "ir_fixes");
  for (const auto& [op, e] : onnx_translation_table())
    out.push_back({"onnx-translation", "onnx", translations, op, e.emits});
  for (const auto& f : onnx_ir_fixes()) out.push_back({"onnx-ir-fix", "onnx", ir_fixes, f.name, f.reason});
  return out;
}

/// The ONNX backend's patches and fixes (stages 1–3). None are needed today: the translations handle
/// every op of the table directly. Add entries here with their stage and reason.
void register_onnx_entries() {
  auto& pf = program_fix_registry();
  using F = Fact;
  pf.push_back({"onnx",
                3,
                "gqa_fusion",
                fix_gqa_fusion,
                "target=ort: ONNX Runtime's com.microsoft GroupQueryAttention computes an hfx.sdpa together "
                "with the KV-cache concats feeding it (past + new → present) in one CPU kernel; this pass "
                "decides per attention (gqa_fusion.h: causal, head size a multiple of 8, an additive mask, "
                "keys from the past input) and records it, with the reason where it does not apply, for the "
                "stage-4 translations. Remove when ai.onnx's Attention (opset 23) takes a KV cache that "
                "ONNX Runtime's CPU kernel runs as fast.",
                {F::onnx_target},
                {F::gqa_fusion}});
  pf.push_back(
      {"onnx",
       3,
       "skip_rms_norm_fusion",
       fix_skip_rms_norm_fusion,
       "target=ort: ONNX Runtime's com.microsoft SkipSimplifiedLayerNormalization computes a residual "
       "add and the hfx.rms_norm after it in one CPU kernel; this pass decides per norm (no broadcast, "
       "rank 3, float32) and records it, and which adds the fused op computes alone (no reader before "
       "the norm), for the stage-4 translations (norm_fusion.h). Remove when ai.onnx's RMSNormalization "
       "(opset 23) with a skip input runs as fast in ONNX Runtime.",
       {F::onnx_target},
       {F::skip_rms_norm}});
  pf.push_back({"onnx",
                3,
                "moe_pack_for_ort",
                fix_moe_pack_for_ort,
                "target=ort: com.microsoft.MoE (ONNX Runtime 1.30 CPU) computes hfx.moe with act silu "
                "exactly (softmax → "
                "top-k → optional renormalization; SwiGLU with alpha 1, beta 0 = silu(gate)·up) but wants "
                "the experts as one "
                "fc1 [E, 2I, H] with gate and up rows interleaved (swiglu_fusion=1; FC3 is not implemented "
                "on CPU) and fc2 "
                "[E, H, I]: the weights are packed into those two parameters. Other activations are left to "
                "moe_dense_experts.",
                {F::onnx_target}});
  pf.push_back({"onnx",
                3,
                "moe_dense_experts",
                fix_moe_dense_experts,
                "ai.onnx has no mixture-of-experts op and no grouped matmul: hfx.moe becomes the op table's "
                "dense form (top-k "
                "by repeated ArgMax into a dense routing matrix, every expert on every token, weighted sum), "
                "no data-dependent "
                "shapes. Applies to every hfx.moe not packed by moe_pack_for_ort (target standard; ort with "
                "an activation "
                "other than silu). Remove for a target with a fused MoE.",
                {F::onnx_target}});
}

}  // namespace hfx
