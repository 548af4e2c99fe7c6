"""Goldens of an `hfx create-tiny llava` checkpoint from the real transformers (project venv): image features,
logits and greedy tokens with one and with two images.

  .venv/bin/python tools/hf_goldens/make_llava_goldens.py DIR OUT.json

pixel_values are a fixed pattern, p[i] = float32(1.5 * sin(0.37 * i)) over the flat index i of
[2, C, H, W] (the test builds the same tensor), so no image decoding is involved. Writes
{"pixel_values_shape", "image_features_shape", "image_features": [...]} with the output of
LlavaForConditionalGeneration.get_image_features (vision tower, feature layer, strategy, projector), and
"cases": one per image count (1, 2; pixel_values the first 1 or 2 images of the pattern): input_ids (text ids
around image_seq_length image tokens per image), the logits of the last 4 positions of the prompt, and 32
greedy tokens decoded by full recomputation, stopping at eos_token_id; and "images": the same through real image files — the test images of
tests/vision/image_writers.h (pattern() ported below, written as PNG by PIL), transformers' CLIPImageProcessor
from the folder, prompt ids given on the command line (hfx's tokenization of the prompt, which
LlavaTiny.TransformersJsProcessorReadsTheFolder checks against Transformers.js) with each image token expanded
to image_seq_length — for `hfx generate --image`. float32, eager, CPU. Numbers only.

  .venv/bin/python tools/hf_goldens/make_llava_goldens.py DIR OUT.json [PROMPT1_IDS [PROMPT2_IDS]]
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hfg_common as C  # noqa: E402  (offline set-up, loader)

import torch  # noqa: E402
import transformers  # noqa: E402
from transformers import LlavaForConditionalGeneration  # noqa: E402


M32 = 0xFFFFFFFF


def pattern(x, y, c, w, h, seed):
    """tests/vision/image_writers.h pattern(): uint32 and int64 arithmetic as in C++."""
    s = ((seed * 2654435761) & M32) ^ ((x * 73856093 ^ y * 19349663 ^ c * 83492791) & M32)
    s ^= s >> 13
    s = (s * 0x5BD1E995) & M32
    s ^= s >> 15
    grad = (x * 255 // max(w - 1, 1) * (c + 1) + y * 255 // max(h - 1, 1)) // (c + 2)
    stripes = 40 if ((x // (3 + c)) + (y // 5)) % 2 else -40
    return min(max(grad + stripes + s % 31 - 15, 0), 255)


def write_rgb_png(path, w, h, seed):
    from PIL import Image

    data = bytes(pattern(x, y, c, w, h, seed) for y in range(h) for x in range(w) for c in range(3))
    Image.frombytes("RGB", (w, h), data).save(path)


def greedy(model, ids, pixel_values, n=32):
    gen = list(ids)
    with torch.no_grad():
        for _ in range(n):
            step = model(input_ids=torch.tensor([gen]), pixel_values=pixel_values).logits[0, -1]
            gen.append(int(step.argmax()))
            if gen[-1] == model.config.eos_token_id:
                break
    return gen[len(ids):]


# The images of `hfx generate --image` in tests/vision/llava_generate_test.cpp: (width, height, seed).
IMAGES = [(64, 48, 21), (30, 45, 22)]


def image_cases(model, d, prompts):
    import tempfile

    from PIL import Image
    from transformers import AutoImageProcessor

    improc = AutoImageProcessor.from_pretrained(d)
    c = model.config
    out = []
    tmp = tempfile.mkdtemp()
    paths = []
    for i, (w, h, seed) in enumerate(IMAGES):
        paths.append(f"{tmp}/{i}.png")
        write_rgb_png(paths[-1], w, h, seed)
    for n_images, text_ids in enumerate(prompts, start=1):
        ids = []
        for t in text_ids:
            ids += [t] * c.image_seq_length if t == c.image_token_index else [t]
        pv = improc([Image.open(p) for p in paths[:n_images]], return_tensors="pt")["pixel_values"]
        out.append({"images": n_images, "prompt_ids": ids, "greedy": greedy(model, ids, pv)})
    return out


def main():
    d, out = sys.argv[1], sys.argv[2]
    prompts = [json.loads(a) for a in sys.argv[3:]]
    C.setup()
    model, notes = C.load(d, LlavaForConditionalGeneration)
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
        feats = C.features_tensor(feats)
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
    json.dump({"source": "hfx create-tiny llava", **C.versions(), "notes": notes,
               "pixel_values_shape": shape, "image_features_shape": list(feats.shape),
               "image_features": [round(float(x), 7) for x in feats.flatten()], "cases": cases,
               "image_files": {"images": IMAGES, "cases": image_cases(model, d, prompts)}}, open(out, "w"))
    print(f"wrote {out}: image_features {list(feats.shape)}")


if __name__ == "__main__":
    main()
