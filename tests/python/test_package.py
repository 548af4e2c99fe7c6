"""The wheel itself: it installs into a clean venv and works there without the build tree; the CLI and the
package write the same folder; bad arguments raise hfx.Error subclasses; an interrupted export leaves nothing
half-written."""
from __future__ import annotations

import filecmp
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import ROOT, _run


def _tiny(cli: str, tmp: Path, arch: str = "llama") -> Path:
    out = tmp / f"tiny-{arch}"
    if not out.exists():
        _run([cli, "create-tiny", arch, "-o", str(out)])
    return out


def _same_tree(a: Path, b: Path) -> list:
    """Files that differ or exist on one side only (recursively)."""
    cmp = filecmp.dircmp(a, b)
    bad = [*cmp.left_only, *cmp.right_only, *cmp.funny_files]
    _, mismatch, errors = filecmp.cmpfiles(a, b, cmp.common_files, shallow=False)
    bad += mismatch + errors
    for sub in cmp.common_dirs:
        bad += [f"{sub}/{x}" for x in _same_tree(a / sub, b / sub)]
    return bad


def test_build_pins_agree():
    """pyproject.toml's build requirements are deps/python/build.lock's pins (one set of versions)."""
    wanted = set(re.findall(r'"([a-z_-]+==[0-9.]+)"', (ROOT / "pyproject.toml").read_text().split("build-backend")[0]))
    locked = {l.split(" ")[0].replace("_", "-") for l in (ROOT / "deps/python/build.lock").read_text().splitlines()
              if "==" in l and not l.startswith("#")}
    assert wanted and {w.replace("_", "-") for w in wanted} <= locked, (wanted, locked)


def test_wheel_contents(wheel):
    import zipfile

    names = zipfile.ZipFile(wheel).namelist()
    for want in ["hfx/__init__.py", "hfx/exporters.py", "hfx/_hfx.pyi", "hfx/py.typed", "hfx/libonnxruntime.so.1"]:
        assert want in names, names
    assert any(re.fullmatch(r"hfx/_hfx\.cpython-\d+-x86_64-linux-gnu\.so", n) for n in names), names


def test_clean_venv_export_equals_cli(clean_venv, cli, tmp_path):
    """In a venv holding only the wheel: the extension and ONNX Runtime load from the package (not the build
    tree), and exporting a folder gives the CLI's folder byte for byte, manifest included."""
    ck = _tiny(cli, tmp_path)
    env = dict(os.environ, SOURCE_DATE_EPOCH="1")
    env.pop("PYTHONPATH", None)
    _run([cli, "export", str(ck), "--format", "onnx", "-o", str(tmp_path / "cli")], env=env)
    script = textwrap.dedent(f"""
        import os, subprocess, hfx, hfx._hfx as native
        from hfx.exporters import OnnxExporter
        pkg = os.path.dirname(hfx.__file__)
        assert native.__file__.startswith(pkg), native.__file__
        ldd = subprocess.run(["ldd", native.__file__], capture_output=True, text=True).stdout
        ort = [l for l in ldd.splitlines() if "libonnxruntime" in l]
        assert ort and pkg in ort[0], ldd
        assert "{ROOT}" not in ldd, ldd
        r = OnnxExporter().export_for_generation({str(ck)!r}, out={str(tmp_path / 'py')!r}, progress=False)
        print(sorted(r.components))
    """)
    r = _run([str(clean_venv), "-c", script], env=env, cwd=tmp_path)
    assert r.stdout.strip() == "['decode', 'model', 'prefill']", r.stdout
    assert _same_tree(tmp_path / "cli", tmp_path / "py") == []


@pytest.mark.parametrize("fmt,flags,config", [
    ("executorch", ["--backend", "xnnpack", "--quantize", "int4", "--symmetric"],
     "ExecutorchConfig(quantize={'method': 'int4', 'symmetric': True})"),
    ("dynamo", [], "DynamoConfig()"),
    ("gguf", ["--quantize", "q8_0"], "GgufConfig(quantize={'method': 'q8_0'})"),
    ("onnx", ["--target", "ort", "--dtype", "bf16"], "OnnxConfig(ort_fusions='cpu', dtype='bf16')"),
])
def test_formats_equal_cli(hfx, cli, tmp_path, fmt, flags, config):
    """Each format's config class gives the folder of the CLI flags it stands for."""
    import hfx.exporters as E

    ck = _tiny(cli, tmp_path)
    os.environ["SOURCE_DATE_EPOCH"] = "1"
    _run([cli, "export", str(ck), "--format", fmt, *flags, "-o", str(tmp_path / "cli")])
    exporter = {"onnx": E.OnnxExporter, "executorch": E.ExecutorchExporter, "dynamo": E.DynamoExporter,
                "gguf": E.GgufExporter}[fmt]()
    exporter.export_for_generation(str(ck), config=eval(f"E.{config}"), out=str(tmp_path / "py"), progress=False)
    assert _same_tree(tmp_path / "cli", tmp_path / "py") == []


