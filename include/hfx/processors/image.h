// hfx/processors/image.h — images for vision-language models: decode (PNG, JPEG), resample, and the
// CLIP image processor that turns images into `pixel_values` as Hugging Face's CLIPImageProcessor does.
//
// Decoding follows what PIL (and so transformers) does with a file: PNG through libpng with no gamma
// correction, palettes looked up (transparency ignored), 16-bit samples cut to their high byte, alpha
// dropped by `convert("RGB")`; JPEG through libjpeg(-turbo) with its defaults (islow IDCT, fancy
// upsampling). EXIF orientation is not applied. A truncated or undecodable file is an error, never a
// partly gray image (libjpeg's other corrupt-data warnings, such as extraneous bytes before a marker, pass
// as in PIL). Resampling is Pillow's ImagingResample (separable, antialiased when downscaling, 22-bit fixed
// point, horizontal pass first, uint8 between the passes).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "hfx/core/tensor.h"

namespace hfx::processors {

/// An 8-bit RGB image, rows top to bottom, pixels interleaved (HWC).
struct Image {
  int64_t width = 0;
  int64_t height = 0;
  std::vector<uint8_t> rgb;  ///< width * height * 3 bytes
};

/// Largest image decoded, in pixels: Pillow's DecompressionBombError threshold (2 × MAX_IMAGE_PIXELS).
constexpr int64_t kMaxImagePixels = 2 * 89478485LL;

/// Decodes a PNG or JPEG (by its signature) to RGB. `what` names the source in errors.
/// Throws hfx::Error("image", …) on an unknown format, a corrupt or truncated file, or an image over
/// kMaxImagePixels.
Image decode_image(std::string_view bytes, const std::string& what);
/// Reads and decodes the file at `path`.
Image read_image(const std::string& path);

/// Pillow's resampling filters, numbered as PIL.Image.Resampling (the `resample` of preprocessor configs).
enum class Resample : int { Nearest = 0, Lanczos = 1, Bilinear = 2, Bicubic = 3, Box = 4, Hamming = 5 };

/// Resizes as Pillow's Image.resize((width, height), resample) on an RGB image (Nearest is not supported).
Image resize(const Image& in, int64_t width, int64_t height, Resample filter);

/// Crops the centered width × height window as transformers' center_crop: offsets (size - crop) // 2,
/// zero (black) padding where the image is smaller than the window.
Image center_crop(const Image& in, int64_t width, int64_t height);

/// The fields of a CLIPImageProcessor preprocessor_config.json (llava, CLIP, …) that change pixel values;
/// also SiglipImageProcessor / Gemma3ImageProcessor (Gemma 3), which resize to size.{height, width} with no
/// crop (pan-and-scan is refused).
struct ClipImageProcessorConfig {
  bool do_resize = true;
  int64_t shortest_edge = 224;                  ///< size.shortest_edge (or size as one integer)
  int64_t resize_height = 0, resize_width = 0;  ///< size.{height, width}: the exact size (0: shortest_edge)
  Resample resample = Resample::Bicubic;
  bool do_center_crop = true;
  int64_t crop_height = 224, crop_width = 224;
  bool do_rescale = true;
  double rescale_factor = 1.0 / 255.0;
  bool do_normalize = true;
  float image_mean[3] = {0.48145466f, 0.4578275f, 0.40821073f};
  float image_std[3] = {0.26862954f, 0.26130258f, 0.27577711f};

