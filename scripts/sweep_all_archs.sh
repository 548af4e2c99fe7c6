#!/usr/bin/env bash
# scripts/sweep_all_archs.sh — the full matrix of issue 19: a tiny checkpoint of every architecture
# `hfx create-tiny` knows × {onnx, onnx --target ort, executorch, dynamo}, through `hfx sweep`.
#   [JOBS=N] scripts/sweep_all_archs.sh WORKDIR [local|slurm]   (JOBS: local tasks at once, default nproc;
#   slurm: SLURM_CONF must name a running cluster, e.g. tests/integration/slurm_cluster.sh start DIR PORT;
#   export SLURM_CONF=DIR/slurm.conf)
# Writes WORKDIR/ckpt/<arch>, WORKDIR/all-archs.json and WORKDIR/results-<engine>/; exit status as hfx sweep.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
HFX="${HFX:-$ROOT/build/hfx}"
work=$1 engine=${2:-local}
mkdir -p "$work/ckpt"
# The architectures: the model_type list of `hfx create-tiny --help` (the registry is the one source). Each
# model gets the variants that
# `hfx inspect --json` says hfx exports (the export-skip registry decides, e.g. whisper: onnx only); every
# cell left out is printed with its reason, so the matrix never hides a refusal.
all=$("$HFX" create-tiny --help | sed -n 's/.*model_type: //p' | tr ',' '\n')
archs=$(tr -d ' ' <<<"$all")
models=""
for a in $archs; do
  [ -f "$work/ckpt/$a/config.json" ] || "$HFX" create-tiny "$a" -o "$work/ckpt/$a" >/dev/null
  variants=$("$HFX" inspect "$work/ckpt/$a" --json | python3 -c '
import json, sys
names = {"onnx standard": "onnx", "onnx ort": "onnx-ort", "executorch portable": "executorch", "dynamo": "dynamo"}
ok = []
for b in json.load(sys.stdin)["backends"]:
    if b["backend"] not in names: continue
    name, reason = names[b["backend"]], b.get("reason", "")
    if b["supported"]: ok.append(name)
    else: print(f"[sweep_all_archs] left out {sys.argv[1]} x {name}: {reason}", file=sys.stderr)
print(json.dumps(ok))' "$a")
  models+="${models:+, }{\"name\": \"${a//_/-}\", \"path\": \"ckpt/$a\", \"variants\": $variants}"
done
# mem_mb 7168: a .pte plans its memory for the contract's largest call (batch 64 by default), so verify of
# the tiny whisper .pte peaks at 5.7 GiB (its encoder's [64, 80, 3000] features: a 5.0 GiB arena) and of
# the tiny mamba .pte at 2.3 GiB (batch 64 x 128 tokens of the scan's expanded state); every other task
# stays under 800 MiB. The plan's limit binds (a task over it is reported out_of_memory).
cat > "$work/all-archs.json" <<JSON
{"name": "all-archs", "models": [$models],
 "variants": [{"format": "onnx"}, {"name": "onnx-ort", "format": "onnx", "target": "ort"},
              {"format": "executorch"}, {"format": "dynamo"}],
 "verify": {"tokens": 4, "warm_runs": 1, "threads": 1, "shapes": "1x4,2x1+4,1x3+2"},
 "resources": {"cpus": 1, "mem_mb": 7168, "time_min": 10}}
JSON
jobs=()
[ "$engine" = local ] && jobs=(--jobs "${JOBS:-$(nproc)}")
exec "$HFX" sweep "$work/all-archs.json" -o "$work/results-$engine" --engine "$engine" "${jobs[@]}"
