"""Pillow (the library transformers' image processors resize with) over image files, as transformers'
CLIPImageProcessor uses it: Image.open(f).convert("RGB"), resize so the shortest edge is `size`
(other edge int(size * long / short)) with PIL's `resample`, center crop at ((h - c) // 2, (w - c) // 2),
rescale (float64, then float32), normalize (float32). The reference for hfx's resampler
(tests/vision/image_processor_test.cpp).

usage: python3 clip_pil_oracle.py PREPROCESSOR_CONFIG OUT_DIR IMAGE...
Writes OUT_DIR/<i>.u8 (the cropped RGB bytes, HWC) and OUT_DIR/<i>.f32 (pixel_values [3, H, W], float32).
"""
import json
import struct
import sys

from PIL import Image


def f32(x):
    return struct.unpack("f", struct.pack("f", x))[0]


def main():
    cfg = json.load(open(sys.argv[1]))
    out_dir, paths = sys.argv[2], sys.argv[3:]
    size = cfg["size"]["shortest_edge"]
    crop_h, crop_w = cfg["crop_size"]["height"], cfg["crop_size"]["width"]
    mean = [f32(m) for m in cfg["image_mean"]]
    std = [f32(s) for s in cfg["image_std"]]
    scale = cfg["rescale_factor"]
    for i, path in enumerate(paths):
        im = Image.open(path).convert("RGB")
        w, h = im.size
        short, long = min(w, h), max(w, h)
        new_long = int(size * long / short)
        new_w, new_h = (size, new_long) if w <= h else (new_long, size)
        im = im.resize((new_w, new_h), resample=cfg["resample"], reducing_gap=None)
        top, left = (new_h - crop_h) // 2, (new_w - crop_w) // 2
        im = im.crop((left, top, left + crop_w, top + crop_h))
        raw = im.tobytes()
        open(f"{out_dir}/{i}.u8", "wb").write(raw)
        planes = []
        for c in range(3):
            lut = [f32((f32(v * scale) - mean[c]) / std[c]) for v in range(256)]
            planes.append(struct.pack(f"{crop_h * crop_w}f", *(lut[b] for b in raw[c::3])))
        open(f"{out_dir}/{i}.f32", "wb").write(b"".join(planes))


main()
