// Image-text-to-text over a llava checkpoint: what transformers' LlavaProcessor + generate() do, eagerly —
// the image processor, the marker expansion to one image token per image feature, greedy decoding of the
// merged forward (src/models/llava_vision.h).
#include "hfx/runtime/image_text.h"

#include <filesystem>

#include <nlohmann/json.hpp>

#include "hfx/core/error.h"
#include "hfx/io/safetensors.h"
#include "hfx/processors/image.h"
#include "hfx/tokenizers/tokenizer.h"
#include "models/llava_vision.h"

namespace hfx::rt {
namespace {

nlohmann::json read_json(const std::string& path) { return nlohmann::json::parse(io::read_file(path)); }

size_t count_markers(const std::string& prompt, const std::string& marker) {
  size_t n = 0;
  for (size_t at = prompt.find(marker); at != std::string::npos; at = prompt.find(marker, at + marker.size()))
    n++;
  return n;
}

// Image features per image: the vision tower's patches, plus the CLS position unless 'default' drops it.
int64_t features_per_image(const nlohmann::json& config) {
  const auto& v = config.at("vision_config");
  const int64_t g = v.value("image_size", int64_t{224}) / v.value("patch_size", int64_t{32});
  return g * g + (config.value("vision_feature_select_strategy", "default") == "default" ? 0 : 1);
}

}  // namespace

ImageTextResult generate_with_images(const std::string& dir, const std::vector<std::string>& image_paths,
                                     const std::string& prompt, int64_t max_new_tokens) {
  namespace fs = std::filesystem;
  const nlohmann::json config = read_json((fs::path(dir) / "config.json").string());
  const std::string type = config.value("model_type", "");
  HFX_CHECK(type == "llava", "generate",
            "expected a llava checkpoint folder for --image (the vision-language model hfx runs so far), got "
            "model_type '{}' in '{}'",
            type, dir);
  std::string marker = "<image>";
  if (fs::exists(fs::path(dir) / "processor_config.json"))
    marker = read_json((fs::path(dir) / "processor_config.json").string()).value("image_token", marker);
  const size_t markers = count_markers(prompt, marker);
  HFX_CHECK(
      markers == image_paths.size(), "generate",
      "expected one {} marker per image in the prompt ({} image(s) given), got {} marker(s); write {} where "
      "each image goes, e.g. 'USER: {}\\nWhat is this? ASSISTANT:'",
      marker, image_paths.size(), markers, marker, marker);

  const auto proc = processors::ClipImageProcessorConfig::load(dir);
  std::vector<processors::Image> images;
  for (const auto& p : image_paths) images.push_back(processors::read_image(p));
  const Tensor pixel_values = images.empty() ? Tensor() : processors::clip_pixel_values(proc, images);

  const auto tok = tok::Tokenizer::from_dir(dir);
  const int64_t image_token = config.at("image_token_index").get<int64_t>();
  const int64_t per_image = features_per_image(config);
  ImageTextResult r;
  for (int32_t id : tok.encode(prompt)) {
    if (id == image_token)
      r.prompt_ids.insert(r.prompt_ids.end(), static_cast<size_t>(per_image), image_token);
    else
      r.prompt_ids.push_back(id);
  }
  const auto weights = io::WeightStore::open_dir(dir);
  r.ids =
      models::llava_greedy(*weights, config, r.prompt_ids, pixel_values, static_cast<int>(max_new_tokens));
  const std::vector<int32_t> ids32(r.ids.begin(), r.ids.end());
  r.text = tok.decode(ids32);
  return r;
}

}  // namespace hfx::rt
