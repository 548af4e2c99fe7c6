// llava, eager. The vision side: CLIP vision tower (transformers' CLIPVisionModel), the hidden state
// `vision_feature_layer` selects, the 'default' strategy's CLS drop, and LlavaMultiModalProjector
// (linear_1 → act → linear_2) — pixel_values [B, C, H, W] → image_features [B, patches, text hidden].
// Written on the functional API (eager and traced alike); weights under vision_tower.vision_model.* and
// multi_modal_projector.*. Then the merge and the language model, as LlavaForConditionalGeneration.forward:
// the image features replace the embeddings of the image tokens, in order, and the text model runs on the
// result (llava_logits, llava_greedy).
#pragma once
#include <vector>

#include <nlohmann/json.hpp>

#include "hfx/io/safetensors.h"
#include "hfx/ops/builder.h"

namespace hfx::models {

/// image_features for `pixel_values` with the llava config.json `config` (vision_config,
/// vision_feature_layer, vision_feature_select_strategy, projector_hidden_act) and its weights.
/// The hidden states (0: the embeddings, i: layer i's output) that llava's vision_feature_layer selects: one
/// index or a list (concatenated along the features), negatives counted from the end; default -2. Throws
/// hfx::Error("model", ...) for another type or an index outside [-(layers + 1), layers].
std::vector<int64_t> llava_feature_layers(const nlohmann::json& config, int64_t layers);
Var llava_image_features(Builder& b, const io::WeightStore& w, const nlohmann::json& config,
                         const Var& pixel_values);

/// The encoder layers of a CLIP or SigLIP tower under `tower` ("….encoder.layers.N.":
/// self_attn.{q,k,v,out}_proj with biases, layer_norm1/2, mlp.fc1/fc2), in the order create-tiny draws them.
void vision_layer_specs(std::vector<std::pair<std::string, Shape>>& specs, const std::string& tower,
                        int64_t hidden, int64_t intermediate, int64_t layers);
/// A SigLIP tower's weights under `tower`: the patch embedding with its bias, the positions, post_layernorm
/// and the encoder layers (gemma3, idefics3).
void siglip_weight_specs(std::vector<std::pair<std::string, Shape>>& specs, const std::string& tower,
                         const nlohmann::json& vision_config);

/// SigLIP's vision tower (SiglipVisionModel's last_hidden_state, weights under vision_tower.vision_model.):
/// the patch embedding with its bias, learned positions (no class token), the encoder layers and
/// post_layernorm — pixel_values [B, C, H, W] → [B, patches, vision hidden].
Var siglip_last_hidden_state(Builder& b, const io::WeightStore& w, const nlohmann::json& vision_config,
                             const Var& pixel_values,
                             const std::string& tower = "vision_tower.vision_model.");
/// Idefics3's (and SmolVLM's) image_features [batch·images, tokens, text hidden] for pixel_values
/// [batch, images, C, H, W] of whole images (the tiles of its processor): the SigLIP tower under
/// model.vision_model., Idefics3Connector's pixel shuffle (scale_factor) and modality_projection.
Var idefics3_image_features(Builder& b, const io::WeightStore& w, const nlohmann::json& config,
                            const Var& pixel_values);
/// Gemma 3's image_features [B, mm_tokens_per_image, text hidden]: SigLIP, then Gemma3MultiModalProjector
/// (average pooling of the patch grid to mm_tokens_per_image, RMSNorm x·(1 + w), ×
/// mm_input_projection_weight).
Var gemma3_image_features(Builder& b, const io::WeightStore& w, const nlohmann::json& config,
                          const Var& pixel_values);

/// llava's logits [B, S, vocab] (float32) for input_ids [B, S] (int64) whose image tokens
/// (config.image_token_index) are exactly one run of image_features per image of pixel_values [N, C, H, W],
/// in order; without images, pass an undefined pixel_values. Throws hfx::Error("llava", "expected K image
/// tokens …, got M …") when the counts differ (a prompt with more <image> markers than images).
Tensor llava_logits(const io::WeightStore& w, const nlohmann::json& config, const Tensor& input_ids,
                    const Tensor& pixel_values);

/// Greedy decoding of `n_new` tokens after `prompt` (one row, image tokens expanded as for llava_logits),
/// by full recomputation at every step; stops early at an eos_token_id of the text config.
std::vector<int64_t> llava_greedy(const io::WeightStore& w, const nlohmann::json& config,
                                  const std::vector<int64_t>& prompt, const Tensor& pixel_values, int n_new);

}  // namespace hfx::models
