#!/usr/bin/env bash
# bench/run_all.sh — the whole benchmark suite in one command (after `bash scripts/setup.sh`):
#
#   bash bench/run_all.sh            # writes bench/results.json and prints the table
#
# Every figure is measured beside its baseline in the same run:
#   export   hfx export (ONNX, external data) of a Llama-3.2-1B-shaped bf16 checkpoint vs `cp` of its
#            safetensors on the same disk; peak RSS of the export (/usr/bin/time %M)
#   ort      `--target ort` (fused) vs standard-op graphs of llama-100m on ONNX Runtime CPU:
#            512-token prefill time and decode tokens/s (bench/ort_bench.cpp)
#   eager    hfx's eager engine vs llama.cpp (node-llama-cpp) on the same llama-100m weights (F32 GGUF),
#            128-token prefill and decode tokens/s at 1 and 2 threads (bench/eager_bench.cpp; the GGUF is
#            hfx's own export,
#            bench/llama_cpp_bench.mjs)
#   generate hfx::Generator over ONNX Runtime vs bare session runs of the same steps (bench/generate_bench.cpp)
#   kernels  kernels::mm/linear/sdpa GFLOP/s beside raw OpenBLAS sgemm / a plain sdpa (bench/kernels_bench.cpp)
#
# Checkpoints are created once and kept under bench/.cache/ (gitignored); exports are redone each run.
# Env: HFX_BENCH_BUILD (build dir, default build-bench), HFX_BIN (an hfx binary to use instead of the
# build's), HFX_BENCH_RESULTS (where the results go, default bench/results.json: the doc test's bench tier
# writes elsewhere), HFX_BENCH_SKIP="export ort ..." (sections to
# skip), HFX_BENCH_QUICK=1 (fewer repetitions).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${HFX_BENCH_BUILD:-$ROOT/build-bench}"
CACHE="$ROOT/bench/.cache"
RUN="$CACHE/run"
NM="$ROOT/deps/npm/node_modules"
SKIP=" ${HFX_BENCH_SKIP:-} "
REPS=3
[[ "${HFX_BENCH_QUICK:-0}" == 1 ]] && REPS=1
log() { printf '[bench] %s\n' "$*" >&2; }
skip() { [[ "$SKIP" == *" $1 "* ]]; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.3f", b - a }'; }

mkdir -p "$CACHE" "$RUN"
rm -f "$RUN"/*.json "$RUN"/*.txt
T_START=$(now)

# ---- build ----
t0=$(now)
if [[ ! -f "$BUILD/build.ninja" ]]; then
  cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
log "building hfx and the bench binaries in $BUILD"
TARGETS=(kernels_bench eager_bench ort_bench generate_bench)
[[ -n "${HFX_BIN:-}" ]] || TARGETS+=(hfx_cli)
ninja -C "$BUILD" -j"$(nproc)" "${TARGETS[@]}" >"$RUN/build.txt" 2>&1 ||
  { tail -30 "$RUN/build.txt" >&2; exit 1; }
HFX="${HFX_BIN:-$BUILD/hfx}"
B="$BUILD/bench"
echo "{\"build_s\": $(since "$t0")}" >"$RUN/build.json"

# ---- machine ----
{
  printf '{"cpu": "%s", "cores": %s, "mem_gib": %s, "kernel": "%s", "date": "%s", "commit": "%s", "load_avg_start": "%s"}\n' \
    "$(lscpu | sed -n 's/^Model name: *//p' | head -1)" "$(nproc)" \
    "$(awk '/MemTotal/ {printf "%.1f", $2/1048576}' /proc/meminfo)" "$(uname -r)" "$(date -u +%FT%TZ)" \
    "$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$ROOT" diff --quiet 2>/dev/null || echo +dirty)" \
    "$(cut -d' ' -f1-3 /proc/loadavg)"
} >"$RUN/machine.json"

# ---- checkpoints (cached) ----
M100="$CACHE/llama-100m"
if [[ ! -f "$M100/model.safetensors" ]]; then
  log "creating llama-100m (f32, ~400 MB)"
  "$HFX" create-tiny llama --preset llama-100m -o "$M100" >/dev/null
fi

