"""Verification, inspection and generation over checkpoints and export folders."""
from __future__ import annotations

import contextlib
import os
import queue
import sys
import threading
from typing import Any, Callable, Iterator, Mapping, Optional, Sequence, Union

from . import _hfx
from .errors import ArgumentError
from .results import VerifyReport


def verify(out: Union[str, os.PathLike], reference: Optional[str] = None, tokens: int = 32, threads: int = 2,
           write_manifest: bool = True, progress: Optional[Callable[[int, str], None]] = None) -> VerifyReport:
    """`hfx verify OUT`: every check of the export folder against eager (the report as data, also written to
    OUT/verify.json). ``report.passed`` is True only when every artifact's numerics were judged and passed."""
    with judge_python():
        return VerifyReport(_hfx.verify(os.fspath(out), os.fspath(reference) if reference else "", tokens, threads,
                                        write_manifest, progress))


@contextlib.contextmanager
def judge_python():
    """verify's runtime judge (ExecuTorch's and PyTorch's released runtimes for .pte / .pt2) runs in a Python
    process: this interpreter, unless HFX_PYTHON names another. Without torch / executorch importable there, those
    artifacts are reported "not judged", never passed."""
    if os.environ.get("HFX_PYTHON"):
        yield
        return
    os.environ["HFX_PYTHON"] = sys.executable
    try:
        yield
    finally:
        os.environ.pop("HFX_PYTHON", None)


def inspect(model: Any) -> dict:
    """The architecture, head, structure, parameters and program signatures of a checkpoint folder, a model id or
    a live transformers model."""
    from ._live import is_live_model, live_parts

    if is_live_model(model):
        import tempfile

        with tempfile.TemporaryDirectory(prefix="hfx-side-") as side:
            cfg, tensors = live_parts(model, side)
            return _hfx.inspect_live(cfg, tensors)
    if not isinstance(model, (str, os.PathLike)):
        raise ArgumentError(f"[python] expected a checkpoint folder, a model id or a transformers model, got "
                            f"{type(model).__name__}")
    return _hfx.inspect(os.fspath(model))


def _check_inputs(inputs: Mapping[str, Any], info: dict) -> None:
    """Sample inputs (HfExporters' ``inputs``) must be inputs of the model's programs; hfx records the real calls
    itself, so their values only have to name the signature."""
    if not isinstance(inputs, Mapping):
        raise ArgumentError(f"[python] expected inputs as a mapping of input names to tensors, got "
                            f"{type(inputs).__name__}")
    known = {i["name"] for c in info["components"].values() for i in c["inputs"]}
    known |= {"past_key_values", "use_cache", "cache_position"}
    unknown = sorted(set(inputs) - known)
    if unknown:
        raise ArgumentError(f"[python] expected inputs among {sorted(known)}, got {unknown}; hfx records the "
                            "model's generation calls, the inputs only name the signature")


class _Stopped(Exception):
    """Raised by a stream's token callback once its consumer has gone: stops the generation."""


_OPTION_NAMES = ("max_new_tokens", "greedy", "temperature", "top_k", "top_p", "repetition_penalty", "seed", "stop",
                 "ignore_eos")


class Generator:
    """Generation over a checkpoint folder (eager) or an export folder (ONNX Runtime, or engine="eager").

    ``generate`` returns the texts; ``stream`` yields text pieces as they come; ``chat`` keeps a conversation
    through the model's chat template (and its KV cache between turns). The GIL is released while it runs.
    """

    def __init__(self, path: Union[str, os.PathLike], engine: str = "auto", threads: int = 0):
        self._g = _hfx.Generator(os.fspath(path), engine, threads)
        self.path = os.fspath(path)

    @property
    def engine(self) -> str:
        return self._g.engine

    @staticmethod
    def _options(kw: dict) -> dict:
        bad = sorted(set(kw) - set(_OPTION_NAMES))
        if bad:
            raise ArgumentError(f"[python] expected generation options among {list(_OPTION_NAMES)}, got {bad}")
        if isinstance(kw.get("stop"), str):
            kw["stop"] = [kw["stop"]]
        return kw

    def generate(self, prompts: Union[str, Sequence[str]], on_token: Optional[Callable] = None, **options: Any):
        """Generates for one prompt (returns its text) or a list (returns the list of texts); `on_token(row, id,
        text, finished)` sees every token as it comes. Options: max_new_tokens, greedy, temperature, top_k, top_p,
        repetition_penalty, seed, stop, ignore_eos."""
        single = isinstance(prompts, str)
        r = self._g.generate([prompts] if single else list(prompts), self._options(options), on_token)
        return r["texts"][0] if single else r["texts"]

    def generate_ids(self, prompts: Sequence[Sequence[int]], **options: Any) -> dict:
        """Generates from token ids; returns the whole result (ids, texts, finish reasons, stats)."""
        return self._g.generate_ids([list(p) for p in prompts], self._options(options), None)

    def stream(self, prompt: str, **options: Any) -> Iterator[str]:
        """Yields the text of one prompt piece by piece while it is generated (the generation runs on a thread of
        its own without the GIL; closing the iterator early stops it at the next token)."""
        pieces: queue.Queue = queue.Queue()
        end, stop, errors = object(), threading.Event(), []
        opts = self._options(options)

        def on_token(row, token, text, finished):
            if stop.is_set():
                raise _Stopped
            if text:
                pieces.put(text)

        def run():
            try:
                self._g.generate([prompt], opts, on_token)
            except _Stopped:
                pass
            except BaseException as e:  # re-raised in the consumer's thread
                errors.append(e)
            finally:
                pieces.put(end)

        worker = threading.Thread(target=run, name="hfx-stream", daemon=True)
        worker.start()
        try:
            while (piece := pieces.get()) is not end:
                yield piece
        finally:
            stop.set()
            worker.join()
        if errors:
            raise errors[0]

    def chat(self, message: str, system: Optional[str] = None, on_token: Optional[Callable] = None,
             **options: Any) -> str:
        """One chat turn through the model's chat template; later turns continue the conversation (`system`
        applies to the first). Returns the reply."""
        return self._g.chat(message, system, self._options(options), on_token)["texts"][0]

    def reset_chat(self) -> None:
        """Starts a new conversation."""
        self._g.reset_chat()
