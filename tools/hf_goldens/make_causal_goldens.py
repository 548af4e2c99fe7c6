#!/usr/bin/env python3
"""Goldens for decoder-only LMs (tests/data/goldens/ARCH-lm.json) from the real transformers on a checkpoint
folder, normally one that `hfx create-tiny ARCH` wrote (make_causal_goldens.sh / make_nocache_goldens.sh do that).
Run with the project's venv: .venv/bin/python tools/hf_goldens/make_causal_goldens.py CKPT -o OUT.json [options]

The model is architectures[0].from_pretrained(CKPT) in float32 with eager attention, CPU, eval, every weight from
the file (hfg_common.load). Each prompt is run batch-1 with an all-ones attention_mask. Greedy decoding is plain
argmax for N steps (no EOS stop, no logits processors), by three methods:
  generate: model.generate(do_sample=False, num_beams=1, eos_token_id=None) with model.generation_config replaced
            by that plain config (nothing from generation_config.json applies);
  kv:       a manual loop with the model's cache (past_key_values / cache_params);
  nocache:  a manual loop that recomputes the whole sequence every step.
--greedy-method picks the one written; the tokens must equal nocache's (the mathematically exact continuation),
and generate and kv are cross-checked too (a disagreement is an error for --greedy-method generate, otherwise
recorded under "crosscheck").

--format all-logits (make_causal_goldens.sh; tests/models/causal_goldens_test.cpp):
  {"source", "kind": "causal_lm", "architecture", "model_type", "transformers_version", "torch_version",
   "attn_implementation", ["greedy_method"], ["notes"], "crosscheck",
   "prompts": [{"input_ids", "logits": [[V floats] per position] (7 significant digits), "greedy_new_tokens"}]}
--format nocache (make_nocache_goldens.sh; tests/models/ssm_test_util.h, lfm2_test.cpp):
  {"source", "transformers_version", "torch_version", "architecture", "weights_sha256", "greedy_method",
   ["notes"], "crosscheck",
   "prompts": [{"ids", "last_logits": [V floats], "greedy_new_tokens", "greedy_step_logits": [N floats]}]}
  (floats at full float32 precision; greedy_step_logits = the chosen token's logit at every step)
"""
import argparse
import copy
import inspect
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hfg_common as C  # noqa: E402

import torch  # noqa: E402
import transformers  # noqa: E402
from transformers import GenerationConfig  # noqa: E402

DEFAULT_IDS = {
    "all-logits": ["5,17,300,42,9,77", "11,250,3,98,160,401,7,64,33,120,500,2,88", "400,6"],
    "nocache": ["7", "5,17,29,41,53,65", "3,9,27,81,243,217,139,149,179,269,295,373,107"],
}


def f32(t):
    return [float(x) for x in t.detach().to(torch.float32).reshape(-1).tolist()]


def pick(out, seq, toks, rows):
    """Greedy step bookkeeping: the last position's logits, its argmax appended to the sequence."""
    row = out.logits[0, -1]
    toks.append(int(row.argmax()))
    rows.append(row)
    seq.append(toks[-1])


def greedy_nocache(model, ids, n):
    seq, toks, rows = list(ids), [], []
    for _ in range(n):
        pick(model(input_ids=torch.tensor([seq]), attention_mask=torch.ones(1, len(seq), dtype=torch.long),
                   use_cache=False), seq, toks, rows)
    return toks, rows


def greedy_kv(model, ids, n):
    params = inspect.signature(model.forward).parameters
    ssm = "cache_params" in params and "past_key_values" not in params
    seq, toks, rows, past = list(ids), [], [], None
    for step in range(n):
        new = seq if step == 0 else seq[-1:]
        kw = {"input_ids": torch.tensor([new]), "use_cache": True}
        if ssm:
            kw["cache_params"] = past
            kw["cache_position"] = (torch.arange(0, model.config.conv_kernel) if step == 0
                                    else torch.tensor([len(seq) - 1]))
        else:
            kw["attention_mask"] = torch.ones(1, len(seq), dtype=torch.long)
            kw["past_key_values"] = past
            if "cache_position" in params:
                kw["cache_position"] = torch.arange(len(seq) - len(new), len(seq))
        out = model(**kw)
        past = out.cache_params if ssm else out.past_key_values
        pick(out, seq, toks, rows)
    return toks, rows


