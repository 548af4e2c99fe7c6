"""Goldens of an `hfx create-tiny gemma3` checkpoint from the real transformers (project venv):
image features, logits and greedy tokens with one and with two images.

  .venv/bin/python tools/hf_goldens/make_gemma3_goldens.py DIR OUT.json

pixel_values are a fixed pattern, p[i] = float32(1.5 * sin(0.37 * i)) over the flat index i of [2, C, H, W]
(the test builds the same tensor). Writes "image_features" (Gemma3ForConditionalGeneration.get_image_features:
SigLIP, average pooling, RMSNorm, projection) and "cases", one per image count (1, 2): input_ids (text ids
around <start_of_image> <image_soft_token> x mm_tokens_per_image <end_of_image> per image), token_type_ids (1 on
the image tokens, as Gemma3Processor makes them), the logits of the last 4 positions, 32 greedy tokens by full
recomputation with token_type_ids (transformers' bidirectional attention between image tokens; 4.51's
generate() also shifts the sliding window one step early, huggingface/transformers#37574, so it is not
used), and "greedy_causal": the same without token_type_ids (a purely causal mask, what a caller that passes
no token types, such as Transformers.js, computes). The model is loaded by hfg_common.load (from_pretrained, every weight
from the file). float32, eager, CPU.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hfg_common as C  # noqa: E402  (offline set-up, loader)

import torch  # noqa: E402
import transformers  # noqa: E402
from transformers import Gemma3ForConditionalGeneration  # noqa: E402


def greedy(model, ids, pixel_values, types, n=32):
    gen = list(ids)
    eos = model.config.text_config.eos_token_id
    with torch.no_grad():
        for _ in range(n):
            kw = {"token_type_ids": torch.tensor([[1 if t == model.config.image_token_index else 0 for t in gen]])} if types else {}
            step = model(input_ids=torch.tensor([gen]), pixel_values=pixel_values, **kw).logits[0, -1]
            gen.append(int(step.argmax()))
            if gen[-1] == eos:
                break
    return gen[len(ids):]


def main():
    d, out = sys.argv[1], sys.argv[2]
    C.setup()
    model, notes = C.load(d, Gemma3ForConditionalGeneration)
    c = model.config
    v = c.vision_config
    shape = [2, v.num_channels, v.image_size, v.image_size]
    n = 1
    for s in shape:
        n *= s
    pv = (1.5 * torch.sin(0.37 * torch.arange(n, dtype=torch.float64))).float().reshape(shape)
    with torch.no_grad():
        feats = C.features_tensor(model.get_image_features(pixel_values=pv))
    cases = []
    image = [c.boi_token_index] + [c.image_token_index] * c.mm_tokens_per_image + [c.eoi_token_index]
    for n_images in (1, 2):
        ids = [2, 300, 301] + image + [302, 303]
        if n_images == 2:
            ids += image + [304]
        ids += [305, 306]
        types = [1 if t == c.image_token_index else 0 for t in ids]
        pv_n = pv[:n_images]
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([ids]), pixel_values=pv_n,
                           token_type_ids=torch.tensor([types])).logits[0, -4:]
            causal = model(input_ids=torch.tensor([ids]), pixel_values=pv_n).logits[0, -4:]
        cases.append({"images": n_images, "input_ids": ids, "token_type_ids": types,
                      "last_logits": [[float(f"{x:.7g}") for x in row] for row in logits.tolist()],
                      "last_logits_causal": [[float(f"{x:.7g}") for x in row] for row in causal.tolist()],
                      "greedy": greedy(model, ids, pv_n, True),
                      "greedy_causal": greedy(model, ids, pv_n, False)})
    golden = {"source": "hfx create-tiny gemma3", "transformers": transformers.__version__,
              "torch": torch.__version__, "notes": notes, "pixel_values": "1.5*sin(0.37*i) over [2, C, H, W]",
              "pixel_values_shape": shape, "image_features_shape": list(feats.shape),
              "image_features": [float(f"{x:.7g}") for x in feats.flatten().tolist()], "cases": cases}
    with open(out, "w") as f:
        json.dump(golden, f, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {out}: " + ", ".join(f"{k['images']} image(s): {k['greedy'][:8]} causal {k['greedy_causal'][:8]}" for k in cases), file=sys.stderr)


if __name__ == "__main__":
    main()
