#!/bin/bash
# make_goldens.py under the project's venv (.venv from scripts/setup.sh: torch 2.x, transformers 5.x).
#   tools/hf_goldens/make_goldens.sh CKPT -o OUT.json [--ids 5,6,7 ...] [--decoder-ids ...] [--max-new-tokens 32]
# PYTHON=... overrides the interpreter.
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PY="${PYTHON:-$HERE/../../.venv/bin/python}"
[ -x "$PY" ] || { echo "no python at $PY (run scripts/setup.sh, or set PYTHON)" >&2; exit 2; }
exec "$PY" "$HERE/make_goldens.py" "$@"
