#!/usr/bin/env bash
# scripts/test.sh — builds and tests hfx (run scripts/setup.sh first). The CI tiers (.ci/run):
#   1. release (build/, -O2, NDEBUG): the whole suite, `ctest --preset release`, with the graph verifier
#      after every pass (HFX_VERIFY_PASSES=1) (HFX_CI_BASE_PRESET=quick:
#      build-quick/ at -O0, only libhfx and hfx, no suite — for a quick local pass over the other tiers).
#   1b. interop (HFX_CI_INTEROP=1) and python (HFX_CI_PYTHON=1): pytest in the project's venv — the released
#      runtimes judge the base tree's exports (tests/interop); the wheel of the Python package, built by `pip
#      wheel .` over the base tree, installed and checked (tests/python).
#   2. reproducibility: the same tiny checkpoints exported twice in every format give byte-identical folders;
#      counts as one test. Default: scripts/repro_check.sh with build/hfx twice (HFX_REPRO_SAME=1: the second
#      run in another cwd, with HFX_NUM_THREADS=1 and MALLOC_PERTURB_). HFX_CI_REPRO_TREES=1: two build trees
#      (release; quick: -O0, unity, only hfx), build/hfx vs build-quick/hfx — off by default since the quick
#      tree's 500-700 CPU-s took CI past 30 minutes on 2 cores (a slow host: 35 min).
#   3. asan (HFX_CI_ASAN=1; off by default and in .ci/run: a second full build does not fit CI's 30 minutes
#      on 2 cores): build-asan/, Debug (assertions and the pass verifier on), libhfx, tests and CLI at -O1,
#      AddressSanitizer + UndefinedBehaviorSanitizer. It runs the tests matching HFX_ASAN_TESTS (a ctest regex;
#      "all" runs the whole suite); the reproducibility step then compares build/ with build-asan/.
#      Leak reports of third-party code are suppressed by tests/sanitizers/lsan.supp (one reason each).
#   0. format: scripts/format_check.sh — every tracked C++ file as .clang-format says; counts as one test.
#      Every build compiles with -Werror (HFX_WERROR in the presets); after the base build, clang -Werror
#      parses every translation unit of it (scripts/check_warnings.py, "clang warnings"); counts as one test.
#   4. fuzz (HFX_CI_FUZZ=1, the default; 0 skips it): scripts/fuzz.sh --ci, every libFuzzer target of
#      tests/fuzz, HFX_JOBS at a time, for HFX_FUZZ_CI_SECONDS (default 5) under ASan+UBSan; counts as one test per target.
#      Then docs/fuzzing.md's command lines as written, capped (check_readme_commands.py --tier fuzz); one test.
#   5. bench doc commands (HFX_CI_DOC_BENCH=1; off by default, a slower tier sessions run): the command lines of
#      docs/benchmarks.md as written (check_readme_commands.py --tier bench); one test.
# HFX_REQUIRE_ORACLES=1 (.ci/run sets it) turns a test whose oracle (node, the npm packages, chromium) is
# missing from a skip into a failure that names the oracle (tests/support/oracle.h), and makes CMake refuse
# to configure without ONNX Runtime. Ends with one line "tests: N passed, M failed, K skipped" over all
# tiers; K counts ctest's skipped tests. Parallelism: HFX_JOBS (default 2). Each tier prints its wall time and
# CPU seconds ("[test] tier NAME: W s wall, C CPU-s").
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export HFX_JOBS="${HFX_JOBS:-2}"
ASAN="${HFX_CI_ASAN:-0}"
# Which tests the sanitizer tree runs (HFX_CI_ASAN=1): a ctest regex, or "all" for the whole suite.
ASAN_TESTS="${HFX_ASAN_TESTS:-Malformed|Safetensors|Symbolic|Tensor|Tokenizer|Fuzz|Crafted}"
# The tree beside the sanitizer one (libhfx for the fuzz build, the second hfx of the reproducibility step):
# release (-O2, the default) or quick (-O0 + precompiled headers: cheaper to compile; the budget fallback).
BASE_PRESET="${HFX_CI_BASE_PRESET:-release}"
case "$BASE_PRESET" in
  release) BASE_DIR=build ;;
  quick) BASE_DIR=build-quick ;;
  *) echo "[test] error: expected HFX_CI_BASE_PRESET release or quick, got '$BASE_PRESET'" >&2; exit 2 ;;
