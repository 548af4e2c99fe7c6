"""transformers 5.x eager: the reference every runtime's numbers are held to."""
from __future__ import annotations

import inspect
from pathlib import Path

import numpy as np


def cache_leaves(cache) -> dict:
    """A transformers cache as hfx names its leaves: present.N.key / present.N.value (attention layers)."""
    leaves = {}
    for i, layer in enumerate(getattr(cache, "layers", None) or []):
        k, v = getattr(layer, "keys", None), getattr(layer, "values", None)
        if k is not None and hasattr(k, "numpy") and k.numel():
            leaves[f"present.{i}.key"] = k.detach().numpy()
            leaves[f"present.{i}.value"] = v.detach().numpy()
    return leaves


class CausalReference:
    def __init__(self, folder: Path):
        import torch
        import transformers

        torch.manual_seed(0)
        self.model = transformers.AutoModelForCausalLM.from_pretrained(
            folder, dtype=torch.float32, attn_implementation="eager").eval()
        self.vocab = self.model.config.vocab_size
        # inspect.signature follows the decorators' __wrapped__ (forward's own __code__ is a wrapper's).
        self.takes_positions = "position_ids" in inspect.signature(self.model.forward).parameters

    def forward(self, ids: np.ndarray, mask: np.ndarray | None = None, pos: np.ndarray | None = None, cache=None):
        """One call; returns (logits, the cache object, its leaves by hfx's names)."""
        import torch

        kw = {"input_ids": torch.from_numpy(ids)}
        if mask is not None:
            kw["attention_mask"] = torch.from_numpy(mask)
        if pos is not None and self.takes_positions:
            kw["position_ids"] = torch.from_numpy(pos)
        with torch.no_grad():
            out = self.model(**kw, past_key_values=cache, use_cache=True)
        cache = getattr(out, "past_key_values", None) or getattr(out, "cache_params", None)  # mamba: cache_params
        return out.logits.numpy(), cache, cache_leaves(cache)

    def greedy(self, prompt: list, steps: int):
        """Greedy decoding by repeated cached calls (no generate(): its eos handling would change logits).
        Returns the new tokens and, per token, the logits it was picked from."""
        ids = np.array([prompt], dtype=np.int64)
        logits, cache, _ = self.forward(ids)
        tokens, step_logits = [], []
        for _ in range(steps):
            last = logits[0, -1]
            step_logits.append(last)
            tokens.append(int(last.argmax()))
            logits, cache, _ = self.forward(np.array([[tokens[-1]]], dtype=np.int64), cache=cache)
        return tokens, step_logits


def padded_batch(rows: list, pad: int = 0):
    """Left-padded ids, mask and transformers' position ids (cumsum of the mask - 1, pads at 1)."""
    n = max(len(r) for r in rows)
    ids = np.full((len(rows), n), pad, dtype=np.int64)
    mask = np.zeros((len(rows), n), dtype=np.int64)
    for i, r in enumerate(rows):
        ids[i, n - len(r):] = r
        mask[i, n - len(r):] = 1
    pos = np.cumsum(mask, axis=1) - 1
    pos[mask == 0] = 1
    return ids, mask, pos.astype(np.int64)
