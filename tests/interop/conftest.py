"""The interop tier: hfx's exports judged by the released runtimes against transformers 5.x eager.

Run by scripts/test.sh (tier "interop") as `.venv/bin/python -m pytest tests/interop`. Environment:
  HFX              the hfx binary (default build/hfx)
  HFX_INTEROP_DIR  work folder for checkpoints and exports, kept (default: a fresh temp folder, removed at the
                   end unless HFX_INTEROP_KEEP=1)
  HFX_INTEROP_REPORT  where the records go (default build/interop/report.json); tests/interop/table.py
                   turns them into the docs table (docs/interop.md).
  HFX_INTEROP_FULL=1  the contract probes on every case, cases.PROBE_REPEATS included (sessions, before they
                   stop; CI leaves the repeats out).
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE))

import cases as cases_mod  # noqa: E402
from judge import Record  # noqa: E402

FORMATS = {
    # name: (hfx export flags, runtime)
    "onnx": (["--format", "onnx"], "onnxruntime"),
    "pt2": (["--format", "dynamo"], "torch.export.load"),
    "pte-portable": (["--format", "executorch", "--backend", "portable"], "executorch"),
    "pte-xnnpack": (["--format", "executorch", "--backend", "xnnpack"], "executorch"),
}

_RECORDS: list = []


def hfx_binary() -> str:
    path = os.environ.get("HFX", str(ROOT / "build" / "hfx"))
    if not os.access(path, os.X_OK):
        pytest.fail(f"[interop] expected the hfx binary at {path}, got none: build it (scripts/build.sh release) "
                    "or set HFX")
    return path


@pytest.fixture(scope="session")
def workdir():
    """HFX_INTEROP_DIR (kept), else a temp folder removed at the end (about 4.5 GB of checkpoints and exports;
    HFX_INTEROP_KEEP=1 keeps it to look at)."""
    d = os.environ.get("HFX_INTEROP_DIR")
    path = Path(d) if d else Path(tempfile.mkdtemp(prefix="hfx_interop_"))
    path.mkdir(parents=True, exist_ok=True)
    yield path
    if not d and os.environ.get("HFX_INTEROP_KEEP") != "1":
        shutil.rmtree(path, ignore_errors=True)


def run_hfx(*args, check=True) -> subprocess.CompletedProcess:
    r = subprocess.run([hfx_binary(), "--quiet", *map(str, args)], capture_output=True, text=True)
    if check and r.returncode != 0:
        raise AssertionError(f"[interop] hfx {' '.join(map(str, args))} exited {r.returncode}: "
                             f"{(r.stderr or r.stdout).strip()[-2000:]}")
    return r


@pytest.fixture(scope="session")
def checkpoint(workdir):
    def make(case) -> Path:
        return cases_mod.make_checkpoint(case, workdir / "ckpt" / case.name)
    return make


@pytest.fixture(scope="session")
def export(workdir, checkpoint):
    done = {}

    def make(case, fmt: str, extra=()) -> Path:
        key = (case.name, fmt, tuple(extra))
        if key not in done:
            out = workdir / "out" / f"{case.name}-{fmt}{'-' + '-'.join(extra).replace('--', '') if extra else ''}"
            if not out.exists():
                run_hfx("export", checkpoint(case), *FORMATS[fmt][0], *extra, "-o", out)
            done[key] = out
        return done[key]
    return make


@pytest.fixture
def record(request):
    """A Record for this test; its status is set from the test's outcome when the test ends."""
    holder = {}

    def make(case, fmt, runtime=None) -> Record:
        rec = Record(case=case.name, model_type=case.model_type, fmt=fmt, runtime=runtime or FORMATS[fmt][1])
        holder["rec"] = rec
        return rec
    yield make
    rec = holder.get("rec")
    if rec is not None:
        rep = getattr(request.node, "rep_call", None)
        if rep is not None:
            # A strict xfail is a known hfx bug, named in the test; it stays visible as its own status.
            rec.status = ("xfail" if hasattr(rep, "wasxfail") else "pass" if rep.passed
                          else "fail" if rep.failed else "skip")
            if hasattr(rep, "wasxfail") and not rec.detail:
                rec.detail = str(rep.wasxfail)[:300]
            if rep.failed:
                rec.detail = str(rep.longrepr.reprcrash.message if hasattr(rep.longrepr, "reprcrash")
                                 else rep.longrepr).splitlines()[0][:300]
        _RECORDS.append(rec)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if rep.when == "call":
        item.rep_call = rep


def pytest_sessionfinish(session, exitstatus):
    path = Path(os.environ.get("HFX_INTEROP_REPORT", str(ROOT / "build" / "interop" / "report.json")))
    path.parent.mkdir(parents=True, exist_ok=True)
    import onnxruntime
    import torch
    import transformers
    from executorch import version as et_version

    meta = {"transformers": transformers.__version__, "torch": torch.__version__,
            "executorch": et_version.__version__, "onnxruntime": onnxruntime.__version__,
            "python": sys.version.split()[0]}
    path.write_text(json.dumps({"meta": meta, "hfx_architectures": hfx_architectures(),
                                "records": [r.__dict__ for r in _RECORDS]}, indent=1))


def hfx_architectures() -> list:
    """Every model_type hfx supports, as `hfx create-tiny --help` lists them (the table names the ones no case
    here judges)."""
    r = subprocess.run([hfx_binary(), "create-tiny", "--help"], capture_output=True, text=True)
    m = re.search(r"model_type: ([^\n]+)", r.stdout)
    return [a.strip() for a in m.group(1).split(",")] if m else []
