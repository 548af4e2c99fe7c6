// The Dynamo backend's stages, in order (the seeds' DynamoExporter):
//   1. Forward-signature flattening (internal): the export config becomes capture options; capture
//      flattens the forward into named inputs (input_ids, attention_mask, position_ids,
//      past_key_values.N.key|value) so the program takes no opaque **kwargs.
//   2. Model patches: PatchScope("dynamo", 2) around the capture; then dynamo fixes of stage 2 and
//      the lowering of composites with no exact ATen op (hfx.rope, inexact hfx.sdpa).
//   3. Pytree: the flat cache leaves are regrouped into the treespecs torch.export records:
//      inputs ((), {..., "past_key_values": [(k, v), ...]}), outputs {"logits", "past_key_values"}.
//   4. Dynamic shapes: every symbol gets a torch name and its range constraint; guards become
//      runtime asserts (aten._assert_scalar) when deferred.
//   5. State cleanup: patches are gone (PatchScope), mapped weights released after streaming, the
//      model itself is const and never touched.
#include "export/dynamo/dynamo_exporter.h"

#include <fmt/format.h>

#include <filesystem>

#include "export/dynamo/program.h"
#include "export/dynamo/pt2_archive.h"
#include "export/weight_dtype.h"
#include "hfx/core/error.h"
#include "hfx/export/registry.h"
#include "hfx/models/quantize_model.h"
#include "hfx/ops/patch_point.h"

