#!/usr/bin/env bash
# ONNX Runtime session options chosen per artifact (onnx/session_options.json, hfx/export/onnx.h), one run:
# `hfx generate OUT` with no flag or environment variable (the export's advice) against the two fixed choices
# it replaced, MLAS prepacking forced off (HFX_ORT_PREPACK=0, hfx's previous default) and forced on
# (HFX_ORT_PREPACK=1, ONNX Runtime's default), on the f32 export and the int4 --activations int8 export
# (--target ort) of one checkpoint. Per row: wall time of the whole command and its peak RSS (/usr/bin/time),
# prefill ms and decode tok/s as hfx generate reports them; the median of REPS interleaved runs.
# Usage: bash bench/session_advice_bench.sh BUILD_DIR [PRESET]   (PRESET: llama-100m, default, or llama-3.2-1b)
# Env: HFX_ADVICE_REPS (3), HFX_ADVICE_TOKENS (32).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="${1:?usage: session_advice_bench.sh BUILD_DIR [PRESET]}"
PRESET="${2:-llama-100m}"
HFX="$BUILD/hfx"
CACHE="$ROOT/bench/.cache"
REPS="${HFX_ADVICE_REPS:-3}"
TOKENS="${HFX_ADVICE_TOKENS:-32}"
mkdir -p "$CACHE"
cpu="$(lscpu | sed -n 's/^Model name: *//p' | head -1)"
printf '{"cpu": "%s", "cores": %s, "load_avg_start": "%s", "date": "%s", "commit": "%s", "preset": "%s"}\n' \
  "$cpu" "$(nproc)" "$(cut -d' ' -f1-3 /proc/loadavg)" "$(date -u +%FT%TZ)" \
  "$(git -C "$ROOT" rev-parse --short HEAD)" "$PRESET"
CK="$CACHE/$PRESET"
[[ -f "$CK/config.json" ]] || "$HFX" create-tiny llama --preset "$PRESET" -o "$CK" >/dev/null

declare -A OUT=([f32]="$CACHE/advice-f32-$PRESET" [int4-a8]="$CACHE/advice-int4-a8-$PRESET")
for v in f32 int4-a8; do
  args=(--target ort)
  [[ $v == int4-a8 ]] && args+=(--quantize int4 --group-size 32 --activations int8)
  rm -rf "${OUT[$v]}"
  "$HFX" -q export "$CK" --format onnx "${args[@]}" -o "${OUT[$v]}" >/dev/null
  echo "{\"export\": \"$v\", \"advice\": $(python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))
print(json.dumps({k: v["config_entries"] for k, v in d["programs"].items()}))' "${OUT[$v]}/onnx/session_options.json")}"
done

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
# One run: "wall_s rss_kib prefill_ms decode_tok_s".
one() {
  local out="$1" mode="$2"
  local env=()
  [[ $mode != advice ]] && env=(HFX_ORT_PREPACK="${mode#prepack=}")
  env "${env[@]}" /usr/bin/time -f '%e %M' -o "$tmp/time" "$HFX" -q generate "$out" --prompt "The quick brown fox" \
    --max-new-tokens "$TOKENS" --ignore-eos --threads 2 >/dev/null 2>"$tmp/err"
  local t
  t="$(grep -o 'prefill [0-9.]* ms, decode [0-9.]* tok/s' "$tmp/err" | tail -1)"
  echo "$(cat "$tmp/time") $(echo "$t" | awk '{print $2, $5}')"
}
for v in f32 int4-a8; do
  for mode in advice prepack=0 prepack=1; do : >"$tmp/$v-$mode"; done
  for ((r = 0; r < REPS; r++)); do
    for mode in advice prepack=0 prepack=1; do one "${OUT[$v]}" "$mode" >>"$tmp/$v-$mode"; done
  done
  for mode in advice prepack=0 prepack=1; do
    python3 - "$tmp/$v-$mode" "$v" "$mode" <<'EOF'
import json, statistics, sys
rows = [list(map(float, l.split())) for l in open(sys.argv[1]) if l.strip()]
med = lambda i: statistics.median(r[i] for r in rows)
print(json.dumps({"export": sys.argv[2], "session": sys.argv[3], "reps": len(rows), "wall_s": med(0),
                  "peak_rss_mib": round(med(1) / 1024, 1), "prefill_ms": med(2), "decode_tok_s": med(3)}))
EOF
  done
done
echo "{\"load_avg_end\": \"$(cut -d' ' -f1-3 /proc/loadavg)\"}"
