"""`hfx verify` with the released runtimes: every .pte and .pt2 of a folder gets a "runtime numerics" check
that ExecuTorch's Python runtime or PyTorch (torch.export.load) computed, naming which and its version; a
missing interpreter is "not judged" (skipped), never a pass; a wrong weight fails it.

The structures: a decoder's static-cache forward (.pte) and prefill/decode programs (.pt2), a state-space
model's prefill/decode methods, an encoder-decoder's three programs, a vision-language model's three.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import test_negative
from cases import BY_NAME
from conftest import hfx_binary, run_hfx

CASES = [  # (model_type, export flags, the runtime that must judge each file)
    ("llama", ["--format", "executorch", "--backend", "xnnpack"], "ExecuTorch 1.5.1"),
    ("llama", ["--format", "dynamo"], "PyTorch 2.15"),
    ("mamba", ["--format", "executorch"], "ExecuTorch 1.5.1"),
    ("mamba2", ["--format", "dynamo"], "PyTorch 2.15"),
    ("t5", ["--format", "executorch"], "ExecuTorch 1.5.1"),
    ("t5", ["--format", "dynamo"], "PyTorch 2.15"),
    ("llava", ["--format", "executorch", "--backend", "xnnpack"], "ExecuTorch 1.5.1"),
    ("llava", ["--format", "dynamo"], "PyTorch 2.15"),
    # A GPTQ checkpoint's codes as they are (4-bit, groups of 32, scales rounded to bf16) in XNNPACK's kernels,
    # and hfx's int4 weights de-quantized in a .pt2's graph: each against eager on the same codes.
    ("llama-gptq", ["--format", "executorch", "--backend", "xnnpack"], "ExecuTorch 1.5.1"),
    ("llama", ["--format", "dynamo", "--quantize", "int4", "--symmetric"], "PyTorch 2.15"),
]
TINY_FLAGS = {"llama-gptq": ["llama", "--quantize", "gptq", "--bits", "4", "--group-size", "32"]}


def verify(out, *extra, python=sys.executable) -> dict:
    env = dict(os.environ, HFX_PYTHON=python)
    env.pop("HFX_RUNTIME_JUDGE", None)
    r = subprocess.run([hfx_binary(), "--quiet", "verify", str(out), *map(str, extra)], capture_output=True, text=True,
                       env=env)
    report = json.loads((out / "verify.json").read_text())
    report["exit_code"] = r.returncode
    return report


def runtime_checks(report) -> list:
    return [c for c in report["checks"] if c["check"] == "runtime numerics"]


def artifacts(out) -> set:
    return {p.name for p in out.iterdir() if p.suffix in (".pte", ".pt2")}


@pytest.mark.parametrize("arch,flags,runtime", CASES, ids=lambda v: v if isinstance(v, str) else None)
def test_every_file_is_judged_by_its_runtime(arch, flags, runtime, workdir):
    ckpt = workdir / "tiny" / arch
    if not ckpt.exists():
        run_hfx("create-tiny", *TINY_FLAGS.get(arch, [arch]), "-o", ckpt)
    out = workdir / "verify" / f"{arch}-{'-'.join(f.strip('-') for f in flags[1:])}"
    if not out.exists():
        run_hfx("export", ckpt, *flags, "-o", out)
    rep = verify(out)
    checks = runtime_checks(rep)
    judged = {c["component"].split(":")[0] for c in checks}
    assert judged == artifacts(out), f"expected a runtime check for every file of {sorted(artifacts(out))}, got {checks}"
    for c in checks:
        assert c["status"] == "passed", c
        assert runtime in c["message"], c
        assert "real calls" in c["message"], c  # the generation loop's calls (several shapes), not one sample
    rejects = [c for c in rep["checks"] if c["check"] == "runtime rejects"]
    assert {c["component"].split(":")[0] for c in rejects} == artifacts(out), rejects
    assert all(c["status"] == "passed" and runtime in c["message"] for c in rejects), rejects
    assert rep["exit_code"] == 0, rep["first_failure"]


def test_no_interpreter_is_not_judged(workdir, export):
    out = export(BY_NAME["llama"], "pt2")
    rep = verify(out, python="/nonexistent/python")
    checks = runtime_checks(rep)
    assert checks and all(c["status"] == "not_judged" and "/nonexistent/python" in c["message"] for c in checks), checks
    # A .pt2 has no numerics but PyTorch's: the folder is not judged, which is never a pass.
    assert rep["verdict"] == "not_judged" and not rep["passed"] and rep["exit_code"] != 0, rep["verdict"]


@pytest.mark.parametrize("fmt", ["pt2", "pte-portable"])
def test_scaled_weight_fails_the_runtime_check(fmt, workdir, checkpoint):
    case = BY_NAME["llama"]
    bad = test_negative.scaled_checkpoint(checkpoint(case), workdir / "ckpt" / "llama-lm_head-x1.001",
                                          "lm_head.weight", 1.001)
    out = workdir / "out" / f"llama-lm_head-x1.001-{fmt}"
    if not out.exists():
        from conftest import FORMATS
        run_hfx("export", bad, *FORMATS[fmt][0], "-o", out)
    rep = verify(out, "--reference", checkpoint(case))
    checks = runtime_checks(rep)
    assert checks and all(c["status"] == "failed" for c in checks), checks
    assert rep["exit_code"] != 0
