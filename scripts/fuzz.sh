#!/usr/bin/env bash
# Builds and runs the libFuzzer targets of tests/fuzz/ (clang-16, ASan + UBSan) in build-fuzz/.
#
#   scripts/fuzz.sh TARGET [--minutes N | --seconds N] [--jobs J] [-- LIBFUZZER_ARGS...]
#   scripts/fuzz.sh --all [--seconds N] [--jobs J]    every target, N seconds each, J at a time
#   scripts/fuzz.sh --list | --build-only | -h
#
# A target starts from its committed seeds (tests/fuzz/corpus/TARGET/, each one run first: the
# regression inputs of past crashes are among them) and keeps what it finds in
# build-fuzz/fuzz-corpus/TARGET/. A crash or sanitizer report stops it, leaves the input in
# build-fuzz/fuzz-artifacts/TARGET/ and says how to replay it. Default: 1 minute; --jobs J runs
# J processes on one target (libFuzzer -fork). Exit status: 0 when no target failed.
# Env: FUZZ_BUILD_DIR (default build-fuzz), FUZZ_CXX (default clang++-16), CODEACT_BUILD_JOBS.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${FUZZ_BUILD_DIR:-$ROOT/build-fuzz}"
CXX_BIN="${FUZZ_CXX:-clang++-16}"
CORPUS_DIR="$ROOT/tests/fuzz/corpus"
usage() { sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; }

targets_all() { (cd "$CORPUS_DIR" && ls -d */ | tr -d /); }

target="" all=0 seconds=60 jobs=1 build_only=0 extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --list) targets_all; exit 0 ;;
    --all) all=1 ;;
    --build-only) build_only=1 ;;
    --minutes) seconds=$(( $2 * 60 )); shift ;;
    --seconds) seconds="$2"; shift ;;
    --jobs) jobs="$2"; shift ;;
    --) shift; extra=("$@"); break ;;
    -*) echo "fuzz.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) target="$1" ;;
  esac
  shift
done
if [ "$all" = 1 ]; then
  mapfile -t targets < <(targets_all)
elif [ -n "$target" ]; then
  if [ ! -d "$CORPUS_DIR/$target" ]; then
    echo "fuzz.sh: no target '$target'; targets: $(targets_all | tr '\n' ' ')" >&2
    exit 2
  fi
  targets=("$target")
elif [ "$build_only" = 1 ]; then
  mapfile -t targets < <(targets_all)
else
  usage >&2
  exit 2
fi

if ! command -v "$CXX_BIN" >/dev/null; then
  echo "fuzz.sh: $CXX_BIN is not installed (scripts/setup.sh installs scripts/deps/fuzz.apt)" >&2
  exit 2
fi
if [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
  cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja -DCODEACT_FUZZ=ON -DCMAKE_CXX_COMPILER="$CXX_BIN" \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
build_targets=()
for t in "${targets[@]}"; do build_targets+=("${t}_fuzz"); done
cmake --build "$BUILD_DIR" -j"${CODEACT_BUILD_JOBS:-2}" --target "${build_targets[@]}"
[ "$build_only" = 1 ] && exit 0

# Reports name functions and lines (llvm-16's symbolizer; the default one may be missing or older).
if [ -z "${ASAN_SYMBOLIZER_PATH:-}" ] && command -v llvm-symbolizer-16 >/dev/null; then
  export ASAN_SYMBOLIZER_PATH="$(command -v llvm-symbolizer-16)"
fi
# halt_on_error: the first report ends the run with the input kept; leaks count as failures.
export ASAN_OPTIONS="${ASAN_OPTIONS:-halt_on_error=1:abort_on_error=1:detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:abort_on_error=1:print_stacktrace=1}"

# Runs one target for $seconds; its log goes to fuzz-logs/TARGET.log. Returns libFuzzer's status.
run_one() {
  local t="$1" fork=()
  local work="$BUILD_DIR/fuzz-corpus/$t" artifacts="$BUILD_DIR/fuzz-artifacts/$t/"
  mkdir -p "$work" "$artifacts" "$BUILD_DIR/fuzz-logs"
  [ "$jobs" -gt 1 ] && [ "$all" = 0 ] && fork=(-fork="$jobs")
  "$BUILD_DIR/tests/fuzz/${t}_fuzz" "${fork[@]}" -max_total_time="$seconds" -timeout=25 \
    -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$artifacts" \
    "${extra[@]}" "$work" "$CORPUS_DIR/$t" >"$BUILD_DIR/fuzz-logs/$t.log" 2>&1
}

# One line per finished target: status, executions, coverage; on failure, how to replay it.
report() {
  local t="$1" rc="$2" log="$BUILD_DIR/fuzz-logs/$1.log" execs cov
  execs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | awk '{s+=$2} END {print s+0}' || true)
  cov=$(grep -oE '(DONE|pulse|NEW|REDUCE|INITED) +cov: [0-9]+' "$log" | tail -1 | awk '{print $NF}' || true)
  if [ "$rc" = 0 ]; then
    printf '  %-24s ok      %9s runs, coverage %s\n' "$t" "$execs" "${cov:-?}"
  else
    printf '  %-24s FAILED  %9s runs (exit %s); log: %s\n' "$t" "$execs" "$rc" "$log"
    grep -E 'ERROR: |SUMMARY: |runtime error' "$log" | head -4 | sed 's/^/      /' || true
    local input
    input=$(grep -o 'Test unit written to .*' "$log" | tail -1 | sed 's/Test unit written to //' || true)
    if [ -n "$input" ]; then
      echo "      replay: $BUILD_DIR/tests/fuzz/${t}_fuzz $input"
      echo "      then keep it as tests/fuzz/corpus/$t/regression-<what broke> with a unit test"
    fi
  fi
}

printf '\n== Fuzzing %s target(s), %ss each, %s at a time\n' "${#targets[@]}" "$seconds" \
  "$([ "$all" = 1 ] && echo "$jobs" || echo 1)"
passed=0 failed=0
declare -A running=()  # pid -> target
# Waits for whichever running target ends first and reports it.
finish_one() {
  local pid="" rc=0
  wait -n -p pid "${!running[@]}" || rc=$?
  report "${running[$pid]}" "$rc"
  unset "running[$pid]"
  if [ "$rc" = 0 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
}
for t in "${targets[@]}"; do
  while [ "${#running[@]}" -ge "$([ "$all" = 1 ] && echo "$jobs" || echo 1)" ]; do finish_one; done
  run_one "$t" &
  running[$!]="$t"
done
while [ "${#running[@]}" -gt 0 ]; do finish_one; done
echo "fuzz: $passed passed, $failed failed"
[ "$failed" = 0 ]
