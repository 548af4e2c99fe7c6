#!/usr/bin/env bash
# scripts/build.sh [preset] [target...] — configures and builds one CMake preset from CMakePresets.json.
#   release (default) → build/, debug → build-debug/, asan → build-asan/
# Targets: all by default; e.g. `scripts/build.sh release hfx_cli` builds only the hfx binary and libhfx.
# Parallelism: HFX_JOBS (default: number of cores). HFX_BUILD_DIR overrides the preset's build folder;
# HFX_CMAKE_ARGS adds cache settings to the configure step (e.g. -DHFX_UNITY_FUZZ_BASE=ON).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PRESET="${1:-release}"
shift || true
TARGETS=()
for t in "$@"; do TARGETS+=(--target "$t"); done
JOBS="${HFX_JOBS:-$(nproc)}"

cd "$ROOT"
echo "[build] preset $PRESET, -j$JOBS${*:+, targets $*}${HFX_BUILD_DIR:+, in $HFX_BUILD_DIR}"
if [ -n "${HFX_BUILD_DIR:-}" ]; then
  cmake --preset "$PRESET" -B "$HFX_BUILD_DIR" ${HFX_CMAKE_ARGS:-}
  cmake --build "$HFX_BUILD_DIR" -j "$JOBS" "${TARGETS[@]}"
else
  cmake --preset "$PRESET" ${HFX_CMAKE_ARGS:-}
  cmake --build --preset "$PRESET" -j "$JOBS" "${TARGETS[@]}"
fi
