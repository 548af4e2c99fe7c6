// The GGUF backend: one file, model.gguf, for llama.cpp. No program is captured (llama.cpp builds its own
// graph per architecture); the stages are plan (arch, types), metadata (keys and the tokenizer) and write
// (the tensors, streamed).
#include <filesystem>

#include "export/gguf/gguf_archs.h"
#include "export/gguf/gguf_file.h"
#include "export/gguf/gguf_vocab.h"
#include "hfx/core/error.h"
#include "hfx/export/gguf.h"
#include "hfx/export/registry.h"

namespace hfx {

namespace {

class GgufExporter : public Exporter {
 public:
  std::string format() const override { return "gguf"; }
  ExportResult export_model(const Model& model, const CaptureOptions&, const ExportConfig& config,
                            const std::string& out_dir) override {
    return write(model, config, out_dir);
  }
  ExportResult export_for_generation(const Model& model, const CaptureOptions&,
                                     const std::map<std::string, const ExportConfig*>& configs,
                                     const std::string& out_dir) override {
    return write(model, config_for(configs, "model"), out_dir);
  }

 private:
  ExportResult write(const Model& model, const ExportConfig& config, const std::string& out_dir) const {
    const auto* cfg = dynamic_cast<const GgufConfig*>(&config);
    HFX_CHECK(cfg != nullptr, "gguf", "expected a gguf config, got a {} one", config.format);
    const ModelConfig& c = model.config();
    HFX_CHECK(!c.prequantized.enabled(), "gguf",
              "expected a float checkpoint for GGUF, got GPTQ/AWQ codes in {}: export the float model with "
              "--quantize q8_0, q4_0, q4_k, q4_k_m, q5_k_m or q6_k",
              c.model_type);
    // Refused before anything is written: what llama.cpp does not run.
    if (const std::string why = gguf_refusal(c.model_type, model.structure()); !why.empty())
      throw Error("gguf", why);
    ExportStep step{"model", "plan", 0, 1, 0, 3, 0};
    report(step);
    const GgmlType matrix = cfg->matrix_type(c.dtype);
    gguf::File f;
    // The declared stages of the gguf backend (registry_table.cpp), run by name: none rewrites an hfx graph.
    run_stage("gguf", "plan", nullptr, [&](int) {
      gguf::add_model(f, model, matrix);  // refuses an arch or config llama.cpp cannot run, before writing
      if (const auto mix = gguf::k_mix_of(cfg->quantize))
        gguf::apply_k_mix(f, gguf_arch_of(c.model_type), c, *mix);
    });
    step.stage = "metadata", step.stage_index = 1;
    report(step);
    run_stage("gguf", "metadata", nullptr, [&](int) {
      const auto mix = gguf::k_mix_of(cfg->quantize);
      if (!mix) {
        f.kv_u32("general.file_type", ggml_file_type(matrix));
        // ggml's block layouts' version: the converter writes it whatever the type.
        f.kv_u32("general.quantization_version", 2);
      }
      gguf::add_vocab(f, out_dir, c);
      gguf::add_pooling(f, gguf_arch_of(c.model_type), out_dir);
      if (mix) {  // where llama-quantize sets them (last: it re-adds a key it sets)
        f.kv_u32("general.quantization_version", 2);
        f.kv_u32("general.file_type", gguf::k_mix_file_type(*mix));
      }
    });
    step.stage = "write", step.stage_index = 2;
    report(step);
    const std::string path = (std::filesystem::path(out_dir) / "model.gguf").string();
    std::pair<uint64_t, std::string> written;
    run_stage("gguf", "write", nullptr, [&](int) {
      written = f.write(path, [&](uint64_t bytes) {
        step.bytes_written = bytes;
        report(step);
      });
    });
    const auto& [size, sha256] = written;
    ExportResult r;
    r.out_dir = out_dir;
    r.files.push_back({"model", "model.gguf", "weights", sha256, size});
    r.notes.push_back(fmt::format("GGUF for llama.cpp's {} arch: {} tensors, matrices in {}",
                                  gguf_arch_of(c.model_type), f.tensor_count(),
                                  gguf::k_mix_of(cfg->quantize) ? cfg->quantize + " (llama-quantize's mix)"
                                                                : std::string(ggml_type_name(matrix))));
    return r;
  }
};

}  // namespace

std::unique_ptr<Exporter> make_gguf_exporter() { return std::make_unique<GgufExporter>(); }

GgmlType GgufConfig::matrix_type(DType checkpoint) const {
  if (quantize == "q8_0") return GgmlType::Q8_0;
  if (quantize == "q4_0") return GgmlType::Q4_0;
  if (quantize == "q4_k" || quantize == "q4_k_m") return GgmlType::Q4_K;
  if (quantize == "q5_k_m") return GgmlType::Q5_K;
  if (quantize == "q6_k") return GgmlType::Q6_K;
  switch (weight_dtype(checkpoint)) {
    case DType::F16:
      return GgmlType::F16;
    case DType::BF16:
      return GgmlType::BF16;
    default:
      return GgmlType::F32;
  }
}

nlohmann::json GgufConfig::precision(DType checkpoint) const {
  nlohmann::json p = ExportConfig::precision(checkpoint);
  if (!quantize.empty()) p["key"] = quantize;
  return p;
}

}  // namespace hfx
