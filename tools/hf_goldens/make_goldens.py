#!/usr/bin/python3
"""make_goldens.py: golden numbers from the REAL Hugging Face transformers modeling code (float32, eager attention,
CPU, eval) for encoder-only and seq2seq checkpoints, written as compact JSON for hfx's C++ tests.

Run it with the project's venv (see tools/hf_goldens/README.md):
  tools/hf_goldens/make_goldens.sh CKPT -o OUT.json [options]          (= .venv/bin/python tools/hf_goldens/make_goldens.py)
  CKPT: a folder in the Hugging Face layout, config.json + model.safetensors (or a sharded index), e.g. from
        `hfx create-tiny ARCH -o CKPT`.
Options:
  --ids 5,6,7 (repeatable)  input id rows (encoder inputs). Default: 3 rows of lengths 6, 13, 2 drawn from a fixed
                            numpy rng over non-special ids (seq2seq rows end with eos_token_id, as tokenizers do).
  --decoder-ids 0,9,8       seq2seq: teacher-forcing decoder row (default: decoder_start_token_id + 5 fixed ids)
  --max-new-tokens 32       seq2seq greedy length
  --arch CLASS              class to load instead of config.architectures[0] (e.g. BertModel from a
                            BertForMaskedLM checkpoint: keys of the dropped head are then ignored, and noted)
  --digits 7                significant digits kept for floats
  --no-single / --no-batch  skip the batch-1 cases / the padded batch case
  --source TEXT             provenance stored in checkpoint.source (e.g. "hfx create-tiny bert --seed 0")
Model class: getattr(transformers, architectures[0]).from_pretrained(CKPT, dtype=float32, attn_implementation="eager")
after torch.manual_seed(0), .eval() (hfg_common.load). Every weight must come from the file; tied tensors that the
file omits are tied by transformers. The only keys allowed to be missing are ones transformers itself ignores when
missing (class._keys_to_ignore_on_load_missing, e.g. Bart's final_logits_bias = zeros, Marian's sinusoidal
embed_positions) and a base model's pooler (then built with add_pooling_layer=False; the pooler does not affect
last_hidden_state); all are listed in load_notes.

JSON format ("format": "hfx-hf-golden/1"). Floats are rounded to --digits significant digits.
{
  "format": "hfx-hf-golden/1",
  "generator": {"script", "transformers_version", "torch_version", "attn_implementation": "eager",
                "dtype": "float32", "digits"},
  "checkpoint": {"source" (--source text or null), "architecture", "model_type", "config_sha256",
                 "weights_sha256" (of model.safetensors),
                 "load_notes": [...]},
  "kind": "encoder" | "seq2seq",
  "head": "base" | "mlm" | "seqcls" | "tokcls" | "lm",
  "pad_token_id": P,            # padding value used in input_ids (right padding); ids rows never contain it
  "special_tokens": {"bos_token_id", "eos_token_id", "pad_token_id", "decoder_start_token_id", ...} (those set),
  "cases": [ CASE, ... ],       # one batch-1 case per row ("b1_rowK"), then one padded batch of all rows
                                # ("batch"), rows padded RIGHT with pad_token_id, attention_mask 1/0
  # seq2seq only:
  "generation": {"max_new_tokens": N, "hf_default_generation_config": {...non-default GenerationConfig fields
                 that model.generate() would use: forced_bos/eos_token_id, no_repeat_ngram_size, bad_words_ids,
                 num_beams, max_length, ...}, "generation_config_json": {...file contents} | null}
}
TENSOR (an output): {"shape": [B, T, D] (the HF tensor's shape) or [B, L], "per_token": bool,
                     "values": [[...], ...]}  # values[b] = row-major floats of item b; when per_token, only its
                                                # first lengths[b] positions (the attention_mask==1 ones), i.e.
                                                # lengths[b]*D floats; padded query positions are not stored.
CASE (encoder):  {"name", "input_ids": [[...]] (padded), "attention_mask": [[...]], "lengths": [...],
                  "output_name": "last_hidden_state" | "logits", "output": TENSOR,
                  "max_abs_diff_vs_batch1": float (batch case only: HF's own padding invariance)}
CASE (seq2seq):  {"name", "input_ids", "attention_mask", "lengths",
                  "encoder_last_hidden_state": TENSOR (per_token),
                  "decoder_input_ids": [[...]] (the same row for every item; no decoder padding),
                  "decoder_logits": TENSOR [B, Tdec, V] (all decoder positions, teacher forcing),
                  "greedy": {
                    "decoder_start_token_id": S,
                    "argmax": {"tokens": [[N ids] per item], "chosen_logits": [[N]],
                               "first_eos_index": [int|null per item]},
                       # plain argmax for N steps from [S]; no logits processors, EOS not special (may be emitted
                       # and decoding continues); generate(do_sample=False, num_beams=1, max_new_tokens=N,
                       # eos_token_id=None) and a full-recompute loop agree (nocache_* fields)
                    "eos_suppressed": {"tokens", "chosen_logits" (raw logits), "eos_suppressed_steps": [[step,...]]
                       per item (steps where the raw argmax was EOS and was masked), "any_suppressed": bool},
                       # generate(..., eos_token_id=EOS, min_new_tokens=N): EOS logit set to -inf every step, so
                       # exactly N tokens; identical to "argmax" when any_suppressed is false
                    "hf_default": {"settings": {...effective non-default generation settings},
                                   "decoder_start_token_id" (the one generate() really used),
                                   "tokens": [[...]] (up to and including the first EOS), "stopped_at_eos": [bool]}
                                  or {"error": "..."} when generate() refuses (e.g. a generation_config.json
                                  without decoder_start_token_id for T5),
                       # what model.generate(input_ids, attention_mask=..., do_sample=False, num_beams=1,
                       # max_new_tokens=N) gives with the checkpoint's own generation defaults (forced BOS/EOS,
                       # no_repeat_ngram_size, bad_words_ids, ... as in hf_default_generation_config)
                    "nocache_tokens_match": bool, "nocache_max_abs_chosen_logit_diff": float}}
"""
import argparse
import copy
import json
import os
import re
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import hfg_common as C  # noqa: E402  (tools/hf_goldens/hfg_common.py: offline set-up, loader)

