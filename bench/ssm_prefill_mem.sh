#!/usr/bin/env bash
# bench/ssm_prefill_mem.sh — peak RSS of an eager prefill of the state-space and hybrid tiny checkpoints
# against the tiny llama's on the same prompt, in the same run (issue 45: SSM prefill memory grows
# linearly). Each row: `hfx generate CK --prompt P --max-new-tokens 1` under /usr/bin/time; the prompt is
# "hello world again" repeated (REPEAT, default 182: 2,002 tokens with the tiny tokenizer). The ratio is
# peak RSS over the llama's; the process's own floor (`hfx --version`) is printed beside them.
# One JSON line on stdout.
#
#   bash bench/ssm_prefill_mem.sh [WORKDIR]
#
# Env: HFX_BIN (default build/hfx), REPEAT, REPS (default 3: the median of each row's peak RSS).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
HFX="${HFX_BIN:-$ROOT/build/hfx}"
WORK="${1:-$(mktemp -d /tmp/ssm_prefill_mem.XXXXXX)}"
REPEAT="${REPEAT:-182}"
REPS="${REPS:-3}"
ARCHS=(llama mamba mamba2 granitemoehybrid lfm2)
PROMPT="$(printf 'hello world again %.0s' $(seq 1 "$REPEAT"))"
PROMPT="${PROMPT% }"
for a in "${ARCHS[@]}"; do
  [[ -f "$WORK/$a/config.json" ]] || "$HFX" --quiet create-tiny "$a" -o "$WORK/$a" >&2
done
rss() {  # peak RSS in KiB of one command
  /usr/bin/time -f "%M" -o "$WORK/time.txt" "$@" > "$WORK/out.json" 2>/dev/null
  cat "$WORK/time.txt"
}
median() { printf '%s\n' "$@" | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
floor_kib=$(rss "$HFX" --version)
json="{\"bench\":\"ssm_prefill_mem\",\"floor_kib\":$floor_kib,\"rows\":["
sep=""
for a in "${ARCHS[@]}"; do
  runs=()
  for _ in $(seq 1 "$REPS"); do runs+=("$(rss "$HFX" generate "$WORK/$a" --prompt "$PROMPT" --max-new-tokens 1 --json)"); done
  kib=$(median "${runs[@]}")
  tokens=$(python3 -c "import json,sys; print(len(json.load(open(sys.argv[1]))['rows'][0]['prompt_ids']))" \
    "$WORK/out.json")
  [[ "$a" == llama ]] && base=$kib
  ratio=$(awk -v k="$kib" -v b="$base" 'BEGIN {printf "%.2f", k / b}')
  echo "[ssm_prefill_mem] $a: $tokens prompt tokens, peak RSS $kib KiB (median of $REPS), ${ratio}x llama" >&2
  json+="$sep{\"arch\":\"$a\",\"prompt_tokens\":$tokens,\"peak_rss_kib\":$kib,\"ratio_vs_llama\":$ratio}"
  sep=","
done
echo "$json]}"
