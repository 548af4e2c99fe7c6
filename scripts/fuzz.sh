#!/usr/bin/env bash
# scripts/fuzz.sh — builds the libFuzzer targets (tests/fuzz, clang, ASan+UBSan) and runs every one of them.
#
#   scripts/fuzz.sh [SECONDS]        each target for SECONDS (default 60)
#   scripts/fuzz.sh --runs N         each target for N executions (docs/fuzzing.md: --runs 1000000)
#   scripts/fuzz.sh --ci             the bounded CI mode: HFX_FUZZ_CI_SECONDS (default 5) per target
#   scripts/fuzz.sh ... TARGET...    only the named targets (default: every tests/fuzz/targets/*.cpp)
#   HFX_FUZZ_PARALLEL=N              N targets at a time (default 1)
#   HFX_FUZZ_MAX_SECONDS / _MAX_RUNS caps on SECONDS and N: the doc test's fuzz tier runs docs/fuzzing.md's
#                                    lines as written under them (scripts/check_readme_commands.py --tier fuzz)
#
# Steps: the g++ release library (scripts/build.sh release hfx; the fuzz build links everything but the
# parsers from it), then build-fuzz/ configured with HFX_FUZZ=ON and clang (HFX_FUZZ_CC, default clang-16:
# Debian's clang 14 lacks std::source_location; scripts/setup.sh installs clang-16 and libclang-rt-16-dev).
# Each target starts from its committed corpus tests/fuzz/<target>/ (regressions/ included); new inputs go
# to build-fuzz/corpus/<target>/, crash inputs to build-fuzz/crashes/<target>/. Ends with one line per
# target: executions, seconds, crashes; exits non-zero when any target found one.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CC_BIN="${HFX_FUZZ_CC:-clang-16}"
CXX_BIN="${CC_BIN/clang/clang++}"
BASE_PRESET="${HFX_FUZZ_BASE_PRESET:-release}"  # or quick (-O0): scripts/test.sh's HFX_CI_BASE_PRESET
[[ "$BASE_PRESET" == release || "$BASE_PRESET" == quick ]] ||
  { echo "[fuzz] error: expected HFX_FUZZ_BASE_PRESET release or quick, got '$BASE_PRESET'" >&2; exit 2; }
BASE_DEFAULT="$ROOT/build"
[[ "$BASE_PRESET" == quick ]] && BASE_DEFAULT="$ROOT/build-quick"
BASE="${HFX_BUILD_DIR:-$BASE_DEFAULT}"
OUT="${HFX_FUZZ_DIR:-$ROOT/build-fuzz}"
JOBS="${HFX_JOBS:-$(nproc)}"

die() { printf '[fuzz] error: %s\n' "$*" >&2; exit 2; }

seconds=60
runs=""
targets=()
while (($#)); do
  case "$1" in
    --ci) seconds="${HFX_FUZZ_CI_SECONDS:-5}" ;;
    --runs) runs="${2:?--runs needs a number}"; shift ;;
    [0-9]*) seconds="$1" ;;
    -*) die "unknown option '$1' (expected SECONDS, --runs N, --ci or target names)" ;;
    *) targets+=("$1") ;;
  esac
  shift
done
[[ -n "${HFX_FUZZ_MAX_SECONDS:-}" ]] && ((seconds > HFX_FUZZ_MAX_SECONDS)) && seconds=$HFX_FUZZ_MAX_SECONDS
[[ -n "$runs" && -n "${HFX_FUZZ_MAX_RUNS:-}" ]] && ((runs > HFX_FUZZ_MAX_RUNS)) && runs=$HFX_FUZZ_MAX_RUNS
command -v "$CXX_BIN" >/dev/null ||
  die "expected $CXX_BIN (libFuzzer), got none; run scripts/setup.sh (installs clang-16 libclang-rt-16-dev)"

cd "$ROOT"
if ((${#targets[@]} == 0)); then
  for f in tests/fuzz/targets/*.cpp; do targets+=("$(basename "$f" .cpp)"); done
fi

echo "[fuzz] $BASE_PRESET library (g++) in $BASE"
# A unity base library keeps the instrumented parsers' files alone (cmake/fuzz_parsers.cmake); the release
# preset does by default, the quick one only when it is the base.
HFX_CMAKE_ARGS=-DHFX_UNITY_FUZZ_BASE=ON HFX_BUILD_DIR="$BASE" HFX_JOBS="$JOBS" bash scripts/build.sh "$BASE_PRESET" hfx >/dev/null
echo "[fuzz] fuzz targets ($CXX_BIN, ASan+UBSan) in $OUT"
cmake -S . -B "$OUT" -G Ninja -DHFX_FUZZ=ON -DHFX_FUZZ_BASE="$BASE" -DCMAKE_BUILD_TYPE=Fuzz \
  -DCMAKE_C_COMPILER="$CC_BIN" -DCMAKE_CXX_COMPILER="$CXX_BIN" -DHFX_WERROR=ON ${HFX_FUZZ_CMAKE_ARGS:-} >/dev/null
cmake --build "$OUT" -j "$JOBS" $(printf -- '--target fuzz_%s ' "${targets[@]}")

export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
limit=(-max_total_time="$seconds")
[[ -n "$runs" ]] && limit=(-runs="$runs")
# run_target T — fuzzes one target; its summary line goes to $OUT/summary-T.txt, its exit status is returned.
run_target() {
  local t=$1 seeds="tests/fuzz/$1" log="$OUT/fuzz-$1.log" rc=0
  mkdir -p "$OUT/corpus/$t" "$OUT/crashes/$t"
  echo "[fuzz] $t: $([[ -n "$runs" ]] && echo "$runs runs" || echo "${seconds}s")"
  # -timeout: one input taking 10 s is a hang; -rss_limit_mb: the parsers must not need GiBs for small files.
  "$OUT/tests/fuzz/fuzz_$t" "${limit[@]}" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$OUT/crashes/$t/" "$OUT/corpus/$t" "$seeds" >"$log" 2>&1 || rc=$?
  local execs secs
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  secs=$(grep -oE 'Done [0-9]+ runs in [0-9]+ second' "$log" | grep -oE '[0-9]+ second' | grep -oE '[0-9]+' | tail -1)
  if ((rc != 0)); then tail -40 "$log"; fi
  printf '%-20s %12s execs %6ss  %s\n' "$t" "${execs:-?}" "${secs:-?}" \
    "$( ((rc == 0)) && echo "0 crashes" || echo "FAILED (exit $rc, inputs in $OUT/crashes/$t, log $log)")" \
    >"$OUT/summary-$t.txt"
  return "$rc"
}

for t in "${targets[@]}"; do
  [[ -d "tests/fuzz/$t" ]] || die "expected a seed corpus in tests/fuzz/$t, got none"
  rm -f "$OUT/summary-$t.txt"
done
# HFX_FUZZ_PARALLEL targets at a time (default 1).
status=0
running=0
for t in "${targets[@]}"; do
  if ((running >= ${HFX_FUZZ_PARALLEL:-1})); then
    wait -n || status=1
    running=$((running - 1))
  fi
  run_target "$t" &
  running=$((running + 1))
done
while ((running > 0)); do
  wait -n || status=1
  running=$((running - 1))
done
for t in "${targets[@]}"; do
  printf '[fuzz] %s\n' "$(cat "$OUT/summary-$t.txt" 2>/dev/null || echo "$t: no summary (the run was cut short)")"
done
exit "$status"
