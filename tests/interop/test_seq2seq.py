"""Encoder-decoder architectures (t5, bart, marian, whisper): every format in its released runtime vs
transformers eager, the programs of docs/components.md ("encoder-decoder").

ONNX (onnxruntime: encoder_model, decoder_model, decoder_with_past_model, and decoder_model_merged) and .pt2
(torch.export.load: encoder_model, decoder_model, decoder_with_past_model; each past leaf a flat keyword):
  encoder    a right-padded batch of two rows (8 and 5 tokens; whisper: two spectrograms): last_hidden_state
             on the real positions;
  decoder    the first step (decoder_start_token_id; whisper: a 4-token prompt) on transformers' encoder
             states for both rows: logits and every present.N.decoder.* / present.N.encoder.* leaf;
  with past  the next (transformers' greedy) token, fed the program's own first-step cache: logits and leaves;
  merged     (ONNX) the same two calls through decoder_model_merged, the first on an empty past;
  greedy     32 tokens from one source row, the runtime carrying its own encoder states and caches, vs
             transformers' greedy loop (cached forward calls, no generate()), with every step's logits.
.pte (ExecuTorch's runtime, portable and XNNPACK; batch 1): methods encoder, decoder, decoder_with_past with
the cache leaves as plain inputs/outputs in the declared order (int64 inputs first: input_ids and, but for
whisper, encoder_attention_mask; then encoder_hidden_states and the past leaves): the same steps on one row.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

from judge import EXACT, PTE, Record, check_greedy
from loops import empty_past, past_name
from runtimes import OnnxProgram, PteModule, Pt2Program
from seq2seq_support import (Seq2SeqCase, Seq2SeqReference, decoder_prompt, leaf_names, make_checkpoint,
                             runtime_greedy)

_BART = dict(vocab_size=320, d_model=64, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
             decoder_attention_heads=4, encoder_ffn_dim=128, decoder_ffn_dim=128, max_position_embeddings=128)
_T5 = dict(vocab_size=320, d_model=64, d_ff=128, num_heads=4, relative_attention_num_buckets=8,
           relative_attention_max_distance=20, decoder_start_token_id=0, pad_token_id=0, eos_token_id=1)
_S2S = "AutoModelForSeq2SeqLM"

CASES = [
    Seq2SeqCase("t5", "t5", "seq2seq", dict(_T5, d_kv=32, num_layers=2, num_decoder_layers=3,
                                            feed_forward_proj="relu"), auto=_S2S,
                why="original T5: relu, tied head scaled by d_model^-0.5, d_kv 32 != d_model/heads, 2 encoder vs "
                    "3 decoder layers, relative buckets (8, max distance 20) passed by 32 greedy steps"),
    Seq2SeqCase("t5_v1_1", "t5", "seq2seq", dict(_T5, d_kv=16, num_layers=2, feed_forward_proj="gated-gelu",
                                                 tie_word_embeddings=False), auto=_S2S,
                why="v1.1 as transformers 5 saves it: gated-gelu; tie_word_embeddings=False becomes "
                    "scale_decoder_outputs false + tie_word_embeddings true (no lm_head.weight)"),
    Seq2SeqCase("t5_v1_1_untied", "t5", "seq2seq", dict(_T5, d_kv=16, num_layers=2, feed_forward_proj="gated-gelu",
                                                        tie_word_embeddings=False), auto=_S2S, untie_head=True,
                why="v1.1 as on the Hub: gated-gelu, lm_head.weight of its own, tie_word_embeddings false"),
    Seq2SeqCase("mt5", "mt5", "seq2seq", dict(_T5, d_kv=16, num_layers=2), auto=_S2S, untie_head=True,
                why="mT5 as on the Hub: gated-gelu by default, lm_head.weight of its own, output never scaled"),
    Seq2SeqCase("mt5_tied", "mt5", "seq2seq", dict(_T5, d_kv=16, num_layers=2, feed_forward_proj="gated-silu"),
                auto=_S2S, why="MT5Config forces a tied head: lm_head = shared, unscaled (T5 would scale); silu"),
    Seq2SeqCase("bart", "bart", "seq2seq", dict(_BART, pad_token_id=1, bos_token_id=0, eos_token_id=2,
                                                decoder_start_token_id=2), auto=_S2S,
                why="learned positions offset 2, layernorm_embedding, final_logits_bias (perturbed)"),
    Seq2SeqCase("marian", "marian", "seq2seq", dict(_BART, pad_token_id=319, eos_token_id=0,
                                                    decoder_start_token_id=319, activation_function="swish",
                                                    scale_embedding=True), auto=_S2S,
                why="sinusoidal positions, sqrt(d_model) embedding scale, swish, final_logits_bias"),
    Seq2SeqCase("mbart", "mbart", "seq2seq", dict(_BART, pad_token_id=1, bos_token_id=0, eos_token_id=2,
                                                  decoder_start_token_id=2, scale_embedding=True), auto=_S2S,
                why="pre-LN layers, layernorm_embedding and a final layer_norm per stack, embedding scale"),
    Seq2SeqCase("plbart", "plbart", "seq2seq", dict(_BART, pad_token_id=1, bos_token_id=0, eos_token_id=2,
                                                    decoder_start_token_id=2, activation_function="gelu_new"),
                auto=_S2S, why="BART's post-LN layers under PLBart's names, embedding scale by default, gelu_new"),
    Seq2SeqCase("pegasus", "pegasus", "seq2seq", dict(_BART, pad_token_id=0, eos_token_id=1,
                                                      decoder_start_token_id=0, activation_function="relu"),
                auto=_S2S, why="pre-LN, Marian's sinusoidal table saved in the checkpoint, relu, final layer_norm"),
    Seq2SeqCase("m2m_100", "m2m_100", "seq2seq", dict(_BART, pad_token_id=3, bos_token_id=0, eos_token_id=2,
                                                      decoder_start_token_id=2), auto=_S2S,
                why="fairseq sinusoidal positions counted over non-pad ids (pad 3 = the batch's pad), no "
                    "final_logits_bias, relu"),
    Seq2SeqCase("blenderbot", "blenderbot", "seq2seq", dict(_BART, pad_token_id=0, bos_token_id=1, eos_token_id=2,
                                                            decoder_start_token_id=1), auto=_S2S,
                why="pre-LN, learned positions without offset"),
    Seq2SeqCase("blenderbot_small", "blenderbot-small", "seq2seq",
                dict(_BART, pad_token_id=0, bos_token_id=1, eos_token_id=2, decoder_start_token_id=1,
                     scale_embedding=True), auto=_S2S,
                why="post-LN; layernorm_embedding after positions (encoder), before them (decoder)"),
    Seq2SeqCase("whisper", "whisper", "seq2seq",
                dict(vocab_size=320, d_model=64, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
                     decoder_attention_heads=4, encoder_ffn_dim=128, decoder_ffn_dim=128, num_mel_bins=80,
                     max_source_positions=32, max_target_positions=64, pad_token_id=299, bos_token_id=299,
                     eos_token_id=299, decoder_start_token_id=300, suppress_tokens=[], begin_suppress_tokens=[299]),
                auto="AutoModelForSpeechSeq2Seq", audio=True,
                why="conv front end over 80 x 64 log-mel frames, 4-token decoder prompt, no encoder mask"),
]

# hfx bugs these cases expose (strict: a fix turns them into failures to un-mark).
_XFAIL: dict = {}

ROWS = [[5, 17, 42, 9, 77, 101, 13, 64], [8, 66, 31, 250, 19]]
SOURCE = [11, 25, 3, 97, 140, 7, 60, 33]
STEPS = 32
_REFS: dict = {}


def judged(rec, run, *args, **kw):
    """Runs a judge; a mismatch's first line also goes to the record (an xfailed test's record keeps why)."""
    try:
        run(rec, *args, **kw)
    except AssertionError as e:
        rec.detail = str(e).splitlines()[0][:300]
        raise


def params(cases):
    return [pytest.param(c, id=c.name, marks=[pytest.mark.xfail(strict=True, reason=_XFAIL[c.name])]
                         if c.name in _XFAIL else []) for c in cases]


@pytest.fixture
def exported(workdir, export):
    """The `export` fixture on the case's own checkpoint (written first, where `checkpoint` finds it)."""
    def make(case, fmt):
        make_checkpoint(case, workdir / "ckpt" / case.name)
        return export(case, fmt)
    return make


