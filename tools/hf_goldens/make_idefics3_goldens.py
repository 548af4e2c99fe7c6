"""Goldens of an `hfx create-tiny idefics3` or `hfx create-tiny smolvlm` checkpoint from the real transformers
(project venv): image features, logits and greedy tokens with
one and with two images.

  .venv/bin/python tools/hf_goldens/make_idefics3_goldens.py DIR OUT.json

The model class is config.json's architectures[0], loaded by hfg_common.load (from_pretrained, every weight from
the file).
pixel_values are a fixed pattern, p[i] = float32(1.5 * sin(0.37 * i)) over the flat index i of [1, 2, C, H, W]
(one prompt with two whole images; the test builds the same tensor). Writes "image_features" (the vision model's
last hidden state through Idefics3Connector: pixel shuffle and modality projection, [2, tokens, hidden]) and
"cases", one per image count (1, 2): input_ids (text ids around <fake_token_around_image> <image> x tokens
<fake_token_around_image> per image), the logits of the last 4 positions and 32 greedy tokens by full
recomputation, stopping at eos_token_id; and "images": the image processor on real files — the test images of
tests/vision/image_writers.h (pattern(), as make_llava_goldens.py ports it, written as PNG by PIL) through
transformers' Idefics3ImageProcessor from the folder (resize, splitting, global image): each image's rows and
cols, the text Idefics3Processor puts in place of its <image> marker, pixel_values' shape, sums and every 7th
value. (No Idefics3Processor tokenization here: Transformers.js checks hfx's prompt ids.) float32, eager, CPU.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hfg_common as C  # noqa: E402  (offline set-up, loader)

import torch  # noqa: E402
import transformers  # noqa: E402


def greedy(model, ids, pixel_values, n=32):
    gen = list(ids)
    eos = model.config.text_config.eos_token_id
    with torch.no_grad():
        for _ in range(n):
            step = model(input_ids=torch.tensor([gen]), pixel_values=pixel_values).logits[0, -1]
            gen.append(int(step.argmax()))
            if gen[-1] == eos:
                break
    return gen[len(ids):]


# The images of `hfx generate --image` in tests/vision/idefics3_test.cpp: (width, height, seed).
IMAGES = [(50, 40, 31), (24, 30, 32)]


def image_cases(d):
    import tempfile

    from PIL import Image
    from transformers import AutoImageProcessor
    # the text Idefics3Processor.replace_image_token / SmolVLMProcessor put in place of <image> (the same format);
    # transformers 5 keeps it as a function only in processing_smolvlm
    from transformers.models.smolvlm.processing_smolvlm import get_image_prompt_string

    from make_llava_goldens import write_rgb_png

    improc = AutoImageProcessor.from_pretrained(d)
    seq = json.load(open(f"{d}/processor_config.json"))["image_seq_len"]
    tmp = tempfile.mkdtemp()
    out = []
    for n_images in (1, 2):
        paths = []
        for i, (w, h, seed) in enumerate(IMAGES[:n_images]):
            paths.append(f"{tmp}/{i}.png")
            write_rgb_png(paths[-1], w, h, seed)
        inputs = improc(images=[[Image.open(p) for p in paths]], return_tensors="pt", return_row_col_info=True)
        pv = inputs["pixel_values"]
        rows, cols = [int(x) for x in inputs["rows"][0]], [int(x) for x in inputs["cols"][0]]
        texts = [get_image_prompt_string(r, c, seq, "<fake_token_around_image>", "<image>", "<global-img>")
                 for r, c in zip(rows, cols)]
        flat = pv.flatten().double()
        out.append({"images": n_images, "rows": rows, "cols": cols, "image_texts": texts,
                    "pixel_values_shape": list(pv.shape), "pixel_sum": float(flat.sum()),
                    "pixel_abs_sum": float(flat.abs().sum()),
                    "pixel_every_7th": [float(f"{x:.7g}") for x in pv.flatten()[::7].tolist()]})
    return out


def main():
    d, out = sys.argv[1], sys.argv[2]
    C.setup()
    config = transformers.AutoConfig.from_pretrained(d)
    model, notes = C.load(d, config=config)
    c = model.config
    v = c.vision_config
    shape = [1, 2, v.num_channels, v.image_size, v.image_size]
    n = 1
    for s in shape:
        n *= s
    pv = (1.5 * torch.sin(0.37 * torch.arange(n, dtype=torch.float64))).float().reshape(shape)
    with torch.no_grad():
        h = model.model.vision_model(pixel_values=pv.view(-1, *shape[2:])).last_hidden_state
        feats = model.model.connector(h)
    tokens = feats.shape[1]
    fake = 512  # <fake_token_around_image>
    image = [fake] + [c.image_token_id] * tokens + [fake]
    cases = []
    for n_images in (1, 2):
        ids = [1, 300, 301] + image + [302, 303]
        if n_images == 2:
            ids += image + [304]
        ids += [305, 306]
        pv_n = pv[:, :n_images]
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([ids]), pixel_values=pv_n).logits[0, -4:]
        cases.append({"images": n_images, "input_ids": ids,
                      "last_logits": [[float(f"{x:.7g}") for x in row] for row in logits.tolist()],
                      "greedy": greedy(model, ids, pv_n)})
    golden = {"source": f"hfx create-tiny {config.model_type}", "transformers": transformers.__version__, "notes": notes,
              "torch": torch.__version__, "pixel_values": "1.5*sin(0.37*i) over [1, 2, C, H, W]",
              "pixel_values_shape": shape, "image_features_shape": list(feats.shape),
              "image_features": [float(f"{x:.7g}") for x in feats.flatten().tolist()], "cases": cases,
              "images": image_cases(d)}
    with open(out, "w") as f:
        json.dump(golden, f, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {out}: " + ", ".join(f"{k['images']} image(s): {k['greedy'][:8]}" for k in cases), file=sys.stderr)


if __name__ == "__main__":
    main()
