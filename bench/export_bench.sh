#!/usr/bin/env bash
# bench/export_bench.sh — export at real size (issue 8, item 1): `hfx export --format onnx --external-data`
# of a Llama-3.2-1B-shaped bf16 checkpoint (~2.5 GB), as one model.safetensors and as 2 shards with
# model.safetensors.index.json, each against `cp` of the same safetensors on the same disk, measured in
# the same run; peak RSS of the export (/usr/bin/time %M) against the 300 MiB target.
#
#   bash bench/export_bench.sh [OUT.jsonl]
#
# Prints JSON lines {"name", "value", "baseline", "ratio", "unit"} (and appends them to OUT.jsonl if given):
#   export_<v>_wall_s        export wall time (it fsyncs its files)    vs cp + sync of the safetensors
#   export_<v>_wall_vs_cp_s  the same export wall time                   vs cp alone (pages may still be dirty)
#   export_<v>_peak_rss_mib  peak RSS of the export                      vs the target, 300 MiB
#   export_<v>_bytes         bytes the export wrote (onnx/ folder)       vs the checkpoint's safetensors bytes
# for <v> = single and sharded. Caches are dropped before every timed step when the user may write
# /proc/sys/vm/drop_caches (cold: both read the checkpoint from disk); otherwise the checkpoint is read
# once before every step (warm for both) and the lines say "cache": "warm".
#
# Checkpoints are created once under bench/.cache/ (gitignored): llama-1b (hfx create-tiny --preset
# llama-3.2-1b) and llama-1b-sharded (bench/shard_bench.cpp). Env: HFX_BIN (hfx binary; default
# $HFX_BENCH_BUILD/hfx), HFX_BENCH_BUILD (build dir, default build-bench; built if needed),
# HFX_BENCH_CKPT (use this checkpoint folder instead of creating one), HFX_BENCH_REPS (default 1; the
# best of N is reported), HFX_BENCH_VARIANTS (default "single sharded").
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${HFX_BENCH_BUILD:-$ROOT/build-bench}"
CACHE="$ROOT/bench/.cache"
OUT_JSONL="${1:-}"
REPS="${HFX_BENCH_REPS:-1}"
VARIANTS="${HFX_BENCH_VARIANTS:-single sharded}"
log() { printf '[export-bench] %s\n' "$*" >&2; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.3f", b - a }'; }
mkdir -p "$CACHE"

# ---- binaries ----
HFX="${HFX_BIN:-$BUILD/hfx}"
SHARD="$BUILD/bench/shard_bench"
need=()
[[ -x "$HFX" ]] || need+=(hfx_cli)
[[ -x "$SHARD" || " $VARIANTS " != *" sharded "* ]] || need+=(shard_bench)
if ((${#need[@]})); then
  [[ -f "$BUILD/build.ninja" ]] || cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  log "building ${need[*]} in $BUILD"
  ninja -C "$BUILD" -j"$(nproc)" "${need[@]}" >&2
fi

# ---- checkpoints (cached) ----
M1B="${HFX_BENCH_CKPT:-$CACHE/llama-1b}"
if [[ ! -f "$M1B/model.safetensors" ]]; then
  log "creating the Llama-3.2-1B-shaped checkpoint in $M1B (bf16, ~2.5 GB; a few minutes, cached)"
  "$HFX" create-tiny llama --preset llama-3.2-1b -o "$M1B" >/dev/null
fi
SHARDED="$CACHE/$(basename "$M1B")-sharded"
if [[ " $VARIANTS " == *" sharded "* && (! -f "$SHARDED/model.safetensors.index.json" || "$SHARDED/model.safetensors.index.json" -ot "$M1B/model.safetensors") ]]; then
  log "writing the 2-shard variant to $SHARDED"
  rm -rf "$SHARDED"
  "$SHARD" "$M1B" "$SHARDED" 2 >&2
fi

# ---- cache state ----
COLD=0
if [[ -w /proc/sys/vm/drop_caches ]] && { sync && echo 3 >/proc/sys/vm/drop_caches; } 2>/dev/null; then COLD=1; fi
CACHE_STATE=$([[ $COLD == 1 ]] && echo cold || echo warm)
prepare() {  # $1: checkpoint folder
  sync
  if [[ $COLD == 1 ]]; then echo 3 >/proc/sys/vm/drop_caches; else cat "$1"/*.safetensors >/dev/null; fi
}

emit() {  # name value baseline unit
  local line
  line=$(awk -v n="$1" -v v="$2" -v b="$3" -v u="$4" -v c="$CACHE_STATE" \
    'BEGIN { printf "{\"name\": \"%s\", \"value\": %s, \"baseline\": %s, \"ratio\": %.3f, \"unit\": \"%s\", \"cache\": \"%s\"}\n", n, v, b, (b > 0 ? v / b : 0), u, c }')
  echo "$line"
  [[ -z "$OUT_JSONL" ]] || echo "$line" >>"$OUT_JSONL"
}

best() { printf '%s\n' "$@" | sort -g | head -1; }

for v in $VARIANTS; do
  case $v in
    single) SRC="$M1B" ;;
    sharded) SRC="$SHARDED" ;;
    *) log "unknown variant $v"; exit 2 ;;
  esac
  in_bytes=$(cat "$SRC"/*.safetensors | wc -c)
  cp_runs=() cps_runs=() ex_runs=() rss_runs=()
  for ((r = 0; r < REPS; r++)); do
    # Baseline: cp of the safetensors, then sync (the export fsyncs what it writes).
    D="$CACHE/cp-$v"
    rm -rf "$D" && mkdir -p "$D" && prepare "$SRC"
    t0=$(now)
    cp "$SRC"/*.safetensors "$D/"
    cp_runs+=("$(since "$t0")")
    sync
    cps_runs+=("$(since "$t0")")
    rm -rf "$D"

    X="$CACHE/export-$v"
    rm -rf "$X" && prepare "$SRC"
    log "$v (rep $((r + 1))/$REPS): cp ${cp_runs[-1]} s, cp+sync ${cps_runs[-1]} s; exporting"
    t0=$(now)
    /usr/bin/time -f '%M %e' -o "$CACHE/time-$v.txt" "$HFX" export "$SRC" --format onnx --external-data -o "$X" >/dev/null
    sync
    ex_runs+=("$(since "$t0")")
    read -r rss_kb _ <"$CACHE/time-$v.txt"
    rss_runs+=("$rss_kb")
    out_bytes=$(du -sb "$X/onnx" | cut -f1)
    log "$v: export ${ex_runs[-1]} s, peak RSS $((rss_kb / 1024)) MiB, wrote $out_bytes bytes ($(cd "$X/onnx" && ls | tr '\n' ' '))"
    rm -rf "$X"
  done
  cps=$(best "${cps_runs[@]}") cp1=$(best "${cp_runs[@]}") ex=$(best "${ex_runs[@]}") rss=$(best "${rss_runs[@]}")
  emit "export_${v}_wall_s" "$ex" "$cps" s
  emit "export_${v}_wall_vs_cp_s" "$ex" "$cp1" s
  emit "export_${v}_peak_rss_mib" "$(awk -v k="$rss" 'BEGIN { printf "%.1f", k / 1024 }')" 300 MiB
  emit "export_${v}_bytes" "$out_bytes" "$in_bytes" bytes
done
