"""What an export returns: the folder, one object per program with its files, signature and contract, and
`verify()` returning the report as data."""
from __future__ import annotations

import json
import os
import shutil
import tempfile
import weakref
from dataclasses import dataclass, field
from typing import Any, Optional


@dataclass
class ExportedComponent:
    """One exported program: its files (relative to the folder), calling convention and shape contract."""

    name: str
    files: list = field(default_factory=list)
    signature: dict = field(default_factory=dict)
    contract: dict = field(default_factory=dict)
    parent: Any = field(default=None, repr=False, compare=False)  # weakref.ref to the ExportedModel

    def verify(self, **kwargs: Any) -> "VerifyReport":
        """The folder's verification (ExportedModel.verify, same arguments) narrowed to this program's checks:
        "failed" if one of them failed, else the folder's verdict."""
        parent = self.parent() if self.parent is not None else None
        if parent is None:
            raise RuntimeError("this component's ExportedModel is gone; keep the export object to verify it")
        report = parent.verify(**kwargs)
        mine = [c for c in report.checks if c.get("component", "").split(".")[0] == self.name]
        narrowed = VerifyReport(report, checks=mine, component=self.name)
        if any(c.get("status") == "failed" for c in mine):
            narrowed["verdict"] = "failed"
        return narrowed


class VerifyReport(dict):
    """`hfx verify`'s report (the verify.json document) with shortcuts: `passed`, `verdict`, `checks`,
    `failures`."""

    @property
    def verdict(self) -> str:
        return self.get("verdict", "failed")

    @property
    def passed(self) -> bool:
        return self.verdict == "verified"

    @property
    def checks(self) -> list:
        return self.get("checks", [])

    @property
    def failures(self) -> list:
        return [c for c in self.checks if c.get("status") == "failed"]


class ExportedModel:
    """An export folder written by hfx: ``components`` maps each program to an :class:`ExportedComponent`.

    Without ``out=`` the export lives in a temporary folder until ``save_pretrained(path)`` (removed when this
    object goes away); with ``out=`` it is written there directly.
    """

    def __init__(self, result: dict, owned: bool = False):
        self.path: str = result["out_dir"]
        self.manifest: dict = result["manifest"]
        self.warnings: list = list(result["warnings"])
        self.notes: list = list(result["notes"])
        self.export_format: str = self.manifest.get("format", "")
        signatures = self.manifest.get("signatures", {})
        contracts = self.manifest.get("contract", self.manifest.get("contracts", {}))
        self.components: dict[str, ExportedComponent] = {}
        for name in result["programs"]:
            files = [f["path"] for f in result["files"] if f["component"] == name]
            self.components[name] = ExportedComponent(name, files, signatures.get(name, {}), contracts.get(name, {}),
                                                      weakref.ref(self))
        self._live = result.get("live")
        self._finalizer = weakref.finalize(self, shutil.rmtree, self.path, True) if owned else None

    def __repr__(self) -> str:
        return f"ExportedModel(format={self.export_format!r}, components={list(self.components)}, path={self.path!r})"

    def save_pretrained(self, save_directory: str) -> str:
        """Copies the folder to `save_directory`, replacing it only once the copy is complete."""
        dest = os.path.abspath(os.fspath(save_directory))
        parent = os.path.dirname(dest)
        os.makedirs(parent, exist_ok=True)
        staging = tempfile.mkdtemp(prefix=".hfx-save-", dir=parent)
        try:
            shutil.copytree(self.path, staging, dirs_exist_ok=True)
            if os.path.exists(dest):
                old = tempfile.mkdtemp(prefix=".hfx-old-", dir=parent)
                os.rename(dest, os.path.join(old, "x"))
                os.rename(staging, dest)
                shutil.rmtree(old, ignore_errors=True)
            else:
                os.rename(staging, dest)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        return dest

    def verify(self, reference: Optional[str] = None, tokens: int = 32, threads: int = 2,
               progress: Any = None) -> VerifyReport:
        """Runs `hfx verify` over the folder and returns the report as data. The reference: `reference` (a
        checkpoint folder) when given, else the live model this was exported from (its weights in place), else
        the checkpoint the manifest names."""
        from . import _hfx
        from .runtime import verify

        if reference is None and self._live is not None:
            from .runtime import judge_python

            model_config, tensors = self._live
            with judge_python():
                return VerifyReport(_hfx.verify_live(self.path, model_config, tensors, tokens, threads, True,
                                                     progress))
        return verify(self.path, reference=reference, tokens=tokens, threads=threads, progress=progress)

    def read_manifest(self) -> dict:
        with open(os.path.join(self.path, "manifest.json"), encoding="utf-8") as f:
            return json.load(f)
