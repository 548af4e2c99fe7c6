"""Goldens of an `hfx create-tiny qwen2_vl` checkpoint from the real transformers (project venv): the vision
tower's image features, logits and greedy tokens with one and with two images, and Qwen2VLImageProcessor on
real files.

  .venv/bin/python tools/hf_goldens/make_qwen2_vl_goldens.py DIR OUT.json

Qwen2VLForConditionalGeneration is loaded by hfg_common.load (from_pretrained, eager attention, every weight from
the file). pixel_values are a fixed pattern, p[i] = float32(1.5 * sin(0.37 * i)) over the flat index i
of [patches, C*T*P*P] for the grids GRIDS (two images of different shapes; the test builds the same tensor).
Writes "image_features" (model.model.visual(pixel_values, grid_thw), [tokens, hidden]) and "cases", one per image
count (1, 2): input_ids (text ids around <|vision_start|> <|image_pad|> x tokens <|vision_end|> per image), the
position_ids get_rope_index computes, the logits of the last 4 positions and 32 greedy tokens by full
recomputation (position_ids recomputed by get_rope_index at each step, as generate() does for a prefill),
stopping at eos; and "images": Qwen2VLImageProcessor from the folder on PNG files of tests/vision/image_writers.h
(pattern(), written by PIL): grid_thw, pixel_values' shape, sums and every 7th value. float32, eager, CPU.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hfg_common as C  # noqa: E402  (offline set-up, loader)

import torch  # noqa: E402
import transformers  # noqa: E402

GRIDS = [[1, 4, 6], [1, 6, 4]]
# Images for the processor cases: (width, height, seed); sizes below, at and above the pixel bounds of the
# tiny checkpoint (min 16x16, max 48x48 pixels), square, wide and tall.
PROCESSOR_IMAGES = [(40, 30, 41), (30, 30, 42), (16, 16, 43), (64, 48, 44), (24, 40, 45), (100, 20, 46),
                    (12, 20, 47), (33, 47, 48), (48, 48, 49), (80, 80, 50), (17, 90, 51)]


def rope(model, ids, grid):
    # transformers 5: get_rope_index lives on the inner model and takes the modality of every token
    # (mm_token_type_ids: 0 text, 1 image), which the processor makes
    types = torch.tensor([[1 if t == model.config.image_token_id else 0 for t in ids]])
    pos, _ = model.model.get_rope_index(torch.tensor([ids]), types, torch.tensor(grid) if grid else None, None)
    return pos


def greedy(model, ids, pv, grid, n=32):
    gen = list(ids)
    eos = model.config.get_text_config().eos_token_id  # transformers 5: on the text config
    with torch.no_grad():
        for _ in range(n):
            out = model(input_ids=torch.tensor([gen]), pixel_values=pv, image_grid_thw=torch.tensor(grid),
                        position_ids=rope(model, gen, grid), use_cache=False)
            gen.append(int(out.logits[0, -1].argmax()))
            if gen[-1] == eos:
                break
    return gen[len(ids):]


def image_cases(d):
    import tempfile

    from PIL import Image
    from transformers import AutoImageProcessor

    from make_llava_goldens import write_rgb_png

    improc = AutoImageProcessor.from_pretrained(d)
    tmp = tempfile.mkdtemp()
    out = []
    for i, (w, h, seed) in enumerate(PROCESSOR_IMAGES):
        path = f"{tmp}/{i}.png"
        write_rgb_png(path, w, h, seed)
        try:
            inputs = improc(images=[Image.open(path)], return_tensors="pt")
        except ValueError as e:
            out.append({"width": w, "height": h, "seed": seed, "error": str(e)})
            continue
        pv = inputs["pixel_values"]
        flat = pv.flatten().double()
        out.append({"width": w, "height": h, "seed": seed, "grid_thw": inputs["image_grid_thw"][0].tolist(),
                    "pixel_values_shape": list(pv.shape), "pixel_sum": float(flat.sum()),
                    "pixel_abs_sum": float(flat.abs().sum()),
                    "pixel_every_7th": [float(f"{x:.7g}") for x in pv.flatten()[::7].tolist()]})
    return out


def main():
    d, out = sys.argv[1], sys.argv[2]
    C.setup()
    config = transformers.AutoConfig.from_pretrained(d)
    model, notes = C.load(d, transformers.Qwen2VLForConditionalGeneration, config)
    v = config.vision_config
    dim = v.in_channels * v.temporal_patch_size * v.patch_size ** 2
    per = [t * h * w for t, h, w in GRIDS]
    n = sum(per) * dim
    pv = (1.5 * torch.sin(0.37 * torch.arange(n, dtype=torch.float64))).float().reshape(sum(per), dim)
    with torch.no_grad():
        feats = model.model.visual(pv, grid_thw=torch.tensor(GRIDS))
        feats = getattr(feats, "pooler_output", feats)  # transformers 5: the merged features
    merge = v.spatial_merge_size ** 2
    cases = []
    for n_images in (1, 2):
        ids = [300, 301]
        for k in range(n_images):
            ids += [config.vision_start_token_id] + [config.image_token_id] * (per[k] // merge)
            ids += [config.vision_end_token_id, 302 + k]
        ids += [305, 306]
        grid = GRIDS[:n_images]
        pv_n = pv[:sum(per[:n_images])]
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([ids]), pixel_values=pv_n, image_grid_thw=torch.tensor(grid),
                           position_ids=rope(model, ids, grid), use_cache=False).logits[0, -4:]
        cases.append({"images": n_images, "input_ids": ids, "grid_thw": grid,
                      "position_ids": rope(model, ids, grid)[:, 0].tolist(),
                      "last_logits": [[float(f"{x:.7g}") for x in row] for row in logits.tolist()],
                      "greedy": greedy(model, ids, pv_n, grid)})
    golden = {"source": "hfx create-tiny qwen2_vl", "transformers": transformers.__version__, "notes": notes,
              "torch": torch.__version__, "pixel_values": "1.5*sin(0.37*i) over [patches, C*T*P*P]",
              "grid_thw": GRIDS, "pixel_values_shape": list(pv.shape),
              "image_features_shape": list(feats.shape),
              "image_features": [float(f"{x:.7g}") for x in feats.flatten().tolist()], "cases": cases,
              "images": image_cases(d)}
    with open(out, "w") as f:
        json.dump(golden, f, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {out}: " + ", ".join(f"{k['images']} image(s): {k['greedy'][:8]}" for k in cases), file=sys.stderr)


if __name__ == "__main__":
    main()
