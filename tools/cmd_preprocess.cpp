// `hfx preprocess MODEL --image FILE [--image FILE2 ...] [-o pixel_values.safetensors]`: runs the folder's
// image processor (preprocessor_config.json's image_processor_type; see hfx/processors/image.h) on the
// images and writes what its vision encoder takes as safetensors: CLIP / SigLIP / Gemma 3: pixel_values
// [N, 3, H, W]; Idefics3 / SmolVLM: pixel_values [1, frames, 3, S, S] (tiles and global images); Qwen2-VL:
// pixel_values [patches, C·T·P·P] and image_grid_thw [N, 3].
#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

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
    const std::string dir = resolve_model(a->model);
    std::vector<processors::Image> images;
    for (const auto& p : a->images) images.push_back(processors::read_image(p));
    const std::string path = (std::filesystem::path(dir) / "preprocessor_config.json").string();
    const nlohmann::json j =
        std::filesystem::exists(path) ? nlohmann::json::parse(io::read_file(path)) : nlohmann::json::object();
    const std::string type = j.value("image_processor_type", "");
    std::vector<std::pair<std::string, Tensor>> out;
    if (type.rfind("Qwen2VLImageProcessor", 0) == 0) {
      const auto px = processors::qwen2_vl_pixel_values(
          processors::Qwen2VlImageProcessorConfig::from_json(j, path), images);
      std::vector<int64_t> grid;
      for (const auto& g : px.grid_thw) grid.insert(grid.end(), g.begin(), g.end());
      out = {{"pixel_values", px.pixel_values},
             {"image_grid_thw", Tensor::from_ints({static_cast<int64_t>(px.grid_thw.size()), 3}, grid)}};
    } else if (type.rfind("Idefics3ImageProcessor", 0) == 0 || type.rfind("SmolVLMImageProcessor", 0) == 0) {
      out = {{"pixel_values", processors::idefics3_pixel_values(
                                  processors::Idefics3ImageProcessorConfig::from_json(j, path), images)
                                  .pixel_values}};
    } else {
      out = {{"pixel_values",
              processors::clip_pixel_values(processors::ClipImageProcessorConfig::load(dir), images)}};
    }
    if (!a->out.empty()) io::write_safetensors(a->out, out);
    for (const auto& [name, t] : out)
      fmt::print("{} [{}] {}{}\n", name, fmt::join(t.shape(), ", "), dtype_name(t.dtype()),
                 a->out.empty() ? "" : " → " + a->out);
  });
}

}  // namespace hfx::cli