esac
export HFX_FUZZ_BASE_PRESET="$BASE_PRESET"
cd "$ROOT"

passed=0
failed=0
skipped=0
status=0
# run_ctest LOG ARGS... — runs ctest, echoing its output, and adds its totals to passed/failed/skipped.
run_ctest() {
  local log=$1
  shift
  local rc=0
  ctest "$@" 2>&1 | tee "$log" || rc=$?
  local line total nfail nskip
  line=$(grep -E 'tests passed, [0-9]+ tests? failed out of [0-9]+' "$log" | tail -1 || true)
  if [[ -n "$line" ]]; then
    nfail=$(sed -E 's/.* ([0-9]+) tests? failed out of.*/\1/' <<<"$line")
    total=$(sed -E 's/.*failed out of ([0-9]+).*/\1/' <<<"$line")
    # ctest counts a skipped test (GTEST_SKIP) as not failed; it lists it under "did not run" as (Skipped).
    nskip=$(grep -cE '^[[:space:]]+[0-9]+ - .*\(Skipped\)$' "$log" || true)
    passed=$((passed + total - nfail - nskip))
    failed=$((failed + nfail))
    skipped=$((skipped + nskip))
  else
    failed=$((failed + 1))  # ctest itself failed (no summary)
  fi
  ((rc == 0)) || status=$rc
}
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
# child_cpu — sets CHILD_CPU to the CPU seconds (user + system) of every command this script has waited for.
# The `times` builtin must run in this shell (a pipe or $(...) would run it in a subshell with no children).
child_cpu() {
  times >"$logs/times"
  CHILD_CPU=$(tail -1 "$logs/times" | awk '{ s = 0; for (i = 1; i <= 2; i++) { split($i, t, /[ms]/); s += t[1] * 60 + t[2] }
                                             printf "%.0f", s }')
}
# tier NAME — prints the wall time and the CPU seconds since the previous tier began (the CI breakdown).
tier_start=$SECONDS
child_cpu
tier_cpu=$CHILD_CPU
tier() {
  child_cpu
  echo "[test] tier $1: $((SECONDS - tier_start)) s wall, $((CHILD_CPU - tier_cpu)) CPU-s"
  tier_start=$SECONDS
  tier_cpu=$CHILD_CPU
}

rc=0
bash scripts/format_check.sh || rc=$?
if ((rc == 0)); then passed=$((passed + 1)); else failed=$((failed + 1)); status=$rc; fi
tier "format"

bash scripts/build.sh "$BASE_PRESET" $([[ "$BASE_PRESET" == quick ]] && echo hfx_cli)
tier "$BASE_PRESET build"
# The build above compiles with -Werror (HFX_WERROR, every preset); the second compiler: clang parses every
# translation unit of that tree with -Wall -Wextra -Werror (scripts/check_warnings.py); counts as one test.
rc=0
python3 scripts/check_warnings.py "$BASE_DIR" || rc=$?
if ((rc == 0)); then passed=$((passed + 1)); else failed=$((failed + 1)); status=$rc; fi
tier "clang warnings"
if [[ "$BASE_PRESET" == release ]]; then
  # The graph verifier after every pass and fix (a Debug build's default, hfx/passes/pass.h) is on for the
  # whole release suite, so CI checks each pass's contract on every export the tests make.
  export HFX_VERIFY_PASSES=1
  run_ctest "$logs/release.log" --preset release -j "$HFX_JOBS"
  unset HFX_VERIFY_PASSES
  tier "release suite"
fi

