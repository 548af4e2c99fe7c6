#!/usr/bin/env bash
# One command on a machine with PyTorch >= 2.11 and Transformers >= 5.13 (CPU is enough, < 5 min):
#   tools/pt2_check/run.sh [BUILD_DIR]          (default build dir: build)
# Builds nothing itself: expects BUILD_DIR/hfx. Writes pt2_check_report.json next to the call.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
build="${1:-$repo/build}"
hfx="${HFX:-$build/hfx}"
[ -x "$hfx" ] || { echo "run.sh: expected the hfx binary at $hfx (build it first, or set HFX=...)" >&2; exit 2; }
python3 - <<'PY'
import sys
import torch, transformers
def ver(s): return tuple(int(x) for x in s.split("+")[0].split(".")[:2])
ok = ver(torch.__version__) >= (2, 11) and ver(transformers.__version__) >= (5, 13)
print(f"torch {torch.__version__}, transformers {transformers.__version__}: {'ok' if ok else 'too old'}")
sys.exit(0 if ok else 3)
PY
shift || true
exec timeout 300 python3 "$here/check_pt2.py" --hfx "$hfx" --json "${PT2_CHECK_JSON:-pt2_check_report.json}" "$@"
