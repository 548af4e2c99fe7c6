#!/bin/bash
# Goldens for causal LMs whose tests read the last-position logits and the greedy step logits (mamba, mamba2,
# granitemoehybrid, lfm2: tests/models/ssm_test_util.h, lfm2_test.cpp):
#   tools/hf_goldens/make_nocache_goldens.sh HFX_BINARY ARCH [create-tiny options ...]
# runs `HFX_BINARY create-tiny ARCH [options]`, then make_causal_goldens.py --format nocache (the project's venv,
# real transformers) and writes tests/data/goldens/ARCH-lm.json: per prompt (lengths 1, 6, 13 by default;
# IDS="1,2 3,4,5" overrides) the last-position logits and 32 greedy tokens decoded by full recomputation with
# their step logits, plus the checkpoint's sha256. generate() and the manual cached loop are cross-checked and
# the result recorded under "crosscheck". GOLDENS_DIR=... writes elsewhere; PYTHON=... overrides the interpreter.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
PY="${PYTHON:-$ROOT/.venv/bin/python}"
HFX="${1:?usage: make_nocache_goldens.sh HFX_BINARY ARCH [create-tiny options]}"; ARCH="${2:?ARCH}"; shift 2
IDS="${IDS:-7 5,17,29,41,53,65 3,9,27,81,243,217,139,149,179,269,295,373,107}"
TMP="$(mktemp -d /tmp/hfg_causal.XXXXXX)"; trap 'rm -rf "$TMP"' EXIT
"$HFX" create-tiny "$ARCH" -o "$TMP/$ARCH" "$@" >/dev/null
args=()
for p in $IDS; do args+=(--ids "$p"); done
DEST="${GOLDENS_DIR:-$ROOT/tests/data/goldens}"
"$PY" "$HERE/make_causal_goldens.py" "$TMP/$ARCH" -o "$DEST/$ARCH-lm.json" --format nocache "${args[@]}" \
    --greedy-method nocache --source "hfx create-tiny $ARCH${*:+ $*}"
