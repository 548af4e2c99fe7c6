#!/bin/bash
# Whisper goldens (tests/data/goldens/whisper-lm.json) from the real transformers on an hfx-made checkpoint:
#   tools/hf_goldens/make_whisper_goldens.sh HFX_BINARY
# runs `HFX_BINARY create-tiny whisper`, then make_whisper_goldens.py under the hf-oracle's python (HFO, default /work/hfo).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
HFX="${1:?usage: make_whisper_goldens.sh HFX_BINARY}"
export HFO="${HFO:-/work/hfo}"
[ -x "$HFO/py.sh" ] || { echo "no hf-oracle at HFO=$HFO (see $HERE/README.md)" >&2; exit 2; }
TMP="$(mktemp -d /tmp/hfg_whisper.XXXXXX)"; trap 'rm -rf "$TMP"' EXIT
"$HFX" create-tiny whisper -o "$TMP/whisper" >/dev/null
"$HFO/py.sh" "$HERE/make_whisper_goldens.py" "$TMP/whisper" -o "$ROOT/tests/data/goldens/whisper-lm.json" \
  --source "hfx create-tiny whisper"
