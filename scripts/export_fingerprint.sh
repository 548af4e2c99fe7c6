#!/usr/bin/env bash
# scripts/export_fingerprint.sh HFX OUT.tsv — the sha256 of every file of every architecture's export in
# every format and the main flag variants, one line "ARCH/VARIANT/FILE<TAB>SHA256" each, sorted.
# For refactors that must not change bytes (issue 39's acceptance): run it before and after, then
# `diff before.tsv after.tsv` — an empty diff is the proof; each differing line names the artifact.
# Architectures: every model_type of `hfx create-tiny --help` (HFX_FP_ARCHS overrides, space-separated).
# SOURCE_DATE_EPOCH pins manifest.json's time. Exits non-zero naming the first export that failed to run
# (a refused variant, e.g. --target ort on an encoder, is recorded as "refused" — refusals are bytes too).
set -euo pipefail
die() { printf '[fingerprint] error: %s\n' "$*" >&2; exit 1; }
(($# == 2)) || die "expected HFX OUT.tsv, got $# arguments; e.g. scripts/export_fingerprint.sh build/hfx /tmp/before.tsv"
HFX=$(realpath "$1")
OUT=$2
[[ -x "$HFX" ]] || die "expected an hfx binary at $1, got none (scripts/build.sh release)"
export SOURCE_DATE_EPOCH=1700000000
work=$(mktemp -d /tmp/hfx-fp.XXXXXX)
trap 'rm -rf "$work"' EXIT
archs=${HFX_FP_ARCHS:-$("$HFX" create-tiny --help | sed -n 's/.*model_type: //p' | tr -d ',')}
variants=(
  "onnx|--format onnx"
  "onnx-ort|--format onnx --target ort"
  "onnx-int4|--format onnx --target ort --quantize int4"
  "onnx-int8|--format onnx --quantize int8 --opset 21"
  "onnx-ext|--format onnx --external-data"
  "onnx-bf16|--format onnx --dtype bf16"
  "pte|--format executorch --backend portable"
  "pte-xnnpack|--format executorch --backend xnnpack"
  "pte-xnn-int4|--format executorch --backend xnnpack --quantize int4 --symmetric"
  "pte-xnn-int8|--format executorch --backend xnnpack --quantize int8 --symmetric"
  "pt2-int4|--format dynamo --quantize int4"
  "pt2|--format dynamo"
)
: >"$work/lines"
for arch in $archs; do
  "$HFX" --quiet create-tiny "$arch" -o "$work/ck-$arch" >/dev/null
  for v in "${variants[@]}"; do
    name=${v%%|*}
    # shellcheck disable=SC2086
    if "$HFX" --quiet export "$work/ck-$arch" ${v#*|} -o "$work/o/$arch/$name" >"$work/log" 2>&1; then
      # manifest.json names the checkpoint's path (this run's temporary folder): hashed without it.
      sed -i "s|$work|WORK|g" "$work/o/$arch/$name/manifest.json"
      (cd "$work/o" && find "$arch/$name" -type f -print0 | sort -z | xargs -0 sha256sum |
        awk '{ print $2 "\t" $1 }') >>"$work/lines"
    else
      grep -q '\[' "$work/log" || { cat "$work/log"; die "$arch $name failed without an [component] error"; }
      printf '%s/%s\trefused: %s\n' "$arch" "$name" "$(grep -m1 -o '\[[a-z_]*\] expected.\{0,100\}' "$work/log")" >>"$work/lines"
    fi
    rm -rf "$work/o/$arch/$name"
  done
  rm -rf "$work/ck-$arch"
  printf '[fingerprint] %s\n' "$arch" >&2
done
sort "$work/lines" >"$OUT"
printf '[fingerprint] %d lines in %s\n' "$(wc -l <"$OUT")" "$OUT" >&2
