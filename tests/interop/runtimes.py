"""The released runtimes that judge hfx's artifacts, each behind one call: named inputs in, named outputs out.

- ONNX: onnxruntime's InferenceSession (the PyPI build), on each onnx/<program>.onnx;
- .pt2: torch.export.load(...).module() (PyTorch's own deserializer and interpreter);
- .pte: ExecuTorch's Python runtime (executorch.extension.pybindings.portable_lib: portable kernels and the
  XNNPACK delegate), every method by name.
Nothing here knows hfx's internals: programs are read through what the file itself declares (ONNX inputs,
the .pt2's signature, the .pte's method metadata).
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np


class OnnxProgram:
    runtime = "onnxruntime"

    def __init__(self, path: Path):
        import onnxruntime as ort

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1
        opts.log_severity_level = 3
        ort.set_default_logger_severity(4)  # refusals the tests provoke would print a red line each
        self.session = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
        self.inputs = [i.name for i in self.session.get_inputs()]
        self.shapes = {i.name: i.shape for i in self.session.get_inputs()}
        self.outputs = [o.name for o in self.session.get_outputs()]

    def shape_of(self, name: str) -> list:
        """The declared shape: ints for fixed axes, the axis' symbol (a str) for dynamic ones."""
        return self.shapes[name]

    def __call__(self, feeds: dict) -> dict:
        feeds = {k: np.ascontiguousarray(v) for k, v in feeds.items() if k in self.inputs}
        missing = [n for n in self.inputs if n not in feeds]
        if missing:
            raise KeyError(f"[interop] expected feeds for {missing}, got {sorted(feeds)}")
        return dict(zip(self.outputs, self.session.run(None, feeds)))


class Pt2Program:
    runtime = "torch.export.load"

    def __init__(self, path: Path):
        import torch

        self.ep = torch.export.load(str(path))
        self.module = self.ep.module()
        # hfx's programs take keyword inputs only: ((), {name: tensor or list of (key, value) / of tensors}).
        self.kwargs_spec = self.ep.call_spec.in_spec.children()[1]
        self.inputs = list(self.kwargs_spec.context)

    def __call__(self, feeds: dict) -> dict:
        import torch

        # A flat leaf's keyword is its name as a Python identifier (hfx: past_conv.0 -> past_conv_0).
        by_keyword = {re.sub(r"[^0-9A-Za-z_]", "_", k): k for k in feeds}

        def leaf(name):
            return torch.from_numpy(np.ascontiguousarray(feeds[name if name in feeds else by_keyword[name]]))

        kw = {}
        for name, spec in zip(self.kwargs_spec.context, self.kwargs_spec.children()):
            if spec.is_leaf():
                kw[name] = leaf(name)
            elif spec.type is list:  # a cache: list of (key, value) tuples, or of tensors
                kw[name] = [tuple(leaf(f"{name}.{i}.{kv}") for kv in ("key", "value"))
                            if not c.is_leaf() else leaf(f"{name}.{i}") for i, c in enumerate(spec.children())]
            else:
                raise TypeError(f"[interop] expected a tensor or a list input for '{name}', got {spec}")
        with torch.no_grad():
            out = self.module(**kw)
        flat = flatten_outputs(out)
        # The .pt2 returns the new cache under its input's name; ONNX and transformers call it present.*.
        return {("present" + k[len("past_key_values"):] if k.startswith("past_key_values.") else k): v
                for k, v in flat.items()}


def flatten_outputs(out) -> dict:
    """{'logits': t, 'present': [(k, v), ...]} -> {'logits': a, 'present.0.key': a, ...} as numpy."""
    flat = {}

    def walk(prefix, v):
        if isinstance(v, dict):
            for k, x in v.items():
                walk(f"{prefix}.{k}" if prefix else k, x)
        elif isinstance(v, (list, tuple)):
            names = ("key", "value") if len(v) == 2 and prefix.count(".") == 1 else None
            for i, x in enumerate(v):
                walk(f"{prefix}.{names[i] if names else i}", x)
        else:
            flat[prefix] = v.detach().numpy() if hasattr(v, "detach") else np.asarray(v)

    walk("", out)
    return flat


def as_executorch_tensor(a):
    """A tensor with the strides ExecuTorch's Python bridge checks (it aborts the process on any other): an
    empty one (a past of length 0) gets its shape's strides with every 0 counted as 1."""
    import torch

    a = np.asarray(a)
    if a.size:
        return torch.from_numpy(np.ascontiguousarray(a))
    strides, step = [], 1
    for d in reversed(a.shape):
        strides.insert(0, step)
        step *= max(d, 1)
    return torch.empty_strided(a.shape, strides, dtype=torch.from_numpy(a).dtype)


class PteModule:
    runtime = "executorch"

    def __init__(self, path: Path):
        from executorch.extension.pybindings import portable_lib

        self.module = portable_lib._load_for_executorch(str(path))
        self.methods = list(self.module.method_names())

    def constant(self, method: str):
        return self.module.run_method(method, ())[0]

    def num_inputs(self, method: str) -> int:
        return self.module.method_meta(method).num_inputs()

    def input_dtype(self, method: str, index: int) -> str:
        info = self.module.method_meta(method).input_tensor_meta(index)
        code = info.dtype() if callable(info.dtype) else info.dtype
        return {4: "int64", 6: "float32", 11: "bool"}.get(int(code), f"scalar type {code}")

    def __call__(self, method: str, args: list) -> list:
        import torch

        ins = [as_executorch_tensor(a) for a in args]
        try:
            outs = self.module.run_method(method, ins)
        except Exception as e:  # the runtime's own error, with the method it came from
            raise RuntimeError(f"[executorch] method '{method}' refused {len(ins)} inputs "
                               f"{[tuple(a.shape) for a in ins]}: {type(e).__name__}: {e}") from e
        return [o.detach().numpy().copy() for o in outs]
