"""State-space and hybrid decoders (mamba, mamba2, granitemoehybrid, lfm2): every format vs transformers eager.

Their caches are recurrent states (past_conv.N, past_ssm.N) beside attention layers' keys/values, laid out
differently in transformers' cache classes, so the states are judged through what they decide: the prompt's
logits on every position, then 32 greedy tokens whose every step's logits come from a program fed the
previous program's own states. The reference decodes by full recomputation (the model's definition, no
cache), which is what a cached decode must equal.
- ONNX: prefill.onnx + decode.onnx, and the merged model.onnx (the first call on an empty past: zero
  states, zero-length keys/values);
- .pt2: prefill.pt2 + decode.pt2 by torch.export.load, each flat leaf as its keyword (past_conv_0);
- .pte: the `prefill` and `decode` methods of ExecuTorch's runtime, the states carried as plain tensors.
"""
from __future__ import annotations

import numpy as np
import pytest

from cases import STATE
from judge import EXACT, PTE, check_greedy
from loops import greedy
from reference import CausalReference
from runtimes import OnnxProgram, PteModule, Pt2Program

PROMPT = [11, 25, 3, 97, 140, 7]
STEPS = 32
_REFS: dict = {}


def reference(case, checkpoint):
    """(prompt logits, greedy tokens, each token's logits) by full recomputation."""
    if case.name not in _REFS:
        ref = CausalReference(checkpoint(case))
        logits, _, _ = ref.forward(np.array([PROMPT], np.int64))
        seq, tokens, steps = list(PROMPT), [], []
        last = logits[0, -1]
        for _ in range(STEPS):
            steps.append(last)
            tokens.append(int(last.argmax()))
            seq.append(tokens[-1])
            last = ref.forward(np.array([seq], np.int64))[0][0, -1]
        _REFS[case.name] = (logits, tokens, steps)
    return _REFS[case.name]


def run_functional(rec, prefill, decode, case, checkpoint, bound):
    logits, tokens, steps = reference(case, checkpoint)
    out, got, seen = greedy(prefill, decode, PROMPT, STEPS)
    rec.check("prefill logits", out["logits"], logits, bound)
    check_greedy(rec, got, seen, tokens, steps, bound)


@pytest.mark.parametrize("case", STATE, ids=lambda c: c.name)
def test_onnx(case, export, checkpoint, record):
    rec = record(case, "onnx")
    out = export(case, "onnx") / "onnx"
    run_functional(rec, OnnxProgram(out / "prefill.onnx"), OnnxProgram(out / "decode.onnx"), case, checkpoint, EXACT)
    merged = OnnxProgram(out / "model.onnx")
    run_functional(rec, merged, merged, case, checkpoint, EXACT)


@pytest.mark.parametrize("case", STATE, ids=lambda c: c.name)
def test_pt2(case, export, checkpoint, record):
    rec = record(case, "pt2")
    out = export(case, "pt2")
    run_functional(rec, Pt2Program(out / "prefill.pt2"), Pt2Program(out / "decode.pt2"), case, checkpoint, EXACT)


@pytest.mark.parametrize("backend", ["portable", "xnnpack"])
@pytest.mark.parametrize("case", STATE, ids=lambda c: c.name)
def test_pte(case, backend, export, checkpoint, record):
    fmt = f"pte-{backend}"
    judge_pte(record(case, fmt), PteModule(export(case, fmt) / "model.pte"), reference(case, checkpoint))


def judge_pte(rec, pte, ref):
    """The prefill and decode methods on the prompt and 32 greedy steps, the states carried by the caller."""
    fmt = rec.fmt
    assert {"prefill", "decode"} <= set(pte.methods), f"[{fmt}] expected prefill and decode methods, got {pte.methods}"
    logits, tokens, steps = ref
    # Inputs in the component's declared order: the int64 ones (input_ids, attention_mask, position_ids where
    # declared), then the states, fed from the previous call's outputs 1.. in order (output 0: logits).
    n_int = {m: sum(1 for i in range(pte.num_inputs(m)) if pte.input_dtype(m, i) == "int64")
             for m in ("prefill", "decode")}

    def ints(ids, total, first_pos, method):
        args = [ids, np.ones((1, total), np.int64)]
        if n_int[method] == 3:
            args.append(np.arange(first_pos, first_pos + ids.shape[1], dtype=np.int64)[None])
        return args

    ids = np.array([PROMPT], np.int64)
    out = pte("prefill", ints(ids, len(PROMPT), 0, "prefill"))
    rec.check("prefill logits", out[0], logits, PTE)
    got, seen = [], []
    for i in range(STEPS):
        last = out[0][0, -1]
        seen.append(last)
        got.append(int(last.argmax()))
        n = len(PROMPT) + i
        out = pte("decode", ints(np.array([[got[-1]]], np.int64), n + 1, n, "decode") + out[1:])
    check_greedy(rec, got, seen, tokens, steps, PTE)