import transformers  # noqa: E402
from transformers import AutoConfig, GenerationConfig  # noqa: E402

FORMAT = "hfx-hf-golden/1"
SPECIAL_KEYS = ("bos_token_id", "eos_token_id", "pad_token_id", "decoder_start_token_id", "cls_token_id",
                "sep_token_id", "unk_token_id", "mask_token_id", "forced_bos_token_id", "forced_eos_token_id")


def parse_ids(s):
    return [int(x) for x in s.replace(" ", "").split(",") if x != ""]


def head_of(arch, config):
    if config.is_encoder_decoder:
        if arch.endswith("ForConditionalGeneration") or arch.endswith("MTModel"):
            return "seq2seq", "lm"
        raise SystemExit(f"{arch}: only the ...ForConditionalGeneration / MarianMTModel seq2seq heads are supported")
    for suffix, head in (("ForMaskedLM", "mlm"), ("ForSequenceClassification", "seqcls"),
                         ("ForTokenClassification", "tokcls"), ("Model", "base")):
        if arch.endswith(suffix):
            if arch.endswith("ForCausalLM") or getattr(config, "is_decoder", False):
                break
            return "encoder", head
    raise SystemExit(f"{arch}: not an encoder-only (Model/ForMaskedLM/ForSequenceClassification/"
                     f"ForTokenClassification) or seq2seq class; use make_causal_goldens.py for causal LMs")


