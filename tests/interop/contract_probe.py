"""The written contract as constraints, and the boundary shapes it implies (the conformance tester's half that
knows no runtime).

A component's contract (manifest.json `contracts.<component>`) gives, per input and axis, a size: fixed, or an
expression over symbols (`sequence_length`, `past_sequence_length + 1`) with a [min, max] range. Its
relations (manifest.json `relations.<component>`, the capture's deferred guards) bound expressions the axes
cannot state (`-past_sequence_length - sequence_length + 128` in [0, inf)). Every one of them is a
constraint `lo <= expr(symbols) <= hi`; an assignment of the symbols is in the contract when all hold.

`probes` derives, for each constraint, the assignments that put its expression at min and max (in the
contract: every other constraint kept) and at min - 1 and max + 1 (out of it), starting from a small base
assignment and moving one symbol at a time (a scan over its range: expressions may hold min/max/floordiv, so
nothing here assumes they are linear). A bound that no assignment reaches (`past + 1` at past's max + 1 while
past keeps its own range) is not a probe: the contract cannot be broken there, which is not a finding.
"""
from __future__ import annotations

import dataclasses
import re

_FUNCS = {"max": max, "min": min, "floordiv": lambda a, b: a // b, "mod": lambda a, b: a % b}
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# A guard's "no upper bound" (int64 max / 4): no probe past it.
UNBOUNDED = 1 << 60


@dataclasses.dataclass
class Constraint:
    label: str   # "input_ids axis 1" or the relation's own text
    expr: str
    lo: int
    hi: int
    symbols: tuple
    relation: bool = False

    def __post_init__(self):
        self._code = compile(self.expr, self.label, "eval")

    def value(self, a: dict) -> int:
        return int(eval(self._code, {"__builtins__": {}}, {**_FUNCS, **a}))  # noqa: S307 (hfx's own Sym text)

    def excess(self, a: dict) -> int:
        v = self.value(a)
        return max(self.lo - v, 0) + max(v - self.hi, 0)


@dataclasses.dataclass
class Probe:
    assignment: dict
    in_contract: bool
    why: str          # "input_ids axis 1 at max 256", "past_sequence_length + sequence_length <= 128 at +1"

    def key(self):
        return tuple(sorted(self.assignment.items()))


def symbols_of(expr: str) -> tuple:
    return tuple(dict.fromkeys(s for s in _IDENT.findall(expr) if s not in _FUNCS))


class Contract:
    """One component's written contract: its inputs' axes and its relations, as constraints."""

    def __init__(self, axes: dict, relations: list):
        self.axes = axes  # input -> [{"symbol", "min", "max"}]
        self.constraints: list = []
        seen = set()
        for name, dims in sorted(axes.items()):
            for i, ax in enumerate(dims):
                sym = ax.get("symbol") or ""
                if not sym or (sym, ax["min"], ax["max"]) in seen:
                    continue
                seen.add((sym, ax["min"], ax["max"]))
                self.constraints.append(Constraint(f"{name} axis {i} ({sym})", sym, ax["min"], ax["max"],
                                                   symbols_of(sym)))
        for r in relations:
            hi = r["upper"] if r["upper"] < UNBOUNDED else UNBOUNDED
            self.constraints.append(Constraint(r["what"], r["expr"], r["lower"], hi, symbols_of(r["expr"]),
                                               relation=True))
        self.symbols = list(dict.fromkeys(s for c in self.constraints for s in c.symbols))
        # A symbol's own range: the intersection of the axes that are exactly that symbol.
        self.range = {}
        for s in self.symbols:
            own = [c for c in self.constraints if c.expr == s]
            lo = max((c.lo for c in own), default=0)
            hi = min((c.hi for c in own), default=max(c.hi for c in self.constraints if s in c.symbols))
            self.range[s] = (lo, min(hi, UNBOUNDED))

    def holds(self, a: dict) -> bool:
        return all(c.excess(a) == 0 for c in self.constraints)

    def broken(self, a: dict) -> list:
        return [c.label for c in self.constraints if c.excess(a)]

    def shape(self, name: str, a: dict) -> list:
        """The input's shape under an assignment (fixed axes at their size)."""
        out = []
        for ax in self.axes[name]:
            sym = ax.get("symbol") or ""
            out.append(Constraint(name, sym, 0, 0, ()).value(a) if sym else ax["min"])
        return out

    # ---- probes ----
    def base(self) -> dict:
        """Small sizes: every symbol at 2 (or its range's nearest value), then repaired into the contract."""
        a = {s: min(max(2, lo), hi) for s, (lo, hi) in self.range.items()}
        self._repair(a, pinned=set())
        if not self.holds(a):
            raise AssertionError(f"[conformance] expected a small assignment inside the contract, got none "
                                 f"(broken at {a}: {self.broken(a)})")
        return a

    def _scan(self, s: str, a: dict, lo: int, hi: int, cost, aims) -> None:
        """Sets a[s] to the value in [lo, hi] with the least cost (ties: nearest the current value). The
        candidates are the ends, the current value and, per (constraint, target) in `aims`, the value a secant
        through the ends predicts (exact for the linear sums most axes are); only when none costs 0 is the
        range scanned whole (min/max/floordiv guards)."""
        cur = a[s]

        def at(v):
            a[s] = v
            return cost(a)

        cands = {lo, hi, cur}
        for c, t in aims:
            a[s] = lo
            f_lo = c.value(a)
            a[s] = hi
            f_hi = c.value(a)
            if f_hi != f_lo:
                v = lo + (t - f_lo) * (hi - lo) // (f_hi - f_lo)
                cands |= {min(max(v + d, lo), hi) for d in (-1, 0, 1)}
        best = min((at(v), abs(v - cur), v) for v in cands)
        if best[0] and hi - lo <= 4096:
            best = min(best, min((at(v), abs(v - cur), v) for v in range(lo, hi + 1)))
        a[s] = best[2]

    def _repair(self, a: dict, pinned: set, skip=None) -> None:
        """Moves unpinned symbols (inside their own ranges) until no constraint but `skip` is broken."""
        others = [c for c in self.constraints if c is not skip]

        def cost(x):
            return sum(o.excess(x) for o in others)

        for _ in range(3):
            bad = [c for c in others if c.excess(a)]
            if not bad:
                return
            for c in bad:
                for s in c.symbols:
                    if s not in pinned:
                        aims = [(o, o.lo if o.value(a) < o.lo else o.hi) for o in bad if s in o.symbols]
                        self._scan(s, a, *self._window(s), cost, aims)

    def _window(self, s: str, extend: int = 0) -> tuple:
        lo, hi = self.range[s]
        # Scans stay short: 4096-wide ranges are scanned whole (cheap), unbounded ones to 1 << 14.
        return max(lo - extend, 0), min(hi + extend, 1 << 14)

    def _solve(self, c: Constraint, target: int, base: dict):
        a, pinned = dict(base), set()
        own_axis = len(c.symbols) == 1 and c.expr == c.symbols[0] and not c.relation
        for s in sorted(c.symbols, key=lambda s: -self.range[s][1]):
            # Only a symbol's own axis may leave its range (that is the probe); a sum stays within its terms.
            self._scan(s, a, *self._window(s, 1 if own_axis else 0), lambda x: abs(c.value(x) - target),
                       [(c, target)])
            pinned.add(s)
            if c.value(a) == target:
                break
        if c.value(a) != target:
            return None
        self._repair(a, pinned, skip=c)
        return a

    def probes(self) -> list:
        base = self.base()
        out = {tuple(sorted(base.items())): Probe(dict(base), True, "base")}
        for c in self.constraints:
            for bound, delta, side in ((c.lo, 0, "min"), (c.hi, 0, "max"), (c.lo, -1, "min - 1"),
                                       (c.hi, 1, "max + 1")):
                if bound >= UNBOUNDED:
                    continue
                a = self._solve(c, bound + delta, base)
                if a is None or any(d < 0 for n in self.axes for d in self.shape(n, a)):
                    continue  # unreachable or a negative size: not a meaningful probe
                p = Probe(a, self.holds(a), f"{c.label} at {side} ({bound + delta})")
                if delta == 0 and not p.in_contract:
                    continue  # the bound is reachable only by breaking another constraint
                out.setdefault(p.key(), p)
        return list(out.values())
