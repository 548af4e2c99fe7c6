"""Goldens of an `hfx create-tiny llava` checkpoint from the real transformers (HF oracle): image features,
logits and greedy tokens with one and with two images.

  /work/hfo/py.sh tools/hf_goldens/make_llava_goldens.py DIR OUT.json

pixel_values are a fixed pattern, p[i] = float32(1.5 * sin(0.37 * i)) over the flat index i of
[2, C, H, W] (the test builds the same tensor), so no image decoding is involved. Writes
{"pixel_values_shape", "image_features_shape", "image_features": [...]} with the output of
LlavaForConditionalGeneration.get_image_features (vision tower, feature layer, strategy, projector), and
"cases": one per image count (1, 2; pixel_values the first 1 or 2 images of the pattern): input_ids (text ids
around image_seq_length image tokens per image), the logits of the last 4 positions of the prompt, and 32
greedy tokens decoded by full recomputation (generate() needs torch.distributed, which the oracle's torch
lacks), stopping at eos_token_id. float32, eager, CPU. Numbers only.
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
    c = model.config
    cases = []
    for n_images in (1, 2):
        image = [c.image_token_index] * c.image_seq_length
        ids = [c.bos_token_id, 300, 301] + image + [302, 303]
        if n_images == 2:
            ids += image + [304]
        ids += [305, 306]
        gen, pv_n = list(ids), pv[:n_images]
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([ids]), pixel_values=pv_n).logits[0, -4:]
            for _ in range(32):
                step = model(input_ids=torch.tensor([gen]), pixel_values=pv_n).logits[0, -1]
                gen.append(int(step.argmax()))
                if gen[-1] == c.eos_token_id:
                    break
        cases.append({"images": n_images, "input_ids": ids, "last_logits_shape": list(logits.shape),
                      "last_logits": [round(float(x), 7) for x in logits.flatten()], "greedy": gen[len(ids):]})
    json.dump({"source": "transformers 4.47 LlavaForConditionalGeneration on hfx create-tiny llava",
               "pixel_values_shape": shape, "image_features_shape": list(feats.shape),
               "image_features": [round(float(x), 7) for x in feats.flatten()], "cases": cases}, open(out, "w"))
    print(f"wrote {out}: image_features {list(feats.shape)}")


main()