def greedy_generate(model, ids, n):
    cfg = model.config.get_text_config() if hasattr(model.config, "get_text_config") else model.config
    gc = GenerationConfig(do_sample=False, num_beams=1, max_new_tokens=n, min_new_tokens=0, output_scores=True,
                          return_dict_in_generate=True, use_cache=True, eos_token_id=None,
                          pad_token_id=cfg.pad_token_id if cfg.pad_token_id is not None else 0,
                          bos_token_id=cfg.bos_token_id)
    saved = model.generation_config
    model.generation_config = copy.deepcopy(gc)  # generate() back-fills defaults from model.generation_config
    try:
        out = model.generate(input_ids=torch.tensor([ids]), attention_mask=torch.ones(1, len(ids), dtype=torch.long),
                             generation_config=gc)
    finally:
        model.generation_config = saved
    new = out.sequences[0, len(ids):].tolist()
    return new, [s[0] for s in out.scores]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("ckpt")
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--format", choices=["all-logits", "nocache"], default="all-logits")
    ap.add_argument("--ids", action="append", default=[], help="comma-separated prompt ids (repeatable; default: "
                    "the format's three prompts)")
    ap.add_argument("--greedy", type=int, default=32)
    ap.add_argument("--greedy-method", choices=["generate", "kv", "nocache"], default=None,
                    help="default: generate for all-logits, nocache for nocache")
    ap.add_argument("--source", default="")
    args = ap.parse_args()
    C.setup()
    method = args.greedy_method or ("generate" if args.format == "all-logits" else "nocache")
    prompts = [[int(x) for x in s.split(",") if x] for s in (args.ids or DEFAULT_IDS[args.format])]

    config = transformers.AutoConfig.from_pretrained(args.ckpt)
    notes = []
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    pad = getattr(text, "pad_token_id", None)
    if pad is not None and not 0 <= pad < text.vocab_size:
        # e.g. Phi3Config's default pad_token_id 32000 when config.json has none: the embedding's padding_idx
        # must lie in the vocabulary; it does not enter the forward pass
        notes.append(f"config pad_token_id {pad} (a class default outside vocab_size {text.vocab_size}) set to None")
        text.pad_token_id = None
    model, load_notes = C.load(args.ckpt, config=config)
    notes += load_notes

    runs = {"nocache": greedy_nocache, "kv": greedy_kv, "generate": greedy_generate}
    res_prompts, crosscheck = [], []
    with torch.no_grad():
        for ids in prompts:
            out = model(input_ids=torch.tensor([ids]), attention_mask=torch.ones(1, len(ids), dtype=torch.long),
                        use_cache=False)
            logits = out.logits[0]
            dec, cc = {}, {}
            for name, fn in runs.items():
                try:
                    dec[name] = fn(model, list(ids), args.greedy)
                except Exception as e:  # noqa: BLE001  (recorded; the chosen method must not fail)
                    cc[name + "_error"] = f"{type(e).__name__}: {e}"
            if method not in dec:
                raise SystemExit(f"greedy method {method} failed: {cc}")
            toks, rows = dec[method]
            for name, (t2, r2) in dec.items():
                if name == method:
                    continue
                cc[name + "_tokens_match"] = t2 == toks
                if t2 == toks:
                    cc[name + "_max_abs_chosen_logit_diff"] = C.g7(max(
                        abs(float(a[t]) - float(b[t])) for a, b, t in zip(rows, r2, toks)))
            if not cc.get("nocache_tokens_match", method == "nocache"):
                raise SystemExit(f"prompt {ids}: {method} tokens differ from full recomputation: {cc}")
            if method == "generate" and not cc.get("kv_tokens_match"):
                raise SystemExit(f"prompt {ids}: generate() and the manual cached loop differ: {cc}")
            crosscheck.append(cc)
            if args.format == "all-logits":
                res_prompts.append({"input_ids": ids, "logits": [C.r7(f32(x)) for x in logits],
                                    "greedy_new_tokens": toks})
            else:
                res_prompts.append({"ids": ids, "last_logits": f32(logits[-1]), "greedy_new_tokens": toks,
                                    "greedy_step_logits": [float(r[t]) for r, t in zip(rows, toks)]})
            print(f"prompt of {len(ids)}: {method} {toks[:8]}... {cc}", file=sys.stderr)

    arch = type(model).__name__
    if args.format == "all-logits":
        g = {"source": args.source, "kind": "causal_lm", "architecture": arch, "model_type": config.model_type,
             **C.versions(), "attn_implementation": model.config._attn_implementation}
        if method != "generate":
            g["greedy_method"] = method
    else:
        g = {"source": args.source, **C.versions(), "architecture": arch,
             "weights_sha256": C.sha256(os.path.join(args.ckpt, "model.safetensors")), "greedy_method": method}
    if notes:
        g["notes"] = notes
    g["crosscheck"] = crosscheck
    g["prompts"] = res_prompts
    C.write_json(args.out, g)
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