def build(ckpt, arch_override):
    with open(os.path.join(ckpt, "config.json")) as f:
        raw = json.load(f)
    arch = arch_override or (raw.get("architectures") or [None])[0]
    if not arch:
        raise SystemExit("config.json has no architectures[0]; pass --arch")
    if not hasattr(transformers, arch):
        raise SystemExit(f"transformers {transformers.__version__} has no class {arch}")
    config = AutoConfig.from_pretrained(ckpt)
    if hasattr(config, "reference_compile"):
        config.reference_compile = False  # ModernBERT: never torch.compile (transformers turns it off on CPU too)
    kind, head = head_of(arch, config)
    cls = getattr(transformers, arch)
    # keys transformers itself ignores when missing (Bart's final_logits_bias = zeros, Marian's sinusoidal
    # embed_positions): they keep transformers' own value
    ignore = list(getattr(cls, "_keys_to_ignore_on_load_missing", None) or [])
    other_head = [r".*"] if arch_override else []  # --arch: keys of another head are dropped
    try:
        model, notes = C.load(ckpt, cls, copy.deepcopy(config), allow_missing=ignore, allow_unexpected=other_head)
    except SystemExit as e:
        # a base model whose checkpoint has no pooler: rebuilt without it (it does not affect last_hidden_state)
        if "add_pooling_layer" not in cls.__init__.__code__.co_varnames or "pooler" not in str(e):
            raise
        model, notes = C.load(ckpt, cls, copy.deepcopy(config), allow_missing=ignore, allow_unexpected=other_head,
                              add_pooling_layer=False)
        notes.append("no pooler weights in the checkpoint: built with add_pooling_layer=False (the pooler does "
                     "not affect last_hidden_state)")
    return config, arch, kind, head, model, notes


def special_tokens(ckpt, config):
    """The special ids config.json sets (transformers 5 keeps some, e.g. forced_bos_token_id, only in the
    generation config), else the config class's value."""
    with open(os.path.join(ckpt, "config.json")) as f:
        raw = json.load(f)
    out = {}
    for k in SPECIAL_KEYS:
        v = raw[k] if k in raw else getattr(config, k, None)
        if v is not None:
            out[k] = v
    return out


def rounder(digits):
    def r(x):
        return float(f"{x:.{digits}g}")
    return r


def tensor_json(t, lengths, per_token, r):
    t = t.detach().to(torch.float32)
    vals = []
    for b in range(t.shape[0]):
        x = t[b, :lengths[b]] if per_token else t[b]
        vals.append([r(v) for v in x.reshape(-1).tolist()])
    return {"shape": list(t.shape), "per_token": per_token, "values": vals}


def default_rows(config, seq2seq, vocab):
    specials = {getattr(config, k, None) for k in SPECIAL_KEYS}
    specials = {s for s in specials if isinstance(s, int)}
    pool = [i for i in range(3, vocab) if i not in specials]
    rng = np.random.default_rng(1234)
    rows = []
    for n in (6, 13, 2):
        body = [int(pool[i]) for i in rng.integers(0, len(pool), size=n - (1 if seq2seq else 0))]
        if seq2seq and isinstance(getattr(config, "eos_token_id", None), int):
            body.append(getattr(config, "eos_token_id", None))
        rows.append(body)
    dec_body = [int(pool[i]) for i in rng.integers(0, len(pool), size=5)]
    return rows, dec_body


def pad_batch(rows, pad):
    T = max(len(r) for r in rows)
    ids = [r + [pad] * (T - len(r)) for r in rows]
    mask = [[1] * len(r) + [0] * (T - len(r)) for r in rows]
    return torch.tensor(ids, dtype=torch.long), torch.tensor(mask, dtype=torch.long)


def non_default_generation_fields(gc):
    """Fields of gc that differ from GenerationConfig()'s value and from the global default generate() fills in."""
    blank = GenerationConfig()
    defaults = {**blank.to_dict(), **blank._get_default_generation_params()}
    d = {k: v for k, v in gc.to_dict().items() if v is not None and v != defaults.get(k)}
    for k in ("transformers_version", "_from_model_config", "output_attentions", "output_hidden_states", "use_cache"):
        d.pop(k, None)
    return d


