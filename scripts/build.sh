#!/usr/bin/env bash
# scripts/build.sh [preset] — configures and builds one CMake preset from CMakePresets.json.
#   release (default) → build/, debug → build-debug/, asan → build-asan/
# Parallelism: HFX_JOBS (default: number of cores).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PRESET="${1:-release}"
JOBS="${HFX_JOBS:-$(nproc)}"

cd "$ROOT"
echo "[build] preset $PRESET, -j$JOBS"
cmake --preset "$PRESET"
cmake --build --preset "$PRESET" -j "$JOBS"
