#!/bin/bash
# Goldens for causal LMs that hfx creates (tests/data/goldens/ARCH-lm.json), from the HF oracle's run.sh
# (real transformers 4.47, see /work/shared/tools/hf-oracle/README.md):
#   tools/hf_goldens/make_nocache_goldens.sh HFX_BINARY ARCH [create-tiny options ...]
# writes, per prompt (lengths 1, 6, 13 by default; IDS="1,2 3,4,5" overrides), the last-position logits and
# 32 greedy tokens decoded by full recomputation (--greedy-method nocache: transformers 4.47's cached Mamba
# decoding is wrong for prompts shorter than conv_kernel - 1, the README's known issue). Numbers only.
# HFO_RUN=$HFO/run-4.51.sh for mamba2 (4.47's chunked scan is wrong from the second chunk on),
# HFO_RUN=tools/hf_goldens/run_granitemoehybrid_oracle.sh for granitemoehybrid (in neither tree).
# HFO_RUN picks another oracle runner, e.g. HFO_RUN=/work/hfo/run-new.sh (transformers 4.56.2, for lfm2; see
# /work/hfo/NEW_TREE.md).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
HFO="${HFO:-/work/hfo}"
HFX="${1:?usage: make_nocache_goldens.sh HFX_BINARY ARCH [create-tiny options]}"; ARCH="${2:?ARCH}"; shift 2
IDS="${IDS:-7 5,17,29,41,53,65 3,9,27,81,243,217,139,149,179,269,295,373,107}"
TMP="$(mktemp -d /tmp/hfg_causal.XXXXXX)"; trap 'rm -rf "$TMP"' EXIT
"$HFX" create-tiny "$ARCH" -o "$TMP/$ARCH" "$@" >/dev/null
args=()
for p in $IDS; do args+=(--ids "$p"); done
# HFO_RUN: another runner with run.sh's interface (run_granitemoehybrid_oracle.sh for granitemoehybrid).
"${HFO_RUN:-$HFO/run.sh}" "$TMP/$ARCH" "${args[@]}" --greedy 32 --greedy-method nocache >"$TMP/oracle.json"
DEST="${GOLDENS_DIR:-$ROOT/tests/data/goldens}"
mkdir -p "$DEST"
/usr/bin/python3 - "$TMP/oracle.json" "$TMP/$ARCH/model.safetensors" "$DEST/$ARCH-lm.json" "hfx create-tiny $ARCH${*:+ $*}" "$IDS" <<'PY'
import hashlib, json, sys
src, weights, out, source, ids = sys.argv[1:]
o = json.load(open(src))
prompts = [[int(x) for x in p.split(",")] for p in ids.split()]
g = {"source": source, "transformers_version": o["transformers_version"], "torch_version": o["torch_version"],
     "architecture": o["architecture"], "weights_sha256": hashlib.sha256(open(weights, "rb").read()).hexdigest(),
     "greedy_method": "nocache", "prompts": []}
for ids_, p in zip(prompts, o["prompts"]):
    assert "no cache" in p["greedy_method"], p["greedy_method"]
    g["prompts"].append({"ids": ids_, "last_logits": p["last_logits"], "greedy_new_tokens": p["greedy_new_tokens"],
                        "greedy_step_logits": p["greedy_step_logits"]})
json.dump(g, open(out, "w"))
print("wrote", out)
PY
