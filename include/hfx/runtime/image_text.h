// hfx/runtime/image_text.h — generation with images (image-text-to-text) from a llava, gemma3, idefics3 or
// smolvlm or qwen2_vl checkpoint folder (eager) or its export folder (ONNX Runtime over
// onnx/vision_encoder.onnx, onnx/embed_tokens.onnx and onnx/decoder_model_merged.onnx, as Transformers.js
// loads them).
//
// llava: the prompt carries one image marker (processor_config.json's `image_token`, "<image>") per image;
// each marker is tokenized to image_token_index and expanded to as many image tokens as the vision encoder
// gives features per image. gemma3: the marker is the tokenizer's boi_token ("<start_of_image>"), replaced
// before tokenization by "\n\n<start_of_image>" + image_seq_length × "<image_soft_token>" +
// "<end_of_image>\n\n" as Gemma3Processor does, and the decoder gets token_type_ids (1 on image tokens:
// transformers 4.51 lets them attend to each other). idefics3 / smolvlm: each "<image>" becomes
// Idefics3Processor's text for the image's tiles (<row_R_col_C> + image tokens) and its global image.
// qwen2_vl: each "<|image_pad|>" becomes as many <|image_pad|> as the image has merged patches, and the
// decoder gets Qwen2-VL's multimodal positions (get_rope_index). The
// images go through the folder's image processor (hfx/processors/image.h: CLIP, SigLIP / Gemma 3 or
// Idefics3). Then the model's generate(): the vision encoder once, the prompt's
// embeddings with the image features written over the image tokens' rows in order, a prefill of the decoder
// on them and one decoder call per new token over its KV cache (greedy; stops at an eos id of the config).
//
//   auto r = hfx::rt::generate_with_images("out/llava-onnx", {"cat.png"}, "USER: <image>\nWhat is it?
//   ASSISTANT:", 32);
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "hfx/runtime/generator.h"

namespace hfx::rt {

/// A vision-language model's three components; the engine keeps the decoder's KV cache.
class ImageTextEngine {
 public:
  virtual ~ImageTextEngine() = default;
  virtual std::string name() const = 0;  ///< "eager" | "ort"
  /// image_features [images, K, hidden] (row-major, `shape` set) for pixel_values [images, C, H, W]; or,
  /// with `grid_thw` (qwen2_vl: {t, h, w} per image), [tokens, hidden] for pixel_values [patches, C·T·P·P].
  virtual std::vector<float> encode_images(std::span<const float> pixels,
                                           const std::vector<int64_t>& pixel_shape,
                                           std::span<const int64_t> grid_thw,
                                           std::vector<int64_t>& shape) = 0;
  /// inputs_embeds [1, S, hidden] of input_ids [1, S].
  virtual std::vector<float> embed(std::span<const int64_t> ids) = 0;
  /// Drops the decoder's cache (the next step is a prefill).
  virtual void reset() = 0;
  /// One decoder call on inputs_embeds [1, S, hidden] over the cache; returns the last position's logits.
  /// `token_types` [S] (1 = image token) goes to a decoder that takes token_type_ids (gemma3); empty: zeros.
  /// `positions`: position_ids [3, S] (qwen2_vl's temporal, height, width) or [S]; empty: the positions
  /// after the cache.
  virtual std::vector<float> step(std::span<const float> embeds, int64_t seq,
                                  std::span<const int64_t> token_types = {},
                                  std::span<const int64_t> positions = {}) = 0;
};

/// The model library's vision-language components on the CPU kernels, from a checkpoint folder.
/// `quantize`: the linear layers quantized at load (hfx/models/quantize_model.h).
std::unique_ptr<ImageTextEngine> make_eager_image_text_engine(const std::string& checkpoint_dir,
                                                              const quant::QuantOptions& quantize = {});
/// ONNX Runtime over DIR/onnx/{vision_encoder,embed_tokens,decoder_model_merged}.onnx (empty pasts first).
/// Throws hfx::Error("generate", ...) naming a missing file.
std::unique_ptr<ImageTextEngine> make_ort_image_text_engine(const std::string& export_dir, int threads = 0);

struct ImageTextResult {
  std::string engine;               ///< "eager" | "ort"
  std::vector<int64_t> prompt_ids;  ///< after expanding the image markers
  std::vector<int64_t> ids;         ///< new tokens
  std::string text;                 ///< the new tokens decoded (special tokens kept)
};

/// A vision-language model with its images as an hfx::Generator: the images go through the vision encoder
/// once, and the generator's engine writes their features over the image tokens' embeddings at each
/// prefill (with gemma3's token types and qwen2_vl's multimodal positions), so every GenerationOptions
/// applies: sampling, stop strings, repetition penalty, --ignore-eos, streaming. One prompt at a time.
struct ImageTextGenerator {
  Generator generator;
  std::string
      marker;  ///< what stands for one image in a prompt: "<image>", "<start_of_image>", "<|image_pad|>"
  /// A prompt's ids with its markers expanded to the image tokens. Throws hfx::Error("generate", "expected
  /// one <image> marker per image …") unless the prompt holds one marker per image.
  std::function<std::vector<int64_t>(const std::string& prompt, bool add_special_tokens)> encode;
};

/// Opens `dir` (a checkpoint: eager; an export folder: ONNX Runtime unless config.engine = "eager"; eager
/// only: config.quantize at load) and encodes `image_paths` through its image processor and vision encoder.
ImageTextGenerator open_image_text(const std::string& dir, const std::vector<std::string>& image_paths,
                                   const GeneratorConfig& config = {});

/// Ids of a chat prompt rendered from the processor's template, as ProcessorMixin.apply_chat_template
/// (tokenize=True) encodes it: markers expanded, special tokens added unless the prompt already starts with
/// the tokenizer's bos_token (a tokenizer's own apply_chat_template never adds them).
std::vector<int64_t> encode_chat_prompt(const ImageTextGenerator& g, const std::string& rendered);

/// Greedy image-text-to-text from `dir`: a llava or gemma3 checkpoint (engine "eager") or its export folder
/// ("ort"); "auto" picks ort when DIR/onnx/vision_encoder.onnx exists. Throws hfx::Error("generate",
/// "expected one <image> marker per image (N images), got M markers …") when the prompt and the images
/// disagree, and the image and model errors of the parts.
ImageTextResult generate_with_images(const std::string& dir, const std::vector<std::string>& image_paths,
                                     const std::string& prompt, int64_t max_new_tokens,
                                     const std::string& engine = "auto");

}  // namespace hfx::rt
