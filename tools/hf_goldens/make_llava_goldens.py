"""Golden image features of an `hfx create-tiny llava` checkpoint from the real transformers (HF oracle):

  /work/hfo/py.sh tools/hf_goldens/make_llava_goldens.py DIR OUT.json

pixel_values are a fixed pattern, p[i] = float32(1.5 * sin(0.37 * i)) over the flat index i of
[2, C, H, W] (the test builds the same tensor), so no image decoding is involved. Writes
{"pixel_values_shape", "image_features_shape", "image_features": [...]} with the output of
LlavaForConditionalGeneration.get_image_features (vision tower, feature layer, strategy, projector), float32,
eager, CPU. Numbers only.
"""
import json
import sys

import torch

import hfo_torch_compat  # noqa: F401  the HF oracle's torch 1.13 shims ($HFO/shims, on py.sh's path)
from transformers import LlavaForConditionalGeneration


def main():
    d, out = sys.argv[1], sys.argv[2]
    model = LlavaForConditionalGeneration.from_pretrained(d, torch_dtype=torch.float32).eval()
    v = model.config.vision_config
    shape = [2, v.num_channels, v.image_size, v.image_size]
    n = 1
    for s in shape:
        n *= s
    pv = (1.5 * torch.sin(0.37 * torch.arange(n, dtype=torch.float64))).float().reshape(shape)
    with torch.no_grad():
        feats = model.get_image_features(
            pixel_values=pv,
            vision_feature_layer=model.config.vision_feature_layer,
            vision_feature_select_strategy=model.config.vision_feature_select_strategy,
        )
    json.dump({"source": "transformers 4.47 LlavaForConditionalGeneration.get_image_features on hfx create-tiny llava",
               "pixel_values_shape": shape, "image_features_shape": list(feats.shape),
               "image_features": [round(float(x), 7) for x in feats.flatten()]}, open(out, "w"))
    print(f"wrote {out}: image_features {list(feats.shape)}")


main()