# The interop tier (HFX_CI_INTEROP=1, the default): the base tree's hfx exports tiny checkpoints made by
# transformers' own classes, and the released runtimes (onnxruntime, torch.export.load, ExecuTorch's Python
# runtime) judge them against transformers 5.x eager (tests/interop, pytest in the project's venv, .venv from
# scripts/setup.sh). The records become $BASE_DIR/interop/interop.md (docs/interop.md is the last run's copy).
# run_pytest NAME LOG ENV... -- ARGS... — runs the project venv's pytest with ARGS under ENV (VAR=value words) and
# adds its summary line's totals to passed/failed/skipped; without .venv it fails (HFX_REQUIRE_ORACLES=1) or skips.
run_pytest() {
  local name=$1 log=$2
  shift 2
  local envs=()
  while [[ $1 != -- ]]; do envs+=("$1"); shift; done
  shift
  if [[ ! -x "$ROOT/.venv/bin/python" ]]; then
    if [[ "${HFX_REQUIRE_ORACLES:-0}" == 1 ]]; then
      echo "[$name] expected the project's Python environment at .venv, got none: run scripts/setup.sh" >&2
      failed=$((failed + 1))
      status=1
    else
      echo "[$name] skipped: no .venv (scripts/setup.sh makes it)"
      skipped=$((skipped + 1))
    fi
    return
  fi
  local rc=0 line
  env "${envs[@]}" "$ROOT/.venv/bin/python" -m pytest "$@" -q -p no:cacheprovider -rfE 2>&1 | tee "$log" || rc=$?
  line=$(grep -E '^=*.*[0-9]+ (passed|failed)' "$log" | tail -1 || true)
  # pytest's summary line, e.g. "3 failed, 150 passed, 2 skipped, 1 xfailed in 90.1s" (awk: no grep that
  # finds nothing under pipefail).
  count() { awk -v w="$1" '{ for (i = 1; i < NF; i++) if ($(i + 1) ~ "^" w) s += $i } END { print s + 0 }' <<<"$line"; }
  passed=$((passed + $(count passed)))
  failed=$((failed + $(count failed) + $(count error)))
  skipped=$((skipped + $(count skipped)))
  if ((rc != 0)); then
    status=$rc
    [[ -n "$line" ]] || failed=$((failed + 1))  # pytest itself failed (no summary)
  fi
}

if [[ "${HFX_CI_INTEROP:-1}" == 1 ]]; then
  run_pytest interop "$logs/interop.log" HFX="$ROOT/$BASE_DIR/hfx" \
    HFX_INTEROP_REPORT="$ROOT/$BASE_DIR/interop/report.json" -- tests/interop
  if [[ -x "$ROOT/.venv/bin/python" ]]; then
    "$ROOT/.venv/bin/python" tests/interop/table.py "$ROOT/$BASE_DIR/interop/report.json" \
      >"$ROOT/$BASE_DIR/interop/interop.md" || true
  fi
  tier "interop"
fi

# The Python package (HFX_CI_PYTHON=1, the default; docs/python.md): tests/python builds the wheel with `pip wheel
# .` in the base tree (scikit-build-core reuses its libhfx, so only the extension module compiles), installs it
# into a clean venv and beside the project's venv, and checks it against the CLI and transformers.
if [[ "${HFX_CI_PYTHON:-1}" == 1 ]]; then
  run_pytest python "$logs/python.log" HFX="$ROOT/$BASE_DIR/hfx" HFX_PY_BUILD_DIR="$ROOT/$BASE_DIR" -- tests/python
  # The module's sources, now in the tree's compile_commands.json, through clang -Werror too; one test.
  if python3 scripts/check_warnings.py "$BASE_DIR" python/src; then passed=$((passed + 1)); else
    failed=$((failed + 1))
    status=1
  fi
  tier "python package"
fi

