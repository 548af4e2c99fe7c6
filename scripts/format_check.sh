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
# Many files per clang-format process, HFX_JOBS processes at a time (one process per file cost CI a minute).
rc=0
out=$(printf '%s\0' "${files[@]}" | xargs -0 -n 40 -P "${HFX_JOBS:-2}" clang-format --dry-run --Werror 2>&1 >/dev/null) ||
  rc=$?
mapfile -t bad_files < <(grep -oE '^[^: ]+:[0-9]+:[0-9]+: (error|warning):' <<<"$out" | cut -d: -f1 | sort -u)
for f in "${bad_files[@]}"; do
  echo "[format] $f differs from .clang-format (scripts/format_check.sh --fix rewrites it)"
done
if ((rc != 0 && ${#bad_files[@]} == 0)); then  # clang-format failed without naming a file: show why
  echo "$out" | tail -20
  echo "[format] error: clang-format exited $rc without a formatting finding"
  exit 2
fi
echo "[format] ${#files[@]} files, ${#bad_files[@]} not formatted ($(clang-format --version | head -1))"
((${#bad_files[@]} == 0))
