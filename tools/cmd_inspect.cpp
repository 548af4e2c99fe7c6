// `hfx inspect MODEL [--json]`: the inventory of a checkpoint folder before any export — model_type,
// class and head, generation structure, components with their declared inputs, outputs and cache
// leaves, layer types, sizes (parameters and bytes per dtype, read from the safetensors headers), and
// per backend whether hfx exports it and why not where it does not.
//
// Backend support is derived from the code paths, not from a hand-kept table: the export-skip and
// disable-optimize registries (hfx/export/registry.h) and the programs the structure's generation loop
// declares (src/capture/generation_loops.cpp), filtered as each exporter filters them (Dynamo skips
// merged programs; ExecuTorch puts the programs with a method name into one .pte, and decoder-only
// models get its static-cache `forward` instead).
#include <fmt/format.h>
#include <filesystem>
#include <map>

#include "capture/generation_loops.h"
#include "commands.h"
#include "hfx/artifact/manifest.h"
#include "hfx/core/dtype.h"
#include "hfx/core/error.h"
#include "hfx/export/exporter.h"
#include "hfx/export/gguf.h"
#include "hfx/export/registry.h"
#include "hfx/io/safetensors.h"
#include "hfx/models/model.h"

namespace fs = std::filesystem;

namespace hfx::cli {

namespace {

std::string join(const std::vector<std::string>& v, const char* sep = ", ") {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

nlohmann::json component_json(const ComponentDecl& c) {
  nlohmann::json j = {{"name", c.name}, {"outputs", c.outputs}};
  j["inputs"] = nlohmann::json::array();
  for (const auto& in : c.inputs)
    j["inputs"].push_back(
        {{"name", in.name}, {"dtype", dtype_name(in.dtype)}, {"axes", in.axes}, {"optional", in.optional}});
  j["cache"] = nlohmann::json::array();
  for (const auto& l : c.cache)
    j["cache"].push_back({{"layer", l.layer},
                          {"kind", l.kind},
                          {"layer_type", l.layer_type},
                          {"window", l.window},
                          {"past_input", l.past_input},
                          {"present_output", l.present_output}});
  return j;
}

}  // namespace

namespace {

// The GGUF row: llama.cpp builds its own graph, so one file, for the archs the backend maps.
nlohmann::json gguf_backend_json(nlohmann::json j, Structure structure, const std::string& mt) {
  const std::string arch = gguf_arch_of(mt);
  const std::string why = gguf_refusal(mt, structure);
  j["supported"] = why.empty();
  if (!why.empty()) {
    j["reason"] = "[gguf] " + why;
    return j;
  }
  j["artifacts"] = {
      arch == "bert"
          ? std::string("model.gguf (llama.cpp's bert arch: embeddings, with the tokenizer and the "
                        "sentence-transformers pooling)")
          : fmt::format("model.gguf (llama.cpp's {} arch, with the tokenizer and chat template)", arch)};
  if (arch == "bert") {
    j["notes"] = {
        "--dtype f32|f16|bf16 or --quantize q8_0|q4_0|q4_k|q4_k_m|q5_k_m|q6_k (ggml's blocks); embed with "
        "llama.cpp",
        "BertModel or BertForMaskedLM (its MLM head left out), mean or cls pooling from modules.json; "
        "llama.cpp's bert graph runs the tanh GELU (ggml's table) whatever hidden_act says"};
    return j;
  }
  j["notes"] = {
      "--dtype f32|f16|bf16 or --quantize q8_0|q4_0|q4_k|q4_k_m|q5_k_m|q6_k (ggml's blocks); run it in "
      "llama.cpp",
      "a config the arch cannot express is refused at export (a sliding window on llama.cpp's llama "
      "or phi3 arch, grouped-query attention on olmoe, a norm_topk_prob the arch does not compute)"};
  return j;
}

}  // namespace

// One backend row: the programs (or .pte methods) the exporter writes for this structure, or why not.
nlohmann::json backend_json(const std::string& name, const std::string& format, const std::string& option,
                            Structure structure, const std::string& mt) {
  nlohmann::json j = {{"backend", name},
                      {"format", format},
                      {"command", fmt::format("hfx export MODEL --format {}{}", format, option)}};
  try {
    check_export_skip(format, mt);
    if (auto at = option.find("--backend "); at != std::string::npos) {
      ExecutorchConfig probe;  // from_json refuses a backend hfx does not really write, saying why
      probe.from_json({{"backend", option.substr(at + 10)}});
    }
  } catch (const Error& e) {
    j["supported"] = false;
    j["reason"] = e.what();
    return j;
  }
  // --target ort refuses a model none of whose graphs takes a fused operator (onnx_exporter.cpp's
  // check_target_applied): an encoder-only model (bidirectional attention, LayerNorm) unless quantized.
  if (option.find("--target ort") != std::string::npos && structure == Structure::EncoderOnly) {
    j["supported"] = false;
    j["reason"] = fmt::format(
        "no ONNX Runtime fused operator applies to {} (encoder-only: bidirectional attention, LayerNorm): "
        "use --target standard, or --target ort with --quantize (MatMulNBits)",
        mt);
    return j;
  }
  if (format == "gguf") return gguf_backend_json(std::move(j), structure, mt);
  const auto& loop = capture::generation_loop(structure);
  std::vector<std::string> artifacts, notes;
  if (format == "onnx") {
    for (const auto& p : loop.programs) artifacts.push_back("onnx/" + p.name + ".onnx");
    if (option.find("ort") != std::string::npos)
      notes.push_back(
          "com.microsoft fused ops where they apply (GroupQueryAttention on causal self-attention); needs "
          "ONNX Runtime");
  } else if (format == "executorch") {
    std::vector<std::string> methods;
    if (structure == Structure::DecoderOnly)
      methods.push_back("forward (static cache: tokens, input_pos)");
    else
      for (const auto& p : loop.programs)
        if (!p.executorch_method.empty()) methods.push_back(p.executorch_method);
    artifacts.push_back("model.pte: " + join(methods));
  } else if (format == "dynamo") {
    for (const auto& p : loop.programs) {
      if (p.kinds.size() > 1) {
        notes.push_back(
            fmt::format("'{}' (merged) not written: torch.export has one graph per call kind", p.name));
        continue;
      }
      artifacts.push_back(p.name + ".pt2");
    }
    notes.push_back("numerics of .pt2 are checked on a PyTorch machine (tools/pt2_check/run.sh)");
  }
  std::string why;
  if (optimize_disabled(format, mt, &why)) notes.push_back("graph optimization disabled: " + why);
  j["supported"] = true;
  j["artifacts"] = artifacts;
  j["notes"] = notes;
  return j;
}

nlohmann::json backends_json(Structure structure, const std::string& mt) {
  return nlohmann::json::array({
      backend_json("onnx standard", "onnx", "", structure, mt),
      backend_json("onnx ort", "onnx", " --target ort", structure, mt),
      backend_json("executorch portable", "executorch", " --backend portable", structure, mt),
      backend_json("executorch xnnpack", "executorch", " --backend xnnpack", structure, mt),
      backend_json("dynamo", "dynamo", "", structure, mt),
      backend_json("gguf (llama.cpp)", "gguf", "", structure, mt),
  });
}

namespace {

// Sizes from the safetensors headers alone (no tensor is read): parameters, tensors, bytes per dtype.
void weight_sizes(const std::string& dir, nlohmann::json& j) {
  auto w = io::WeightStore::open_dir(dir);
  int64_t params = 0;
  std::map<std::string, nlohmann::json> by_dtype;
  for (const auto& n : w->names()) {
    const auto& ti = w->info(n);
    int64_t numel = 1;
    for (auto d : ti.shape) numel *= d;
    params += numel;
    auto& e = by_dtype[dtype_name(ti.dtype)];
    if (e.is_null()) e = {{"tensors", 0}, {"parameters", 0}, {"bytes", 0}};
    e["tensors"] = e["tensors"].get<int64_t>() + 1;
    e["parameters"] = e["parameters"].get<int64_t>() + numel;
    e["bytes"] = e["bytes"].get<int64_t>() + static_cast<int64_t>(ti.end - ti.begin);
  }
  j["parameters"] = params;
  j["tensors"] = w->names().size();
  j["by_dtype"] = by_dtype;
  int64_t file_bytes = 0;
  for (const auto& f : w->files()) file_bytes += static_cast<int64_t>(fs::file_size(f));
  j["weight_files_bytes"] = file_bytes;
}

nlohmann::json inspect(const std::string& dir) {
  if (!fs::is_directory(dir) || !fs::exists(fs::path(dir) / "config.json"))
    HFX_THROW("inspect", "expected a checkpoint folder with config.json, got '{}'", dir);
  nlohmann::json config;
  try {
    config = nlohmann::json::parse(io::read_file((fs::path(dir) / "config.json").string()));
  } catch (const nlohmann::json::exception& e) {
    HFX_THROW("inspect", "expected a JSON config.json in '{}', got a parse error: {}", dir, e.what());
  }
  std::string mt = config.value("model_type", "");
  if (!find_architecture(mt)) {
    std::vector<std::string> known;
    for (const Architecture* a : all_architectures()) known.push_back(a->model_type);
    HFX_THROW("inspect", "expected a model_type among [{}], got '{}' in {}/config.json", join(known), mt,
              dir);
  }
  std::unique_ptr<Model> m;
  try {
    m = load_model(dir);
  } catch (const Error& e) {
    HFX_THROW("inspect", "expected a loadable {} checkpoint in '{}', got: {}", mt, dir, e.what());
  }
  const ModelConfig& cfg = m->config();
  nlohmann::json j;
  j["path"] = fs::absolute(dir).string();
  // The id and revision as the manifest will record them (a hub snapshot: ORG/NAME and its commit).
  const auto [id, revision] = artifact::model_identity(dir);
  j["id"] = id;
  j["revision"] = revision;
  j["model_type"] = mt;
  j["class"] = config.contains("architectures") && config["architectures"].is_array() &&
                       !config["architectures"].empty()
                   ? config["architectures"][0].get<std::string>()
                   : "";
  j["head"] = m->head();
  j["structure"] = structure_name(m->structure());
  // What the model takes in, from its components' declared inputs (text ids, pixels, log-mel features).
  std::vector<std::string> modalities;
  auto takes = [&](const char* input) {
    for (const ComponentDecl& c : m->components())
      for (const InputDecl& d : c.inputs)
        if (d.name == input) return true;
    return false;
  };
  if (takes("input_ids")) modalities.push_back("text");
  if (takes("pixel_values")) modalities.push_back("image");
  if (takes("input_features")) modalities.push_back("audio");
  j["modalities"] = modalities;
  j["dtype"] = dtype_name(cfg.dtype);
  if (cfg.prequantized.enabled())  // a GPTQ / AWQ checkpoint: its codes as hfx holds them
    j["quantization"] = {{"format", cfg.raw.at("quantization_config").value("quant_method", "")},
                         {"codes", quant::to_json(cfg.prequantized)}};
  j["vocab_size"] = cfg.vocab_size;
  j["max_position_embeddings"] = cfg.max_position_embeddings;
  j["hidden_size"] = cfg.hidden_size;
  j["num_hidden_layers"] = cfg.num_hidden_layers;
  j["num_attention_heads"] = cfg.num_attention_heads;
  j["num_key_value_heads"] = cfg.num_key_value_heads;
  j["layer_types"] = cfg.layer_types;
  j["components"] = nlohmann::json::array();
  std::map<std::string, int64_t> cache_types;
  for (const auto& c : m->components()) {
    j["components"].push_back(component_json(c));
    for (const auto& l : c.cache) cache_types[l.layer_type]++;
  }
  j["cache_layer_types"] = cache_types;  // layer type → number of cache leaves
  weight_sizes(dir, j);
  j["backends"] = backends_json(m->structure(), mt);
  return j;
}

std::string human_bytes(int64_t b) {
  if (b >= (int64_t(1) << 30)) return fmt::format("{:.2f} GiB", b / double(int64_t(1) << 30));
  if (b >= (1 << 20)) return fmt::format("{:.2f} MiB", b / double(1 << 20));
  if (b >= (1 << 10)) return fmt::format("{:.1f} KiB", b / 1024.0);
  return fmt::format("{} B", b);
}

std::string render(const nlohmann::json& j) {
  std::string s;
  auto line = [&](const std::string& k, const std::string& v) { s += fmt::format("{:<14}{}\n", k, v); };
  line("model", j["path"].get<std::string>());
  line("id", j["id"].get<std::string>() +
                 (j["revision"].get<std::string>().empty() ? "" : " @ " + j["revision"].get<std::string>()));
  line("model_type", j["model_type"].get<std::string>());
  line("class",
       j["class"].get<std::string>().empty() ? "(none in config.json)" : j["class"].get<std::string>());
  line("head", j["head"].get<std::string>());
  line("structure", j["structure"].get<std::string>());
  std::string mods;
  for (const auto& x : j["modalities"]) mods += (mods.empty() ? "" : ", ") + x.get<std::string>();
  line("modalities", mods);
  line("dtype", j["dtype"].get<std::string>());
  if (j.contains("quantization")) {
    const auto& q = j["quantization"];
    line("quantization", fmt::format("{} {}, groups of {}{} (linear layers; read as their codes)",
                                     q["format"].get<std::string>(), q["codes"]["method"].get<std::string>(),
                                     q["codes"]["group_size"].get<int>(),
                                     q["codes"]["symmetric"].get<bool>() ? ", symmetric" : ""));
  }
  line("vocab", std::to_string(j["vocab_size"].get<int64_t>()));
  line("max positions", std::to_string(j["max_position_embeddings"].get<int64_t>()));
  line("layers", fmt::format("{} (hidden {}, heads {}, kv heads {})", j["num_hidden_layers"].get<int64_t>(),
                             j["hidden_size"].get<int64_t>(), j["num_attention_heads"].get<int64_t>(),
                             j["num_key_value_heads"].get<int64_t>()));
  std::map<std::string, int> lt;
  for (const auto& t : j["layer_types"]) lt[t.get<std::string>()]++;
  std::vector<std::string> lts;
  for (const auto& [t, n] : lt) lts.push_back(fmt::format("{} x{}", t, n));
  line("layer types", lts.empty() ? "(not declared by the config)" : join(lts));
  std::vector<std::string> cts;
  for (const auto& [t, n] : j["cache_layer_types"].items())
    cts.push_back(fmt::format("{} ({} leaves)", t, n.get<int64_t>()));
  line("cache", cts.empty() ? "none" : join(cts));
  line("parameters",
       fmt::format("{} in {} tensors", j["parameters"].get<int64_t>(), j["tensors"].get<int64_t>()));
  for (const auto& [dt, e] : j["by_dtype"].items())
    line("  " + dt, fmt::format("{} parameters, {} bytes ({})", e["parameters"].get<int64_t>(),
                                e["bytes"].get<int64_t>(), human_bytes(e["bytes"].get<int64_t>())));
  line("weight files", human_bytes(j["weight_files_bytes"].get<int64_t>()));
  s += "components\n";
  for (const auto& c : j["components"]) {
    s += fmt::format("  {}\n", c["name"].get<std::string>());
    for (const auto& in : c["inputs"]) {
      if (in["name"].get<std::string>().rfind("past_key_values.", 0) == 0)
        continue;  // summarized as cache below
      std::vector<std::string> axes = in["axes"].get<std::vector<std::string>>();
      s +=
          fmt::format("    in  {} {} [{}]{}\n", in["name"].get<std::string>(), in["dtype"].get<std::string>(),
                      join(axes), in["optional"].get<bool>() ? " (optional)" : "");
    }
    std::vector<std::string> outs;
    for (const auto& o : c["outputs"])
      if (o.get<std::string>().rfind("present.", 0) != 0) outs.push_back(o.get<std::string>());
    s += fmt::format("    out {}\n", join(outs));
    if (!c["cache"].empty()) {
      std::map<std::string, int> kinds;
      for (const auto& l : c["cache"])
        kinds[fmt::format("{} {}", l["kind"].get<std::string>(), l["layer_type"].get<std::string>())]++;
      std::vector<std::string> ks;
      for (const auto& [k, n] : kinds) ks.push_back(fmt::format("{} x{}", k, n));
      s += fmt::format("    cache past_key_values.N.* -> present.N.*: {}\n", join(ks));
    }
  }
  s += "backends\n";
  for (const auto& b : j["backends"]) {
    if (b["supported"].get<bool>()) {
      s += fmt::format("  {:<20}yes  {}\n", b["backend"].get<std::string>(),
                       join(b["artifacts"].get<std::vector<std::string>>()));
      for (const auto& n : b["notes"]) s += fmt::format("  {:<20}     note: {}\n", "", n.get<std::string>());
    } else {
      s += fmt::format("  {:<20}no   {}\n", b["backend"].get<std::string>(), b["reason"].get<std::string>());
    }
  }
  return s;
}

}  // namespace

void register_inspect(CLI::App& app) {
  struct Args {
    std::string model;
    bool json = false;
  };
  auto a = std::make_shared<Args>();
  auto* cmd = app.add_subcommand(
      "inspect", "Show what a checkpoint is and what hfx can export it to, before any export");
  cmd->add_option("model", a->model, "Checkpoint folder or model id ORG/NAME[@REVISION]")->required();
  cmd->add_flag("--json", a->json, "Print the inventory as JSON");
  cmd->footer(
      "Example:\n  hfx create-tiny llama -o tiny && hfx inspect tiny --json\n"
      "  hfx inspect HuggingFaceTB/SmolLM2-135M@main   (a model id: the HF cache, else the Hub)");
  cmd->callback([a] {
    nlohmann::json j = inspect(resolve_model(a->model));
    if (a->json)
      fmt::print("{}\n", j.dump(2));
    else
      fmt::print("{}", render(j));
  });
}

}  // namespace hfx::cli
