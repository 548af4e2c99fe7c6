"""The contract conformance tester (issue 45): every architecture x format x program, probed at the boundaries
its own written contract states, in the format's released runtime.

For each component of an export, contract_probe derives from manifest.json (`contracts`, `relations`) the
assignments of its symbols that put each axis expression and each relation at min and max (in the contract)
and at min - 1 and max + 1 (out of it). Then, in ONNX Runtime, torch.export.load or ExecuTorch's runtime:
  - every in-contract call must run and match transformers eager (logits of decoders, fed a real past made by
    the export's own prefill; the outputs of encoders; encoder-decoder encoders and decoders fed transformers'
    own cache), at the bounds judge.py states;
  - every out-of-contract call must be refused (by the artifact's check or the runtime), never return output.
test_generation_at_max_total then runs each generation structure's loop up to the contract's largest total
length, and one step past it, which must be refused. One test per case and format reports every finding.
"""
from __future__ import annotations

import numpy as np
import pytest

import cases as cases_mod
from conftest import FORMATS
from conformance_support import (Artifact, empty_pasts, feeds_for, past_inputs, prefix_component, refused)
from judge import EXACT, PTE, Record
from loops import past_name
from reference import CausalReference
from seq2seq_support import Seq2SeqReference, make_checkpoint as make_s2s_checkpoint
import test_encoders as enc_mod
import test_seq2seq as s2s_mod

FMTS = ["onnx", "pt2", "pte-portable", "pte-xnnpack"]
LM = cases_mod.DECODERS + cases_mod.STATE
_REFS: dict = {}


def lm_reference(case, checkpoint) -> CausalReference:
    if case.name not in _REFS:
        _REFS[case.name] = CausalReference(checkpoint(case))
    return _REFS[case.name]


def bound_of(fmt: str):
    return PTE if fmt.startswith("pte") else EXACT


class Findings:
    """Every probe's failure, reported together at the end (one test per artifact names them all)."""

    def __init__(self, rec: Record):
        self.rec, self.items, self.runs = rec, [], 0

    def expect(self, ok: bool, what: str) -> None:
        self.runs += 1
        if not ok:
            self.items.append(what)

    def guard(self, what: str, fn, *args) -> None:
        self.runs += 1
        try:
            fn(*args)
        except Exception as e:  # noqa: BLE001 (a mismatch or a refusal of an in-contract call: both findings)
            self.items.append(f"{what}: {type(e).__name__}: {str(e).splitlines()[0][:400]}")

    def report(self) -> None:
        assert self.runs, f"[conformance] {self.rec.case}/{self.rec.fmt}: expected probes, got none"
        if self.items:
            head = "\n  ".join(self.items[:25])
            raise AssertionError(f"[conformance] {self.rec.case}/{self.rec.fmt}: {len(self.items)} of {self.runs} "
                                 f"probes broke the written contract:\n  {head}")


def lm_call(art: Artifact, comp: str, c, a: dict, ref: CausalReference, rng, rec: Record) -> None:
    """One in-contract call of a decoder program vs transformers on the whole sequence (no cache)."""
    if art.stateful(comp):  # ExecuTorch's static-cache forward(tokens, input_pos), from an empty cache
        feeds = feeds_for(art, comp, c, a, rng)
        out = art.call(comp, feeds, fresh=True)
        want = ref.forward(feeds["tokens"])[0]
        got = out["logits"]
        rec.check(f"{comp} logits", got, want[:, -got.shape[1]:], bound_of(art.fmt))
        return
    batch, new = c.shape("input_ids", a)
    pasts = past_inputs(art, comp)
    total = c.shape("attention_mask", a)[1] if "attention_mask" in c.axes else new + (
        c.shape(pasts[0], a)[2] if pasts else 0)
    past = total - new
    if past < 0:
        raise AssertionError(f"the contract admits a total length {total} below the {new} new tokens")
    full = rng.integers(4, art.vocab - 1, size=(batch, total)).astype(np.int64)
    feeds = feeds_for(art, comp, c, a, rng, total=total)
    feeds["input_ids"] = full[:, past:]
    if pasts and past == 0:
        feeds.update(empty_pasts(art, comp, batch))
    elif pasts:
        pre = prefix_component(art, comp)
        assert pre, f"expected a component that makes a past for {comp}, got none"
        pc = art.contract(pre)
        pa = {s: batch if s == "batch_size" else 0 if "past" in s else past for s in pc.symbols}
        pf = feeds_for(art, pre, pc, pa, rng, total=past)
        pf["input_ids"] = full[:, :past]
        pf.update(empty_pasts(art, pre, batch))
        made = {past_name(k): v for k, v in art.call(pre, pf).items() if k.startswith("present")}
        for n in pasts:
            want = c.shape(n, a)
            if list(made[n].shape) != want:
                raise AssertionError(f"{pre} makes {n} of shape {list(made[n].shape)} for a past of {past}, the "
                                     f"contract asks {want}")
            feeds[n] = made[n]
    out = art.call(comp, feeds)
    want = ref.forward(full)[0][:, past:]
    got = out["logits"]
    rec.check(f"{comp} logits", got, want[:, -got.shape[1]:], bound_of(art.fmt))


