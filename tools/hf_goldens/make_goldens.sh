#!/bin/bash
# make_goldens.py under the hf-oracle's python (Debian torch 1.13 + shims + transformers 4.47 tree; ModernBERT
# re-runs itself on the 4.51 tree). HFO: the oracle folder set up per tools/hf_goldens/README.md (default /work/hfo).
#   tools/hf_goldens/make_goldens.sh CKPT -o OUT.json [--ids 5,6,7 ...] [--decoder-ids ...] [--max-new-tokens 32]
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export HFO="${HFO:-/work/hfo}"
[ -x "$HFO/py.sh" ] || { echo "no hf-oracle at HFO=$HFO (see $HERE/README.md)" >&2; exit 2; }
exec "$HFO/py.sh" "$HERE/make_goldens.py" "$@"
