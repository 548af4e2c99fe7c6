"""The generation loop every functional program (ONNX graph, .pt2 program) is driven by: prefill on the
prompt, then one decode call per greedy token fed the previous call's own cache (present.* -> past_*)."""
from __future__ import annotations

import numpy as np


def past_name(output: str) -> str:
    """present.1.key -> past_key_values.1.key, present_conv.0 -> past_conv.0."""
    if output.startswith("present."):
        return "past_key_values." + output[len("present."):]
    return "past_" + output[len("present_"):]


def empty_past(program, batch: int) -> dict:
    """The empty past of a graph that declares past inputs (a merged graph): zero-length keys/values, zero
    states (their fixed axes as declared)."""
    feeds = {}
    for name in getattr(program, "inputs", []):
        if name.startswith("past_") and hasattr(program, "shape_of"):
            feeds[name] = np.zeros([batch if i == 0 else (d if isinstance(d, int) else 0)
                                    for i, d in enumerate(program.shape_of(name))], np.float32)
    return feeds


def greedy(prefill, decode, prompt: list, steps: int):
    """Returns (the prefill's outputs, the greedy tokens, the logits each token was picked from)."""
    ids = np.array([prompt], np.int64)
    mask = np.ones_like(ids)
    pos = np.arange(len(prompt), dtype=np.int64)[None]
    first = out = prefill({"input_ids": ids, "attention_mask": mask, "position_ids": pos, **empty_past(prefill, 1)})
    got, seen = [], []
    for _ in range(steps):
        last = out["logits"][0, -1]
        seen.append(last)
        got.append(int(last.argmax()))
        mask = np.concatenate([mask, np.ones((1, 1), np.int64)], 1)
        pos = pos[:, -1:] + 1
        feeds = {"input_ids": np.array([[got[-1]]], np.int64), "attention_mask": mask, "position_ids": pos}
        feeds.update({past_name(k): v for k, v in out.items() if k.startswith("present")})
        out = decode(feeds)
    return first, got, seen
