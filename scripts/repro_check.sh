#!/usr/bin/env bash
# scripts/repro_check.sh HFX_A HFX_B — reproducible artifacts across build trees.
#
# Two hfx binaries built in different build trees (CI: build/hfx, the release tree, and build-asan/hfx,
# the sanitizer tree) export the same tiny checkpoints with the same flags: a Llama (decoder), a T5
# (encoder-decoder) and a BERT (encoder), each to ONNX (inline and --external-data), ExecuTorch .pte and
# dynamo .pt2. Every file of each output folder must be byte-identical between the two binaries,
# manifest.json included (SOURCE_DATE_EPOCH pins its time), and no file may hold the path of the source
# tree or of either build tree. Then HFX_A verifies each of its exports against the checkpoint (the release binary end to end).
# One line per export; exits non-zero naming the first file that differs or holds a path.
# HFX_REPRO_ARCHS overrides the architectures (default "llama t5 bert"); HFX_REPRO_VERIFY=0 skips verify.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
die() { printf '[repro] error: %s\n' "$*" >&2; exit 1; }
(($# == 2)) || die "expected two hfx binaries (HFX_A HFX_B), got $# arguments; e.g. scripts/repro_check.sh build/hfx build-asan/hfx"
A=$(realpath "$1")
B=$(realpath "$2")
for bin in "$A" "$B"; do [[ -x "$bin" ]] || die "expected an hfx binary at $bin, got none (scripts/build.sh PRESET hfx_cli)"; done
[[ "$A" != "$B" ]] || die "expected two different binaries, got $A twice"

work=$(mktemp -d /tmp/hfx-repro.XXXXXX)  # outside the source tree: the path scan below must not see it
trap 'rm -rf "$work"' EXIT
export SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-1700000000}"

variants=("onnx:--format onnx" "onnx-external:--format onnx --external-data" "executorch:--format executorch"
          "dynamo:--format dynamo")
failed=0
for arch in ${HFX_REPRO_ARCHS:-llama t5 bert}; do
  ckpt="$work/ckpt-$arch"
  "$A" create-tiny "$arch" -o "$ckpt" >/dev/null
  for v in "${variants[@]}"; do
    name=${v%%:*}
    read -r -a flags <<<"${v#*:}"
    for side in a b; do
      bin=$A; [[ $side == b ]] && bin=$B
      "$bin" --quiet export "$ckpt" "${flags[@]}" -o "$work/$side/$arch-$name" >"$work/$side-$arch-$name.log" 2>&1 ||
        { cat "$work/$side-$arch-$name.log"; die "$bin export $arch ($name) failed"; }
    done
    if ! diff -r -q "$work/a/$arch-$name" "$work/b/$arch-$name" >"$work/diff.txt" 2>&1; then
      printf '[repro] %-22s DIFFERS between %s and %s:\n' "$arch $name" "$A" "$B"
      sed 's/^/[repro]   /' "$work/diff.txt"
      failed=1
      continue
    fi
    paths=$(grep -rlF -e "$ROOT" -e "$(dirname "$A")" -e "$(dirname "$B")" "$work/a/$arch-$name" || true)
    if [[ -n "$paths" ]]; then
      printf '[repro] %-22s holds a source or build path in: %s\n' "$arch $name" "$paths"
      failed=1
      continue
    fi
    files=$(find "$work/a/$arch-$name" -type f | wc -l)
    printf '[repro] %-22s %2d files byte-identical, no build paths\n' "$arch $name" "$files"
    if [[ "${HFX_REPRO_VERIFY:-1}" == 1 ]]; then
      "$A" --quiet verify "$work/a/$arch-$name" --reference "$ckpt" >"$work/verify.log" 2>&1 ||
        { cat "$work/verify.log"; printf '[repro] %-22s verify FAILED (%s)\n' "$arch $name" "$A"; failed=1; }
    fi
  done
done
((failed == 0)) || die "artifacts differ between build trees or hold build paths (see above)"
echo "[repro] all exports byte-identical across $(dirname "$A") and $(dirname "$B")"