# ---- kernels ----
if ! skip kernels; then
  log "kernels: kernels_bench (matmul, linear, sdpa beside OpenBLAS)"
  "$B/kernels_bench" --benchmark_format=json --benchmark_min_time=$([[ $REPS == 1 ]] && echo 0.1 || echo 0.3) \
    >"$RUN/kernels.json" 2>"$RUN/kernels.err.txt"
fi

# ---- eager vs llama.cpp ----
if ! skip eager; then
  GGUF="$CACHE/llama-100m-gguf/model.gguf"
  if [[ ! -f "$GGUF" || "$GGUF" -ot "$M100/model.safetensors" ]]; then
    log "writing $GGUF (hfx export --format gguf)"
    "$HFX" export "$M100" --format gguf --dtype f32 -o "$CACHE/llama-100m-gguf" >/dev/null
  fi
  log "eager: hfx eager engine, prefill 128 + decode 64, threads 1 and 2"
  "$B/eager_bench" run "$M100" --threads 1,2 --prefill 128 --decode 64 --reps "$REPS" >"$RUN/eager_hfx.jsonl"
  log "eager: llama.cpp on the same weights"
  node "$ROOT/bench/llama_cpp_bench.mjs" "$NM" "$GGUF" 1,2 128 64 "$REPS" >"$RUN/eager_llamacpp.jsonl"
fi

# ---- ONNX Runtime: fused vs standard ----
if ! skip ort; then
  for target in standard ort; do
    out="$CACHE/onnx-$target-100m"
    rm -rf "$out"
    log "ort: hfx export llama-100m --target $target"
    args=(); [[ $target == ort ]] && args=(--target ort)
    "$HFX" export "$M100" --format onnx "${args[@]}" -o "$out" >/dev/null
    log "ort: ort_bench $target (prefill 512, decode 64, 2 threads)"
    "$B/ort_bench" "$out" --threads 2 --prefill 512 --decode 64 --reps "$REPS" --label "$target" >"$RUN/ort_$target.json"
  done
fi

# ---- generation overhead ----
if ! skip generate; then
  out="$CACHE/onnx-ort-100m"
  [[ -f "$out/onnx/model.onnx" ]] || "$HFX" export "$M100" --format onnx --target ort -o "$out" >/dev/null
  log "generate: Generator over ORT vs bare session runs (prompt 32, 64 new tokens)"
  "$B/generate_bench" "$out" --threads 2 --prompt 32 --new 64 --reps $((REPS + 2)) >"$RUN/generate.json"
fi

# ---- export at real size ----
if ! skip export; then
  M1B="$CACHE/llama-1b"
  if [[ ! -f "$M1B/model.safetensors" ]]; then
    log "creating the Llama-3.2-1B-shaped checkpoint (bf16, ~2.5 GB; ~2 min, cached)"
    "$HFX" create-tiny llama --preset llama-3.2-1b -o "$M1B" >/dev/null
  fi
  X="$CACHE/export-1b"
  rm -rf "$X" "$CACHE/cp-1b"
  sync
  log "export: cp of the safetensors (baseline)"
  mkdir -p "$CACHE/cp-1b"
  t0=$(now)
  cp "$M1B/model.safetensors" "$CACHE/cp-1b/"
  sync
  cp_s=$(since "$t0")
  rm -rf "$CACHE/cp-1b"
  sync
  log "export: hfx export --format onnx --external-data (takes minutes)"
  t0=$(now)
  /usr/bin/time -f '%M %e' -o "$RUN/export_time.txt" "$HFX" export "$M1B" --format onnx --external-data -o "$X" >/dev/null
  sync
  ex_s=$(since "$t0")
  read -r rss_kb _ <"$RUN/export_time.txt"
  out_bytes=$(du -sb "$X" | cut -f1)
  in_bytes=$(stat -c %s "$M1B/model.safetensors")
  files=$(cd "$X" && find . -type f -name '*.onnx*' -printf '%p:%s,' | sed 's/,$//')
  printf '{"cp_s": %s, "export_s": %s, "peak_rss_kb": %s, "input_bytes": %s, "output_bytes": %s, "files": "%s"}\n' \
    "$cp_s" "$ex_s" "$rss_kb" "$in_bytes" "$out_bytes" "$files" >"$RUN/export.json"
  rm -rf "$X"
fi

echo "{\"total_s\": $(since "$T_START")}" >"$RUN/total.json"
node "$ROOT/bench/report.mjs" "$RUN" "${HFX_BENCH_RESULTS:-$ROOT/bench/results.json}"
