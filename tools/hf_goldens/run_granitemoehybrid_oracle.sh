#!/bin/bash
# The HF oracle (oracle.py, /work/shared/tools/hf-oracle) on a transformers tree that has
# GraniteMoeHybridForCausalLM, which the oracle's 4.47 / 4.51 trees lack (it was added for 4.52):
#   tools/hf_goldens/run_granitemoehybrid_oracle.sh CHECKPOINT_DIR [oracle.py options ...]
# The tree is the final head of the upstream pull request that added the model (fork Ssukriti/transformers,
# branch granitemoe_hybrid_external_cleanup, bd3081af8, 2025-05-05, __version__ 4.52.0.dev0), extracted once:
#   fetch github:Ssukriti/transformers  →  /work/.mirror/Ssukriti+transformers/repo
#   mkdir -p $HFO/transformers-4.52-gmh-src && git --git-dir=MIRROR archive \
#       granitemoe_hybrid_external_cleanup src/transformers | tar -x -C $HFO/transformers-4.52-gmh-src
# It runs on the oracle's torch 1.13 with the oracle's shims plus two import-time stand-ins made here (not
# modeling code): huggingface_hub names 4.52 imports (list_repo_tree, list_repo_files: offline errors), and
# torch's reported version as 2.1.0 for transformers' "PyTorch >= 2.1" import gate; the torch 2 names it
# touches come from the oracle's hfo_torch2_compat (HFO_TORCH2_COMPAT=1), as for the 4.51 tree.
set -euo pipefail
HFO="${HFO:-/work/hfo}"
TREE="${HFO_GMH_TREE:-$HFO/transformers-4.52-gmh-src/src}"
[ -d "$TREE/transformers/models/granitemoehybrid" ] || { echo "no granitemoehybrid in $TREE (see the header)" >&2; exit 1; }
SHIMS="$(mktemp -d /tmp/hfo_gmh_shims.XXXXXX)"; trap 'rm -rf "$SHIMS"' EXIT
cp -r "$HFO/shims/." "$SHIMS/"
cat >>"$SHIMS/huggingface_hub/__init__.py" <<'PY'

# transformers 4.52 imports these at import time (run_granitemoehybrid_oracle.sh)
list_repo_tree = _offline
list_repo_files = _offline
PY
cat >"$SHIMS/hfo_torch21_gate.py" <<'PY'
# transformers 4.52 disables torch < 2.1 at import: report torch's version as 2.1.0 (math unchanged).
import importlib.metadata as _md
_version = _md.version
_md.version = lambda name: "2.1.0" if name == "torch" else _version(name)
PY
export PYTHONPATH="$SHIMS:$TREE:$HFO" HFO_TORCH2_COMPAT=1
export HF_HOME="$HFO/.hf_home" HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_HUB_DISABLE_TELEMETRY=1
export TRANSFORMERS_VERBOSITY=error TOKENIZERS_PARALLELISM=false OMP_NUM_THREADS=1 PYTHONWARNINGS=ignore
/usr/bin/python3 -c 'import hfo_torch21_gate, runpy, sys; sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name="__main__")' \
    "$HFO/oracle.py" "$@"
