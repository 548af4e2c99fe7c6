"""The HfExporters API of ``transformers.exporters``, served by hfx's native exporters.

A script that exports with transformers switches by its import::

    from hfx.exporters import OnnxExporter, OnnxConfig      # was: from transformers.exporters import ...
    exported = OnnxExporter().export_for_generation(model, inputs, OnnxConfig(dynamic=True))
    exported.save_pretrained("exported")

``model`` is a live ``transformers`` model (its weights are read in place, not copied), a checkpoint folder or a
model id. Configs take the HfExporters fields (``dynamic``, ``dynamic_shapes``, ``opset_version``, ``backend``,
...) and hfx's own (``dtype``, ``quantize``, ``target``, ``external_data``, ``max_batch``, ``max_sequence``,
``max_seq_len``). One difference by design: hfx's exports are dynamic by default (``dynamic=True``).
A field hfx cannot honour is refused with :class:`hfx.ArgumentError`, never ignored.
"""
from __future__ import annotations

import dataclasses
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional, Union

from . import _hfx
from ._live import is_live_model, live_parts
from .errors import ArgumentError
from .results import ExportedModel

ProgressFn = Callable[[dict], None]


@dataclass
class Dim:
    """A dynamic dimension with its range (``torch.export.Dim`` objects are accepted as well)."""

    name: str
    min: int = 1
    max: int = 4096


def _dim_json(d: Any, where: str) -> dict:
    name = getattr(d, "name", None) or getattr(d, "__name__", None)
    lo, hi = getattr(d, "min", None), getattr(d, "max", None)
    if not isinstance(name, str) or not isinstance(lo, int) or not isinstance(hi, int):
        raise ArgumentError(f"[python] expected {where} as hfx.exporters.Dim or torch.export.Dim with a name, min and "
                            f"max, got {d!r}")
    return {"name": name, "min": lo, "max": min(hi, 1 << 62)}


@dataclass
class _Config:
    """Fields every format shares (HfExporters' ``DynamoConfig`` fields, then hfx's)."""

    dynamic: bool = True
    strict: bool = False
    dynamic_shapes: Optional[Mapping[str, Mapping[int, Any]]] = None
    prefer_deferred_runtime_asserts_over_guards: bool = True
    quantizer: Any = None
    dtype: str = "auto"
    quantize: Optional[Mapping[str, Any]] = None
    max_batch: Optional[int] = None
    max_sequence: int = 4096

    format = ""  # the hfx format name

    def _refuse(self, name: str, why: str) -> None:
        raise ArgumentError(f"[python] expected {type(self).__name__}.{name} at its default, got "
                            f"{getattr(self, name)!r}: {why}")

    def to_hfx(self) -> dict:
        """The hfx export config (what `hfx export --config FILE` reads); validated by the native backend."""
        if self.strict:
            self._refuse("strict", "hfx captures its own definition of the model, torch.export's strict tracing has "
                                   "no counterpart; leave it False")
        if self.quantizer is not None:
            self._refuse("quantizer", "hfx quantizes natively; pass quantize={'method': 'int4', ...} instead")
        j: dict[str, Any] = {"format": self.format, "dynamic": self.dynamic, "dtype": self.dtype,
                             "max_sequence": self.max_sequence,
                             "prefer_deferred_runtime_asserts_over_guards":
                                 self.prefer_deferred_runtime_asserts_over_guards}
        if self.max_batch is not None:
            j["max_batch"] = self.max_batch
        if self.dynamic_shapes:
            j["dynamic_shapes"] = {inp: {str(int(ax)): _dim_json(d, f"dynamic_shapes[{inp!r}][{ax}]")
                                         for ax, d in axes.items()}
                                   for inp, axes in self.dynamic_shapes.items()}
        if self.quantize is not None:
            j["quantize"] = dict(self.quantize)
        return j

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


@dataclass
class DynamoConfig(_Config):
    """A ``torch.export`` ExportedProgram (``.pt2``), loadable with ``torch.export.load``."""

    format = "dynamo"


@dataclass
class OnnxConfig(_Config):
    """ONNX for ONNX Runtime and Transformers.js. ``ort_fusions="cpu"`` is hfx's ``target="ort"`` (com.microsoft
    fused ops)."""

    opset_version: Optional[int] = None
    optimize: bool = True
    ort_fusions: Optional[str] = None
    external_data: bool = False
    target: Optional[str] = None

    format = "onnx"

    def to_hfx(self) -> dict:
        j = super().to_hfx()
        target = self.target
        if self.ort_fusions is not None:
            if self.ort_fusions != "cpu":
                self._refuse("ort_fusions", "hfx fuses for ONNX Runtime's CPU provider only; pass 'cpu' or None")
            if target not in (None, "ort"):
                self._refuse("target", "ort_fusions='cpu' means target='ort'")
            target = "ort"
        if self.opset_version is not None:
            j["opset"] = self.opset_version
        j.update(optimize=self.optimize, external_data=self.external_data, target=target or "standard")
        return j


