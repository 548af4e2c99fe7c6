"""hfx: Hugging Face checkpoints to verified ONNX, ExecuTorch (.pte), torch.export (.pt2) and GGUF artifacts.

The exporting, verifying and generating is done by hfx's native C++ core (the same library as the `hfx` CLI),
with the GIL released. ``hfx.exporters`` has the HfExporters API of ``transformers.exporters``::

    from hfx.exporters import OnnxExporter, OnnxConfig
    exported = OnnxExporter().export_for_generation(model, config=OnnxConfig(dynamic=True))
    exported.save_pretrained("exported")
    print(exported.verify().verdict)
"""
from . import _hfx
from .errors import (ArgumentError, ConfigError, Error, ExportError, GenerateError, HubError, ModelError,
                     VerifyError)
from .results import ExportedComponent, ExportedModel, VerifyReport
from .runtime import Generator, inspect, verify

__version__ = _hfx.__version__

__all__ = ["ArgumentError", "ConfigError", "Error", "ExportError", "ExportedComponent", "ExportedModel",
           "GenerateError", "Generator", "HubError", "ModelError", "VerifyError", "VerifyReport", "inspect",
           "verify", "__version__"]
