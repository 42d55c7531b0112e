#!/usr/bin/env bash
# Builds the unit tests with AddressSanitizer and UndefinedBehaviorSanitizer (g++, -O1) in
# build-asan/ and runs them: the unit-test binaries only (the `unit_tests` target), not the
# integration tests, the Python suites, the CLI or the benchmarks. A sanitizer report fails the
# test it happens in.
#
#   scripts/sanitizer_tests.sh [--build-only] [-- CTEST_ARGS...]   e.g. -- -R core_
#
# Env: ASAN_BUILD_DIR (default build-asan), CODEACT_BUILD_JOBS (default 2), CODEACT_TEST_JOBS.
# Temporal's .proto files are taken from the main build's cache (BUILD_DIR/_deps, default
# build/_deps) when it has them, so this build does not fetch them again.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ASAN_DIR="${ASAN_BUILD_DIR:-$ROOT/build-asan}"
MAIN_DIR="${BUILD_DIR:-$ROOT/build}"
build_only=0 ctest_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --build-only) build_only=1 ;;
    --) shift; ctest_args=("$@"); break ;;
    *) echo "sanitizer_tests.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done

# Reports abort the test (UBSan would otherwise print and go on); leaks are reported too.
export ASAN_OPTIONS="${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1:strict_string_checks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}"

# gcc 12 warns "may be used uninitialized" inside std::function/std::regex once instrumented
# (false positives that -Werror would turn into a failed build).
flags="-O1 -g1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined"
flags+=" -Wno-maybe-uninitialized"
if [ ! -f "$ASAN_DIR/CMakeCache.txt" ]; then
  cache=()
  if [ -d "$MAIN_DIR/_deps" ]; then cache=(-DCODEACT_TEMPORAL_PROTO_CACHE="$MAIN_DIR/_deps"); fi
  cmake -S "$ROOT" -B "$ASAN_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Sanitize \
    -DCMAKE_CXX_FLAGS_SANITIZE="$flags" -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
    -DCODEACT_BUILD_BENCH=OFF -DCODEACT_BUILD_EXAMPLES=OFF "${cache[@]}" >/dev/null
fi
printf '\n== Unit tests under ASan + UBSan (%s)\n' "$ASAN_DIR"
cmake --build "$ASAN_DIR" -j"${CODEACT_BUILD_JOBS:-2}" --target unit_tests
[ "$build_only" = 1 ] && exit 0
cd "$ASAN_DIR"
# The unit-labelled gtest binaries; the Python and source checks are not compiled code.
ctest --output-on-failure --timeout 900 -j"${CODEACT_TEST_JOBS:-1}" -L unit \
  -E '_pytest$|^clang_format$|^architecture_layers$' "${ctest_args[@]}"
