#!/usr/bin/env bash
# bench/load_bench.sh — ONNX Runtime session creation of hfx's default ONNX export vs PyTorch-style
# f32 initializers built from the same weights in the same run, and `hfx generate OUT` peak RSS vs the
# bytes of the weights it runs (bench/load_bench.cpp). One JSON line on stdout.
#
#   bash bench/load_bench.sh [PRESET] [WORKDIR]     PRESET: llama-3.2-1b (default) | llama-100m
#
# Env: HFX_BIN (hfx binary, default build/hfx), LOAD_BENCH (default build/bench/load_bench),
# THREADS (default 2), REPS (default 1). The checkpoint is created once in WORKDIR (default
# bench/.cache) and kept; the export is redone. The 1B preset needs ~2.5 GB (checkpoint) + ~5 GB (f32
# export) + ~5 GB (the baseline's copy, removed at the end) of disk.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PRESET="${1:-llama-3.2-1b}"
WORK="${2:-$ROOT/bench/.cache}"
HFX="${HFX_BIN:-$ROOT/build/hfx}"
BENCH="${LOAD_BENCH:-$ROOT/build/bench/load_bench}"
mkdir -p "$WORK"
CK="$WORK/$PRESET"
OUT="$WORK/$PRESET-onnx-load"
[[ -f "$CK/config.json" ]] || "$HFX" --quiet create-tiny llama --preset "$PRESET" -o "$CK" >&2
# The default export (--dtype auto: f32 on ONNX Runtime CPU); external data is automatic above 2 GB and
# forced here below it, since the baseline is written as external data too.
EXTRA=(); [[ "$PRESET" == llama-3.2-1b ]] || EXTRA=(--external-data)  # 1B: automatic (> 2 GB)
/usr/bin/time -f "[load_bench] export: %e s, peak RSS %M KiB" \
  "$HFX" --quiet export "$CK" --format onnx "${EXTRA[@]}" -o "$OUT" >&2
"$BENCH" "$OUT" --threads "${THREADS:-2}" --reps "${REPS:-1}" --hfx "$HFX" --max-new-tokens 16
