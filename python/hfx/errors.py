"""Errors raised by hfx: one class per kind of component, all subclasses of :class:`Error`.

Every error carries the library's message, ``[component] expected X, got Y`` followed by how to fix it, and the
component that raised it (``e.component``). The native module maps a library error to its class through
:func:`error_class`, the one table below.
"""
from __future__ import annotations


class Error(Exception):
    """An hfx error. ``str(e)`` is ``[component] expected X, got Y; how to fix``."""

    def __init__(self, message: str, component: str = "python"):
        super().__init__(message)
        self.component = component


class ArgumentError(Error, ValueError):
    """A bad argument of the Python API (types, unknown or unsupported fields)."""


class ConfigError(Error, ValueError):
    """An export config the backend refuses (field, range, combination)."""


class ModelError(Error):
    """A checkpoint or model hfx cannot read: unknown architecture, missing or misshapen weight, tokenizer."""


class HubError(Error):
    """A model id that does not resolve, or a file that cannot be read or written."""


class ExportError(Error):
    """A failure while capturing, lowering or writing an artifact (any backend)."""


class VerifyError(Error):
    """A verification that could not run at all (no artifact, no reference)."""


class GenerateError(Error):
    """A generation request the runtime refuses (options, lengths, chat template)."""


_BY_COMPONENT: dict[str, type[Error]] = {
    **dict.fromkeys(["python"], ArgumentError),
    **dict.fromkeys(["config", "dynamic_shapes", "contract"], ConfigError),
    **dict.fromkeys(["model", "safetensors", "tokenizer", "tokenizer.json", "image", "audio"], ModelError),
    **dict.fromkeys(["hub", "io"], HubError),
    **dict.fromkeys(
        ["export", "onnx", "executorch", "pte", "dynamo", "gguf", "capture", "quant", "ops", "decomp", "passes",
         "verifier", "xnnpack", "registry", "kernels"],
        ExportError,
    ),
    **dict.fromkeys(["verify"], VerifyError),
    **dict.fromkeys(["generate", "sampling", "chat", "embed", "eager"], GenerateError),
}


def error_class(component: str) -> type[Error]:
    """The class of an error raised by `component` (:class:`Error` itself for components not listed)."""
    return _BY_COMPONENT.get(component, Error)
