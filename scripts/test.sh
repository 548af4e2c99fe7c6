#!/usr/bin/env bash
# scripts/test.sh — builds and tests hfx (run scripts/setup.sh first).
#   1. release preset: the whole suite, `ctest --preset release`
#   2. asan preset (HFX_CI_ASAN=1, the default; 0 skips it): only the tests whose names match the regex
#      HFX_ASAN_TESTS (default Malformed|Safetensors|Symbolic, i.e. *Malformed*|*Safetensors*|*Symbolic*).
#      None matching is fine.
#   3. fuzz (HFX_CI_FUZZ=1, the default; 0 skips it): scripts/fuzz.sh --ci, every libFuzzer target of
#      tests/fuzz for HFX_FUZZ_CI_SECONDS (default 5) under ASan+UBSan; counts as one test per target.
# Ends with one line "tests: N passed, M failed" over both runs. Parallelism: HFX_JOBS (default 2).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export HFX_JOBS="${HFX_JOBS:-2}"
ASAN="${HFX_CI_ASAN:-1}"
ASAN_TESTS="${HFX_ASAN_TESTS:-Malformed|Safetensors|Symbolic|Tensor|Tokenizer}"
cd "$ROOT"

passed=0
failed=0
status=0
# run_ctest LOG ARGS... — runs ctest, echoing its output, and adds its totals to passed/failed.
run_ctest() {
  local log=$1
  shift
  local rc=0
  ctest "$@" 2>&1 | tee "$log" || rc=$?
  local line total nfail
  line=$(grep -E 'tests passed, [0-9]+ tests? failed out of [0-9]+' "$log" | tail -1 || true)
  if [[ -n "$line" ]]; then
    nfail=$(sed -E 's/.* ([0-9]+) tests? failed out of.*/\1/' <<<"$line")
    total=$(sed -E 's/.*failed out of ([0-9]+).*/\1/' <<<"$line")
    passed=$((passed + total - nfail))
    failed=$((failed + nfail))
  fi
  ((rc == 0)) || status=$rc
}

logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

bash scripts/build.sh release
run_ctest "$logs/release.log" --preset release -j "$HFX_JOBS"

if [[ "$ASAN" == 1 ]]; then
  bash scripts/build.sh asan
  export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}"
  export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
  # List first, then grep the file: `ctest | grep -q` under pipefail fails when grep closes the pipe early.
  ctest --preset asan -N -R "$ASAN_TESTS" > "$logs/asan-list.txt" 2>&1 || true
  if grep -qE '^ *Test +#' "$logs/asan-list.txt"; then
    run_ctest "$logs/asan.log" --preset asan -j "$HFX_JOBS" -R "$ASAN_TESTS"
  else
    echo "[test] asan: no test matches '$ASAN_TESTS' (fine)"
  fi
else
  echo "[test] HFX_CI_ASAN=$ASAN: asan preset skipped"
fi

if [[ "${HFX_CI_FUZZ:-1}" == 1 ]]; then
  rc=0
  bash scripts/fuzz.sh --ci 2>&1 | tee "$logs/fuzz.log" || rc=$?
  ok=$(grep -c '^\[fuzz\] .* 0 crashes$' "$logs/fuzz.log" || true)
  bad=$(grep -c '^\[fuzz\] .* FAILED' "$logs/fuzz.log" || true)
  passed=$((passed + ok))
  failed=$((failed + bad))
  if ((rc != 0)); then
    status=$rc
    ((bad > 0)) || failed=$((failed + 1))  # the fuzz build itself failed
  fi
else
  echo "[test] HFX_CI_FUZZ=${HFX_CI_FUZZ}: fuzz targets skipped"
fi

echo "tests: $passed passed, $failed failed"
exit "$status"