  /// Parses preprocessor_config.json (transformers' CLIPImageProcessor defaults for absent keys). Throws
  /// hfx::Error("image processor", …) for another image_processor_type or a value of the wrong type.
  static ClipImageProcessorConfig from_json(const nlohmann::json& j, std::string_view where);
  /// Reads DIR/preprocessor_config.json.
  static ClipImageProcessorConfig load(const std::string& dir);
};

/// The size (width, height) transformers' CLIPImageProcessor resizes an image to: the shortest edge
/// becomes `shortest_edge`, the other int(shortest_edge * long / short).
std::pair<int64_t, int64_t> clip_resize_size(const ClipImageProcessorConfig& cfg, int64_t width,
                                             int64_t height);

/// pixel_values [N, 3, H, W] float32 for `images`: resize, center crop, rescale, normalize, in the
/// order and arithmetic of transformers (rescale in double then float32; normalize in float32).
Tensor clip_pixel_values(const ClipImageProcessorConfig& cfg, const std::vector<Image>& images);

/// The fields of an Idefics3ImageProcessor preprocessor_config.json (idefics3, SmolVLM) that change pixel
/// values.
struct Idefics3ImageProcessorConfig {
  bool do_resize = true;
  int64_t longest_edge = 4 * 364;  ///< size.longest_edge: every image's longest side is resized to it
  int64_t max_image_size = 364;    ///< max_image_size.longest_edge: the tile side
  bool do_image_splitting = true;
  Resample resample = Resample::Lanczos;
  double rescale_factor = 1.0 / 255.0;
  bool do_rescale = true, do_normalize = true;
  float image_mean[3] = {0.5f, 0.5f, 0.5f};
  float image_std[3] = {0.5f, 0.5f, 0.5f};

  /// Parses preprocessor_config.json (transformers 4.47's defaults for absent keys). Throws
  /// hfx::Error("image processor", …) for another image_processor_type or a value of the wrong type.
  static Idefics3ImageProcessorConfig from_json(const nlohmann::json& j, std::string_view where);
};

/// Idefics3ImageProcessor's output for one prompt's images: pixel_values [1, frames, 3, S, S] (every image's
/// tiles, row by row, then its global image; S = max_image_size) and each image's tile rows and columns
/// (0 and 0: not split, one frame).
struct Idefics3Pixels {
  Tensor pixel_values;
  std::vector<int64_t> rows, cols;
};

/// transformers 4.47's Idefics3ImageProcessor.preprocess for one prompt: the longest side resized to
/// `longest_edge` (aspect kept, the other side made even; at most 4096), then (splitting) resized up to
/// multiples of the tile side, cut into tiles and the whole image resized to one tile (always Lanczos, as
/// split_image does); rescale, normalize. Whole tiles only: nothing to pad for one prompt.
Idefics3Pixels idefics3_pixel_values(const Idefics3ImageProcessorConfig& cfg,
                                     const std::vector<Image>& images);

/// The fields of a Qwen2VLImageProcessor preprocessor_config.json (qwen2_vl) that change pixel values.
struct Qwen2VlImageProcessorConfig {
  bool do_resize = true;
  int64_t min_pixels = 56 * 56, max_pixels = 28 * 28 * 1280;
  int64_t patch_size = 14, merge_size = 2, temporal_patch_size = 2;
  Resample resample = Resample::Bicubic;
  bool do_rescale = true, do_normalize = true;
  double rescale_factor = 1.0 / 255.0;
  float image_mean[3] = {0.48145466f, 0.4578275f, 0.40821073f};
  float image_std[3] = {0.26862954f, 0.26130258f, 0.27577711f};

  /// Parses preprocessor_config.json (transformers 4.47's defaults for absent keys; min_pixels/max_pixels
  /// or size.{min_pixels, max_pixels}). Throws hfx::Error("image processor", …) for another
  /// image_processor_type or a value of the wrong type.
  static Qwen2VlImageProcessorConfig from_json(const nlohmann::json& j, std::string_view where);
};

/// smart_resize (transformers 4.47): (height, width) as multiples of patch_size × merge_size nearest the
/// image's, scaled into [min_pixels, max_pixels] keeping the aspect ratio. Throws hfx::Error("image
/// processor", …) for a side below that factor or an aspect ratio over 200, as transformers does.
std::pair<int64_t, int64_t> qwen2_vl_resize_size(const Qwen2VlImageProcessorConfig& cfg, int64_t height,
                                                 int64_t width);

/// Qwen2VLImageProcessor's output: pixel_values [patches, C·T·P·P] (every image's patches, each image
/// repeated over the temporal patch, in merge-window order) and each image's grid {t, h, w} in patches.
struct Qwen2VlPixels {
  Tensor pixel_values;
  std::vector<std::array<int64_t, 3>> grid_thw;
};

/// transformers 4.47's Qwen2VLImageProcessor.preprocess for `images`: smart_resize, rescale, normalize,
/// then the patch flattening of _preprocess.
Qwen2VlPixels qwen2_vl_pixel_values(const Qwen2VlImageProcessorConfig& cfg, const std::vector<Image>& images);

}  // namespace hfx::processors