def reference(case, workdir) -> Seq2SeqReference:
    if case.name not in _REFS:
        _REFS[case.name] = Seq2SeqReference(case, make_checkpoint(case, workdir / "ckpt" / case.name))
    return _REFS[case.name]


def features(batch: int, seed: int = 0) -> np.ndarray:
    """A log-mel-like spectrogram [batch, 80, 64]: a smooth pattern in Whisper's [-1, 1.5] range plus noise."""
    rng = np.random.default_rng(seed)
    t = np.arange(64)[None, None, :] * 0.21 + np.arange(80)[None, :, None] * 0.13
    x = 0.6 * np.sin(t + np.arange(batch)[:, None, None]) + 0.2 * rng.standard_normal((batch, 80, 64))
    return x.astype(np.float32)


def source_batch(case, rows):
    """(encoder input, encoder attention mask or None, the program feeds): right-padded token rows, or
    spectrograms (whisper: no mask)."""
    if case.audio:
        x = features(len(rows))
        return x, None, {"input_features": x}
    n = max(len(r) for r in rows)
    ids = np.full((len(rows), n), 3, np.int64)  # pads: an id no row uses; the mask hides them
    mask = np.zeros((len(rows), n), np.int64)
    for i, r in enumerate(rows):
        ids[i, :len(r)] = r
        mask[i, :len(r)] = 1
    return ids, mask, {"input_ids": ids, "attention_mask": mask}


