"""Encoder-only architectures (bert, ernie, electra, the roberta family, distilbert, modernbert) with their
heads: every format vs transformers eager on the same inputs.
- ONNX (onnxruntime, model.onnx) and .pt2 (torch.export.load, model.pt2): a right-padded batch of two rows;
  token-level outputs are compared on the real positions (a pad position's row is never read), pooled ones
  (sequence classification) whole;
- .pte (ExecuTorch's runtime, portable and XNNPACK; batch 1): `forward` on one unpadded row, its inputs in
  the component's declared order (input_ids, attention_mask, token_type_ids where declared).
"""
from __future__ import annotations

import numpy as np
import pytest

from cases import ENCODERS
from judge import EXACT, PTE
from runtimes import OnnxProgram, PteModule, Pt2Program

ROWS = [[5, 17, 42, 9, 77, 101, 13, 64], [8, 66, 31, 250, 19]]
_REFS: dict = {}


def reference(case, checkpoint):
    if case.name not in _REFS:
        import torch
        import transformers

        model = getattr(transformers, case.auto).from_pretrained(
            checkpoint(case), dtype=torch.float32, attn_implementation="eager").eval()
        _REFS[case.name] = model
    return _REFS[case.name]


def ref_outputs(model, ids, mask) -> dict:
    import torch

    with torch.no_grad():
        out = model(input_ids=torch.from_numpy(ids), attention_mask=torch.from_numpy(mask))
    return {k: v.numpy() for k, v in out.items() if hasattr(v, "numpy")}


def batch(rows):
    n = max(len(r) for r in rows)
    ids = np.zeros((len(rows), n), np.int64) + 3  # pad with an id no row uses (roberta's pad, 1, is not it)
    mask = np.zeros((len(rows), n), np.int64)
    for i, r in enumerate(rows):
        ids[i, :len(r)] = r
        mask[i, :len(r)] = 1
    return ids, mask


def judge(rec, out: dict, ref: dict, mask, bound):
    names = [n for n in out if n in ref]
    assert names, f"[{rec.fmt}/{rec.runtime}] expected an output transformers has ({sorted(ref)}), got {sorted(out)}"
    for n in names:
        g, r = out[n], ref[n]
        if r.ndim == 3:  # token-level: real positions only
            keep = mask.astype(bool)
            g, r = g[keep], r[keep]
        rec.check(n, g, r, bound)


@pytest.mark.parametrize("fmt", ["onnx", "pt2"])
@pytest.mark.parametrize("case", ENCODERS, ids=lambda c: c.name)
def test_functional(case, fmt, export, checkpoint, record):
    rec = record(case, fmt)
    out_dir = export(case, fmt)
    prog = OnnxProgram(out_dir / "onnx" / "model.onnx") if fmt == "onnx" else Pt2Program(out_dir / "model.pt2")
    ids, mask = batch(ROWS)
    feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
    judge(rec, prog(feeds), ref_outputs(reference(case, checkpoint), ids, mask), mask, EXACT)


@pytest.mark.parametrize("backend", ["portable", "xnnpack"])
@pytest.mark.parametrize("case", ENCODERS, ids=lambda c: c.name)
def test_pte(case, backend, export, checkpoint, record):
    fmt = f"pte-{backend}"
    rec = record(case, fmt)
    pte = PteModule(export(case, fmt) / "model.pte")
    ids = np.array([ROWS[0]], np.int64)
    mask = np.ones_like(ids)
    args = [ids, mask, np.zeros_like(ids)][:pte.num_inputs("forward")]
    got = pte("forward", args)
    ref = ref_outputs(reference(case, checkpoint), ids, mask)
    name = "logits" if "logits" in ref else "last_hidden_state"
    rec.check(name, got[0], ref[name], PTE)
