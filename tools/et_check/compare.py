#!/usr/bin/env python3
"""Compares et_run outputs for one architecture with its transformers golden.

  compare.py GOLDEN.json ARCH_DIR   (ARCH_DIR holds prompt<i>.json from et_run, probe.json, probe.stderr,
                                     export.log, status files written by run.sh)
Prints one JSON object (the architecture's report entry) on stdout.

Checks, per golden prompt:
  logits   every position et_run returned against the golden's logits at that position (goldens with
           "logits" [S][V] hold every position; "last_logits" only the last), max |diff| <= TOL
           (1e-4 at f32). A program that returns fewer positions than the golden holds is compared on the
           positions it returns (the last ones) and says so.
  greedy   the first min(32, len(golden)) greedy tokens equal the golden's greedy_new_tokens.
  steps    where the golden has greedy_step_logits (the chosen token's logit at each greedy step), the
           max |diff| with et_run's step_max_logit is reported (informational).
And the out-of-contract probe (a prompt of get_max_seq_len + 1 tokens) must have failed.
"""
import json
import os
import sys

TOL = float(os.environ.get("ET_CHECK_TOL", "1e-4"))
NTOK = int(os.environ.get("ET_CHECK_TOKENS", "32"))
# "report": greedy differences are reported, not failures (run.sh --quantize: the program rounds its
# activations, the golden does not).
GREEDY_REQUIRED = os.environ.get("ET_CHECK_GREEDY", "require") != "report"


def load(p):
    try:
        with open(p) as f:
            return json.load(f)
    except Exception as e:  # noqa: BLE001
        return {"ok": False, "error": {"stage": "et_run output", "name": "unreadable", "detail": f"{p}: {e}"}}


def read(p):
    try:
        with open(p) as f:
            return f.read()
    except OSError:
        return ""


def runtime_log(stderr_text, limit=4):
    """The runtime's first error lines (ET_LOG "E ...": the cause comes first, the kernel-argument trail
    after it) and et_run's own closing line, from et_run's stderr."""
    lines = stderr_text.splitlines()
    errs = [l for l in lines if l.startswith("E ")][:limit]
    return errs + [l for l in lines if l.startswith("et_run:")][-1:]