def test_errors(hfx, cli, tmp_path):
    """Bad arguments raise hfx.Error subclasses with the library's "[component] expected X, got Y" message."""
    import hfx.exporters as E

    ck = _tiny(cli, tmp_path)
    cases = [
        (lambda: E.OnnxExporter().export_for_generation(str(tmp_path / "nope"), progress=False), hfx.HubError,
         r"^\[hub\] expected an existing folder or a model id"),
        (lambda: E.OnnxExporter().export_for_generation(str(ck), config=E.OnnxConfig(opset_version=7),
                                                         progress=False), hfx.ConfigError, r"^\[config\] expected"),
        (lambda: E.OnnxExporter().export_for_generation(str(ck), config=E.OnnxConfig(strict=True)),
         hfx.ArgumentError, r"strict"),
        (lambda: E.OnnxExporter().export_for_generation(str(ck), config=E.DynamoConfig()), hfx.ArgumentError,
         r"expected a OnnxConfig"),
        (lambda: E.OnnxExporter().export_for_generation(str(ck), {"pixel_values": None}, progress=False),
         hfx.ArgumentError, r"expected inputs among \[.*'input_ids'"),
        (lambda: E.ExecutorchExporter().export_for_generation(str(ck), config={"backend": "vulkan"},
                                                               progress=False), hfx.ExportError, r"^\[executorch\] expected a backend"),
        (lambda: E.OnnxExporter().export_for_generation(42), hfx.ArgumentError, r"got int"),
        (lambda: hfx.Generator(str(ck)).generate("hi", temperature=0.0, greedy=False), hfx.GenerateError,
         r"^\[sampling\] expected"),
        (lambda: hfx.Generator(str(ck)).generate("hi", beams=4), hfx.ArgumentError, r"beams"),
        (lambda: hfx.verify(str(tmp_path / "nope")), hfx.Error, r"^\[verify\] expected"),
    ]
    for i, (call, cls, pattern) in enumerate(cases):
        with pytest.raises(cls) as e:
            call()
        assert re.search(pattern, str(e.value)), (i, str(e.value))
        assert isinstance(e.value, hfx.Error) and e.value.component, i
    assert not (tmp_path / "nope").exists()


def test_interrupt_leaves_previous_output(hfx, cli, tmp_path):
    """A KeyboardInterrupt while the weights are written (raised by the progress callback, and a real SIGINT)
    propagates, and the previous output folder is left as it was, with no staging folder beside it."""
    import hfx.exporters as E

    ck = _tiny(cli, tmp_path)
    out = tmp_path / "parent" / "out"
    out.mkdir(parents=True)
    (out / "previous.txt").write_text("the export before")

    def interrupt(step):
        if step["stage"] == "write":
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        E.OnnxExporter().export_for_generation(str(ck), out=str(out), progress=interrupt)
    assert sorted(p.name for p in out.parent.iterdir()) == ["out"]
    assert sorted(p.name for p in out.iterdir()) == ["previous.txt"]

    script = textwrap.dedent(f"""
        import os, signal, sys
        sys.path.insert(0, {str(Path(hfx.__file__).parents[1])!r})
        from hfx.exporters import OnnxExporter
        def progress(step):
            if step["stage"] == "write":
                os.kill(os.getpid(), signal.SIGINT)   # Ctrl-C while the weights are written
        try:
            OnnxExporter().export_for_generation({str(ck)!r}, out={str(out)!r}, progress=progress)
        except KeyboardInterrupt:
            print("interrupted")
    """)
    r = _run([sys.executable, "-c", script])
    assert r.stdout.strip() == "interrupted", r.stdout + r.stderr
    assert sorted(p.name for p in out.parent.iterdir()) == ["out"]
    assert sorted(p.name for p in out.iterdir()) == ["previous.txt"]


