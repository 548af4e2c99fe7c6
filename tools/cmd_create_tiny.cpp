// `hfx create-tiny ARCH -o DIR [--preset NAME] [--dtype D] [--seed N] [--layers N] [--quantize gptq|awq]`:
// a random checkpoint in the exact Hugging Face layout (see hfx/models/tiny.h), optionally pre-quantized
// in the GPTQ or AWQ layout (hfx/quant/checkpoint_formats.h).
#include <fmt/format.h>

#include <optional>

#include "commands.h"
#include "hfx/core/dtype.h"
#include "hfx/core/error.h"
#include "hfx/models/quantize_model.h"
#include "hfx/models/tiny.h"
#include "hfx/quant/checkpoint_formats.h"
#include "models/tiny_hooks.h"

namespace hfx::cli {

void register_create_tiny(CLI::App& app) {
  struct Args {
    std::string arch, out, preset = "tiny", dtype, head, pooling, quantize, gptq_format = "gptq";
    int bits = 4, group_size = 32;
    bool sentence_transformers = false, asymmetric = false;
    uint64_t seed = 0;
    int64_t layers = 0;
    double initializer_range = 0;
  };
  auto a = std::make_shared<Args>();
  std::string archs;
  for (const Architecture* x : all_architectures()) archs += (archs.empty() ? "" : ", ") + x->model_type;
  auto* cmd = app.add_subcommand(
      "create-tiny", "Write a random checkpoint (config, weights, tokenizer) for an architecture");
  cmd->footer(
      "Example:\n  hfx create-tiny llama -o tiny-llama\n  hfx create-tiny bert --head masked_lm -o "
      "tiny-bert");
  cmd->add_option("arch", a->arch, "model_type: " + archs)->required();
  cmd->add_option("-o,--out", a->out, "output folder")->required();
  cmd->add_option("--preset", a->preset,
                  "tiny (default) or a real model's shape, e.g. llama-3.2-1b, llama-100m");
  cmd->add_option("--dtype", a->dtype, "float32 | bfloat16 | float16 (default: the preset's)");
  cmd->add_option("--seed", a->seed, "random seed (default 0)");
  cmd->add_option("--layers", a->layers, "number of layers (default: the preset's)");
  cmd->add_option(
         "--initializer-range", a->initializer_range,
         "weights' standard deviation (default: the preset's initializer_range, else 0.02); e.g. 0.1 "
         "gives a trained model's logit scale")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--head", a->head,
                  "task head: base | masked_lm | sequence_classification | token_classification | "
                  "seq2seq_lm | causal_lm (default: the architecture's first)");
  cmd->add_flag("--sentence-transformers", a->sentence_transformers,
                "also write the sentence-transformers modules (modules.json, 1_Pooling, 2_Normalize); "
                "encoder base models");
  cmd->add_option("--pooling", a->pooling, "with --sentence-transformers: mean (default) | cls | max");
  cmd->add_option("--quantize", a->quantize,
                  "write a pre-quantized checkpoint: gptq (AutoGPTQ layout) | awq (AutoAWQ GEMM layout); "
                  "round-to-nearest codes of the random weights, LM head left in float");
  cmd->add_option("--bits", a->bits, "with --quantize: 4 (default) or 8 (gptq only)");
  cmd->add_option("--group-size", a->group_size, "with --quantize: 32 (default), 64 or 128");
  cmd->add_flag("--asymmetric", a->asymmetric,
                "with --quantize gptq: zero points per group (awq always has them)");
  cmd->add_option("--gptq-format", a->gptq_format, "with --quantize gptq: gptq (v1, default) | gptq_v2");
  cmd->callback([a] {
    if (!a->pooling.empty() && !a->sentence_transformers)
      throw UsageError(
          "create-tiny",
          fmt::format("expected --pooling together with --sentence-transformers, got --pooling {} alone",
                      a->pooling));
    TinyOptions o;
    if (a->sentence_transformers) o.sentence_pooling = a->pooling.empty() ? "mean" : a->pooling;
    o.preset = a->preset;
    if (!a->dtype.empty()) o.dtype = dtype_from_name(a->dtype);
    o.seed = a->seed;
    o.layers = a->layers;
    o.initializer_range = a->initializer_range;
    o.head = a->head;
    // The quantization is checked before anything is written.
    std::optional<quant::CheckpointQuant> cq;
    if (!a->quantize.empty()) {
      if (a->group_size != 32 && a->group_size != 64 && a->group_size != 128)
        throw UsageError("create-tiny",
                         fmt::format("expected --group-size 32, 64 or 128, got {}", a->group_size));
      nlohmann::json qc = {{"quant_method", a->quantize}, {"bits", a->bits}, {"group_size", a->group_size}};
      if (a->quantize == "gptq") qc["sym"] = !a->asymmetric, qc["checkpoint_format"] = a->gptq_format;
      cq = quant::parse_checkpoint_quant(qc);
    }
    auto cfg = create_tiny(a->arch, a->out, o);
    std::string extra;
    if (cq) {
      const int n = quant::write_prequantized_checkpoint(a->out, *cq);
      extra = fmt::format(", {} {}-bit, groups of {}: {} linear weights", cq->method, cq->bits,
                          cq->group_size, n);
    }
    fmt::print("wrote {} ({}, preset {}, vocab {}{}) to {}\n", a->arch, cfg.value("torch_dtype", "float32"),
               a->preset, cfg.value("vocab_size", 0), extra, a->out);
  });
}

}  // namespace hfx::cli
