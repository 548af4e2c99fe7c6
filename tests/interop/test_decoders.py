"""Decoder-only architectures with a KV cache: every format in its released runtime vs transformers eager.

ONNX (onnxruntime) and .pt2 (torch.export.load), whose cache is explicit:
  prefill   a left-padded batch (rows of 7 and 4 tokens): logits on every real position and every present.*
            leaf (the common tail where transformers keeps a sliding window shorter);
  decode    one token per row on the runtime's own prefill cache: logits and every leaf;
  merged    (ONNX model.onnx) the same two calls through the one graph, the first with an empty past;
  greedy    32 tokens from a 6-token prompt, the runtime carrying its own cache, vs transformers' greedy loop,
            with the logits of every step on the reference path.
.pte (ExecuTorch's runtime, portable and XNNPACK): forward(tokens, input_pos) with the cache inside the
program (batch 1): the prompt's logits on every position, then the 32-token greedy loop the same way.
"""
from __future__ import annotations

import numpy as np
import pytest

from cases import DECODERS
from judge import EXACT, PTE, check_greedy
from loops import empty_past, greedy, past_name
from reference import CausalReference, padded_batch
from runtimes import OnnxProgram, PteModule, Pt2Program

PROMPT = [11, 25, 3, 97, 140, 7]
ROWS = [[5, 17, 42, 9, 77, 101, 13], [8, 66, 31, 250]]
STEPS = 32
_REFS: dict = {}


def reference(case, checkpoint) -> CausalReference:
    if case.name not in _REFS:
        _REFS[case.name] = CausalReference(checkpoint(case))
    return _REFS[case.name]


def check_presents(rec, what, got: dict, ref: dict, mask, bound):
    """Every leaf on the real (mask = 1) positions: a pad position's key/value is never attended, and a fully
    masked query row is not defined the same way everywhere, so what the layers above write there is free."""
    names = sorted(ref)
    missing = [n for n in names if n not in got]
    assert not missing, f"[{rec.fmt}/{rec.runtime}] {what}: expected cache leaves {missing}, got {sorted(got)}"
    for n in names:
        g, r = got[n], ref[n]
        k = min(g.shape[-2], r.shape[-2])  # a sliding layer: transformers keeps the last window only
        g, r, m = g[..., g.shape[-2] - k:, :], r[..., r.shape[-2] - k:, :], mask[:, mask.shape[1] - k:]
        keep = np.broadcast_to(m.astype(bool)[:, None, :, None], r.shape)
        rec.check(f"{what} {n}", np.where(keep, g, 0), np.where(keep, r, 0), bound)


def judge_functional(rec, prefill, decode, ref: CausalReference, bound, rows=ROWS, prompt=PROMPT):
    """The prefill/decode pair (or the merged graph twice) against transformers, then greedy."""
    ids, mask, pos = padded_batch(rows)
    r_logits, r_cache, r_leaves = ref.forward(ids, mask, pos)
    out = prefill({"input_ids": ids, "attention_mask": mask, "position_ids": pos, **empty_past(prefill, 2)})
    real = mask.astype(bool)
    rec.check("prefill logits", out["logits"][real], r_logits[real], bound)
    check_presents(rec, "prefill", out, r_leaves, mask, bound)

    nxt = r_logits[:, -1].argmax(-1)[:, None].astype(np.int64)
    mask2 = np.concatenate([mask, np.ones((2, 1), np.int64)], 1)
    pos2 = pos[:, -1:] + 1
    d_logits, _, d_leaves = ref.forward(nxt, mask2, pos2, cache=r_cache)
    feeds = {"input_ids": nxt, "attention_mask": mask2, "position_ids": pos2}
    feeds.update({past_name(k): v for k, v in out.items() if k.startswith("present.")})
    out2 = decode(feeds)
    rec.check("decode logits", out2["logits"], d_logits, bound)
    check_presents(rec, "decode", out2, d_leaves, mask2, bound)

    tokens, step_logits = ref.greedy(prompt, STEPS)
    _, got, logits_seen = greedy(prefill, decode, prompt, STEPS)
    check_greedy(rec, got, logits_seen, tokens, step_logits, bound)


@pytest.mark.parametrize("case", DECODERS, ids=lambda c: c.name)
def test_onnx(case, export, checkpoint, record):
    rec = record(case, "onnx")
    out = export(case, "onnx")
    ref = reference(case, checkpoint)
    judge_functional(rec, OnnxProgram(out / "onnx" / "prefill.onnx"), OnnxProgram(out / "onnx" / "decode.onnx"),
                     ref, EXACT)
    merged = OnnxProgram(out / "onnx" / "model.onnx")
    judge_functional(rec, merged, merged, ref, EXACT)


@pytest.mark.parametrize("case", DECODERS, ids=lambda c: c.name)
def test_pt2(case, export, checkpoint, record):
    rec = record(case, "pt2")
    out = export(case, "pt2")
    judge_functional(rec, Pt2Program(out / "prefill.pt2"), Pt2Program(out / "decode.pt2"),
                     reference(case, checkpoint), EXACT)


@pytest.mark.parametrize("backend", ["portable", "xnnpack"])
@pytest.mark.parametrize("case", DECODERS, ids=lambda c: c.name)
def test_pte(case, backend, export, checkpoint, record):
    fmt = f"pte-{backend}"
    judge_pte(record(case, fmt), PteModule(export(case, fmt) / "model.pte"), reference(case, checkpoint))


def judge_pte(rec, pte, ref, prompt=PROMPT):
    """forward(tokens, input_pos) on the prompt, then the 32-token greedy loop, vs transformers."""
    assert "forward" in pte.methods, f"[{rec.fmt}] expected a forward method, got {pte.methods}"
    ids = np.array([prompt], np.int64)
    logits = pte("forward", [ids, np.arange(len(prompt), dtype=np.int64)])[0]
    r_logits, _, _ = ref.forward(ids)
    rec.check("prefill logits", logits, r_logits, PTE)
    tokens, step_logits = ref.greedy(prompt, STEPS)
    got, seen = [], []
    for i in range(STEPS):
        last = logits[0, -1]
        seen.append(last)
        got.append(int(last.argmax()))
        logits = pte("forward", [np.array([[got[-1]]], np.int64), np.array([len(prompt) + i], np.int64)])[0]
    check_greedy(rec, got, seen, tokens, step_logits, PTE)
