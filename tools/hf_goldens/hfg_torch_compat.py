"""Import-time stand-ins for torch >= 2 names that the ModernBERT modeling code (transformers >= 4.48, the oracle's
4.51 tree) uses, on Debian's torch 1.13. Imported by make_goldens.py and make_tiny_hf.py before transformers.
Neither changes the math:
  * torch.compile: ModernBERT decorates `compiled_embeddings` / `compiled_mlp` with @torch.compile(dynamic=True) at
    class-definition time; they are only called when config.reference_compile is true, which make_goldens.py forces
    off (transformers itself turns it off on CPU). Stand-in: identity decorator.
  * nn.LayerNorm(..., bias=False) (torch 2.1+): ModernBERT's norms have no bias (norm_bias=False). Stand-in: a
    LayerNorm subclass that registers bias=None, so forward is F.layer_norm(x, shape, weight, None, eps), exactly what
    torch 2's LayerNorm(bias=False) computes; with bias=True it is the stock class.
SHIMMED lists what was installed."""
import inspect

import torch
import torch.nn as nn

SHIMMED = []

if not hasattr(torch, "compile"):
    def _compile_standin(fn=None, **kw):
        return fn if callable(fn) else (lambda f: f)
    torch.compile = _compile_standin
    SHIMMED.append("torch.compile (identity decorator)")

if "bias" not in inspect.signature(nn.LayerNorm.__init__).parameters:
    _LayerNorm = nn.LayerNorm

    class LayerNorm(_LayerNorm):
        def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True, device=None, dtype=None):
            super().__init__(normalized_shape, eps=eps, elementwise_affine=elementwise_affine, device=device,
                             dtype=dtype)
            if elementwise_affine and not bias:
                self.register_parameter("bias", None)

    LayerNorm.__name__ = LayerNorm.__qualname__ = "LayerNorm"
    nn.LayerNorm = LayerNorm
    SHIMMED.append("nn.LayerNorm(bias=False) (torch 2.1 keyword)")
