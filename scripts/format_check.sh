#!/usr/bin/env bash
# scripts/format_check.sh [--fix] — every tracked C++ source and header (src, include, tools, tests, bench,
# examples) is formatted as .clang-format says (Debian's clang-format 14, installed by scripts/setup.sh).
# Prints one line per file that differs and exits 1; --fix rewrites them instead. A CI tier of scripts/test.sh.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
command -v clang-format >/dev/null ||
  { echo "[format] error: expected clang-format on PATH, got none; run scripts/setup.sh" >&2; exit 2; }
mapfile -t files < <(git ls-files '*.cpp' '*.h' | grep -v '^deps/')
if [[ "${1:-}" == --fix ]]; then
  clang-format -i "${files[@]}"
  exit 0
fi
bad=0
for f in "${files[@]}"; do
  if ! clang-format --dry-run --Werror "$f" >/dev/null 2>&1; then
    echo "[format] $f differs from .clang-format (scripts/format_check.sh --fix rewrites it)"
    bad=$((bad + 1))
  fi
done
echo "[format] ${#files[@]} files, $bad not formatted ($(clang-format --version | head -1))"
((bad == 0))
