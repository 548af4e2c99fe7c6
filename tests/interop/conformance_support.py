"""The conformance tester's runtime half: an export folder's programs called by name in their released runtime,
feeds built from a probe's assignment, and transformers eager for what an in-contract call must return.

Everything about a program comes from what the folder writes: manifest.json `contracts`, `relations` and
`signatures` (the inputs in the artifact's order, an ExecuTorch method's arguments being the ones without
"state"). Feeds: token ids drawn from the vocabulary, masks of ones, positions counting on from the past,
zero token types, float inputs (encoder states, features, images) drawn N(0, 1); past leaves come from a real
call (the export's own prefill, or transformers' cache where the first decoder step has a fixed length), so
the numbers can be held to eager.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from contract_probe import Contract
from loops import past_name
from runtimes import OnnxProgram, PteModule, Pt2Program

INT_DTYPES = {"int64": np.int64, "int32": np.int32, "bool": np.bool_}
FLOAT_DTYPES = {"float32": np.float32, "float16": np.float16}


class Artifact:
    """An export folder: its written contract per component and one call per component in its runtime."""

    def __init__(self, out: Path, fmt: str):
        self.out, self.fmt = out, fmt
        m = json.loads((out / "manifest.json").read_text())
        self.contracts = m["contracts"]
        self.relations = m.get("relations", {})
        self.signatures = m.get("signatures", {})
        if not self.signatures and fmt.startswith("pte"):
            raise AssertionError(f"[conformance] expected manifest.json 'signatures' in {out} (an ExecuTorch "
                                 "method's arguments in order), got none: exported by an hfx that did not write them")
        cfg = json.loads((out / "config.json").read_text())
        self.vocab = cfg.get("vocab_size") or cfg.get("text_config", {}).get("vocab_size")
        self._programs: dict = {}

    def contract(self, comp: str) -> Contract:
        return Contract(self.contracts[comp], self.relations.get(comp, []))

    def inputs(self, comp: str) -> list:
        if comp in self.signatures:
            return list(self.signatures[comp]["inputs"])
        # A manifest without signatures (an older hfx): ONNX and .pt2 take inputs by name, so the contract's
        # names with a dtype by what they hold will do (the tester runs against old exports this way).
        floats = ("past_", "hidden", "embeds", "pixel", "features")
        return [{"name": n, "dtype": "float32" if any(f in n for f in floats) else "int64"}
                for n in self.contracts[comp]]

    def stateful(self, comp: str) -> bool:
        return any(i.get("state") for i in self.inputs(comp))

    def _program(self, comp: str, fresh: bool):
        if self.fmt.startswith("pte"):
            if fresh or "pte" not in self._programs:
                self._programs["pte"] = PteModule(self.out / "model.pte")
            return self._programs["pte"]
        if comp not in self._programs:
            self._programs[comp] = (OnnxProgram(self.out / "onnx" / f"{comp}.onnx") if self.fmt == "onnx"
                                    else Pt2Program(self.out / f"{comp}.pt2"))
        return self._programs[comp]

    def call(self, comp: str, feeds: dict, fresh: bool = False) -> dict:
        """Outputs by name. A .pte method takes its non-state inputs in the signature's order; `fresh` loads the
        program anew (an ExecuTorch static cache starts empty)."""
        prog = self._program(comp, fresh)
        if not self.fmt.startswith("pte"):
            return prog(feeds)
        args = [feeds[i["name"]] for i in self.inputs(comp) if not i.get("state")]
        outs = prog(comp, args)
        return dict(zip(self.signatures[comp]["outputs"], outs))


def fill(name: str, shape: list, dtype: str, vocab: int, rng, total: int | None = None) -> np.ndarray:
    """One input's values by what its name says it is (see the module's doc)."""
    if dtype in FLOAT_DTYPES:
        return rng.standard_normal(shape).astype(FLOAT_DTYPES[dtype])
    np_t = INT_DTYPES.get(dtype)
    if np_t is None:
        raise AssertionError(f"[conformance] expected an int, bool or float input, got {name}: {dtype}")
    if "mask" in name or np_t is np.bool_:
        return np.ones(shape, np_t)
    if "position" in name or name in ("input_pos", "cache_position"):
        n = shape[-1] if shape else 1
        start = (total - n) if total is not None else 0
        return np.broadcast_to(np.arange(start, start + n, dtype=np_t), shape).copy()
    if "type_ids" in name:
        return np.zeros(shape, np_t)
    return rng.integers(4, max(vocab - 1, 5), size=shape).astype(np_t)


def feeds_for(art: Artifact, comp: str, contract: Contract, a: dict, rng, total=None) -> dict:
    """Every input of the component at the assignment's shapes (state inputs excluded: the program holds them)."""
    return {i["name"]: fill(i["name"], contract.shape(i["name"], a), i["dtype"], art.vocab, rng, total)
            for i in art.inputs(comp) if not i.get("state") and i["name"] in contract.axes}


def past_inputs(art: Artifact, comp: str) -> list:
    return [i["name"] for i in art.inputs(comp) if i["name"].startswith("past_") and not i.get("state")]


def sizes(contract: Contract, a: dict, names: list) -> dict:
    return {n: contract.shape(n, a) for n in names if n in contract.axes}


def refused(art: Artifact, comp: str, feeds: dict) -> str | None:
    """None when the runtime refused the call (the artifact's check or the runtime's own), else what it returned."""
    try:
        out = art.call(comp, feeds, fresh=True)
    except Exception:  # noqa: BLE001 (any refusal is a refusal; what matters is that nothing came back)
        return None
    return ", ".join(f"{k}{list(np.shape(v))}" for k, v in list(out.items())[:3])


def prefix_component(art: Artifact, comp: str, seq: str = "input_ids"):
    """A component that starts a sequence and returns present.* (no past inputs, or pasts whose every symbolic
    axis past the batch may be 0), to make a real past for `comp`; None when there is none."""
    for c in [x for x in art.contracts if x != comp] + [comp]:  # itself last: a merged program starts one too
        if art.stateful(c) or not (art.contracts[c].get(seq, [{}, {}])[1].get("symbol")):
            continue  # a prefix takes a prompt of any length
        if c in art.signatures and not any(o.startswith("present") for o in art.signatures[c]["outputs"]):
            continue
        if all(ax["min"] == 0 for p in past_inputs(art, c) for ax in art.contracts[c][p][1:] if ax.get("symbol")):
            return c
    return None


def empty_pasts(art: Artifact, comp: str, batch: int) -> dict:
    """Zero-length keys/values and zero states of a component whose pasts may be empty."""
    feeds = {}
    for n in past_inputs(art, comp):
        axes = art.contracts[comp][n]
        feeds[n] = np.zeros([batch if i == 0 else (0 if ax.get("symbol") else ax["min"])
                             for i, ax in enumerate(axes)], np.float32)
    return feeds