@dataclass
class ExecutorchConfig(_Config):
    """An ExecuTorch program (``.pte``): ``backend`` "xnnpack" (HfExporters' default) or "portable"."""

    backend: str = "xnnpack"
    max_seq_len: int = 128
    alloc_graph_input: bool = True
    alloc_graph_output: bool = True
    alloc_mutable_buffers: bool = True

    format = "executorch"

    def to_hfx(self) -> dict:
        for name in ("alloc_graph_input", "alloc_graph_output", "alloc_mutable_buffers"):
            if not getattr(self, name):
                self._refuse(name, "hfx's memory plan allocates inputs, outputs and the KV cache in the program")
        j = super().to_hfx()
        j.update(backend=self.backend, max_seq_len=self.max_seq_len)
        return j


@dataclass
class GgufConfig(_Config):
    """GGUF for llama.cpp (hfx's own): ``quantize={"method": "q8_0"}`` and the like (docs/gguf.md)."""

    format = "gguf"

    def to_hfx(self) -> dict:
        j = super().to_hfx()
        return {k: v for k, v in j.items() if k in ("format", "dtype", "quantize")}


class HfxExporter:
    """Base of the exporters: ``export`` writes one graph, ``export_for_generation`` every generation program."""

    config_class: type = _Config

    def export(self, model: Any, inputs: Optional[Mapping[str, Any]] = None, config: Any = None, *,
               out: Optional[str] = None, tokenizer: Any = None,
               progress: Union[ProgressFn, bool, None] = None) -> ExportedModel:
        """Exports one graph: a decoder's merged call (with and without past), an encoder's forward."""
        return self._run(model, inputs, config, out, tokenizer, progress, generation=False)

    def export_for_generation(self, model: Any, inputs: Optional[Mapping[str, Any]] = None, config: Any = None, *,
                              generation_config: Any = None, multi_token_decode: bool = False,
                              out: Optional[str] = None, tokenizer: Any = None,
                              progress: Union[ProgressFn, bool, None] = None) -> ExportedModel:
        """Records the model's real generation calls and exports each program (prefill, decode, merged; encoder
        and decoder; vision and text parts) into one folder."""
        if generation_config is not None:
            raise ArgumentError("[python] expected generation_config=None, got one: hfx records generation with the "
                                "model's own generation_config.json")
        if multi_token_decode:
            raise ArgumentError("[python] expected multi_token_decode=False, got True: hfx's decode program takes "
                                "any number of new tokens already (its sequence dim is dynamic)")
        return self._run(model, inputs, config, out, tokenizer, progress, generation=True)

    def _config(self, config: Any) -> dict:
        if config is None:
            config = self.config_class()
        if isinstance(config, Mapping):
            config = self.config_class(**config)
        if not isinstance(config, self.config_class):
            raise ArgumentError(f"[python] expected a {self.config_class.__name__} (or a dict of its fields), got "
                                f"{type(config).__name__}")
        return config.to_hfx()

    def _run(self, model: Any, inputs: Any, config: Any, out: Optional[str], tokenizer: Any,
             progress: Any, generation: bool) -> ExportedModel:
        from .progress import progress_callback
        from .runtime import _check_inputs

        cfg = self._config(config)
        owned = out is None
        target = out if out is not None else tempfile.mkdtemp(prefix="hfx-export-")
        callback = progress_callback(progress, f"export {os.path.basename(os.path.abspath(target))}")
        try:
            if is_live_model(model):
                with tempfile.TemporaryDirectory(prefix="hfx-side-") as side:
                    model_config, tensors = live_parts(model, side, tokenizer)
                    if inputs is not None:
                        _check_inputs(inputs, _hfx.inspect_live(model_config, tensors))
                    result = _hfx.export_live(model_config, tensors, side, target, cfg, generation, callback)
                    # verify() compares with the same weights, still in place.
                    result["live"] = (model_config, tensors)
            elif isinstance(model, (str, os.PathLike)):
                if tokenizer is not None:
                    raise ArgumentError("[python] expected tokenizer=None with a checkpoint folder or model id, got "
                                        "one: the checkpoint's own tokenizer files are copied")
                if inputs is not None:
                    _check_inputs(inputs, _hfx.inspect(os.fspath(model)))
                result = _hfx.export_checkpoint(os.fspath(model), target, cfg, generation, callback)
            else:
                raise ArgumentError(f"[python] expected a transformers PreTrainedModel, a checkpoint folder or a model "
                                    f"id, got {type(model).__name__}")
        except BaseException:
            if owned:
                shutil.rmtree(target, ignore_errors=True)
            raise
        finally:
            if callback is not None and hasattr(callback, "close"):
                callback.close()
        return ExportedModel(result, owned=owned)


class OnnxExporter(HfxExporter):
    config_class = OnnxConfig


class ExecutorchExporter(HfxExporter):
    config_class = ExecutorchConfig


class DynamoExporter(HfxExporter):
    config_class = DynamoConfig


class GgufExporter(HfxExporter):
    config_class = GgufConfig


__all__ = ["Dim", "DynamoConfig", "DynamoExporter", "ExecutorchConfig", "ExecutorchExporter", "GgufConfig",
           "GgufExporter", "HfxExporter", "OnnxConfig", "OnnxExporter", "ExportedModel"]
