#!/bin/bash
# Goldens for causal LMs (decoder-only) from hfx-made checkpoints, with the oracle's own runner:
#   tools/hf_goldens/make_causal_goldens.sh HFX_BINARY ARCH
# runs `HFX_BINARY create-tiny ARCH`, then `$HFO/run.sh` (or run-4.51.sh when HFO_TF=4.51, e.g. for
# qwen3_moe, which 4.47 lacks) on three prompts with --all-logits --greedy 32 (model.generate, greedy,
# no stop at EOS), and writes tests/data/goldens/ARCH-lm.json: per prompt the input ids, the logits of
# every position (7 significant digits) and the 32 greedy tokens. Numbers only; no transformers code.
# GREEDY_METHOD=nocache (gemma3_text): the greedy tokens come from full recomputation at every step, not from
# generate(): 4.51's HybridCache shifts the sliding layers' cache one step early (huggingface/transformers#37574,
# fixed in 4.52; /work/hfo README "Known issues" 1), so its cached continuation is not the model's. The
# golden records the method, and the recomputation must then agree with the oracle's own manual loop.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
HFO="${HFO:-/work/hfo}"
HFX="${1:?usage: make_causal_goldens.sh HFX_BINARY ARCH}"; ARCH="${2:?ARCH}"
TMP="$(mktemp -d /tmp/hfg_causal.XXXXXX)"; trap 'rm -rf "$TMP"' EXIT
"$HFX" create-tiny "$ARCH" -o "$TMP/$ARCH" >/dev/null
RUN="$HFO/run.sh"; [ "${HFO_TF:-4.47}" = "4.51" ] && RUN="$HFO/run-4.51.sh"
"$RUN" "$TMP/$ARCH" --ids 5,17,300,42,9,77 --ids 11,250,3,98,160,401,7,64,33,120,500,2,88 --ids 400,6 \
    --all-logits --greedy 32 --crosscheck --greedy-method "${GREEDY_METHOD:-generate}" >"$TMP/oracle.json"
DEST="${GOLDENS_DIR:-$ROOT/tests/data/goldens}"
/usr/bin/python3 - "$TMP/oracle.json" "$DEST/$ARCH-lm.json" "$ARCH" "${GREEDY_METHOD:-generate}" <<'PY'
import json, sys
src, dst, arch, method = sys.argv[1:]
o = json.load(open(src))
r = {"source": f"hfx create-tiny {arch}", "kind": "causal_lm", "architecture": o["architecture"],
     "model_type": o["model_type"], "transformers_version": o["transformers_version"],
     "torch_version": o["torch_version"], "attn_implementation": o["attn_implementation"], "prompts": []}
if method != "generate":
    r["greedy_method"] = method
for p in o["prompts"]:
    cc = p.get("crosscheck", {})
    if method == "generate":
        assert cc.get("manual_kv_cache_tokens_match") and cc.get("manual_no_cache_tokens_match"), cc
    else:
        assert cc.get("manual_no_cache_tokens_match"), cc
    r["prompts"].append({"input_ids": p["input_ids"],
                         "logits": [[float(f"{x:.7g}") for x in row] for row in p["all_logits"]],
                         "greedy_new_tokens": p["greedy_new_tokens"]})
json.dump(r, open(dst, "w"), separators=(",", ":"))
print("wrote", dst)
PY
