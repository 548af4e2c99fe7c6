// The vision side of llava: CLIP vision tower (transformers' CLIPVisionModel), the hidden state
// `vision_feature_layer` selects, the 'default' strategy's CLS drop, and LlavaMultiModalProjector
// (linear_1 → act → linear_2) — pixel_values [B, C, H, W] → image_features [B, patches, text hidden].
// Written on the functional API (eager and traced alike); weights under vision_tower.vision_model.* and
// multi_modal_projector.*.
#pragma once
#include <nlohmann/json.hpp>

#include "hfx/io/safetensors.h"
#include "hfx/ops/builder.h"

namespace hfx::models {

/// image_features for `pixel_values` with the llava config.json `config` (vision_config,
/// vision_feature_layer, vision_feature_select_strategy, projector_hidden_act) and its weights.
Var llava_image_features(Builder& b, const io::WeightStore& w, const nlohmann::json& config, const Var& pixel_values);

}  // namespace hfx::models
