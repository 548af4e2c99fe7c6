"""Comparisons against transformers eager, at the bounds `hfx verify` uses.

Bounds (the larger of abs and rel x max|eager| of the tensor), as src/verify/tolerances.cpp ("exact": ONNX
and .pt2 on float32 weights) and src/verify/pte_verify.cpp (`pte_tolerance`: .pte portable and xnnpack) state
them, with their measurements. A greedy token that differs from transformers' passes only at a near-tie:
transformers' own top-2 margin at that step under twice the logits bound (the runtime's error may flip it);
every later step is then off the reference path and is not compared.
"""
from __future__ import annotations

import dataclasses

import numpy as np


@dataclasses.dataclass(frozen=True)
class Bound:
    abs: float
    rel: float
    source: str

    def limit(self, ref: np.ndarray) -> float:
        return max(self.abs, self.rel * float(np.abs(ref).max()) if ref.size else 0.0)


EXACT = Bound(1e-4, 3e-5, "src/verify/tolerances.cpp 'exact'")
PTE = Bound(1e-5, 5e-6, "src/verify/pte_verify.cpp pte_tolerance (float32, portable/xnnpack)")


class Mismatch(AssertionError):
    pass


@dataclasses.dataclass
class Record:
    """What one (case, format, runtime) measured; the docs table is made of these."""
    case: str
    model_type: str
    fmt: str
    runtime: str
    worst: float = 0.0           # max over checks of err / limit
    worst_abs: float = 0.0       # max |delta| over every compared tensor
    checks: int = 0
    greedy: str = "-"            # "32/32", "near-tie at 17", ...
    status: str = "not judged"
    detail: str = ""
    probes: int = 0              # contract conformance: calls made at the contract's boundaries

    def check(self, what: str, got: np.ndarray, ref: np.ndarray, bound: Bound) -> None:
        got = np.asarray(got, dtype=np.float64)
        ref = np.asarray(ref, dtype=np.float64)
        if got.shape != ref.shape:
            raise Mismatch(f"[{self.fmt}/{self.runtime}] {what}: expected shape {ref.shape} (transformers), "
                           f"got {got.shape}")
        err = float(np.abs(got - ref).max()) if ref.size else 0.0
        lim = bound.limit(ref)
        self.checks += 1
        self.worst_abs = max(self.worst_abs, err)
        self.worst = max(self.worst, err / lim)
        if not err <= lim:
            raise Mismatch(f"[{self.fmt}/{self.runtime}] {what}: expected max |delta| vs transformers <= {lim:.3g} "
                           f"({bound.source}), got {err:.3g}")


def greedy_agreement(rec: Record, got: list, ref: list, ref_logits: list, bound: Bound) -> int:
    """Compares greedy tokens; returns how many leading steps are on transformers' path."""
    for i, (g, r) in enumerate(zip(got, ref)):
        if g != r:
            top = np.sort(ref_logits[i].astype(np.float64))[::-1]
            margin = float(top[0] - top[1])
            if margin <= 2 * bound.limit(ref_logits[i]):
                rec.greedy = f"{i}/{len(ref)} (near-tie: margin {margin:.2g})"
                return i
            raise Mismatch(f"[{rec.fmt}/{rec.runtime}] greedy token {i}: expected {r} (transformers, top-2 margin "
                           f"{margin:.3g}), got {g}; tokens so far {got[:i + 1]}")
    if len(got) != len(ref):
        raise Mismatch(f"[{rec.fmt}/{rec.runtime}] expected {len(ref)} greedy tokens, got {len(got)}")
    rec.greedy = f"{len(ref)}/{len(ref)}"
    return len(ref)


def check_greedy(rec: Record, got: list, seen: list, ref: list, ref_logits: list, bound: Bound) -> None:
    """Greedy tokens on transformers' path, and the logits of every step on it."""
    for i in range(greedy_agreement(rec, got, ref, ref_logits, bound)):
        rec.check(f"greedy step {i} logits", seen[i], ref_logits[i], bound)
