#!/usr/bin/env bash
# Sets up everything (scripts/setup.sh) and runs every test: unit tests, then integration tests
# against the real Docker engine, a real Temporal dev server and local protocol servers (each
# test starts the services it needs); then every fuzz target for a bounded time (scripts/fuzz.sh)
# and, when asked, the unit tests under ASan + UBSan (scripts/sanitizer_tests.sh). Extra
# arguments go to ctest, e.g. `-L unit` or `-R Sandbox`; a run with them is only that ctest run.
# The last line says how many passed and failed in all.
#
# Env: CODEACT_TEST_FUZZ=0 skips fuzzing; CODEACT_FUZZ_SECONDS per target (default 50: 11
# targets, two at a time, about 5 minutes). CODEACT_TEST_SANITIZERS=1 adds the ASan + UBSan
# unit tests (their build, about 33 minutes, does not fit CI's budget: see README, "Tests").
# CODEACT_TEST_JOBS: ctest -j (default 1).
#
# `scripts/test.sh --real-model [--size 0.5b]` runs only the opt-in end-to-end suite with a real
# model (tests/real_model/): `codeact model local` installs it on first use (about half an hour
# on 2 cores, kept in the data directory for later runs), then `codeact run` solves small data
# tasks, durable and in-process; it ends with the pass rate, time per task and tokens per second.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build}"
case "${1:-}" in -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac
"$ROOT/scripts/setup.sh" --build-dir "$BUILD_DIR"
export PATH="$ROOT/.venv/bin:$PATH"
if [ "${1:-}" = --real-model ]; then
  shift
  # The user's data directory: the model installed here is the one `codeact model local` and
  # scripts/demo.sh --local use.
  cd "$ROOT"
  CODEACT_BIN="$BUILD_DIR/src/cli/codeact" PYTHONDONTWRITEBYTECODE=1 \
    exec "$ROOT/.venv/bin/python" -m pytest -p no:cacheprovider -s -v tests/real_model "$@"
fi
export CODEACT_HOME="${CODEACT_HOME:-$BUILD_DIR/codeact-home}"
export BUILD_DIR
cd "$BUILD_DIR"
logs="$BUILD_DIR/test-logs"
mkdir -p "$logs"

# The fuzz targets (a second build, with clang) are compiled while ctest runs, at the idle
# scheduling class: they take only CPU time the tests leave unused, so the tests' timing is as
# without them, and the fuzzing afterwards starts at once. Their log is shown before the fuzzing.
fuzz_build_pid=""
if [ $# = 0 ] && [ "${CODEACT_TEST_FUZZ:-1}" != 0 ]; then
  chrt --idle 0 nice -n 19 "$ROOT/scripts/fuzz.sh" --build-only >"$logs/fuzz-build.log" 2>&1 &
  fuzz_build_pid=$!
fi

printf '\n== Tests\n'
ctest_status=0
ctest --output-on-failure --timeout 900 -j"${CODEACT_TEST_JOBS:-1}" "$@" 2>&1 |
  tee "$logs/ctest.log" || ctest_status=$?
if [ $# -gt 0 ]; then exit "$ctest_status"; fi

passed=0 failed=0
# Adds the counts of a ctest summary ("95% tests passed, 2 tests failed out of 40") or of a
# "N passed, N failed" line in `log`; a run that got to neither counts as one failure.
count() {
  local log="$1" line
  line=$(grep -oE '[0-9]+ tests failed out of [0-9]+' "$log" | tail -1 || true)
  if [ -z "$line" ]; then
    line=$(grep -oE '[0-9]+ passed, [0-9]+ failed' "$log" | tail -1 || true)
    # "P passed, F failed" as "F tests failed out of P+F"
    [ -n "$line" ] && line=$(awk '{print $3 " tests failed out of " $1 + $3}' <<<"$line")
  fi
  if [ -z "$line" ]; then
    failed=$((failed + 1))
    return
  fi
  local f t
  f=$(awk '{print $1}' <<<"$line") t=$(awk '{print $NF}' <<<"$line")
  passed=$((passed + t - f)) failed=$((failed + f))
}
count "$logs/ctest.log"
[ "$ctest_status" = 0 ] || [ "$failed" -gt 0 ] || failed=1

if [ "${CODEACT_TEST_FUZZ:-1}" != 0 ]; then
  fuzz_build_status=0
  wait "$fuzz_build_pid" || fuzz_build_status=$?
  printf '\n== Fuzz targets built beside the tests (status %s)\n' "$fuzz_build_status"
  tail -n 5 "$logs/fuzz-build.log"
  # A failed build is built again here, in the open, where its errors show and count.
  "$ROOT/scripts/fuzz.sh" --all --seconds "${CODEACT_FUZZ_SECONDS:-50}" --jobs 2 2>&1 |
    tee "$logs/fuzz.log" || true
  count "$logs/fuzz.log"
fi
if [ "${CODEACT_TEST_SANITIZERS:-0}" = 1 ]; then
  "$ROOT/scripts/sanitizer_tests.sh" 2>&1 | tee "$logs/sanitizers.log" || true
  count "$logs/sanitizers.log"
fi
echo "$passed passed, $failed failed"
[ "$failed" = 0 ] && [ "$ctest_status" = 0 ]
