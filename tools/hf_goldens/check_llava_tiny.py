"""Checks an `hfx create-tiny llava` folder with the real transformers (the project's venv) — not committed
numbers, a conformance check run by hand:

  .venv/bin/python tools/hf_goldens/check_llava_tiny.py DIR IMAGE.png

- LlavaForConditionalGeneration.from_pretrained loads every weight: no missing, unexpected or mismatched key;
- AutoImageProcessor gives a CLIPImageProcessor from preprocessor_config.json (the tokenizer side is checked
  with Transformers.js in tests/vision/llava_tiny_test.cpp);
- the model runs and generates on pixel_values and a prompt with image_seq_length image tokens (as
  LlavaProcessor expands one <image>); prints the numbers so a report can quote them.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hfg_common  # noqa: F401,E402  (offline, quiet)

import torch  # noqa: E402
from PIL import Image  # noqa: E402
from transformers import AutoImageProcessor, LlavaForConditionalGeneration


def main():
    d, image_path = sys.argv[1], sys.argv[2]
    model, info = LlavaForConditionalGeneration.from_pretrained(d, output_loading_info=True)
    bad = {k: v for k, v in info.items() if v}
    assert not bad, f"loading info: {bad}"
    model.eval()
    improc = AutoImageProcessor.from_pretrained(d)
    assert type(improc).__name__ == "CLIPImageProcessor", type(improc).__name__
    pixel_values = improc(Image.open(image_path), return_tensors="pt")["pixel_values"]
    c = model.config
    ids = [c.bos_token_id, 300, 301] + [c.image_token_index] * c.image_seq_length + [302, 303, 304]
    inputs = {"input_ids": torch.tensor([ids]), "attention_mask": torch.ones(1, len(ids), dtype=torch.long),
              "pixel_values": pixel_values}
    n_image = ids.count(c.image_token_index)
    with torch.no_grad():
        out = model(**inputs)
        # Greedy by full recomputation.
        gen = list(ids)
        for _ in range(8):
            n = len(gen)
            step = model(input_ids=torch.tensor([gen]), attention_mask=torch.ones(1, n, dtype=torch.long),
                         pixel_values=pixel_values)
            gen.append(int(step.logits[0, -1].argmax()))
    print(f"ok: weights {sum(p.numel() for p in model.parameters())} params, no missing/unexpected keys")
    print(f"ok: {len(ids)} ids, {n_image} image tokens (id {c.image_token_index})")
    print(f"ok: pixel_values {list(inputs['pixel_values'].shape)}, logits {list(out.logits.shape)}")
    print(f"ok: greedy {gen[len(ids):]}")


main()