if [[ "$ASAN" == 1 ]]; then
  # The sanitizer options and LeakSanitizer suppressions of the test preset (CMakePresets.json), also for
  # what runs sanitized outside ctest: the test listing at build time (gtest_discover_tests), the repro step.
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  export LSAN_OPTIONS="suppressions=$ROOT/tests/sanitizers/lsan.supp:print_suppressions=0"
  bash scripts/build.sh asan
  tier "asan build (everything)"
  if [[ "$ASAN_TESTS" == all ]]; then
    run_ctest "$logs/asan.log" --preset asan -j "$HFX_JOBS"
  else
    run_ctest "$logs/asan.log" --preset asan -j "$HFX_JOBS" -R "$ASAN_TESTS"
  fi
  tier "asan suite ($ASAN_TESTS)"

  rc=0
  bash scripts/repro_check.sh "$BASE_DIR/hfx" build-asan/hfx || rc=$?
  if ((rc == 0)); then passed=$((passed + 1)); else failed=$((failed + 1)); status=$rc; fi
  tier "reproducibility ($BASE_PRESET vs asan tree)"
else
  echo "[test] HFX_CI_ASAN=$ASAN: no sanitizer tier"
  if [[ "${HFX_CI_REPRO_TREES:-0}" == 1 ]]; then
    # Two different build trees: the base one and the cheapest other one (quick: -O0, unity, only hfx; or
    # release's hfx when quick is the base).
    if [[ "$BASE_PRESET" == release ]]; then OTHER=quick OTHER_DIR=build-quick; else OTHER=release OTHER_DIR=build; fi
    bash scripts/build.sh "$OTHER" hfx_cli
    rc=0
    bash scripts/repro_check.sh "$BASE_DIR/hfx" "$OTHER_DIR/hfx" || rc=$?
    if ((rc == 0)); then passed=$((passed + 1)); else failed=$((failed + 1)); status=$rc; fi
    tier "reproducibility ($BASE_PRESET vs $OTHER tree)"
  else
    # The default: the base tree's hfx twice (another cwd, HFX_NUM_THREADS=1, MALLOC_PERTURB_ in the second
    # run). The second tree's -O0 build cost 500-700 CPU-s, which CI's 30 minutes on 2 cores no longer held.
    rc=0
    HFX_REPRO_SAME=1 bash scripts/repro_check.sh "$BASE_DIR/hfx" "$BASE_DIR/hfx" || rc=$?
    if ((rc == 0)); then passed=$((passed + 1)); else failed=$((failed + 1)); status=$rc; fi
    tier "reproducibility ($BASE_PRESET tree, two runs)"
  fi
fi

if [[ "${HFX_CI_FUZZ:-1}" == 1 ]]; then
  rc=0
  HFX_FUZZ_PARALLEL="${HFX_FUZZ_PARALLEL:-$HFX_JOBS}" bash scripts/fuzz.sh --ci 2>&1 | tee "$logs/fuzz.log" || rc=$?
  ok=$(grep -c '^\[fuzz\] .* 0 crashes$' "$logs/fuzz.log" || true)
  bad=$(grep -c '^\[fuzz\] .* FAILED' "$logs/fuzz.log" || true)
  passed=$((passed + ok))
  failed=$((failed + bad))
  if ((rc != 0)); then
    status=$rc
    ((bad > 0)) || failed=$((failed + 1))  # the fuzz build itself failed
  fi
  tier "fuzz"
  # docs/fuzzing.md's command lines, as written, each target capped at 1 s / 2000 runs (the trees are built).
  rc=0
  python3 scripts/check_readme_commands.py --tier fuzz docs/fuzzing.md "$BASE_DIR/hfx" || rc=$?
  if ((rc == 0)); then passed=$((passed + 1)); else failed=$((failed + 1)); status=$rc; fi
  tier "fuzz doc commands"
else
  echo "[test] HFX_CI_FUZZ=${HFX_CI_FUZZ}: fuzz targets skipped"
fi

if [[ "${HFX_CI_DOC_BENCH:-0}" == 1 ]]; then
  # The benchmarks' command lines of docs/, as written (a slow tier sessions run; it times nothing it asserts).
  rc=0
  python3 scripts/check_readme_commands.py --tier bench docs/*.md "$BASE_DIR/hfx" || rc=$?
  if ((rc == 0)); then passed=$((passed + 1)); else failed=$((failed + 1)); status=$rc; fi
  tier "bench doc commands"
fi

echo "tests: $passed passed, $failed failed, $skipped skipped"
exit "$status"
