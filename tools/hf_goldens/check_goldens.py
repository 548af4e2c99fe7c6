#!/usr/bin/python3
"""Structural check of hfx-hf-golden/1 files (plain python3, no torch): shapes agree with lengths and value counts,
padding is right-padding with pad_token_id, greedy token lists have max_new_tokens entries, the no-cache
cross-check agreed, batched and batch-1 results agree. Prints one summary line per file; exit 1 on any problem.
  tools/hf_goldens/check_goldens.py FILE.json ..."""
import json
import math
import sys


def check_tensor(t, lengths, where, errs):
    shape, vals = t["shape"], t["values"]
    if len(vals) != shape[0]:
        errs.append(f"{where}: {len(vals)} items for shape {shape}")
        return
    inner = math.prod(shape[2:]) if t["per_token"] else math.prod(shape[1:])
    for b, v in enumerate(vals):
        want = lengths[b] * inner if t["per_token"] else inner
        if len(v) != want:
            errs.append(f"{where}[{b}]: {len(v)} values, want {want}")
        if any(not math.isfinite(x) for x in v):
            errs.append(f"{where}[{b}]: non-finite value")


def check(path):
    errs = []
    with open(path) as f:
        g = json.load(f)
    if g.get("format") != "hfx-hf-golden/1":
        return [f"format {g.get('format')}"], ""
    pad = g["pad_token_id"]
    n_new = g.get("generation", {}).get("max_new_tokens")
    single = {}
    summary = []
    for c in g["cases"]:
        w = f"{c['name']}"
        ids, mask, lengths = c["input_ids"], c["attention_mask"], c["lengths"]
        T = max(lengths)
        for b, L in enumerate(lengths):
            if len(ids[b]) != T or mask[b] != [1] * L + [0] * (T - L) or any(x != pad for x in ids[b][L:]) \
                    or pad in ids[b][:L]:
                errs.append(f"{w}: row {b} is not right-padded with {pad}")
        if g["kind"] == "encoder":
            t = c["output"]
            if t["shape"][0] != len(lengths) or (t["per_token"] and t["shape"][1] != T):
                errs.append(f"{w}: output shape {t['shape']} vs lengths {lengths}")
            check_tensor(t, lengths, w + ".output", errs)
            if "max_abs_diff_vs_batch1" in c and c["max_abs_diff_vs_batch1"] > 1e-4:
                errs.append(f"{w}: batch vs batch-1 differ by {c['max_abs_diff_vs_batch1']}")
            summary.append(f"{w}{t['shape']}")
        else:
            e, d = c["encoder_last_hidden_state"], c["decoder_logits"]
            check_tensor(e, lengths, w + ".encoder_last_hidden_state", errs)
            Td = len(c["decoder_input_ids"][0])
            check_tensor(d, [Td] * len(lengths), w + ".decoder_logits", errs)
            if e["shape"][:2] != [len(lengths), T] or d["shape"][:2] != [len(lengths), Td]:
                errs.append(f"{w}: shapes {e['shape']} {d['shape']}")
            gr = c["greedy"]
            for k in ("argmax", "eos_suppressed"):
                if k in gr and any(len(r) != n_new for r in gr[k]["tokens"]):
                    errs.append(f"{w}: greedy.{k} rows are not {n_new} tokens")
            if not gr["nocache_tokens_match"] or gr["nocache_max_abs_chosen_logit_diff"] > 1e-4:
                errs.append(f"{w}: KV-cache generate and no-cache recomputation disagree")
            for b, row in enumerate(gr["argmax"]["tokens"]):
                key = tuple(ids[b][:lengths[b]])
                if c["name"].startswith("b1_"):
                    single[key] = row
                elif key in single and single[key] != row:
                    errs.append(f"{w}: batched greedy row {b} differs from its batch-1 case")
            es = gr.get("eos_suppressed", {})
            summary.append(f"{w}{e['shape']}{d['shape']}" + ("(eos-suppressed)" if es.get("any_suppressed") else ""))
    head = f"{g['checkpoint']['architecture']} ({g['kind']}/{g['head']}, {g['generator']['transformers_version']})"
    return errs, head + ": " + " ".join(summary)


def main():
    bad = 0
    for p in sys.argv[1:]:
        errs, s = check(p)
        print(("ok   " if not errs else "FAIL ") + p + "  " + s)
        for e in errs:
            print("     " + e)
        bad += bool(errs)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
