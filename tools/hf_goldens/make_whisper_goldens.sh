#!/bin/bash
# Whisper goldens (tests/data/goldens/whisper-lm.json) from the real transformers on an hfx-made checkpoint:
#   tools/hf_goldens/make_whisper_goldens.sh HFX_BINARY
# runs `HFX_BINARY create-tiny whisper`, then make_whisper_goldens.py under the project's venv (PYTHON=... overrides).
# GOLDENS_DIR=... writes elsewhere.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
PY="${PYTHON:-$ROOT/.venv/bin/python}"
HFX="${1:?usage: make_whisper_goldens.sh HFX_BINARY}"
TMP="$(mktemp -d /tmp/hfg_whisper.XXXXXX)"; trap 'rm -rf "$TMP"' EXIT
"$HFX" create-tiny whisper -o "$TMP/whisper" >/dev/null
"$PY" "$HERE/make_whisper_goldens.py" "$TMP/whisper" -o "${GOLDENS_DIR:-$ROOT/tests/data/goldens}/whisper-lm.json" \
  --source "hfx create-tiny whisper"