@pytest.mark.parametrize("call", ["export"])
def test_gil_released(hfx, cli, tmp_path, call):
    """Another Python thread runs while an export works in C++: it advances between two progress callbacks (with
    the GIL held in C++ it fails: checked by removing the release). Verification and generation release it the
    same way (runtime_bind.cpp), but their steps between callbacks are often too short for the spinner to be
    scheduled, so this observable would be flaky there."""
    import threading

    import hfx.exporters as E

    ck = _tiny(cli, tmp_path)
    if call != "export":
        E.OnnxExporter().export_for_generation(str(ck), out=str(tmp_path / "x"), progress=False)
    ticks = [0]
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            ticks[0] += 1

    seen = []  # the spinner's ticks when each callback starts and ends

    def callback(*args):
        start = ticks[0]
        sum(range(1000))
        seen.append((start, ticks[0]))

    runs = {
        "export": lambda: E.OnnxExporter().export_for_generation(str(ck), out=str(tmp_path / "o"), progress=callback),
    }
    t = threading.Thread(target=spin)
    t.start()
    try:
        runs[call]()
    finally:
        stop.set()
        t.join()
    # Between one callback's end and the next one's start hfx runs in C++: the spinner advances there only if the
    # GIL was released (held, it could run inside the callbacks alone).
    gaps = [b[0] - a[1] for a, b in zip(seen, seen[1:])]
    assert len(gaps) > 4 and sum(g > 0 for g in gaps) >= len(gaps) // 4, gaps


def test_default_progress_is_tqdm_when_installed(hfx, clean_venv, cli, tmp_path):
    """progress=None (the default) draws a tqdm bar where tqdm is installed (the project's venv) and nothing where
    it is not (the clean venv): the export is the same either way."""
    ck = _tiny(cli, tmp_path)
    script = (f"from hfx.exporters import OnnxExporter; "
              f"OnnxExporter().export_for_generation({str(ck)!r}, out=__import__('sys').argv[1])")
    site = str(Path(hfx.__file__).parents[1])
    with_tqdm = _run([sys.executable, "-c", script, str(tmp_path / "a")], env=dict(os.environ, PYTHONPATH=site))
    without = _run([str(clean_venv), "-c", script, str(tmp_path / "b")], env={"PATH": "/usr/bin:/bin"})
    assert re.search(r"export a: .*step", with_tqdm.stderr), with_tqdm.stderr[-500:]
    assert without.stderr == "", without.stderr[-500:]
    assert _same_tree(tmp_path / "a" / "onnx", tmp_path / "b" / "onnx") == []


def test_model_id_through_hfx_cache(hfx, cli, tmp_path, monkeypatch):
    """A model id resolves through the Hugging Face cache layout (offline here) exactly as the CLI resolves it;
    the export equals the folder's."""
    import shutil

    import hfx.exporters as E

    ck = _tiny(cli, tmp_path)
    commit = "0123456789abcdef0123456789abcdef01234567"
    repo = tmp_path / "cache" / "models--tiny-org--tiny-llama"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(commit)
    shutil.copytree(ck, repo / "snapshots" / commit)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    by_id = E.OnnxExporter().export_for_generation("tiny-org/tiny-llama", out=str(tmp_path / "id"), progress=False)
    E.OnnxExporter().export_for_generation(str(ck), out=str(tmp_path / "folder"), progress=False)
    assert sorted(by_id.components) == ["decode", "model", "prefill"]
    assert _same_tree(tmp_path / "id" / "onnx", tmp_path / "folder" / "onnx") == []
    assert hfx.inspect("tiny-org/tiny-llama")["model_type"] == "llama"
    with pytest.raises(hfx.HubError, match=r"^\[hub\]"):
        E.OnnxExporter().export_for_generation("tiny-org/absent", progress=False)


@pytest.mark.parametrize("fmt", ["onnx", "executorch", "dynamo"])
def test_export_writes_one_graph(hfx, cli, tmp_path, fmt):
    """`export` (HfExporters' one graph) writes a single program — a decoder's merged call — where
    `export_for_generation` writes prefill and decode too; the released runtime judges it (hfx verify)."""
    import hfx.exporters as E

    ck = _tiny(cli, tmp_path)
    exporter = {"onnx": E.OnnxExporter, "executorch": E.ExecutorchExporter, "dynamo": E.DynamoExporter}[fmt]()
    one = exporter.export(str(ck), out=str(tmp_path / "one"), progress=False)
    gen = exporter.export_for_generation(str(ck), out=str(tmp_path / "gen"), progress=False)
    assert len(one.components) == 1 and len(gen.components) >= len(one.components), (one, gen)
    assert one.verify(tokens=8).passed