def check_leaves(rec, what, got: dict, ref: dict, bound):
    """Every cache leaf transformers has, whole: the decoder fed both the same encoder states, so even a
    padded encoder position's cross-attention key/value is the same projection."""
    names = sorted(ref)
    have = sorted(k for k in got if k.startswith("present."))
    assert have == names, f"[{rec.fmt}/{rec.runtime}] {what}: expected cache leaves {names}, got {have}"
    for n in names:
        rec.check(f"{what} {n}", got[n], ref[n], bound)


def judge_functional(rec, encoder, first, with_past, case, ref: Seq2SeqReference, bound, encoder_too=True):
    x, mask, enc_feeds = source_batch(case, ROWS)
    r_enc = ref.encode(x, mask)
    if encoder_too:
        got = encoder(enc_feeds)["last_hidden_state"]
        keep = mask.astype(bool) if mask is not None else np.ones(got.shape[:2], bool)
        rec.check("encoder last_hidden_state", got[keep], r_enc[keep], bound)

    prompt = decoder_prompt(case)
    ids = np.array([prompt] * len(ROWS), np.int64)
    fixed = {"encoder_hidden_states": r_enc}
    if mask is not None:
        fixed["encoder_attention_mask"] = mask
    r_logits, r_cache, r_leaves = ref.step(ids, r_enc, mask)
    out = first({"input_ids": ids, **fixed, **empty_past(first, len(ROWS))})
    rec.check("decoder logits", out["logits"], r_logits, bound)
    check_leaves(rec, "decoder", out, r_leaves, bound)

    nxt = r_logits[:, -1].argmax(-1)[:, None].astype(np.int64)
    r2_logits, _, r2_leaves = ref.step(nxt, r_enc, mask, r_cache)
    feeds = {"input_ids": nxt, **fixed}
    feeds.update({past_name(k): v for k, v in out.items() if k.startswith("present.")})
    out2 = with_past(feeds)
    rec.check("decoder_with_past logits", out2["logits"], r2_logits, bound)
    check_leaves(rec, "decoder_with_past", out2, r2_leaves, bound)

    x1, mask1, feeds1 = source_batch(case, [SOURCE])
    tokens, step_logits = ref.greedy(x1, mask1, prompt, STEPS)
    got, seen = runtime_greedy(encoder, first, with_past, feeds1, mask1, prompt, STEPS)
    check_greedy(rec, got, seen, tokens, step_logits, bound)