def probe_all(art: Artifact, rec: Record, in_contract) -> Findings:
    f = Findings(rec)
    rng = np.random.default_rng(0)
    for comp in sorted(art.contracts):
        c = art.contract(comp)
        for p in c.probes():
            where = f"{comp} {p.why} {p.assignment}"
            if p.in_contract:
                f.guard(f"in-contract {where} failed", in_contract, art, comp, c, p.assignment, rng)
            else:
                got = refused(art, comp, feeds_for(art, comp, c, p.assignment, rng,
                                                   total=_total(c, p.assignment)))
                f.expect(got is None, f"out-of-contract {where} (breaks {c.broken(p.assignment)}) was not refused: "
                                      f"it returned {got}")
    return f


def _total(c, a: dict):
    return c.shape("attention_mask", a)[-1] if "attention_mask" in c.axes else None


@pytest.mark.parametrize("fmt", FMTS)
@pytest.mark.parametrize("case", LM, ids=lambda c: c.name)
def test_decoder_contract(case, fmt, export, checkpoint, record):
    rec = record(case, f"{fmt} (contract)", runtime=FORMATS[fmt][1])
    art = Artifact(export(case, fmt), fmt)
    ref = lm_reference(case, checkpoint)
    probe_all(art, rec, lambda *x: lm_call(*x[:4], ref, x[4], rec)).report()


def encoder_call(art: Artifact, comp: str, c, a: dict, model, rng, rec: Record) -> None:
    """An encoder's outputs (logits or hidden states) vs transformers on the same ids, all positions real."""
    feeds = feeds_for(art, comp, c, a, rng)
    out = art.call(comp, feeds, fresh=True)
    ref = enc_mod.ref_outputs(model, feeds["input_ids"], feeds["attention_mask"])
    names = [n for n in out if n in ref]
    assert names, f"expected an output transformers has ({sorted(ref)}), got {sorted(out)}"
    for n in names:
        rec.check(f"{comp} {n}", out[n], ref[n], bound_of(art.fmt))


@pytest.mark.parametrize("fmt", FMTS)
@pytest.mark.parametrize("case", cases_mod.ENCODERS, ids=lambda c: c.name)
def test_encoder_contract(case, fmt, export, checkpoint, record):
    rec = record(case, f"{fmt} (contract)", runtime=FORMATS[fmt][1])
    art = Artifact(export(case, fmt), fmt)
    model = enc_mod.reference(case, checkpoint)
    probe_all(art, rec, lambda *x: encoder_call(*x[:4], model, x[4], rec)).report()


def seq2seq_call(art: Artifact, comp: str, c, a: dict, ref: Seq2SeqReference, rng, rec: Record) -> None:
    """An encoder program vs transformers' encoder; a decoder program on random encoder states, its past (if
    any) transformers' own cache of a teacher-forced decoder prefix, vs transformers' next logits."""
    feeds = feeds_for(art, comp, c, a, rng)
    bound = bound_of(art.fmt)
    if "encoder_hidden_states" not in c.axes:  # the encoder
        x = feeds.get("input_features", feeds.get("input_ids"))
        out = art.call(comp, feeds, fresh=True)
        rec.check(f"{comp} last_hidden_state", out["last_hidden_state"], ref.encode(x, feeds.get("attention_mask")),
                  bound)
        return
    enc = feeds["encoder_hidden_states"]
    mask = feeds.get("encoder_attention_mask")
    batch, new = c.shape("input_ids", a)
    pasts = past_inputs(art, comp)
    dec = [n for n in pasts if ".decoder." in n]
    mem = [n for n in pasts if ".encoder." in n]
    past = c.shape(dec[0], a)[2] if dec else 0
    memory = c.shape(mem[0], a)[2] if mem else 0
    if past and memory != enc.shape[1] or (past == 0) != (memory == 0):
        raise AssertionError(f"the contract admits a decoder past of {past} beside a cross-attention memory of "
                             f"{memory} for {enc.shape[1]} encoder states: no eager call has that meaning")
    ids = rng.integers(4, art.vocab - 1, size=(batch, past + new)).astype(np.int64)
    cache = None
    if past:
        _, cache, leaves = ref.step(ids[:, :past], enc, mask)
        feeds.update({past_name(k): v for k, v in leaves.items()})
    elif pasts:
        feeds.update(empty_pasts(art, comp, batch))
    feeds["input_ids"] = ids[:, past:]
    out = art.call(comp, feeds, fresh=True)
    want = ref.step(ids[:, past:], enc, mask, cache)[0]
    rec.check(f"{comp} logits", out["logits"], want, bound)


@pytest.mark.parametrize("fmt", FMTS)
@pytest.mark.parametrize("case", s2s_mod.CASES, ids=lambda c: c.name)
def test_seq2seq_contract(case, fmt, workdir, export, record):
    rec = record(case, f"{fmt} (contract)", runtime=FORMATS[fmt][1])
    make_s2s_checkpoint(case, workdir / "ckpt" / case.name)
    art = Artifact(export(case, fmt), fmt)
    ref = s2s_mod.reference(case, workdir)
    probe_all(art, rec, lambda *x: seq2seq_call(*x[:4], ref, x[4], rec)).report()