def run_generate(model, gc, ids, mask, dec_start):
    model.generation_config = copy.deepcopy(gc)  # generate() back-fills special tokens from model.generation_config
    B = ids.shape[0]
    out = model.generate(input_ids=ids, attention_mask=mask, generation_config=gc, synced_gpus=False,
                         decoder_input_ids=torch.full((B, 1), dec_start, dtype=torch.long))
    return out


def greedy_all(model, config, ids, mask, dec_start, n, r):
    B = ids.shape[0]
    pad = getattr(config, "pad_token_id", None) if getattr(config, "pad_token_id", None) is not None else 0
    eos = getattr(config, "eos_token_id", None)
    eos_list = [eos] if isinstance(eos, int) else list(eos or [])
    base = dict(do_sample=False, num_beams=1, max_new_tokens=n, output_scores=True, output_logits=True,
                return_dict_in_generate=True, use_cache=True, pad_token_id=pad, bos_token_id=getattr(config, "bos_token_id", None),
                decoder_start_token_id=dec_start)
    g = {"decoder_start_token_id": dec_start}

    # 1) plain argmax, EOS not special
    gc = GenerationConfig(**base, eos_token_id=None)
    out = run_generate(model, gc, ids, mask, dec_start)
    toks = out.sequences[:, 1:]
    assert toks.shape[1] == n, toks.shape
    chosen = [[float(out.logits[s][b, toks[b, s]]) for s in range(n)] for b in range(B)]
    g["argmax"] = {"tokens": toks.tolist(), "chosen_logits": [[r(x) for x in row] for row in chosen]}
    g["argmax"]["first_eos_index"] = [next((i for i, t in enumerate(row) if t in eos_list), None)
                                      for row in toks.tolist()]

    # full-recomputation loop (no KV cache) for the same thing
    dec = torch.full((B, 1), dec_start, dtype=torch.long)
    enc = None
    nc_toks, nc_chosen = [], []
    for _ in range(n):
        kw = {"attention_mask": mask, "decoder_input_ids": dec, "use_cache": False, "return_dict": True}
        kw.update({"encoder_outputs": enc} if enc is not None else {"input_ids": ids})
        o = model(**kw)
        if enc is None:
            enc = (o.encoder_last_hidden_state,)
        row = o.logits[:, -1]
        t = row.argmax(-1)
        nc_toks.append(t)
        nc_chosen.append(row.gather(1, toks[:, len(nc_toks) - 1:len(nc_toks)])[:, 0])
        dec = torch.cat([dec, toks[:, len(nc_toks) - 1:len(nc_toks)]], 1)  # teacher-force generate()'s tokens
    nc_toks = torch.stack(nc_toks, 1)
    g["nocache_tokens_match"] = bool(torch.equal(nc_toks, toks))
    g["nocache_max_abs_chosen_logit_diff"] = float(
        max(abs(float(nc_chosen[s][b]) - chosen[b][s]) for b in range(B) for s in range(n)))

    # 2) EOS suppressed by min_new_tokens=n
    if eos_list:
        gc = GenerationConfig(**base, eos_token_id=eos, min_new_tokens=n)
        out = run_generate(model, gc, ids, mask, dec_start)
        t2 = out.sequences[:, 1:]
        assert t2.shape[1] == n, t2.shape
        steps = [[s for s in range(n) if int(out.logits[s][b].argmax()) in eos_list] for b in range(B)]
        g["eos_suppressed"] = {
            "eos_token_id": eos,
            "tokens": t2.tolist(),
            "chosen_logits": [[r(float(out.logits[s][b, t2[b, s]])) for s in range(n)] for b in range(B)],
            "eos_suppressed_steps": steps,
            "any_suppressed": any(steps),
            "same_as_argmax": bool(torch.equal(t2, toks)),
        }

    # 3) what a user's model.generate(do_sample=False, num_beams=1, max_new_tokens=n) gives with the checkpoint's
    #    own generation defaults (forced BOS/EOS, no_repeat_ngram_size, bad_words_ids, ...), stopping at EOS
    try:
        g["hf_default"] = hf_default_greedy(model, ids, mask, n)
    except Exception as e:  # e.g. no decoder_start_token_id/bos_token_id in generation_config.json
        g["hf_default"] = {"error": f"{type(e).__name__}: {e}"}
    return g