@pytest.mark.parametrize("case", params(CASES))
def test_onnx(case, exported, workdir, record):
    rec = record(case, "onnx")
    out = exported(case, "onnx") / "onnx"
    ref = reference(case, workdir)
    encoder = OnnxProgram(out / "encoder_model.onnx")
    judged(rec, judge_functional, encoder, OnnxProgram(out / "decoder_model.onnx"),
           OnnxProgram(out / "decoder_with_past_model.onnx"), case, ref, EXACT)
    merged = OnnxProgram(out / "decoder_model_merged.onnx")
    judged(rec, judge_functional, encoder, merged, merged, case, ref, EXACT, encoder_too=False)


@pytest.mark.parametrize("case", params(CASES))
def test_pt2(case, exported, workdir, record):
    rec = record(case, "pt2")
    out = exported(case, "pt2")
    judged(rec, judge_functional, Pt2Program(out / "encoder_model.pt2"), Pt2Program(out / "decoder_model.pt2"),
           Pt2Program(out / "decoder_with_past_model.pt2"), case, reference(case, workdir), EXACT)


@pytest.mark.parametrize("backend", ["portable", "xnnpack"])
@pytest.mark.parametrize("case", params(CASES))
def test_pte(case, backend, exported, workdir, record):
    fmt = f"pte-{backend}"
    rec = record(case, fmt)
    judged(rec, judge_pte, PteModule(exported(case, fmt) / "model.pte"), case, reference(case, workdir))