def main():
    golden_path, d = sys.argv[1], sys.argv[2]
    g = json.load(open(golden_path))
    arch = os.path.basename(d.rstrip("/"))
    rep = {"arch": arch, "golden": os.path.relpath(golden_path), "ok": True, "prompts": [], "problems": []}
    status = read(os.path.join(d, "status")).strip()
    if status:
        rep["ok"] = False
        rep["stage"] = status
        rep["problems"].append(status + ": " + " | ".join(read(os.path.join(d, "status.detail")).strip().splitlines()[-6:]))
        print(json.dumps(rep))
        return
    worst_logit, worst_step = 0.0, 0.0
    first_meta = None
    for i, p in enumerate(g["prompts"]):
        ids = p.get("input_ids", p.get("ids"))
        r = load(os.path.join(d, f"prompt{i}.json"))
        err = read(os.path.join(d, f"prompt{i}.stderr"))
        pr = {"len": len(ids)}
        if not r.get("ok"):
            rep["ok"] = False
            e = r.get("error", {})
            pr["error"] = e
            pr["runtime_log"] = runtime_log(err)
            rep["problems"].append(f"prompt of {len(ids)}: {e.get('stage')}: {e.get('name')} {e.get('detail', '')}; "
                                   + " | ".join(runtime_log(err)))
            rep["prompts"].append(pr)
            continue
        if first_meta is None:
            first_meta = r
        got = r.get("prompt_logits", [])
        if "logits" in g["prompts"][i]:
            want = p["logits"]
        else:
            want = [p["last_logits"]]
        n = min(len(got), len(want))
        if len(got) < len(want):
            pr["note"] = f"the method returned {len(got)} of the golden's {len(want)} positions; compared the last {n}"
        worst = 0.0
        for a, b in zip(got[-n:], want[-n:]):
            if len(a) != len(b):
                rep["ok"] = False
                rep["problems"].append(f"prompt of {len(ids)}: vocab {len(a)} != golden {len(b)}")
                break
            for x, y in zip(a, b):
                x = float(x) if not isinstance(x, str) else float("nan")
                dlt = abs(x - y)
                if dlt != dlt:  # nan
                    dlt = float("inf")
                worst = max(worst, dlt)
        pr["positions_compared"] = n
        pr["max_abs_logit_err"] = worst
        worst_logit = max(worst_logit, worst)
        k = min(NTOK, len(p["greedy_new_tokens"]))
        want_tok = p["greedy_new_tokens"][:k]
        got_tok = r.get("greedy_tokens", [])[:k]
        pr["greedy_match"] = got_tok == want_tok
        pr["greedy_compared"] = k
        if got_tok != want_tok:
            first = next((j for j in range(min(len(got_tok), k)) if got_tok[j] != want_tok[j]), min(len(got_tok), k))
            pr["greedy_first_mismatch"] = first
            pr["greedy_got"] = got_tok
            pr["greedy_want"] = want_tok
            rep["ok"] = rep["ok"] and not GREEDY_REQUIRED
            (rep["problems"] if GREEDY_REQUIRED else rep.setdefault("notes", [])).append(f"prompt of {len(ids)}: greedy tokens differ from step {first} "
                                   f"(got {got_tok[first:first + 4]}, want {want_tok[first:first + 4]})"
                                   + (f"; et_run decoded only {len(got_tok)}" if len(got_tok) < k else ""))
        if "greedy_step_logits" in p:
            s = r.get("step_max_logit", [])[:k]
            ws = max((abs(a - b) for a, b in zip(s, p["greedy_step_logits"][:k])), default=0.0)
            pr["max_abs_step_logit_err"] = ws
            worst_step = max(worst_step, ws)
        if worst > TOL:
            rep["ok"] = False
            rep["problems"].append(f"prompt of {len(ids)}: max |logit err| {worst:.3g} > {TOL:g}")
        pr["prefill_ms"] = r.get("prefill_ms")
        pr["decode_ms_per_token"] = r.get("decode_ms_per_token")
        if r.get("decode_capped"):
            pr["decode_capped"] = r["decode_capped"]
        rep["prompts"].append(pr)
    rep["max_abs_logit_err"] = worst_logit
    if any("max_abs_step_logit_err" in p for p in rep["prompts"]):
        rep["max_abs_step_logit_err"] = worst_step
    if first_meta:
        rep["methods"] = first_meta.get("methods")
        rep["delegates"] = first_meta.get("delegates")
        rep["metadata"] = first_meta.get("metadata")
        rep["threads"] = first_meta.get("threads")
    # The out-of-contract probe must fail.
    pj = load(os.path.join(d, "probe.json"))
    prc = read(os.path.join(d, "probe.rc")).strip()
    perr = read(os.path.join(d, "probe.stderr"))
    probe = {"rc": int(prc) if prc.lstrip("-").isdigit() else None, "what": pj.get("probe")}
    if pj.get("ok") is False:
        probe["error"] = pj.get("error")
    probe["runtime_log"] = runtime_log(perr)
    stage = (pj.get("error") or {}).get("stage", "")
    if probe["rc"] in (None, 0) or pj.get("ok") is not False or "(prefill of" not in stage:
        rep["ok"] = False
        rep["problems"].append("out-of-contract probe (get_max_seq_len + 1 tokens) did not fail"
                               + (f": {pj.get('error')}" if pj.get("error") else ""))
        probe["failed_as_expected"] = False
    else:
        probe["failed_as_expected"] = True
    rep["probe"] = probe
    print(json.dumps(rep))


if __name__ == "__main__":
    main()
