"""Quantized .pt2 in PyTorch itself: `hfx export --format dynamo --quantize int4|int8 --symmetric` writes the
codes into the archive and de-quantizes them in the graph with core ATen ops (docs/quantization.md), so
`torch.export.load` runs it with no torchao. The reference is transformers on the weights the program holds,
re-derived on their own in numpy from the published rule (tools/et_check/dequantize.py --f32-scales), so the
comparison is at the float bound: any difference is the graph's, not the rounding's.
int4 only: dequantize.py's 8-bit rule is ExecuTorch's 8da8w (one scale per row), while the .pt2's int8 has a
scale per group of 32, which no independent re-derivation here writes yet (int8 .pt2: not judged).
"""
from __future__ import annotations

import subprocess
import sys

import pytest

import test_decoders
from cases import BY_NAME
from conftest import ROOT
from judge import EXACT
from reference import CausalReference
from runtimes import Pt2Program

CASES = [BY_NAME[n] for n in ("llama", "qwen2", "gemma2", "phi3", "mixtral")]


@pytest.mark.parametrize("bits", [4])
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_pt2(case, bits, export, checkpoint, workdir, record):
    rec = record(case, "pt2", runtime=f"torch.export.load int{bits}")
    rec.fmt = f"pt2-int{bits}"
    out = export(case, "pt2", ("--quantize", f"int{bits}", "--symmetric", "--group-size", "32"))
    deq = workdir / "ckpt" / f"{case.name}-int{bits}-dequantized"
    if not deq.exists():
        subprocess.run([sys.executable, str(ROOT / "tools" / "et_check" / "dequantize.py"), str(checkpoint(case)),
                        str(deq), "--group-size", "32", "--bits", str(bits), "--f32-scales"], check=True,
                       capture_output=True)
    test_decoders.judge_functional(rec, Pt2Program(out / "prefill.pt2"), Pt2Program(out / "decode.pt2"),
                                   CausalReference(deq), EXACT)
