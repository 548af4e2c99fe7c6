#!/usr/bin/env bash
# bench/tjs_vs_hfx.sh [OUT] — `hfx generate` over ONNX Runtime against Transformers.js generate on the
# same export folder, same prompt, same number of greedy tokens (EOS ignored), both timed around the
# generation call only (hfx: its prefill + decode stats; Transformers.js: model.generate, median of 3).
# Prints one JSON line {name, value, baseline, ratio}. Default OUT: the llama-100m export the suite caches.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
HFX="${HFX_BIN:-$ROOT/build/hfx}"
OUT="${1:-$ROOT/bench/.cache/onnx-standard-100m}"
N="${HFX_BENCH_TOKENS:-64}"
PROMPT="The quick brown fox jumps over the lazy dog and keeps running"
[[ -d "$OUT/onnx" ]] || { echo "no export at $OUT (run bench/run_all.sh first or pass OUT)" >&2; exit 2; }
best=""
for _ in 1 2 3; do
  line=$("$HFX" generate "$OUT" --prompt "$PROMPT" --max-new-tokens "$N" --greedy --ignore-eos --threads 2 2>&1 >/dev/null | grep 'prefill')
  pre=$(sed -E 's/.*prefill ([0-9.]+) ms.*/\1/' <<<"$line")
  tps=$(sed -E 's/.*decode ([0-9.]+) tok\/s.*/\1/' <<<"$line")
  t=$(awk -v p="$pre" -v r="$tps" -v n="$N" 'BEGIN { printf "%.4f", p / 1000 + (n - 1) / r }')
  if [[ -z "$best" ]] || awk -v a="$t" -v b="$best" 'BEGIN { exit !(a < b) }'; then best=$t; fi
done
tjs=$(node "$ROOT/bench/tjs_bench.mjs" "$ROOT/deps/npm/node_modules" "$OUT" "$PROMPT" "$N" 3 | sed -E 's/.*"seconds":([0-9.eE+-]+).*/\1/')
awk -v h="$best" -v t="$tjs" -v n="$N" 'BEGIN { printf "{\"name\": \"generate %d greedy tokens: hfx (ORT) vs Transformers.js, same artifact\", \"value\": %.4f, \"baseline\": %.4f, \"ratio\": %.3f, \"unit\": \"s\"}\n", n, h, t, t / h }'
