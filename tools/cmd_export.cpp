// `hfx export MODEL --format onnx|executorch|dynamo -o OUT`: flags → an ExportConfig, load the model, then
// the library's export_folder (hfx/artifact/export_folder.h) writes OUT: the programs, the tokenizer and
// config files, the manifest, staged beside OUT and swapped into place only when complete, so a failed
// export never leaves a half-written OUT and never destroys the previous one, even when it is killed
// (kill -9) or the disk fills up (tests/integration/export_faults_test.cpp). This file adds the progress
// bar and the summary.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "commands.h"
#include "hfx/artifact/export_folder.h"
#include "hfx/core/error.h"
#include "hfx/core/json.h"
#include "hfx/core/progress.h"
#include "hfx/export/exporter.h"
#include "hfx/export/registry.h"
#include "hfx/io/safetensors.h"
#include "hfx/models/model.h"

namespace fs = std::filesystem;

namespace hfx::cli {

namespace {

struct ExportArgs {
  std::string model, out, format = "onnx", config_file, target = "standard", backend = "portable",
                          dtype = "auto";
  std::string quantize = "none", activations = "f32";
  int opset = OnnxConfig::kDefaultOpset, group_size = 32;
  bool external_data = false, no_dynamic = false, no_optimize = false, symmetric = false,
       quantize_embedding = false;
  bool max_batch_given = false;  // --max-batch on the command line
  bool opset_given = false;      // --opset on the command line (else derived: OnnxConfig::from_json)
  int64_t max_seq_len = 128, max_batch = 64, max_sequence = 4096;
};

// Where each flag has a meaning: the formats that read it, and the flag it only modifies. A flag given
// outside them would change nothing, so it is refused (a label that does nothing is a defect);
// tests/integration/export_flags_test.cpp runs every flag of --help in every format against this.
struct FlagUse {
  const char* flag;
  std::vector<std::string> formats;  ///< empty: every format
  const char* needs = nullptr;       ///< a flag it modifies, else nullptr
  const char* conflicts = nullptr;   ///< a flag that makes it meaningless, else nullptr
};
const std::vector<FlagUse>& flag_uses() {
  // The formats that capture programs with a shape contract; GGUF holds weights for llama.cpp's own graphs.
  const std::vector<std::string> graphs = {"onnx", "executorch", "dynamo"};
  static const std::vector<FlagUse> uses = {
      {"--opset", {"onnx"}},
      {"--dtype", {}},
      {"--external-data", {"onnx"}},
      {"--target", {"onnx"}},
      {"--no-optimize", {"onnx"}},
      {"--quantize", {}},
      {"--group-size", graphs, "--quantize"},
      {"--symmetric", graphs, "--quantize"},
      {"--quantize-embedding", {"onnx"}, "--quantize"},
      {"--activations", {"onnx"}, "--quantize"},
      {"--backend", {"executorch"}},
      {"--max-seq-len", {"executorch"}},
      {"--static", graphs},
      {"--max-batch", graphs, nullptr, "--static"},
      {"--max-sequence", graphs, nullptr, "--static"},
  };
  return uses;
}

// Refuses a flag given where it changes nothing (see FlagUse), and any flag beside --config (the file
// holds the whole configuration).
void check_flags(const CLI::App& cmd, const std::string& format, bool with_config) {
  for (const FlagUse& u : flag_uses()) {
    if (cmd.count(u.flag) == 0) continue;
    HFX_CHECK(!with_config, "export",
              "expected no {} beside --config (the config file holds every setting), got both; set it in "
              "the file",
              u.flag);
    HFX_CHECK(u.formats.empty() || std::count(u.formats.begin(), u.formats.end(), format), "export",
              "expected {} with --format {} (the only format{} it changes), got --format {}; leave it out",
              u.flag, fmt::join(u.formats, " or --format "), u.formats.size() > 1 ? "s" : "", format);
    HFX_CHECK(!u.needs || cmd.count(u.needs) > 0, "export",
              "expected {} together with {} (it only modifies it), got no {}; add {} or leave {} out", u.flag,
              u.needs, u.needs, u.needs, u.flag);
    HFX_CHECK(!u.conflicts || cmd.count(u.conflicts) == 0, "export",
              "expected {} without {} ({} fixes every dim at its sample size, so no bound applies), got "
              "both; leave one out",
              u.flag, u.conflicts, u.conflicts);
  }
}

std::string human_bytes(uintmax_t b) {
  if (b >= (uintmax_t(1) << 30)) return fmt::format("{:.2f} GiB", b / double(uintmax_t(1) << 30));
  if (b >= (1u << 20)) return fmt::format("{:.2f} MiB", b / double(1u << 20));
  if (b >= (1u << 10)) return fmt::format("{:.1f} KiB", b / 1024.0);
  return fmt::format("{} B", b);
}

// The one-screen summary after an export: programs with their captured node counts, files with sizes,
// the time and the warnings (which the manifest keeps too).
void print_summary(const ExportArgs& a, const Model& model, const ExportResult& r, const fs::path& out,
                   double seconds) {
  fmt::print("exported {} ({} {}, {}) to {} in {:.1f} s\n", a.model, model.config().model_type, model.head(),
             structure_name(model.structure()), out.string(), seconds);
  fmt::print("programs (captured nodes):");
  for (const auto& p : r.programs) fmt::print(" {} ({})", p.component, p.graph ? p.graph->nodes().size() : 0);
  fmt::print("\n");
  uintmax_t total = 0;
  for (const auto& e : fs::recursive_directory_iterator(out)) {
    if (!e.is_regular_file()) continue;
    uintmax_t sz = e.file_size();
    total += sz;
    std::string rel = fs::relative(e.path(), out).generic_string();
    bool artifact = false;
    for (const auto& f : r.files) artifact |= f.path == rel;
    if (artifact || rel.find(".onnx") != std::string::npos || rel.ends_with(".pte") || rel.ends_with(".pt2"))
      fmt::print("  {:<40} {:>12}\n", rel, human_bytes(sz));
  }
  fmt::print("  {:<40} {:>12}  (all files, with tokenizer, config and manifest.json)\n", "total",
             human_bytes(total));
  fmt::print("warnings: {}\n",
             r.warnings.empty() ? "none" : std::to_string(r.warnings.size()) + " (kept in manifest.json)");
  for (const auto& w : r.warnings) fmt::print("  - {}\n", w);
  for (const auto& n : r.notes) fmt::print("note: {}\n", n);
}

// The export config: --config FILE, else the flags.
std::unique_ptr<ExportConfig> export_config(const ExportArgs& a) {
  std::unique_ptr<ExportConfig> cfg = make_config(a.format);
  if (!a.config_file.empty()) {
    nlohmann::json j =
        jsonc::parse(io::read_file(a.config_file), "export", "the export config " + a.config_file);
    if (!j.contains("format")) j["format"] = a.format;
    cfg->from_json(j);
    return cfg;
  }
  nlohmann::json j = cfg->to_json();
  j["dynamic"] = !a.no_dynamic;
  if (a.max_batch_given) j["max_batch"] = a.max_batch;  // else the format's default (ExecuTorch: 1)
  j["max_sequence"] = a.max_sequence;
  j["dtype"] = a.dtype;
  if (a.quantize != "none")
    j["quantize"] = {{"method", a.quantize},
                     {"group_size", a.group_size},
                     {"symmetric", a.symmetric},
                     {"activations", a.activations},
                     {"embedding", a.quantize_embedding}};
  if (a.format == "onnx") {
    if (a.opset_given)
      j["opset"] = a.opset;
    else
      j.erase("opset");  // derived from the rest (OnnxConfig::from_json)
    j["external_data"] = a.external_data;
    j["target"] = a.target;
    j["optimize"] = !a.no_optimize;
  } else if (a.format == "executorch") {
    j["backend"] = a.backend;
    j["max_seq_len"] = a.max_seq_len;
  }
  cfg->from_json(j);
  return cfg;
}

// The bar's steps: load, plan, each component's stages (capture, fixes, lower, write for ONNX; the exporter
// reports them, with the bytes written, once it has planned the components), side files, manifest.
struct ExportBar {
  Progress bar;
  uint64_t program_steps = 1;
  std::string format;
  ExportBar(const std::string& out, const std::string& format)
      : bar("export " + fs::path(out).filename().string(), 4), format(format) {}
  void on_step(const ExportStep& s) {
    program_steps = s.components * static_cast<uint64_t>(s.stages);
    bar.set_total(program_steps + 3);
    bar.update(1 + s.component_index * s.stages + s.stage_index,
               fmt::format("{} ({}/{}): {}{}", s.component, s.component_index + 1, s.components, s.stage,
                           s.bytes_written ? ", " + human_bytes(s.bytes_written) + " written" : ""));
  }
  void on_stage(const std::string& stage, const ExportStep* step) {
    if (step)
      on_step(*step);
    else if (stage == "plan")
      bar.update(1, format + ": plan the programs");
    else if (stage == "side files")
      bar.update(1 + program_steps, "tokenizer and config files");
    else if (stage == "manifest")
      bar.update(2 + program_steps, "manifest");
  }
};

void run_export(const ExportArgs& a) {
  auto t_start = std::chrono::steady_clock::now();
  const std::string dir = resolve_model(a.model);
  ExportBar progress(a.out, a.format);
  progress.bar.update(0, "load " + a.model);
  auto model = load_model(dir);
  check_export_skip(a.format, model->config().model_type);
  std::unique_ptr<ExportConfig> cfg = export_config(a);
  // The export folder (contract, programs, side files, manifest, staged swap) is the library's:
  // hfx/artifact/export_folder.h.
  auto on_stage = [&progress](const std::string& s, const ExportStep* st) { progress.on_stage(s, st); };
  artifact::ExportFolderResult r = artifact::export_folder(*model, dir, a.out, *cfg, on_stage);
  progress.bar.update(3 + progress.program_steps, "done");
  progress.bar.finish();
  for (const auto& w : r.export_result.warnings) fmt::print(stderr, "hfx: warning: {}\n", w);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
  print_summary(a, *model, r.export_result, r.out_dir, seconds);
}

}  // namespace

void register_export(CLI::App& app) {
  auto a = std::make_shared<ExportArgs>();
  auto* cmd = app.add_subcommand(
      "export",
      "Export a checkpoint (folder or model id) for generation (prefill, decode and merged graphs)");
  cmd->footer(
      "Example:\n  hfx export tiny-llama --format onnx -o tiny-llama-onnx\n"
      "  hfx export HuggingFaceTB/SmolLM2-135M --format onnx -o smollm2-onnx   (model id: the HF cache, else "
      "the Hub)\n"
      "  HF_HUB_OFFLINE=1 hfx export HuggingFaceTB/SmolLM2-135M@main --format onnx -o smollm2-onnx   (cache "
      "only)\n"
      "  hfx export tiny-llama --format executorch --backend portable -o tiny-llama-pte\n"
      "  hfx export tiny-llama --format onnx --dtype bf16 -o tiny-llama-onnx-bf16   (half-size weights)");
  cmd->add_option("model", a->model, "Checkpoint folder or model id ORG/NAME[@REVISION]")->required();
  cmd->add_option("-o,--out", a->out, "Output folder")->required();
  cmd->add_option("--format", a->format, "onnx | executorch | dynamo | gguf (llama.cpp; docs/gguf.md)");
  cmd->add_option("--config", a->config_file, "Export config JSON (wins over the flags below)");
  cmd->add_option(
      "--opset", a->opset,
      fmt::format("ONNX opset ({}..{}; default {}, or 21 where --quantize on --target standard needs "
                  "it)",
                  OnnxConfig::kMinOpset, OnnxConfig::kMaxOpset, OnnxConfig::kDefaultOpset));
  cmd->add_option("--dtype", a->dtype,
                  "Weight precision: auto | f32 | f16 | bf16 (auto: what the runtime computes in, GGUF: the "
                  "checkpoint's; docs/precision.md)");
  cmd->add_flag("--external-data", a->external_data,
                "ONNX: a single program's weights in <program>.onnx_data too (the programs of a decoder "
                "always share one file; automatic above 2 GB)");
  cmd->add_option("--target", a->target, "ONNX: standard | ort (com.microsoft fused ops)");
  cmd->add_flag("--no-optimize", a->no_optimize, "ONNX: skip graph optimization");
  cmd->add_option(
      "--quantize", a->quantize,
      "ONNX: weight-only quantization of the linear layers: none | int8 | int4; ExecuTorch "
      "--backend xnnpack: int4 or int8 with --symmetric (int8 activations per token at run time); "
      "dynamo: the codes de-quantized in the graph by core ATen ops; GGUF: q8_0 | q4_0 | q4_k | q4_k_m | "
      "q5_k_m | "
      "q6_k (ggml's "
      "blocks, as "
      "llama.cpp's quantizer writes them)");
  cmd->add_option("--group-size", a->group_size, "--quantize: input features per scale (32, 64, 128)");
  cmd->add_flag("--symmetric", a->symmetric, "--quantize: symmetric codes (no zero points)");
  cmd->add_flag(
      "--quantize-embedding", a->quantize_embedding,
      "ONNX --quantize: the token embedding table too (rows de-quantized after the Gather; a tied LM "
      "head shares the codes)");
  cmd->add_option("--activations", a->activations,
                  "ONNX --quantize --target ort: f32 (default: the eager kernels' math) | int8 (MatMulNBits "
                  "accuracy_level 4: activations quantized per block at run time, ONNX Runtime's fast path)")
      ->check(CLI::IsMember({"f32", "int8"}));
  cmd->add_option(
      "--backend", a->backend,
      "ExecuTorch: portable (portable kernels, no delegate) | xnnpack (XNNPACK delegate + portable)");
  cmd->add_option("--max-seq-len", a->max_seq_len,
                  "ExecuTorch: static cache length (also bounds its sequence dims)");
  cmd->add_flag("--static", a->no_dynamic, "Fix every dim at its sample size");
  cmd->add_option("--max-batch", a->max_batch,
                  "Upper bound of the batch dim (default: 64; ExecuTorch 1, as its memory is planned for the "
                  "largest call)");
  cmd->add_option("--max-sequence", a->max_sequence, "Upper bound of sequence and past dims");
  cmd->callback([a, cmd] {
    a->max_batch_given = cmd->count("--max-batch") > 0;
    a->opset_given = cmd->count("--opset") > 0;
    check_flags(*cmd, a->format, !a->config_file.empty());
    run_export(*a);
  });
}

}  // namespace hfx::cli