namespace hfx {

namespace fs = std::filesystem;

void DynamoExporter::export_component(const Model& model, const ProgramSpec& spec, const ExportConfig& config,
                                      const std::string& out_dir, const std::string& file,
                                      ExportResult& result) {
  const std::string model_type = model.config().model_type;
  const std::string& component = spec.name;
  check_export_skip("dynamo", model_type);

  // ── Stage 1: Forward-signature flattening (internal) ──
  // The program spec (from the recorded calls and the config's contract) names every input and dim;
  // capture does the flattening.

  // ── Stage 2: Model patches ──
  ExportContext ctx;  // this component's patch table: nothing shared with other exports
  CapturedProgram prog;
  const int model_patches = stage_of("dynamo", "model_patches");
  run_stage("dynamo", "flatten", nullptr, [&](int) {
    PatchScope patches(ctx, "dynamo", model_patches);  // the patches trace the model as capture runs it
    prog = capture_program(model, spec, config.prefer_deferred_runtime_asserts_over_guards, &ctx.patches);
  });
  prog.component = component;
  Graph& g = *prog.graph;
  run_stage("dynamo", "model_patches", &g, [&](int stage) {
    ctx.weight_dtype = config.weight_dtype(model.config().dtype);  // read by fix_weight_dtype
    apply_node_fixes("dynamo", stage, g);
    apply_program_fixes("dynamo", stage, g, ctx, result.warnings);
    run_pipeline(g, {dynamo::lower_composites_pass(), dead_code_elimination_pass()});
  });

  // ── Stage 3: Pytree / treespec for the flattened cache ──
  // Every past/present leaf must belong to a full (key, value) layer so the list-of-tuples treespec
  // rebuilds it; serialize_program writes the specs from the leaf names.
  for (const CacheLeaf& leaf : g.cache_leaves()) {
    if (!g.find_output(leaf.output_name))
      HFX_THROW("dynamo", "expected cache leaf output '{}' of layer {} in '{}', got none", leaf.output_name,
                leaf.layer, component);
    if (!leaf.input_name.empty() && !g.find_input(leaf.input_name))
      HFX_THROW("dynamo", "expected cache leaf input '{}' of layer {} in '{}', got none", leaf.input_name,
                leaf.layer, component);
  }

  // ── Stage 4: Dynamic shapes ──
  // Symbols become s0, s1, ... with range_constraints; deferred guards become runtime asserts.
  const dynamo::ProgramLabels labels{component, model_type, ctx.weight_dtype};
  dynamo::SerializedProgram sp = dynamo::serialize_program(g, prog.guards, &labels);
  for (const auto& [torch_sym, hfx_sym] : sp.symbols)
    if (!sp.program["range_constraints"].contains(torch_sym))
      HFX_THROW("dynamo", "expected a range constraint for symbol {} ({}), got none", torch_sym, hfx_sym);

  dynamo::Pt2WriteOptions wo;
  wo.weights = &model.weights();
  wo.sample_inputs = dynamo::sample_inputs_for(g, model.config().vocab_size);
  nlohmann::json manifest{{"producer", "hfx"},
                          {"component", component},
                          {"model_type", model_type},
                          {"schema_version", {dynamo::kSchemaMajor, dynamo::kSchemaMinor}},
                          {"target_torch", dynamo::kTargetTorch},
                          {"symbols", sp.symbols},
                          {"inputs", sp.user_inputs},
                          {"outputs", sp.user_outputs},
                          {"config", config.to_json()}};
  wo.extra["hfx_manifest.json"] = manifest.dump(2);
  fs::create_directories(out_dir);
  std::string path = (fs::path(out_dir) / file).string();
  dynamo::write_pt2(path, sp, wo);

  // ── Stage 5: State cleanup ──
  // PatchScope has restored every handler; weights were released one by one while streaming.
  if (ctx.patches.size() != 0)
    result.warnings.push_back(fmt::format("dynamo: {} patch(es) still installed after exporting '{}'",
                                          ctx.patches.size(), component));

  result.files.push_back(ArtifactFile{component, file, "program"});
  result.programs.push_back(std::move(prog));
}

ExportResult DynamoExporter::export_model(const Model& model0, const CaptureOptions& opts,
                                          const ExportConfig& config, const std::string& out_dir) {
  // --quantize: the model with its linear weights as codes (hfx.linear_q), de-quantized in the graph by the
  // stage-2 decomposition (registrations.cpp).
  std::unique_ptr<Model> quantized =
      quant::quantize_for_export(model0, dynamic_cast<const DynamoConfig&>(config).quantize);
  const Model& model = quantized ? *quantized : model0;
  ExportResult r;
  r.out_dir = out_dir;
  std::vector<ProgramSpec> programs = export_programs(model, merge_config(opts, config), false);
  std::vector<Job> jobs;
  for (const ProgramSpec& p : programs)
    if (p.kinds.size() <= 1)  // merged programs (two kinds): see export_for_generation
      jobs.push_back({p, &config, programs.size() == 1 ? "model.pt2" : p.name + ".pt2"});
  export_jobs(model, jobs, out_dir, r);
  return r;
}

ExportResult DynamoExporter::export_for_generation(const Model& model0, const CaptureOptions& opts,
                                                   const std::map<std::string, const ExportConfig*>& configs,
                                                   const std::string& out_dir) {
  std::unique_ptr<Model> quantized = quant::quantize_for_export(model0, common_quantize(configs));
  const Model& model = quantized ? *quantized : model0;
  ExportResult r;
  r.out_dir = out_dir;
  std::vector<Job> jobs;
  for (auto& [spec, c] : generation_plan(model, opts, configs))
    // A merged program's first call feeds empty caches; torch.export programs are one call kind each.
    if (spec.kinds.size() <= 1) jobs.push_back({spec, c, spec.name + ".pt2"});
  export_jobs(model, jobs, out_dir, r);
  return r;
}

void DynamoExporter::export_jobs(const Model& model, const std::vector<Job>& jobs, const std::string& out_dir,
                                 ExportResult& r) {
  uint64_t written = 0;
  for (size_t i = 0; i < jobs.size(); i++) {
    const std::string& name = jobs[i].spec.name;
    report({name, "capture and write", i, jobs.size(), 0, 1, written});
    export_component(model, jobs[i].spec, *jobs[i].config, out_dir, jobs[i].file, r);
    written += fs::file_size(fs::path(out_dir) / jobs[i].file);
    report({name, "written", i, jobs.size(), 1, 1, written});
  }
}

std::unique_ptr<Exporter> make_dynamo_exporter() { return std::make_unique<DynamoExporter>(); }

}  // namespace hfx