def judge_pte(rec, pte, case, ref: Seq2SeqReference):
    """encoder, decoder, decoder_with_past on one row, then 32 greedy tokens, the leaves carried by the caller
    (the previous call's outputs 1.. as the next call's float inputs after encoder_hidden_states)."""
    methods = ("encoder", "decoder", "decoder_with_past")
    assert set(methods) <= set(pte.methods), f"[{rec.fmt}] expected methods {methods}, got {pte.methods}"
    n_int = {m: sum(1 for i in range(pte.num_inputs(m)) if pte.input_dtype(m, i) == "int64") for m in methods}
    x, mask, _ = source_batch(case, [SOURCE])

    def enc_args():
        return [x] if case.audio else [x, mask][:n_int["encoder"]]

    def dec_args(method, ids, enc, leaves=()):
        return [ids, mask][:n_int[method]] + [enc] + list(leaves)

    r_enc = ref.encode(x, mask)
    rec.check("encoder last_hidden_state", pte("encoder", enc_args())[0], r_enc, PTE)

    prompt = decoder_prompt(case)
    ids = np.array([prompt], np.int64)
    r_logits, r_cache, r_leaves = ref.step(ids, r_enc, mask)
    names = leaf_names(len(r_leaves) // 4)
    out = pte("decoder", dec_args("decoder", ids, r_enc))
    assert len(out) == 1 + len(names), f"[{rec.fmt}] decoder: expected logits + {len(names)} leaves, got {len(out)}"
    rec.check("decoder logits", out[0], r_logits, PTE)
    for n, v in zip(names, out[1:]):
        rec.check(f"decoder {n}", v, r_leaves[n], PTE)

    nxt = r_logits[:, -1].argmax(-1)[:, None].astype(np.int64)
    r2_logits, _, r2_leaves = ref.step(nxt, r_enc, mask, r_cache)
    out2 = pte("decoder_with_past", dec_args("decoder_with_past", nxt, r_enc, out[1:]))
    rec.check("decoder_with_past logits", out2[0], r2_logits, PTE)
    for n, v in zip(names, out2[1:]):
        rec.check(f"decoder_with_past {n}", v, r2_leaves[n], PTE)

    tokens, step_logits = ref.greedy(x, mask, prompt, STEPS)
    got, seen = pte_greedy(pte, case, x, mask, STEPS)
    check_greedy(rec, got, seen, tokens, step_logits, PTE)


def pte_greedy(pte, case, x, mask, steps):
    """Greedy tokens (batch 1) of the .pte's encoder, decoder and decoder_with_past, the caller carrying the
    leaves; returns (tokens, the logits each was picked from)."""
    methods = ("encoder", "decoder", "decoder_with_past")
    n_int = {m: sum(1 for i in range(pte.num_inputs(m)) if pte.input_dtype(m, i) == "int64") for m in methods}

    def dec_args(method, ids, enc, leaves=()):
        return [ids, mask][:n_int[method]] + [enc] + list(leaves)

    enc = pte("encoder", [x] if case.audio else [x, mask][:n_int["encoder"]])[0]
    out = pte("decoder", dec_args("decoder", np.array([decoder_prompt(case)], np.int64), enc))
    got, seen = [], []
    for _ in range(steps):
        last = out[0][0, -1]
        seen.append(last)
        got.append(int(last.argmax()))
        out = pte("decoder_with_past", dec_args("decoder_with_past", np.array([[got[-1]]], np.int64), enc, out[1:]))
    return got, seen


def encoder_max(out) -> int:
    """The contract's largest encoder input (encoder_sequence_length) across the export's programs."""
    contracts = json.loads((out / "manifest.json").read_text())["contracts"]
    maxima = {ax["max"] for c in contracts.values() for axes in c.values() for ax in axes
              if ax.get("symbol") == "encoder_sequence_length"}
    assert len(maxima) == 1, f"expected one encoder_sequence_length bound in every program, got {sorted(maxima)}"
    return maxima.pop()


MAX_STEPS = 8


@pytest.mark.parametrize("fmt", ["onnx", "pt2", "pte-portable"])
@pytest.mark.parametrize("case", params(CASES))
def test_max_encoder_length(case, fmt, exported, workdir):
    """Generation from an encoder input of the contract's own maximum length (issue 45: the cross-attention
    memory's range was one position short of the encoder's): 8 greedy tokens in the runtime vs transformers.
    Whisper's encoder input is always its maximum (2 x max_source_positions frames)."""
    rec = Record(case=case.name, model_type=case.model_type, fmt=f"{fmt} (max encoder length)", runtime=fmt)
    out = exported(case, fmt)
    ref = reference(case, workdir)
    if case.audio:
        x, mask = features(1), None
        feeds = {"input_features": x}
    else:
        n = encoder_max(out)
        row = [4 + (i * 37) % 250 for i in range(n - 1)] + [case.config["eos_token_id"]]
        x, mask = np.array([row], np.int64), np.ones((1, n), np.int64)
        feeds = {"input_ids": x, "attention_mask": mask}
    tokens, step_logits = ref.greedy(x, mask, decoder_prompt(case), MAX_STEPS)
    if fmt == "pte-portable":
        got, seen = pte_greedy(PteModule(out / "model.pte"), case, x, mask, MAX_STEPS)
        bound = PTE
    elif fmt == "pt2":
        got, seen = runtime_greedy(Pt2Program(out / "encoder_model.pt2"), Pt2Program(out / "decoder_model.pt2"),
                                   Pt2Program(out / "decoder_with_past_model.pt2"), feeds, mask,
                                   decoder_prompt(case), MAX_STEPS)
        bound = EXACT
    else:
        onnx = out / "onnx"
        merged = OnnxProgram(onnx / "decoder_model_merged.onnx")
        got, seen = runtime_greedy(OnnxProgram(onnx / "encoder_model.onnx"), merged, merged, feeds, mask,
                                   decoder_prompt(case), MAX_STEPS)
        bound = EXACT
    check_greedy(rec, got, seen, tokens, step_logits, bound)
