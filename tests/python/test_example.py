"""examples/python/export_like_transformers.py, a script written for transformers.exporters, runs on hfx with only
its import line changed, and what it saves loads in the released runtimes: every ONNX graph in ONNX Runtime, every
.pt2 program with torch.export.load, the .pte's every method in ExecuTorch's runtime."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conftest import ROOT

ORIGINAL = "from transformers.exporters import"
CHANGED = "from hfx.exporters import"


def test_hfexporters_script_with_changed_import(hfx, tmp_path):
    text = (ROOT / "examples/python/export_like_transformers.py").read_text()
    assert text.count(ORIGINAL) == 1
    changed = text.replace(ORIGINAL, CHANGED)
    diff = [(a, b) for a, b in zip(text.splitlines(), changed.splitlines()) if a != b]
    assert len(diff) == 1, diff
    script = tmp_path / "export_like_hfx.py"
    script.write_text(changed)
    site = str(Path(hfx.__file__).parents[1])
    r = subprocess.run([sys.executable, str(script), str(tmp_path / "out")], capture_output=True, text=True,
                       env={"PYTHONPATH": site, "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    assert r.returncode == 0, r.stderr[-3000:]
    assert [l.split(" ")[0] for l in r.stdout.splitlines()] == ["onnx", "dynamo", "executorch"], r.stdout

    import onnxruntime as ort

    graphs = sorted((tmp_path / "out/onnx/onnx").glob("*.onnx"))
    assert [g.name for g in graphs] == ["decode.onnx", "model.onnx", "prefill.onnx"]
    for g in graphs:
        s = ort.InferenceSession(str(g), providers=["CPUExecutionProvider"])
        assert "logits" in [o.name for o in s.get_outputs()]

    import torch

    programs = sorted((tmp_path / "out/dynamo").glob("*.pt2"))
    assert [p.name for p in programs] == ["decode.pt2", "prefill.pt2"]
    for p in programs:
        ep = torch.export.load(str(p))
        assert ep.graph_signature.user_inputs

    from executorch.runtime import Runtime

    program = Runtime.get().load_program(str(tmp_path / "out/executorch/model.pte"))
    assert program.method_names
    for name in program.method_names:
        assert program.load_method(name) is not None
