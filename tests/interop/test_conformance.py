"""The contract conformance tester (issue 45): every architecture x format x program, probed at the boundaries
its own written contract states, in the format's released runtime (in CI less cases.PROBE_REPEATS, cases whose
contract repeats one probed; HFX_INTEROP_FULL=1 probes all).

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

import json

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
import test_vision as vis_mod
from vision_support import make_vlm_checkpoint

FMTS = ["onnx", "pt2", "pte-portable", "pte-xnnpack"]
LM = cases_mod.probed(cases_mod.DECODERS + cases_mod.STATE)
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
        self.rec.probes = self.runs
        assert self.runs, f"[conformance] {self.rec.case}/{self.rec.fmt}: expected probes, got none"
        if self.items:
            head = "\n  ".join(self.items[:25])
            raise AssertionError(f"[conformance] {self.rec.case}/{self.rec.fmt}: {len(self.items)} of {self.runs} "
                                 f"probes broke the written contract:\n  {head}")


def fill_pasts(art: Artifact, comp: str, c, a: dict, feeds: dict, seq: str, full: np.ndarray, past: int, rng):
    """Feeds `comp` the new positions of `full` ([batch, total, ...]) and, for its past inputs, what the export's
    own prefix program returns on the first `past` positions (empty pasts when there are none), each checked
    against the shape the contract asks."""
    batch = full.shape[0]
    feeds[seq] = full[:, past:]
    pasts = past_inputs(art, comp)
    if pasts and past == 0:
        feeds.update(empty_pasts(art, comp, batch))
    elif pasts:
        pre = prefix_component(art, comp, seq=seq)
        assert pre, f"expected a component that makes a past for {comp}, got none"
        pc = art.contract(pre)
        pa = {s: batch if s == "batch_size" else 0 if "past" in s else past for s in pc.symbols}
        pf = feeds_for(art, pre, pc, pa, rng, total=past)
        pf[seq] = full[:, :past]
        pf.update(empty_pasts(art, pre, batch))
        made = {past_name(k): v for k, v in art.call(pre, pf).items() if k.startswith("present")}
        for n in pasts:
            if list(made[n].shape) != c.shape(n, a):
                raise AssertionError(f"{pre} makes {n} of shape {list(made[n].shape)} for a past of {past}, the "
                                     f"contract asks {c.shape(n, a)}")
            feeds[n] = made[n]


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
    fill_pasts(art, comp, c, a, feeds, "input_ids", full, past, rng)
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


def lm_setup(case, fmt: str, kind: str, export, checkpoint, record):
    """(record, the export, transformers' model) of a decoder or state case in a format."""
    rec = record(case, f"{fmt} ({kind})", runtime=FORMATS[fmt][1])
    return rec, Artifact(export(case, fmt), fmt), lm_reference(case, checkpoint)


@pytest.mark.parametrize("fmt", FMTS)
@pytest.mark.parametrize("case", LM, ids=lambda c: c.name)
def test_decoder_contract(case, fmt, export, checkpoint, record):
    rec, art, ref = lm_setup(case, fmt, "contract", export, checkpoint, record)
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
@pytest.mark.parametrize("case", cases_mod.probed(cases_mod.ENCODERS), ids=lambda c: c.name)
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
@pytest.mark.parametrize("case", cases_mod.probed(s2s_mod.CASES), ids=lambda c: c.name)
def test_seq2seq_contract(case, fmt, workdir, export, record):
    rec = record(case, f"{fmt} (contract)", runtime=FORMATS[fmt][1])
    make_s2s_checkpoint(case, workdir / "ckpt" / case.name)
    art = Artifact(export(case, fmt), fmt)
    ref = s2s_mod.reference(case, workdir)
    probe_all(art, rec, lambda *x: seq2seq_call(*x[:4], ref, x[4], rec)).report()


def vlm_call(art: Artifact, comp: str, c, a: dict, ref, rng, rec: Record) -> None:
    """A VLM component vs transformers: the vision encoder's image features, the embedding table's rows, and
    the text decoder on random embeddings (its past made by the export's own first decoder program) vs the
    model's forward on the whole embedding sequence."""
    feeds = feeds_for(art, comp, c, a, rng)
    bound = bound_of(art.fmt)
    if "pixel_values" in feeds:
        if "grid_thw" in feeds:  # qwen2_vl: grids the patches tile (each image 1 x 2 x 2k: whole merge windows)
            n_img, n_patch = feeds["grid_thw"].shape[0], feeds["pixel_values"].shape[0]
            if n_patch % 4 or n_patch < 4 * n_img:
                raise AssertionError(f"the contract admits {n_patch} patches for {n_img} images: no grids of whole "
                                     "2 x 2 merge windows tile them")
            last = n_patch // 2 - 2 * (n_img - 1)
            feeds["grid_thw"] = np.array([[1, 2, 2]] * (n_img - 1) + [[1, 2, last]], np.int64)
        out = art.call(comp, feeds, fresh=True)
        got = out["image_features"]
        rec.check(f"{comp} image_features", got.reshape(-1, got.shape[-1]), ref.image_features(feeds), bound)
        return
    if "inputs_embeds" not in feeds:  # the embedding table
        out = art.call(comp, feeds, fresh=True)
        name = next(iter(out))
        rec.check(f"{comp} {name}", out[name], ref.embeddings(feeds["input_ids"]), bound)
        return
    batch, new = c.shape("inputs_embeds", a)[:2]
    pasts = past_inputs(art, comp)
    total = c.shape("attention_mask", a)[1]
    past = total - new
    if past < 0:
        raise AssertionError(f"the contract admits a total length {total} below the {new} new embeddings")
    full = (rng.standard_normal((batch, total, feeds["inputs_embeds"].shape[-1])) * 0.5).astype(np.float32)
    feeds = feeds_for(art, comp, c, a, rng, total=total)
    fill_pasts(art, comp, c, a, feeds, "inputs_embeds", full, past, rng)
    out = art.call(comp, feeds, fresh=True)
    want = vlm_text_logits(ref, full, feeds.get("position_ids"), past)
    got = out["logits"]
    rec.check(f"{comp} logits", got, want[:, -got.shape[1]:], bound)


def vlm_text_logits(ref, embeds: np.ndarray, pos_new, past: int) -> np.ndarray:
    """The model's forward on embeddings alone (no image: no merge), positions 0..T-1 in every M-RoPE row."""
    import torch

    total = embeds.shape[1]
    kw = {"inputs_embeds": torch.from_numpy(embeds), "attention_mask": torch.ones(embeds.shape[:2], dtype=torch.long)}
    if pos_new is not None:
        shape = list(pos_new.shape[:-1]) + [total]
        kw["position_ids"] = torch.from_numpy(np.broadcast_to(np.arange(total), shape).copy())
    with torch.no_grad():
        return ref.model(**kw).logits.numpy()[:, past:]


def vlm_setup(case, fmt: str, kind: str, workdir, export, record):
    """(record, the export, transformers' model) of a VLM case in a format."""
    rec = record(case, f"{fmt} ({kind})", runtime=FORMATS[fmt][1])
    folder = make_vlm_checkpoint(case, workdir / "ckpt" / case.name, layout="hub")
    return rec, Artifact(export(case, fmt), fmt), vis_mod.reference(case, folder)


@pytest.mark.parametrize("fmt", FMTS)
@pytest.mark.parametrize("case", vis_mod.VLMS, ids=lambda c: c.name)
def test_vlm_contract(case, fmt, workdir, export, record):
    rec, art, ref = vlm_setup(case, fmt, "contract", workdir, export, record)
    probe_all(art, rec, lambda *x: vlm_call(*x[:4], ref, x[4], rec)).report()


# ---- the generation loop at the contract's largest total length ------------------------------------------

def decode_component(art: Artifact, seq: str):
    """The program a generation loop decodes with: one new position over a past (decode, decoder_with_past,
    text_decoder), else the merged one."""
    for want_fixed in (True, False):
        for comp, axes in sorted(art.contracts.items()):
            if seq in axes and past_inputs(art, comp) and (axes[seq][1]["max"] == 1) == want_fixed:
                return comp
    return None


def loop_total(art: Artifact, dec: str) -> int:
    """The largest total length a one-position-at-a-time loop reaches: the mask's bound, or the past's + 1 where
    that is less (a mask bounded at past + a whole chunk)."""
    c = art.contracts[dec]
    pasts = [ax["max"] + 1 for n in past_inputs(art, dec) for ax in c[n][1:] if ax.get("symbol")]
    return min([c["attention_mask"][1]["max"]] + pasts)


def run_loop(art: Artifact, seq: str, x: np.ndarray):
    """Prefill on all but the last 4 positions the decode program's contract allows, decode one position at a
    time up to that total, then one more, which must be refused. Returns (first position, total, the logits of
    every position from the prefill's last on)."""
    dec = decode_component(art, seq)
    assert dec, f"expected a decode program with pasts, got {sorted(art.contracts)}"
    pre = prefix_component(art, dec, seq=seq)
    total = loop_total(art, dec)
    n0 = min(total - 4, art.contracts[pre][seq][1]["max"])
    assert x.shape[1] > total, f"expected {total + 1} positions to feed, got {x.shape[1]}"

    def call(comp, lo, hi, pasts):
        c = art.contract(comp)
        a = {s: 1 if s == "batch_size" else lo if "past" in s else hi if "total" in s else hi - lo
             for s in c.symbols}
        f = feeds_for(art, comp, c, a, np.random.default_rng(0), total=hi)
        f[seq] = x[:, lo:hi]
        f.update(pasts)
        return art.call(comp, f)

    out = call(pre, 0, n0, empty_pasts(art, pre, 1))
    seen = [out["logits"][0, -1]]
    for t in range(n0, total + 1):
        pasts = {past_name(k): v for k, v in out.items() if k.startswith("present")}
        if t == total:
            try:
                call(dec, t, t + 1, pasts)
            except Exception:  # noqa: BLE001 (refused: the contract's end)
                return n0, total, seen
            raise AssertionError(f"{dec}: a step past the contract's largest total ({total}) was not refused")
        out = call(dec, t, t + 1, pasts)
        seen.append(out["logits"][0, -1])
    raise AssertionError("unreachable")


def pte_static_loop(art: Artifact, ref: CausalReference, rec: Record, bound) -> None:
    """ExecuTorch's forward(tokens, input_pos) on its own cache: a prompt, then one token per call up to the
    cache's last position (get_max_seq_len - 1), then a token at get_max_seq_len, which must be refused."""
    pte = art._program("forward", fresh=True)
    n = int(pte.constant("get_max_seq_len"))
    x = np.random.default_rng(1).integers(4, art.vocab - 1, size=(1, n + 1)).astype(np.int64)
    n0 = min(n - 4, art.contracts["forward"]["tokens"][1]["max"])
    seen = [pte("forward", [x[:, :n0], np.arange(n0, dtype=np.int64)])[0][0, -1]]
    for t in range(n0, n):
        seen.append(pte("forward", [x[:, t:t + 1], np.array([t], np.int64)])[0][0, -1])
    try:
        pte("forward", [x[:, n:n + 1], np.array([n], np.int64)])
    except Exception:  # noqa: BLE001 (refused: past the cache)
        want = ref.forward(x[:, :n])[0][0]
        for i, g in enumerate(seen):
            rec.check(f"position {n0 - 1 + i} logits", g, want[n0 - 1 + i], bound)
        return
    raise AssertionError(f"forward: a token at position {n} (get_max_seq_len) was not refused")


@pytest.mark.parametrize("fmt", FMTS)
@pytest.mark.parametrize("case", LM, ids=lambda c: c.name)
def test_decoder_generation_at_max_total(case, fmt, export, checkpoint, record):
    """Decoders and state models: the loop up to the largest total its contract claims, vs transformers."""
    rec, art, ref = lm_setup(case, fmt, "max total", export, checkpoint, record)
    if any(art.stateful(c) for c in art.contracts):
        pte_static_loop(art, ref, rec, bound_of(fmt))
        return
    total = loop_total(art, decode_component(art, "input_ids"))
    x = np.random.default_rng(1).integers(4, art.vocab - 1, size=(1, total + 1)).astype(np.int64)
    n0, total, seen = run_loop(art, "input_ids", x)
    want = ref.forward(x[:, :total])[0][0]
    for i, g in enumerate(seen):
        rec.check(f"position {n0 - 1 + i} logits", g, want[n0 - 1 + i], bound_of(fmt))


@pytest.mark.parametrize("fmt", FMTS)
@pytest.mark.parametrize("case", vis_mod.VLMS, ids=lambda c: c.name)
def test_vlm_generation_at_max_total(case, fmt, workdir, export, record):
    """The VLM text decoder's loop on embeddings up to its contract's largest total, vs transformers."""
    rec, art, ref = vlm_setup(case, fmt, "max total", workdir, export, record)
    dec = decode_component(art, "inputs_embeds")
    total = loop_total(art, dec)
    hidden = art.contracts[dec]["inputs_embeds"][2]["max"]
    x = (np.random.default_rng(1).standard_normal((1, total + 1, hidden)) * 0.5).astype(np.float32)
    n0, total, seen = run_loop(art, "inputs_embeds", x)
    pos = np.zeros((3, 1, 1), np.int64) if "position_ids" in art.contracts[dec] and \
        len(art.contracts[dec]["position_ids"]) == 3 else np.zeros((1, 1), np.int64)
    want = vlm_text_logits(ref, x[:, :total], pos, 0)[0]
    for i, g in enumerate(seen):
        rec.check(f"position {n0 - 1 + i} logits", g, want[n0 - 1 + i], bound_of(fmt))


# ---- a user's dynamic_shapes: the contract states what was asked, per component --------------------------

def export_with(workdir, case, fmt: str, config: dict, tag: str):
    from conftest import run_hfx

    out = workdir / "out" / f"{case.name}-{fmt}-{tag}"
    if not out.exists():
        cfg = workdir / f"{case.name}-{fmt}-{tag}.json"
        flags = FORMATS[fmt][0]  # --format F [--backend B]: the backend goes in the file (hfx refuses both)
        cfg.write_text(json.dumps({**({"backend": flags[3]} if len(flags) > 3 else {}), **config}))
        run_hfx("export", workdir / "ckpt" / case.name, *flags[:2], "--config", cfg, "-o", out)
    return out


_SEQ100 = {"name": "sequence", "min": 1, "max": 100}


@pytest.mark.parametrize("fmt", ["onnx", "pt2"])
def test_user_total_bound(fmt, workdir, checkpoint, record):
    """The seeds' example (one Dim on input_ids and attention_mask axis 1, max 100) bounds past + new tokens:
    no in-contract call has a mask longer than 100, and every program is probed at its own boundaries."""
    case = cases_mod.BY_NAME["llama"]
    checkpoint(case)
    rec = record(case, f"{fmt} (user Dim, total <= 100)", runtime=FORMATS[fmt][1])
    art = Artifact(export_with(workdir, case, fmt, {"dynamic_shapes": {"input_ids": {"1": _SEQ100},
                                                                       "attention_mask": {"1": _SEQ100}}},
                               "total100"), fmt)
    for comp in art.contracts:
        c = art.contract(comp)
        longest = max(c.shape("attention_mask", p.assignment)[1] for p in c.probes() if p.in_contract)
        assert longest <= 100, f"{comp}: the contract admits a mask of {longest} > the Dim's max 100"
    ref = lm_reference(case, checkpoint)
    probe_all(art, rec, lambda *x: lm_call(*x[:4], ref, x[4], rec)).report()


@pytest.mark.parametrize("fmt", ["onnx", "pt2", "pte-portable"])
def test_user_dim_per_component(fmt, workdir, record):
    """t5: `encoder.input_ids` bounds the source (and `decoder.encoder_attention_mask` the memory) without
    renaming the decoder's own input_ids; every program probed at its boundaries."""
    case = next(c for c in s2s_mod.CASES if c.name == "t5")
    make_s2s_checkpoint(case, workdir / "ckpt" / case.name)
    rec = record(case, f"{fmt} (user Dim per component)", runtime=FORMATS[fmt][1])
    src = {"name": "source", "min": 1, "max": 64}
    art = Artifact(export_with(workdir, case, fmt, {"dynamic_shapes": {"encoder.input_ids": {"1": src},
                                                                       "decoder.encoder_attention_mask": {"1": src}}},
                               "source64"), fmt)
    for comp, axes in art.contracts.items():
        if "encoder_hidden_states" in axes:  # a decoder program
            assert axes["input_ids"][1].get("symbol") != "source", f"{comp}: the decoder's input_ids was renamed"
            assert axes["encoder_attention_mask"][1] == {"symbol": "source", "min": 1, "max": 64}, (comp, axes)
        else:
            assert axes["input_ids"][1] == {"symbol": "source", "min": 1, "max": 64}, (comp, axes)
    probe_all(art, rec, lambda *x: seq2seq_call(*x[:4], s2s_mod.reference(case, workdir), x[4], rec)).report()
