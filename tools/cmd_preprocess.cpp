// `hfx preprocess MODEL --image FILE [--image FILE2 ...] [-o pixel_values.safetensors]`: runs the folder's
// image processor (preprocessor_config.json; see hfx/processors/image.h) on each image and writes the
// batched `pixel_values` [N, 3, H, W] float32 as safetensors, the input a vision encoder takes.
#include <fmt/format.h>

#include "commands.h"
#include "hfx/core/error.h"
#include "hfx/io/safetensors.h"
#include "hfx/processors/image.h"

namespace hfx::cli {

void register_preprocess(CLI::App& app) {
  struct Args {
    std::string model, out;
    std::vector<std::string> images;
  };
  auto a = std::make_shared<Args>();
  auto* cmd = app.add_subcommand("preprocess", "Image processor: images → pixel_values (safetensors)");
  cmd->footer(
      "Example:\n  hfx preprocess llava-hf/llava-1.5-7b-hf --image cat.jpg -o pixel_values.safetensors");
  cmd->add_option("model", a->model, "folder with preprocessor_config.json, or model id ORG/NAME[@REVISION]")
      ->required();
  cmd->add_option("--image", a->images, "a PNG or JPEG file (repeatable)");
  cmd->add_option("-o,--out", a->out,
                  "write pixel_values here (safetensors); without it only the shape is printed");
  cmd->callback([a] {
    if (a->images.empty()) throw UsageError("preprocess", "expected at least one --image, got none");
    const auto cfg = processors::ClipImageProcessorConfig::load(resolve_model(a->model));
    std::vector<processors::Image> images;
    for (const auto& p : a->images) images.push_back(processors::read_image(p));
    const Tensor pv = processors::clip_pixel_values(cfg, images);
    if (!a->out.empty()) io::write_safetensors(a->out, {{"pixel_values", pv}});
    fmt::print("pixel_values [{}] float32{}\n", fmt::join(pv.shape(), ", "),
               a->out.empty() ? "" : " → " + a->out);
  });
}

}  // namespace hfx::cli
