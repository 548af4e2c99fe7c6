#!/bin/bash
# Goldens for tests/data/goldens/ from hfx-made checkpoints (the only ones whose goldens get committed):
#   tools/hf_goldens/make_from_hfx.sh HFX_BINARY ARCH [create-tiny options ...]
# runs `HFX_BINARY create-tiny ARCH -o $TMP/ARCH [options]`, then make_goldens.sh on it, and writes
# tests/data/goldens/ARCH-HEAD.json (HEAD from the class in config.architectures[0]: base, mlm, seqcls, tokcls, lm).
# NAME=... overrides the ARCH part of the file name (e.g. NAME=t5-gated for a gated-gelu preset).
# GOLDENS_DIR=... writes elsewhere (testing).
# EXTRA="--ids 5,6,7 --ids ..." passes options to make_goldens.py.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
HFX="${1:?usage: make_from_hfx.sh HFX_BINARY ARCH [create-tiny options]}"; ARCH="${2:?ARCH}"; shift 2
NAME="${NAME:-$ARCH}"
TMP="$(mktemp -d /tmp/hfg_hfx.XXXXXX)"; trap 'rm -rf "$TMP"' EXIT
"$HFX" create-tiny "$ARCH" -o "$TMP/$NAME" "$@" >/dev/null
# shellcheck disable=SC2086
"$HERE/make_goldens.sh" "$TMP/$NAME" -o "$TMP/golden.json" --source "hfx create-tiny $ARCH${*:+ $*}" ${EXTRA:-}
HEAD="$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["head"])' "$TMP/golden.json")"
DEST="${GOLDENS_DIR:-$ROOT/tests/data/goldens}"
mkdir -p "$DEST"
OUT="$DEST/$NAME-$HEAD.json"
/usr/bin/python3 "$HERE/check_goldens.py" "$TMP/golden.json"
mv "$TMP/golden.json" "$OUT"
echo "wrote $OUT ($(wc -c <"$OUT") bytes; hfx create-tiny $ARCH $*)"
