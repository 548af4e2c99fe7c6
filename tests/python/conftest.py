"""The Python package's tier: builds the wheel from this repository, installs it where no build tree is visible,
and imports `hfx` from there (docs/python.md).

HFX_PY_BUILD_DIR (default build/, the release tree scripts/test.sh has just built) is scikit-build-core's build
folder: the wheel build then compiles only the extension module; HFX_WHEEL names a wheel built already instead.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "interop"))  # the interop tier's checkpoint recipes (cases.py, ...)
# verify's llama.cpp judge (GGUF) runs node-llama-cpp from the project's npm folder (scripts/setup.sh).
os.environ.setdefault("HFX_NODE_MODULES", str(ROOT / "deps" / "npm" / "node_modules"))


def _run(cmd: list, **kw) -> subprocess.CompletedProcess:
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        raise AssertionError(f"{' '.join(map(str, cmd))} exited {r.returncode}:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    return r


@pytest.fixture(scope="session")
def wheel(tmp_path_factory) -> Path:
    """The wheel `pip wheel .` builds (scikit-build-core + nanobind from deps/python/build.lock, no download)."""
    if os.environ.get("HFX_WHEEL"):
        return Path(os.environ["HFX_WHEEL"])
    out = tmp_path_factory.mktemp("wheel")
    build_dir = os.environ.get("HFX_PY_BUILD_DIR", str(ROOT / "build"))
    env = dict(os.environ, PYTHONPATH=str(ROOT / ".pybuild"))
    _run([sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-build-isolation", "--no-deps", "--no-index",
          "-w", str(out), "-C", f"build-dir={build_dir}"], env=env)
    wheels = list(out.glob("hfx-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


@pytest.fixture(scope="session")
def clean_venv(wheel, tmp_path_factory) -> Path:
    """A fresh venv (Debian's python3.11, nothing else installed) holding only the wheel: its python."""
    venv = tmp_path_factory.mktemp("venv") / "v"
    _run(["/usr/bin/python3.11", "-m", "venv", str(venv)])
    _run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)])
    return venv / "bin" / "python"


@pytest.fixture(scope="session")
def hfx(wheel, tmp_path_factory):
    """The package installed from the wheel into a folder of its own, imported into this process (which has
    torch and transformers: the live-model tests)."""
    site = tmp_path_factory.mktemp("site")
    _run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--target", str(site), str(wheel)])
    sys.path.insert(0, str(site))
    import hfx as module

    assert Path(module.__file__).is_relative_to(site), module.__file__
    return module


@pytest.fixture(scope="session")
def cli() -> str:
    """The release tree's `hfx` binary (the CLI side of the byte-identity checks)."""
    return os.environ.get("HFX", str(ROOT / "build" / "hfx"))
