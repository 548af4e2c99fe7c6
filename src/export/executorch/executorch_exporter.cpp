// The ExecuTorch exporter: five numbered stages around capture, then the .pte writer. Entries of the
// patch/fix stages are registered in registrations.cpp; this file only runs the stages in order.
#include "export/executorch/executorch_exporter.h"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

#include "capture/generation_loops.h"
#include "export/executorch/static_cache.h"
#include "hfx/core/error.h"
#include "hfx/export/registry.h"
#include "hfx/models/quantize_model.h"
#include "hfx/ops/op_schema.h"
#include "io/fileutil.h"

namespace hfx::et {

// The backend-preparation table (stage 1), declared once. ExecuTorch's own exporter moves the model to
// the device and dtype here and picks a partitioner; hfx's model is never changed, so a row says which
// dtype the weights take in the program, which partitioner runs at stage 6 and what the artifact needs at
// run time. Only what hfx really writes is a row: there is no GPU row, since hfx writes no GPU delegate
// payloads — a name for a delegate that never runs would be a label that does nothing.
const std::vector<BackendPrep>& backend_prep_table() {
  static const std::vector<BackendPrep> t = {
      {"portable", "cpu", DType::F32, "", "",
       "CPU, float32 weights and activations; every op is a portable kernel (no delegate), so any ExecuTorch "
       "CPU runtime built with the portable kernel library loads it"},
      {"xnnpack", "cpu", DType::F32, "XnnpackPartitioner", "",
       "CPU, float32; the XNNPACK partitioner (stage 6, xnnpack_delegate.h) lowers the runs of linear, "
       "matmul, elementwise, activation and softmax nodes into XnnpackBackend payloads, weights in the "
       "program's named data; the rest (KV-cache updates, views, gathers, sym-size arithmetic) stays "
       "portable, so the runtime needs the XNNPACK backend and the portable kernels"},
  };
  return t;
}

const BackendPrep& backend_prep(const std::string& name) {
  std::string known;
  for (const auto& b : backend_prep_table()) {
    if (b.name == name) return b;
    known += (known.empty() ? "" : ", ") + b.name;
  }
  if (name == "cuda" || name == "vulkan" || name == "coreml" || name == "qnn" || name == "mps")
    HFX_THROW("executorch",
              "expected a backend among [{}], got '{}': hfx does not write {} delegate payloads, so such a "
              "program would be the portable one under another name; use --backend xnnpack or portable",
              known, name, name);
  HFX_THROW("executorch", "expected a backend among [{}], got '{}'", known, name);
}

// What each method's delegates took: calls, nodes and the share of the work (FLOPs at the upper-bound
// sizes), so a user sees how much of the program runs in XNNPACK and how much on portable kernels.
std::vector<std::string> delegation_notes(const PteWriteResult& pte, const std::string& backend) {
  std::vector<std::string> v;
  for (const PteMethodStats& m : pte.methods) {
    if (m.delegate_calls == 0 && backend == "portable") continue;
    const std::string share = m.flops > 0
                                  ? fmt::format("{:.1f}% of the FLOPs", 100.0 * m.delegated_flops / m.flops)
                                  : std::string("no arithmetic (its nodes only move data)");
    // The portable ops with the most work, so a low share points at the op to delegate or rewrite.
    std::vector<std::pair<double, std::string>> ops;
    for (const auto& [op, f] : m.portable_flops) ops.emplace_back(f, op);
    std::sort(ops.rbegin(), ops.rend());
    std::string top;
    for (size_t i = 0; i < ops.size() && i < 3 && m.delegate_calls > 0; i++)
      top += fmt::format("{}{} {:.1f}%", i ? ", " : " (most work: ", ops[i].second,
                         100.0 * ops[i].first / m.flops);
    if (!top.empty()) top += ")";
    v.push_back(
        fmt::format("[executorch] {}: method '{}' has {} delegate calls taking {} of {} nodes and {}; {} "
                    "kernel calls stay portable{}",
                    backend, m.name, m.delegate_calls, m.delegated_nodes, m.nodes, share,
                    m.instructions - m.delegate_calls, top));
  }
  return v;
}

// Stage 6 (partitioner): the .pte writer's options for the row's partitioner.
PteWriteOptions writer_options(const BackendPrep& prep) {
  PteWriteOptions o;
  if (prep.partitioner == "XnnpackPartitioner") o.delegate = "xnnpack";
  return o;
}

namespace {

Dim seq_dim(const ExecutorchConfig& cfg, const CaptureOptions& opts) {
  for (const auto* ds : {&cfg.dynamic_shapes, &opts.dynamic_shapes}) {
    for (const char* input : {"tokens", "input_ids"}) {
      if (auto it = ds->find(input); it != ds->end())
        if (auto jt = it->second.find(1); jt != it->second.end()) return jt->second;
    }
  }
  return Dim{"seq_len", 1, cfg.max_seq_len};
}

std::vector<PteConstMethod> metadata_methods(const ModelConfig& mc, const ExecutorchConfig& cfg,
                                             std::vector<std::string>& warnings) {
  std::vector<PteConstMethod> m;
  m.push_back({"get_max_seq_len", {cfg.max_seq_len}});
  m.push_back({"get_max_context_len", {cfg.max_seq_len}});
  m.push_back({"get_vocab_size", {mc.vocab_size}});
  m.push_back({"get_n_layers", {mc.num_hidden_layers}});
  if (mc.bos_token_id) {
    m.push_back({"get_bos_id", {*mc.bos_token_id}});
  } else {
    warnings.push_back(
        "[executorch] config.json has no bos_token_id; get_bos_id returns -1 (runners then add no BOS)");
    m.push_back({"get_bos_id", {int64_t{-1}}});
  }
  PteConstMethod eos{"get_eos_ids", {}};
  for (int64_t e : mc.eos_token_ids) eos.values.push_back(e);
  if (eos.values.empty())
    warnings.push_back("[executorch] config.json has no eos_token_id; get_eos_ids returns nothing");
  m.push_back(eos);
  m.push_back({"use_kv_cache", {true}});
  m.push_back({"enable_dynamic_shape", {cfg.dynamic}});
  return m;
}

// Metadata of a component program (encoder-only, encoder-decoder): what a runner needs to drive the
// methods without config.json; no KV-cache methods, since the cache leaves are plain inputs/outputs.
std::vector<PteConstMethod> component_metadata(const Model& model, const ExecutorchConfig& cfg) {
  const ModelConfig& mc = model.config();
  std::vector<PteConstMethod> m;
  m.push_back({"get_max_seq_len", {cfg.max_seq_len}});
  m.push_back({"get_vocab_size", {mc.vocab_size}});
  m.push_back({"get_n_layers", {mc.num_hidden_layers}});
  PteConstMethod eos{"get_eos_ids", {}};
  for (int64_t e : mc.eos_token_ids) eos.values.push_back(e);
  m.push_back(eos);
  if (model.structure() == Structure::EncoderDecoder) {
    const auto& raw = mc.raw;
    int64_t start =
        raw.contains("decoder_start_token_id") && raw["decoder_start_token_id"].is_number_integer()
            ? raw["decoder_start_token_id"].get<int64_t>()
            : mc.pad_token_id.value_or(0);
    m.push_back({"get_decoder_start_token_id", {start}});
  }
  m.push_back({"use_kv_cache", {model.structure() == Structure::EncoderDecoder}});
  m.push_back({"enable_dynamic_shape", {cfg.dynamic}});
  return m;
}

// The static cache's length and every method's sequence bound, capped at the model's max positions
// (config.json's max_position_embeddings / n_positions, the one source of truth the capture contract
// uses too): a learned position table has no row past it, so a program claiming more would fail there.
int64_t capped_max_seq_len(const ModelConfig& mc, const ExecutorchConfig& cfg,
                           std::vector<std::string>& warnings) {
  if (mc.max_position_embeddings <= 0 || cfg.max_seq_len <= mc.max_position_embeddings)
    return cfg.max_seq_len;
  warnings.push_back(
      fmt::format("[executorch] max_seq_len {} capped at max_position_embeddings {} of config.json",
                  cfg.max_seq_len, mc.max_position_embeddings));
  return mc.max_position_embeddings;
}

// The static cache's length: the config's max_seq_len capped at the model's max positions (with the
// warning above) and at the contract's sequence max, which contract_options resolved once for this export
// (--max-sequence bounds the .pte as it bounds the .onnx and .pt2 of the same export).
int64_t cache_length(const ModelConfig& mc, const ExecutorchConfig& cfg, const CaptureOptions& opts,
                     std::vector<std::string>& warnings) {
  return std::min(capped_max_seq_len(mc, cfg, warnings), opts.sequence.max);
}

const ExecutorchConfig& as_executorch(const ExportConfig& c) {
  auto* e = dynamic_cast<const ExecutorchConfig*>(&c);
  if (!e) HFX_THROW("executorch", "expected an executorch config, got a '{}' config", c.format);
  return *e;
}

// Stages program_fixes and node_fixes on a captured program (the driver verifies the graph after each).
void fix_program(Graph& g, ExportContext& ctx, std::vector<std::string>& warnings) {
  // ── Stage 4: Program fixes ──
  run_stage("executorch", "program_fixes", &g,
            [&](int stage) { apply_program_fixes("executorch", stage, g, ctx, warnings); });
  // ── Stage 5: Node fixes ──
  run_stage("executorch", "node_fixes", &g, [&](int stage) {
    apply_node_fixes("executorch", stage, g);
    g.eliminate_dead_code();
  });
  verify_graph(g);  // what the writer is given is a valid graph, also in a release build without the verifier
}

}  // namespace

ExecutorchProgram build_executorch_program(const CausalLM& model, const ExecutorchConfig& config,
                                           const CaptureOptions& opts) {
  const ModelConfig& mc = model.config();
  check_export_skip("executorch", mc.model_type);
  ExecutorchProgram out;
  ExecutorchConfig cfg = config;
  cfg.max_seq_len = cache_length(mc, config, opts, out.warnings);

  // ── Stage 1: Backend preparation ──
  // Picks the table row; its dtype decision is applied to the captured program's constants by the
  // stage-4 fix "constant_dtype", which reads it from the context (ExportContext::constant_dtype).
  const BackendPrep& prep = backend_prep(cfg.backend);
  if (!prep.warning.empty()) out.warnings.push_back("[executorch] " + prep.warning);
  if (cfg.max_seq_len < 1) HFX_THROW("executorch", "expected max_seq_len >= 1, got {}", cfg.max_seq_len);

  StaticCaptureOptions so;
  so.max_seq_len = cfg.max_seq_len;
  so.dynamic = cfg.dynamic;
  so.seq = seq_dim(cfg, opts);
  // A position lives in the cache: more new tokens than the cache holds can never run.
  if (so.seq.max > cfg.max_seq_len) {
    out.warnings.push_back(fmt::format("[executorch] Dim '{}' max {} capped at max_seq_len {}", so.seq.name,
                                       so.seq.max, cfg.max_seq_len));
    so.seq.max = cfg.max_seq_len;
  }
  so.sample_seq = opts.sample_sequence;
  so.logits_to_keep = opts.logits_to_keep;
  ExportContext ctx;  // this export's patch table and static-cache state: nothing shared with other exports
  {
    // ── Stage 2: Torch patches ──
    // Composite ops → their decompositions into portable ops, for the duration of the capture.
    PatchScope torch_patches(ctx, "executorch", stage_of("executorch", "torch_patches"));
    // ── Stage 3: ExecuTorch patches ──
    // ExecuTorch's static-cache layout: attention over the whole buffer, masked by input_pos.
    PatchScope executorch_patches(ctx, "executorch", stage_of("executorch", "executorch_patches"));
    out.forward = capture_static_forward(model, so, ctx);
  }
  Graph& g = *out.forward.graph;
  ctx.constant_dtype = cfg.weight_dtype(mc.dtype);  // --dtype, auto: the row's
  fix_program(g, ctx, out.warnings);

  PteMethodSpec fwd;
  fwd.name = "forward";
  fwd.graph = &g;
  fwd.guards = out.forward.guards;
  for (const CacheLeaf& l : g.cache_leaves()) {
    fwd.mutable_buffers.emplace_back(l.input_name, l.output_name);
    out.forward.state.push_back(l.input_name);
  }
  out.metadata = metadata_methods(mc, cfg, out.warnings);
  // ── Stage 6: Partitioner and emitter ── (the writer: the row's partitioner takes its subgraphs into
  // delegates)
  run_stage("executorch", "partition_and_emit", nullptr,
            [&](int) { out.pte = write_pte({fwd}, out.metadata, writer_options(prep)); });
  out.warnings.insert(out.warnings.end(), out.pte.warnings.begin(), out.pte.warnings.end());
  return out;
}

ExecutorchProgram build_component_program(const Model& model, const ExecutorchConfig& config,
                                          const CaptureOptions& opts) {
  check_export_skip("executorch", model.config().model_type);
  ExecutorchProgram out;
  ExecutorchConfig cfg = config;
  cfg.max_seq_len = cache_length(model.config(), config, opts, out.warnings);
  // ── Stage 1: Backend preparation ──
  const BackendPrep& prep = backend_prep(cfg.backend);
  if (!prep.warning.empty()) out.warnings.push_back("[executorch] " + prep.warning);
  if (cfg.max_seq_len < 2) HFX_THROW("executorch", "expected max_seq_len >= 2, got {}", cfg.max_seq_len);
  // One rule for every method: sequences up to max_seq_len, decoder pasts up to max_seq_len - 1.
  CaptureOptions o = opts;
  o.sequence.max = std::min(o.sequence.max, cfg.max_seq_len);
  o.past.max = std::min(o.past.max, cfg.max_seq_len - 1);
  std::vector<ProgramSpec> plan = generation_programs(model, o);
  std::vector<PteMethodSpec> methods;
  std::vector<std::shared_ptr<Graph>> graphs;
  for (const capture::ProgramDecl& pd : capture::generation_loop(model.structure()).programs) {
    if (pd.executorch_method.empty()) continue;
    const ProgramSpec* spec = nullptr;
    for (const ProgramSpec& p : plan)
      if (p.name == pd.name) spec = &p;
    if (!spec)
      HFX_THROW("executorch", "expected a planned program '{}' for method '{}', got none", pd.name,
                pd.executorch_method);
    CapturedProgram cp;
    ExportContext ctx;
    {
      // ── Stages 2–3: Torch and ExecuTorch patches ── (no static cache here: stage 3 passes through)
      PatchScope torch_patches(ctx, "executorch", stage_of("executorch", "torch_patches"));
      PatchScope executorch_patches(ctx, "executorch", stage_of("executorch", "executorch_patches"));
      cp = capture_program(model, *spec, opts.prefer_deferred_runtime_asserts_over_guards, &ctx.patches);
    }
    Graph& g = *cp.graph;
    ctx.constant_dtype = cfg.weight_dtype(model.config().dtype);
    fix_program(g, ctx, out.warnings);
    cp.component = pd.executorch_method;
    graphs.push_back(cp.graph);
    methods.push_back(PteMethodSpec{pd.executorch_method, graphs.back().get(), {}, cp.guards});
    out.components.push_back(std::move(cp));
  }
  out.forward = out.components.front();
  out.metadata = component_metadata(model, cfg);
  // ── Stage 6: Partitioner and emitter ──
  run_stage("executorch", "partition_and_emit", nullptr,
            [&](int) { out.pte = write_pte(methods, out.metadata, writer_options(prep)); });
  out.warnings.insert(out.warnings.end(), out.pte.warnings.begin(), out.pte.warnings.end());
  return out;
}

ExportResult ExecutorchExporter::export_model(const Model& model0, const CaptureOptions& opts,
                                              const ExportConfig& config, const std::string& out_dir) {
  const ExecutorchConfig& cfg = as_executorch(config);
  // --quantize: the model with its linear weights as codes (hfx.linear_q), which the XNNPACK partitioner
  // takes as ExecuTorch's 8da4w pattern; eager runs the same codes.
  std::unique_ptr<Model> quantized = quant::quantize_for_export(model0, cfg.quantize);
  const Model& model = quantized ? *quantized : model0;
  // One .pte holds every method: one component, captured and lowered, then written.
  report({"model", "capture and lower", 0, 1, 0, 2, 0});
  // A decoder with a KV cache gets ExecuTorch's static-cache forward(tokens, input_pos); one whose cache is
  // state leaves (mamba's conv/ssm, fixed-size already) gets the loop's prefill and decode as methods,
  // the leaves as plain inputs and outputs.
  ExecutorchProgram p = model.structure() == Structure::DecoderOnly && kv_cache_only(model)
                            ? build_executorch_program(as_causal_lm(model), cfg, opts)
                            : build_component_program(model, cfg, opts);
  std::filesystem::create_directories(out_dir);
  std::string path = (std::filesystem::path(out_dir) / "model.pte").string();
  report({"model", "write", 0, 1, 1, 2, 0});
  {
    io::detail::AtomicFile f(path, "executorch");
    f.write(p.pte.bytes.data(), p.pte.bytes.size());
    f.commit();
  }
  report({"model", "written", 0, 1, 2, 2, p.pte.bytes.size()});
  ExportResult r;
  r.out_dir = out_dir;
  r.files.push_back({"model", "model.pte", "program"});
  if (p.components.empty())
    r.programs.push_back(std::move(p.forward));
  else
    for (auto& c : p.components) r.programs.push_back(std::move(c));
  r.warnings = std::move(p.warnings);
  r.notes = delegation_notes(p.pte, cfg.backend);
  return r;
}

ExportResult ExecutorchExporter::export_for_generation(
    const Model& model, const CaptureOptions& opts, const std::map<std::string, const ExportConfig*>& configs,
    const std::string& out_dir) {
  const ExportConfig* c = nullptr;
  for (const char* k : {"model", "forward"})
    if (auto it = configs.find(k); it != configs.end() && it->second) c = it->second;
  if (!c && configs.size() == 1) c = configs.begin()->second;
  ExecutorchConfig def;
  if (!c) {
    if (!configs.empty())
      HFX_THROW("executorch",
                "expected one config (for 'model' or 'forward'), got {} configs; ExecuTorch programs have "
                "one forward",
                configs.size());
    c = &def;
  }
  return export_model(model, opts, *c, out_dir);
}

}  // namespace hfx::et

namespace hfx {
/// The exporter table's factory (src/export/exporter.cpp).
std::unique_ptr<Exporter> make_executorch_exporter() { return std::make_unique<et::ExecutorchExporter>(); }
}  // namespace hfx
