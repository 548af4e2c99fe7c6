#!/bin/bash
# Goldens for causal LMs (decoder-only) from hfx-made checkpoints:
#   tools/hf_goldens/make_causal_goldens.sh HFX_BINARY ARCH
# runs `HFX_BINARY create-tiny ARCH`, then make_causal_goldens.py (the project's venv, real transformers) on three
# prompts (lengths 6, 13, 2): the logits of every position (7 significant digits) and 32 greedy tokens, and writes
# tests/data/goldens/ARCH-lm.json. GREEDY_METHOD=nocache|kv|generate (default generate) picks the decoding that is
# written; the other two are cross-checked (see the script's header). GOLDENS_DIR=... writes elsewhere.
# PYTHON=... overrides the interpreter (default: .venv/bin/python of the repository).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
PY="${PYTHON:-$ROOT/.venv/bin/python}"
HFX="${1:?usage: make_causal_goldens.sh HFX_BINARY ARCH}"; ARCH="${2:?ARCH}"
TMP="$(mktemp -d /tmp/hfg_causal.XXXXXX)"; trap 'rm -rf "$TMP"' EXIT
"$HFX" create-tiny "$ARCH" -o "$TMP/$ARCH" >/dev/null
DEST="${GOLDENS_DIR:-$ROOT/tests/data/goldens}"
"$PY" "$HERE/make_causal_goldens.py" "$TMP/$ARCH" -o "$DEST/$ARCH-lm.json" --format all-logits \
    --greedy-method "${GREEDY_METHOD:-generate}" --source "hfx create-tiny $ARCH"
