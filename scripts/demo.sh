#!/usr/bin/env bash
# scripts/demo.sh — the main job on a small default model that hfx makes itself:
# create a tiny random Llama checkpoint, export it to ONNX for generation, and generate from the
# artifact through ONNX Runtime and from the checkpoint eagerly. Run after scripts/setup.sh.
# It builds only what it runs: the hfx binary (CMake target hfx_cli, with libhfx), not the tests and
# benches, with the "quick" preset (build-quick/: -O0, precompiled third-party headers and a unity build per
# source folder, cmake/quick_build.cmake; its kernels are slow, which a tiny model does not notice). HFX_BUILD_DIR picks
# another build folder (default build-quick/); HFX_DEMO_PRESET=release builds the optimized binary instead;
# HFX_BIN runs a binary already built (the doc test runs this script so, in its own HFX_DEMO_OUT).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PRESET=${HFX_DEMO_PRESET:-quick}
[ -n "${HFX_BIN:-}" ] || bash scripts/build.sh "$PRESET" hfx_cli
if [ -n "${HFX_BIN:-}" ]; then HFX=$HFX_BIN
elif [ -n "${HFX_BUILD_DIR:-}" ]; then HFX=$HFX_BUILD_DIR/hfx
elif [ "$PRESET" = quick ]; then HFX=build-quick/hfx
else HFX=build/hfx; fi
OUT=${HFX_DEMO_OUT:-out/demo}
mkdir -p "$OUT"
$HFX create-tiny llama -o "$OUT/tiny-llama"
$HFX inspect "$OUT/tiny-llama"
$HFX export "$OUT/tiny-llama" --format onnx -o "$OUT/tiny-llama-onnx"
$HFX verify "$OUT/tiny-llama-onnx"   # the reference is the source recorded in the manifest

$HFX generate "$OUT/tiny-llama-onnx" --prompt "Hello, world" --max-new-tokens 16 --greedy
$HFX generate "$OUT/tiny-llama" --prompt "Hello, world" --max-new-tokens 16 --greedy

ls -l "$OUT/tiny-llama-onnx" "$OUT/tiny-llama-onnx/onnx"
