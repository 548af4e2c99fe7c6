#!/usr/bin/env bash
# ExecuTorch decode speed, one run, every figure beside its baselines measured in the same run with the same
# statistic (decode tokens/s = steps / median over reps of the time of `DECODE` single-token steps after a
# 16-token prefill):
#   the XNNPACK-delegated program (--backend xnnpack) on 1 and 2 threads, in ExecuTorch's own runtime
#   its 8da4w form (--backend xnnpack --quantize int4 --symmetric: int8 activations per token, 4-bit weights in
#   groups of 32 with bf16 scales) and 8da8w form (--quantize int8: 8-bit weights, one scale per channel),
#   same runtime
#   the portable program (--backend portable) of the same weights, same runtime
#   ONNX Runtime on an ONNX export of the same weights (bench/ort_bench), 1 and 2 threads
# on the llama-100m checkpoint of bench/run_all.sh (random weights, created once under bench/.cache).
# ExecuTorch's runtime is tools/et_check's et_run (built beside the project as docs/executorch-runtime.md describes; ET_RUN overrides).
# Usage: bash bench/xnnpack_bench.sh BUILD_DIR   (needs BUILD_DIR/hfx and BUILD_DIR/bench/ort_bench)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="${1:?usage: xnnpack_bench.sh BUILD_DIR}"
HFX="$BUILD/hfx"
ET_RUN="${ET_RUN:-${ET_ROOT:-/work/et}/et_run-build/et_run}"
[[ -x "$ET_RUN" ]] || { echo "xnnpack_bench: expected ExecuTorch's et_run at $ET_RUN (docs/executorch-runtime.md: how to build it)" >&2; exit 2; }
CACHE="$ROOT/bench/.cache"
DECODE="${HFX_XNN_DECODE:-32}"
REPS="${HFX_XNN_REPS:-3}"
mkdir -p "$CACHE"
cpu="$(lscpu | sed -n 's/^Model name: *//p' | head -1)"
printf '{"cpu": "%s", "cores": %s, "load_avg_start": "%s", "date": "%s", "commit": "%s"}\n' "$cpu" "$(nproc)" \
  "$(cut -d' ' -f1-3 /proc/loadavg)" "$(date -u +%FT%TZ)" "$(git -C "$ROOT" rev-parse --short HEAD)"
M100="$CACHE/llama-100m"
[[ -f "$M100/model.safetensors" ]] || "$HFX" create-tiny llama --preset llama-100m -o "$M100" >/dev/null

for v in portable xnnpack xnnpack-int4 xnnpack-int8; do
  out="$CACHE/pte-$v-100m"
  rm -rf "$out"
  flags=(--backend "${v%-int*}")
  [[ $v == *-int* ]] && flags+=(--quantize "${v##*-}" --symmetric)
  "$HFX" export "$M100" --format executorch "${flags[@]}" -o "$out" | grep '^note:' || true
  echo "{\"label\": \"pte-$v\", \"program_bytes\": $(stat -c %s "$out/model.pte")}"
done
onnx="$CACHE/onnx-std-100m"
[[ -f "$onnx/onnx/model.onnx" ]] || "$HFX" export "$M100" --format onnx -o "$onnx" >/dev/null

prompt="$(seq -s, 11 26)"  # 16 token ids
et_bench() {  # backend threads → one JSON line (median over reps)
  local b=$1 t=$2 runs=()
  for ((r = 0; r < REPS; r++)); do
    runs+=("$("$ET_RUN" --model "$CACHE/pte-$b-100m/model.pte" --tokens "$prompt" --decode "$DECODE" \
      --threads "$t" --logits none 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["decode_ms_per_token"])')")
  done
  python3 - "$b" "$t" "$DECODE" "${runs[@]}" <<'PY'
import json, statistics, sys
b, t, n, runs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), [float(x) for x in sys.argv[4:]]
ms = statistics.median(runs)
print(json.dumps({"engine": "executorch", "label": f"pte-{b}", "threads": t, "decode_tokens": n,
                  "decode_ms_per_token_median": ms, "decode_tok_s": 1e3 / ms, "runs_ms_per_token": runs}))
PY
}
for t in 1 2; do
  et_bench portable "$t"
  et_bench xnnpack "$t"
  et_bench xnnpack-int4 "$t"
  et_bench xnnpack-int8 "$t"
  "$BUILD/bench/ort_bench" "$onnx" --threads "$t" --prefill 16 --decode "$DECODE" --reps "$REPS" --label "ort-f32"
done
echo "{\"load_avg_end\": \"$(cut -d' ' -f1-3 /proc/loadavg)\"}"
