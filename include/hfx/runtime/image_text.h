// hfx/runtime/image_text.h — generation with images (image-text-to-text) from a llava checkpoint folder.
//
// The prompt carries one image marker (processor_config.json's `image_token`, "<image>") per image; each
// marker is tokenized to image_token_index and expanded to as many image tokens as the vision encoder gives
// features per image; the images go through the folder's image processor (hfx/processors/image.h); the
// model's merged forward runs eagerly (src/models/llava_vision.h) with greedy decoding. The ONNX engine is
// not there yet for llava.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace hfx::rt {

struct ImageTextResult {
  std::vector<int64_t> prompt_ids;  ///< after expanding the image markers
  std::vector<int64_t> ids;         ///< new tokens
  std::string text;                 ///< the new tokens decoded (special tokens kept)
};

/// Greedy image-text-to-text from the llava checkpoint in `dir`. Throws hfx::Error("generate", "expected
/// one <image> marker per image (N images), got M markers …") when the prompt and the images disagree, and
/// the image and model errors of the parts.
ImageTextResult generate_with_images(const std::string& dir, const std::vector<std::string>& image_paths,
                                     const std::string& prompt, int64_t max_new_tokens);

}  // namespace hfx::rt
