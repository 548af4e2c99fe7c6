// examples/generate.cpp — generation through the hfx::Generator C++ API.
//
//   example_generate MODEL_OR_OUT "prompt" [more prompts...]
//
// A checkpoint folder runs the eager reference; an export folder (manifest.json or onnx/) runs ONNX
// Runtime. One prompt streams its tokens; several are batched with left padding.
#include <cstdio>
#include <string>
#include <vector>

#include "hfx/core/error.h"
#include "hfx/runtime/generator.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s MODEL_OR_OUT PROMPT [PROMPT...]\n", argv[0]);
    return 2;
  }
  try {
    hfx::Generator gen = hfx::Generator::open(argv[1], {.engine = "auto"});
    std::vector<std::string> prompts(argv + 2, argv + argc);

    hfx::GenerationOptions opt;
    opt.max_new_tokens = 32;
    opt.sampling.greedy = false;  // sample: temperature, then top-k, then top-p
    opt.sampling.temperature = 0.8f;
    opt.sampling.top_k = 50;
    opt.sampling.top_p = 0.95f;
    opt.sampling.seed = 42;
    opt.stop = {"\n\n"};

    const bool stream = prompts.size() == 1;
    auto result = gen.generate(prompts, opt, [&](const hfx::TokenEvent& e) {
      if (stream) {
        std::fputs(e.text.c_str(), stdout);
        std::fflush(stdout);
      }
    });
    if (stream) std::puts("");
    for (size_t i = 0; !stream && i < result.texts.size(); i++)
      std::printf("[%zu] %s%s  (%zu tokens, %s)\n", i, prompts[i].c_str(), result.texts[i].c_str(),
                  result.ids[i].size(), result.finish_reasons[i].c_str());
    std::fprintf(stderr, "%s engine: prefill %.1f ms, %lld decode steps in %.1f ms\n",
                 gen.engine().name().c_str(), result.stats.prefill_s * 1e3,
                 static_cast<long long>(result.stats.decode_steps), result.stats.decode_s * 1e3);
  } catch (const hfx::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
