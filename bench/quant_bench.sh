#!/usr/bin/env bash
# Weight-only quantization, one run, every figure beside its f32 baseline measured in the same run:
#   ONNX Runtime decode tok/s (2 threads): --target ort f32 export vs --quantize int4 (g32) and int8 (g32),
#   each with f32 activations (MatMulNBits accuracy_level 0) and --activations int8 (level 4)
#   eager decode tok/s (2 threads): f32 vs int8 vs int4, quantized at load (bench/quant_bench.cpp speed)
#   top-1 agreement / max |Δlogit| / KL of int8 and int4 vs f32 over greedy steps (quant_bench agree)
# on the llama-100m checkpoint of bench/run_all.sh (random weights, created once under bench/.cache).
# Usage: bash bench/quant_bench.sh BUILD_DIR   (needs BUILD_DIR/hfx, BUILD_DIR/bench/{ort_bench,quant_bench})
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="${1:?usage: quant_bench.sh BUILD_DIR}"
HFX="$BUILD/hfx"
B="$BUILD/bench"
CACHE="$ROOT/bench/.cache"
DECODE="${HFX_QUANT_DECODE:-32}"
REPS="${HFX_QUANT_REPS:-3}"
mkdir -p "$CACHE"
cpu="$(lscpu | sed -n 's/^Model name: *//p' | head -1)"
printf '{"cpu": "%s", "cores": %s, "load_avg_start": "%s", "date": "%s", "commit": "%s"}\n' "$cpu" "$(nproc)" \
  "$(cut -d' ' -f1-3 /proc/loadavg)" "$(date -u +%FT%TZ)" "$(git -C "$ROOT" rev-parse --short HEAD)"
M100="$CACHE/llama-100m"
[[ -f "$M100/model.safetensors" ]] || "$HFX" create-tiny llama --preset llama-100m -o "$M100" >/dev/null

for v in f32 int8 int4 int8-a8 int4-a8; do
  out="$CACHE/onnx-ort-$v-100m"
  rm -rf "$out"
  args=(--target ort)
  [[ $v != f32 ]] && args+=(--quantize "${v%-a8}" --group-size 32)
  [[ $v == *-a8 ]] && args+=(--activations int8)
  "$HFX" export "$M100" --format onnx "${args[@]}" -o "$out" >/dev/null
  echo "{\"export\": \"$v\", \"onnx_bytes\": $(du -cb "$out"/onnx/model.onnx* | tail -1 | cut -f1)}"
  "$B/ort_bench" "$out" --threads 2 --prefill 16 --decode "$DECODE" --reps "$REPS" --label "ort-$v"
done
"$B/quant_bench" speed "$M100" --threads 2 --decode "$DECODE" --reps "$REPS"
"$B/quant_bench" agree "$M100" --steps 32 --prompts 8
echo "{\"load_avg_end\": \"$(cut -d' ' -f1-3 /proc/loadavg)\"}"
