#!/usr/bin/env bash
# scripts/repro_check.sh HFX_A HFX_B — reproducible artifacts across build trees.
#
# Two hfx binaries built in different build trees (CI: build/hfx, the release tree, and build-asan/hfx,
# the sanitizer tree) export the same tiny checkpoints with the same flags: a Llama (decoder), a T5
# (encoder-decoder) and a BERT (encoder), each to ONNX (inline and --external-data), ExecuTorch .pte and
# dynamo .pt2 (the Llama also to GGUF q8_0); and a Llama with dynamic NTK rope exported with an explicit sequence Dim past its context
# (--config), whose ONNX and .pt2 artifacts then hold a shape guard's source place. Every file of each
# output folder must be byte-identical between the two binaries, manifest.json included
# (SOURCE_DATE_EPOCH pins its time), and no file may hold the path of the source tree or of either build
# tree. Then HFX_A verifies each plain export against the checkpoint (the release binary end to end).
# One line per export; exits non-zero naming the first file that differs or holds a path.
# HFX_REPRO_ARCHS overrides the architectures (default "llama t5 bert"); HFX_REPRO_VERIFY=0 skips verify.
# HFX_REPRO_SAME=1 takes one binary twice instead of two (below).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
die() { printf '[repro] error: %s\n' "$*" >&2; exit 1; }
(($# == 2)) || die "expected two hfx binaries (HFX_A HFX_B), got $# arguments; e.g. scripts/repro_check.sh build/hfx build-asan/hfx"
A=$(realpath "$1")
B=$(realpath "$2")
for bin in "$A" "$B"; do [[ -x "$bin" ]] || die "expected an hfx binary at $bin, got none (scripts/build.sh PRESET hfx_cli)"; done
# HFX_REPRO_SAME=1 (CI's default tier): one binary, run twice; the second run in another working directory,
# with another thread count and glibc's MALLOC_PERTURB_ (fresh and freed memory filled with a byte pattern),
# so output that depends on uninitialized memory, on threads or on the cwd differs.
same="${HFX_REPRO_SAME:-0}"
if [[ "$same" == 1 ]]; then
  [[ "$A" == "$B" ]] || die "expected HFX_REPRO_SAME=1 with one binary twice, got $A and $B"
else
  [[ "$A" != "$B" ]] || die "expected two different binaries, got $A twice (or set HFX_REPRO_SAME=1)"
fi

work=$(mktemp -d /tmp/hfx-repro.XXXXXX)  # outside the source tree: the path scan below must not see it
trap 'rm -rf "$work"' EXIT
export SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-1700000000}"
failed=0
verify="${HFX_REPRO_VERIFY:-1}"

# compare NAME CKPT MUST_HOLD EXPORT_FLAGS... — exports CKPT with both binaries and compares the folders;
# MUST_HOLD (or "") is a string some file must contain (the guard place), so the path scan is not vacuous.
compare() {
  local name=$1 ckpt=$2 must=$3 side bin files
  shift 3
  for side in a b; do
    bin=$A; [[ $side == b ]] && bin=$B
    if [[ $side == b && "$same" == 1 ]]; then
      mkdir -p "$work/cwd-b"
      (cd "$work/cwd-b" && HFX_NUM_THREADS=1 MALLOC_PERTURB_=165 "$bin" --quiet export "$ckpt" "$@" \
        -o "$work/$side/$name") >"$work/$side-$name.log" 2>&1 ||
        { cat "$work/$side-$name.log"; die "$bin export $name (second run) failed"; }
      continue
    fi
    "$bin" --quiet export "$ckpt" "$@" -o "$work/$side/$name" >"$work/$side-$name.log" 2>&1 ||
      { cat "$work/$side-$name.log"; die "$bin export $name failed"; }
  done
  if ! diff -r -q "$work/a/$name" "$work/b/$name" >"$work/diff.txt" 2>&1; then
    printf '[repro] %-22s DIFFERS between %s and %s:\n' "$name" "$A" "$B"
    sed 's/^/[repro]   /' "$work/diff.txt"
    failed=1
    return
  fi
  files=$(grep -rlF -e "$ROOT" -e "$(dirname "$A")" -e "$(dirname "$B")" "$work/a/$name" || true)
  if [[ -n "$files" ]]; then
    printf '[repro] %-22s holds a source or build path in: %s\n' "$name" "$files"
    failed=1
    return
  fi
  if [[ -n "$must" ]] && ! grep -rqF "$must" "$work/a/$name"; then
    printf '[repro] %-22s expected the guard place %s in an artifact, got none\n' "$name" "$must"
    failed=1
    return
  fi
  printf '[repro] %-22s %2d files byte-identical, no build paths\n' "$name" "$(find "$work/a/$name" -type f | wc -l)"
  if [[ "$verify" == 1 ]]; then
    "$A" --quiet verify "$work/a/$name" --reference "$ckpt" >"$work/verify.log" 2>&1 ||
      { cat "$work/verify.log"; printf '[repro] %-22s verify FAILED (%s)\n' "$name" "$A"; failed=1; }
  fi
}

for arch in ${HFX_REPRO_ARCHS:-llama t5 bert}; do
  "$A" create-tiny "$arch" -o "$work/ckpt-$arch" >/dev/null
  compare "$arch-onnx" "$work/ckpt-$arch" "" --format onnx
  compare "$arch-onnx-external" "$work/ckpt-$arch" "" --format onnx --external-data
  compare "$arch-executorch" "$work/ckpt-$arch" "" --format executorch
  compare "$arch-dynamo" "$work/ckpt-$arch" "" --format dynamo
done
# GGUF: not verified here (hfx verify does not judge GGUF; llama.cpp does, in tests/interop/test_gguf.py).
verify_was=$verify
verify=0
[[ -d "$work/ckpt-llama" ]] && compare "llama-gguf-q8_0" "$work/ckpt-llama" "" --format gguf --quantize q8_0
verify=$verify_was

# Dynamic NTK rope asks "is the sequence longer than the original 64 positions?" once a Dim allows it.
# Not verified: the Dim reaches past what the guard allows, so verify's largest shape trips the guard's
# runtime check, as it should (these exports are here for the guard place in their bytes).
verify=0
ckpt="$work/ckpt-llama-rope"
"$A" create-tiny llama -o "$ckpt" >/dev/null
node -e 'const fs = require("fs"), p = process.argv[1], c = JSON.parse(fs.readFileSync(p));
  c.rope_scaling = {type: "dynamic", factor: 2.0}; c.max_position_embeddings = 64;
  fs.writeFileSync(p, JSON.stringify(c, null, 2));' "$ckpt/config.json"
for format in onnx dynamo; do
  printf '{"format": "%s", "dynamic_shapes": {"input_ids": {"1": {"name": "sequence_length", "min": 1, "max": 256}}}}\n' \
    "$format" >"$work/$format-dims.json"
  compare "llama-rope-$format" "$ckpt" "src/models/rope.cpp:" --format "$format" --config "$work/$format-dims.json"
done

((failed == 0)) || die "artifacts differ between build trees, hold build paths or lack the guard (see above)"
if [[ "$same" == 1 ]]; then
  echo "[repro] all exports byte-identical across two runs of $A (other cwd, HFX_NUM_THREADS=1, MALLOC_PERTURB_)"
else
  echo "[repro] all exports byte-identical across $(dirname "$A") and $(dirname "$B")"
fi