def hf_default_greedy(model, ids, mask, n):
    model.generation_config = copy.deepcopy(model._hfg_default_generation_config)
    over = dict(do_sample=False, num_beams=1, max_new_tokens=n, output_scores=True,
                return_dict_in_generate=True, synced_gpus=False)
    eff, _ = model._prepare_generation_config(None, **{k: v for k, v in over.items() if k != "synced_gpus"})
    out = model.generate(input_ids=ids, attention_mask=mask, **over)
    seqs = out.sequences[:, 1:].tolist()
    eff_eos = eff.eos_token_id
    eff_eos = [eff_eos] if isinstance(eff_eos, int) else list(eff_eos or [])
    hf_toks, stopped = [], []
    for row in seqs:
        k = next((i for i, t in enumerate(row) if t in eff_eos), None)
        hf_toks.append(row[:k + 1] if k is not None else row)
        stopped.append(k is not None)
    settings = non_default_generation_fields(eff)
    for k in ("output_scores", "return_dict_in_generate"):
        settings.pop(k, None)
    return {"settings": settings, "decoder_start_token_id": int(out.sequences[0, 0]), "tokens": hf_toks,
            "stopped_at_eos": stopped}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("ckpt")
    ap.add_argument("-o", "--out", help="output JSON (default: stdout)")
    ap.add_argument("--ids", action="append", default=[], help="comma-separated input ids (repeatable)")
    ap.add_argument("--decoder-ids", help="seq2seq teacher-forcing decoder row (default: start + 5 ids)")
    ap.add_argument("--max-new-tokens", type=int, default=32)
    ap.add_argument("--arch", help="class to load (default: config.architectures[0])")
    ap.add_argument("--digits", type=int, default=7)
    ap.add_argument("--no-single", action="store_true", help="skip the batch-1 cases")
    ap.add_argument("--no-batch", action="store_true", help="skip the padded batch case")
    ap.add_argument("--source", help="provenance recorded as checkpoint.source, e.g. 'hfx create-tiny bert --seed 0'")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    C.setup(args.threads)
    r = rounder(args.digits)

    config, arch, kind, head, model, notes = build(args.ckpt, args.arch)
    seq2seq = kind == "seq2seq"
    vocab = config.vocab_size
    pad = getattr(config, "pad_token_id", None) if getattr(config, "pad_token_id", None) is not None else 0
    rows, dec_body = default_rows(config, seq2seq, vocab)
    if args.ids:
        rows = [parse_ids(s) for s in args.ids]
    for row in rows:
        if not row or any(not 0 <= t < vocab for t in row):
            raise SystemExit(f"bad id row {row} (vocab {vocab})")
        if pad in row:
            raise SystemExit(f"id row {row} contains pad_token_id {pad} (RoBERTa-style position ids and the padding "
                             f"convention need rows without it)")

    res = {
        "format": FORMAT,
        "generator": {"script": "tools/hf_goldens/make_goldens.py", "transformers_version": transformers.__version__,
                      "torch_version": torch.__version__, "attn_implementation": model.config._attn_implementation,
                      "dtype": "float32", "digits": args.digits},
        "checkpoint": {"source": args.source, "architecture": arch, "model_type": config.model_type,
                       "config_sha256": C.sha256(os.path.join(args.ckpt, "config.json")),
                       "weights_sha256": (C.sha256(os.path.join(args.ckpt, "model.safetensors"))
                                          if os.path.exists(os.path.join(args.ckpt, "model.safetensors")) else None),
                       "load_notes": notes},
        "kind": kind,
        "head": head,
        "pad_token_id": pad,
        "special_tokens": special_tokens(args.ckpt, config),
        "cases": [],
    }

    batches = []
    if not args.no_single:
        batches += [(f"b1_row{i}", [row]) for i, row in enumerate(rows)]
    if not args.no_batch and len(rows) > 1:
        batches.append(("batch", rows))

    dec_start = None
    if seq2seq:
        dec_start = getattr(config, "decoder_start_token_id", None)
        if dec_start is None:
            dec_start = getattr(config, "bos_token_id", None)
        dec_row = parse_ids(args.decoder_ids) if args.decoder_ids else [dec_start] + dec_body
        gen_json = os.path.join(args.ckpt, "generation_config.json")
        res_gen_file = None
        if os.path.exists(gen_json):
            with open(gen_json) as f:
                res_gen_file = json.load(f)
        # what from_pretrained() set: generation_config.json, else GenerationConfig.from_model_config(config)
        model._hfg_default_generation_config = copy.deepcopy(model.generation_config)
        res["generation"] = {
            "max_new_tokens": args.max_new_tokens,
            "hf_default_generation_config": non_default_generation_fields(model._hfg_default_generation_config),
            "generation_config_json": res_gen_file,
        }

    single_out = {}
    with torch.no_grad():
        for name, rws in batches:
            ids, mask = pad_batch(rws, pad)
            lengths = [len(x) for x in rws]
            case = {"name": name, "input_ids": ids.tolist(), "attention_mask": mask.tolist(), "lengths": lengths}
            if not seq2seq:
                out = model(input_ids=ids, attention_mask=mask, return_dict=True)
                if head == "base":
                    name_out, t = "last_hidden_state", out.last_hidden_state
                else:
                    name_out, t = "logits", out.logits
                per_token = t.dim() == 3
                case["output_name"] = name_out
                case["output"] = tensor_json(t, lengths, per_token, r)
                if name.startswith("b1_"):
                    single_out[tuple(rws[0])] = t[0]
                elif single_out:
                    d = 0.0
                    for b, row in enumerate(rws):
                        ref = single_out.get(tuple(row))
                        if ref is not None:
                            x = t[b, :len(row)] if per_token else t[b]
                            d = max(d, float((x - ref).abs().max()))
                    case["max_abs_diff_vs_batch1"] = d
            else:
                B = ids.shape[0]
                dec = torch.tensor([dec_row] * B, dtype=torch.long)
                out = model(input_ids=ids, attention_mask=mask, decoder_input_ids=dec, use_cache=False,
                            return_dict=True)
                case["encoder_last_hidden_state"] = tensor_json(out.encoder_last_hidden_state, lengths, True, r)
                case["decoder_input_ids"] = dec.tolist()
                case["decoder_logits"] = tensor_json(out.logits, [dec.shape[1]] * B, True, r)
                case["greedy"] = greedy_all(model, config, ids, mask, dec_start, args.max_new_tokens, r)
            res["cases"].append(case)

    text = dumps(res)
    if args.out:
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        tmp = args.out + ".tmp"
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, args.out)
    else:
        sys.stdout.write(text)


def dumps(obj, indent=0):
    """JSON with dicts indented and lists of scalars (or lists of lists of scalars) kept on one line."""
    pad = "  " * indent
    if isinstance(obj, dict):
        if not obj:
            return "{}"
        items = [f'{pad}  {json.dumps(k)}: {dumps(v, indent + 1).lstrip()}' for k, v in obj.items()]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}" + ("\n" if indent == 0 else "")
    if isinstance(obj, list):
        if all(not isinstance(x, (dict, list)) for x in obj):
            return json.dumps(obj, separators=(",", ":"))
        if all(isinstance(x, list) and all(not isinstance(y, (dict, list)) for y in x) for x in obj):
            return "[\n" + ",\n".join(pad + "  " + json.dumps(x, separators=(",", ":")) for x in obj) + "\n" + pad + "]"
        return "[\n" + ",\n".join(pad + "  " + dumps(x, indent + 1).lstrip() for x in obj) + "\n" + pad + "]"
    return json.dumps(obj)


if __name__ == "__main__":
    main()
