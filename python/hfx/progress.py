"""Progress of long calls: a callable gets one dict per step; the default is a tqdm bar when tqdm is installed."""
from __future__ import annotations

from typing import Any, Callable, Optional


class _TqdmExportBar:
    """An export's steps on a tqdm bar: one tick per stage of each program, then side files and manifest."""

    def __init__(self, desc: str):
        from tqdm.auto import tqdm

        self._bar = tqdm(total=1, desc=desc, unit="step", leave=False)
        self._done = 0

    def __call__(self, step: dict) -> None:
        if step.get("component") is not None:
            total = step["components"] * step["stages"] + 3
            done = 1 + step["component_index"] * step["stages"] + step["stage_index"]
            note = f"{step['component']}: {step['stage']}"
        else:
            total, done, note = max(self._bar.total, 4), {"plan": 1}.get(step["stage"], self._bar.total - 1), step["stage"]
        self._bar.total = total
        self._bar.update(max(0, done - self._done))
        self._done = max(self._done, done)
        self._bar.set_postfix_str(note, refresh=False)

    def close(self) -> None:
        self._bar.close()


def progress_callback(progress: Any, desc: str) -> Optional[Callable[[dict], None]]:
    """`progress` as the native module takes it: a callable as it is, False for none, None (the default) for a
    tqdm bar when tqdm is importable (else none)."""
    if progress is False:
        return None
    if progress is None or progress is True:
        try:
            return _TqdmExportBar(desc)
        except ImportError:
            if progress is True:
                from .errors import ArgumentError

                raise ArgumentError("[python] expected tqdm installed for progress=True, got none; pip install tqdm "
                                    "or pass a callable") from None
            return None
    if not callable(progress):
        from .errors import ArgumentError

        raise ArgumentError(f"[python] expected progress as a callable, True, False or None, got {progress!r}")
    return progress
